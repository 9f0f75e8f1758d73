//! `agentsim import`: a session file from the field becomes a scenario the kit can run, and the
//! reference's run of it says whether the reference would have stored what the file holds.
//!
//! - `aelix`: aelix's session file where it differs from Pi's (its messages in its own form, a
//!   `leaf` entry that chooses the branch), read as Pi's.
//! - [`read`]: the file read with line numbers (`store::parse_session_from`), judged
//!   (`store::check_session`), and the chosen path: a leaf (default: the file's last entry), its
//!   parent chain, and the point where the replay starts (default: the last user message on the
//!   path).
//! - [`build`]: the scenario: the path before the point as the restored session (its leaf the
//!   point's parent), each later user message as an operation (a `prompt` once the previous run
//!   settled; a `steer` when it follows a tool result, delivered while that tool round runs), the
//!   recorded assistant messages as the scripted model's answers in request order, the recorded
//!   tool results as the scripted tools' answers by call id, and the recorded ids and clock as
//!   the scenario's rules where they fit.
//! - [`compare`]: the replayed part of the file against what the reference stores for the
//!   imported scenario, entry by entry: ids and times by the rules (see below); the first entry
//!   that differs, at its line of the file, with the first field that differs.
//!
//! # What the comparison sets aside
//!
//! The contract lets ids and times vary: an id is the k-th the id rule hands out, a time a
//! reading of the clock rule, and a runtime may draw ids and read the clock for purposes of its
//! own (conformance.md, "Clock readings and ids"). So each side's new ids are compared by the
//! order they first appear in (`#1`, `#2`, ...; restored ids as written) and each side's times
//! by their order, equal times equal: the entries' ISO `timestamp`s (`t1` the earliest, when
//! the entry was stored) apart from the messages' millisecond `timestamp`s (`m1` the earliest,
//! when the message was made) and from the assistant messages' (`a1`, stamped by the model,
//! pi-ai's provider or the scripted model), since each is a reading for a purpose of its own. What the scripted fakes cannot reproduce is
//! the model's and the tools', not the runtime's, and is compared in the form a fake gives it,
//! on both sides: an assistant message's `api`, `provider`, `model` and `usage` are left out and
//! its content is thinking, text and tool calls in that order (the texts of each kind joined); a
//! user message's content is its text blocks (a string is one text block); a tool result's
//! `details` are left out and its content is one text block. Each import note says where the
//! file holds more than the scenario can (an image, several text blocks, an unreadable entry).
//!
//! Invariants: importing never writes the session file; the output is a pure function of the
//! file and the flags (no clock, no hash-map order); bad input is an [`ImportError`] naming the
//! file, the line and the field, never a panic.

mod aelix;
pub mod build;
pub mod compare;
pub mod read;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::scenario::{clip_message, printable, Scenario};
use crate::store::SessionFinding;

pub use build::build_scenario;
pub use compare::{check_imported, Agreement, CheckReport, Difference};
pub use read::{read_session_file, FileEntry, SessionRead};

/// Where the replay starts and ends: `--leaf` and `--from`, each an entry id of the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Point {
    /// The last entry of the chosen path; default: the file's last entry.
    pub leaf: Option<String>,
    /// The first entry to replay, a user message on the path; default: the path's last one.
    pub from: Option<String>,
}

/// What the scenario could not hold of the file, or a choice the import made: on a line of
/// the file, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ImportNote {
    pub line: usize,
    pub field: String,
    pub message: String,
}

/// A session file imported: the scenario, and what the import found on the way.
#[derive(Debug, Clone)]
pub struct Imported {
    pub file: PathBuf,
    pub scenario: Scenario,
    /// The scenario as written: JSON text that `scenario::parse` reads back to `scenario`.
    pub text: String,
    /// What `check-session` reports of the file, sorted by line.
    pub damage: Vec<SessionFinding>,
    /// What the scenario could not hold, and the import's choices, sorted by line.
    pub notes: Vec<ImportNote>,
    /// The replayed part of the file: the path from the point to the leaf, in path order.
    pub replayed: Vec<FileEntry>,
    /// How many entries of the path the restored session holds.
    pub restored: usize,
}

/// Why a session file could not be imported. Always names the file; the line and the field
/// when one is to blame. Each has a stable [`code`](Self::code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct ImportError {
    pub file: PathBuf,
    pub line: Option<usize>,
    /// The field of the line (`parentId`, `message.role`), a flag (`--leaf`), or `-`.
    pub field: String,
    pub code: &'static str,
    pub message: String,
}

impl ImportError {
    pub fn new(
        file: &Path,
        line: Option<usize>,
        field: impl Into<String>,
        code: &'static str,
        message: impl AsRef<str>,
    ) -> ImportError {
        ImportError {
            file: file.to_path_buf(),
            line,
            field: field.into(),
            code,
            message: clip_message(message.as_ref()),
        }
    }

    pub fn code(&self) -> &'static str {
        self.code
    }

    /// `FILE:LINE: CODE: FIELD: message` (without `LINE` when no line is to blame), one line.
    pub fn render(&self) -> String {
        let file = printable(&self.file.display().to_string());
        let place = match self.line {
            Some(line) => format!("{file}:{line}"),
            None => file,
        };
        format!("{place}: {}: {}: {}", self.code, printable(&self.field), self.message)
    }
}

/// Reads `file`, picks the path and the point, and builds the scenario.
pub fn import_session(file: &Path, point: &Point) -> Result<Imported, ImportError> {
    let session = read_session_file(file)?;
    build_scenario(file, &session, point)
}
