//! Pi's JSONL session file on disk: read it with line numbers, judge it, append to it.
//!
//! - [`file`]: reading a file line by line with stable error codes for what is not a session
//!   file at all, into raw records (header, entries, a torn last line), and [`FileStore`], the
//!   append-only store over a [`Disk`].
//! - [`facts`]: [`LineFacts`], the few facts of a line the checks need, read without building
//!   its JSON tree.
//! - [`check`]: [`check_session_from`], one finding per problem of a file streamed line by line
//!   (lost header, orphans, cycles, tool calls without results, entries between a call and its
//!   result, a torn tail), for `agentsim check-session`, [`check_session`] on a parsed file, and
//!   [`check_stored_entries`] on a store's entries.
//! - [`disk`]: the four disk operations, on the real filesystem ([`RealDisk`]) or on turmoil's
//!   simulated one ([`SimDisk`]), where a crash discards unsynced writes.
//!
//! Invariants: checking never writes; the store writes only whole `\n`-terminated lines and cuts
//! a torn tail off before appending; neither ever panics on what a file holds. The store does not
//! validate the tree it appends to; the checks do.

pub mod check;
pub mod disk;
pub mod facts;
pub mod file;

#[cfg(test)]
mod tests;

pub use check::{check_session, check_session_from, check_stored_entries, FindingCode, SessionCheck, SessionFinding};
pub use disk::{Disk, RealDisk, SimDisk};
pub use facts::LineFacts;
pub use file::{
    is_pi_record, parse_session, parse_session_from, FileStore, Limits, Opened, ParsedSession, Record,
    SessionFileError, StoreError, SyncPolicy, TornTail, LINE_BYTES_MAX_DEFAULT,
};
