//! The checks of a store's own entries, with no file to read: the session file a store holding
//! them writes is its header on line 1, then one entry per line in order (the in-process store
//! and the file store read back keep no other lines), so each entry's facts are read from the
//! typed entry ([`LineFacts::of_entry`]) and judged on its line.

use crate::model::SessionEntry;

use super::{LineFacts, SessionCheck, SessionIndex};

/// Every finding of the session file a store holding `entries` writes: entry `i` (0-based) is on
/// line `i + 2`. The header is the store's own, written by it and not judged; no line of a
/// store's entries is torn.
pub fn check_stored_entries<'e>(entries: impl IntoIterator<Item = &'e SessionEntry>) -> SessionCheck {
    let mut index = SessionIndex {
        records: 1,
        header_seen: true,
        ..SessionIndex::default()
    };
    for (position, entry) in entries.into_iter().enumerate() {
        index.add_record(position + 2, LineFacts::of_entry(entry));
    }
    index.check()
}
