//! The session file read for an import: its records with their lines, its damage, and the
//! path from a leaf up its parent chain.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::Path;

use serde_json::Value;

use crate::model::SessionEntry;
use crate::scenario::printable;
use crate::store::{check_session, parse_session_from, Limits, SessionFinding};

use super::ImportError;

/// One entry of the file: its line, its JSON as written, and the kit's reading of it.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEntry {
    /// 1-based line of the file.
    pub line: usize,
    pub value: Value,
    /// The entry as the kit models it, or why it cannot (an unknown type, a missing field).
    pub entry: Result<SessionEntry, String>,
}

impl FileEntry {
    pub fn id(&self) -> Option<&str> {
        self.value.get("id").and_then(Value::as_str)
    }

    /// `Some(None)` for a root, `None` when `parentId` is missing or not a string or null.
    pub fn parent_id(&self) -> Option<Option<&str>> {
        match self.value.get("parentId") {
            Some(Value::String(parent)) => Some(Some(parent.as_str())),
            Some(Value::Null) => Some(None),
            _ => None,
        }
    }

    pub fn kind(&self) -> &str {
        self.value.get("type").and_then(Value::as_str).unwrap_or("-")
    }

    /// The message's `role`, for a `message` entry.
    pub fn role(&self) -> Option<&str> {
        self.value.get("message")?.get("role")?.as_str()
    }
}

/// A session file read: every entry in file order and what `check-session` reports of it.
#[derive(Debug, Clone)]
pub struct SessionRead {
    /// The header's `timestamp`, when line 1 is a header.
    pub header_timestamp: Option<String>,
    /// Every record but the header, in file order (a torn last line is not one).
    pub entries: Vec<FileEntry>,
    pub damage: Vec<SessionFinding>,
    /// The first line of a message written in aelix's own form (read as pi-ai's), if any.
    pub aelix_form_line: Option<usize>,
}

/// Reads a session file as `check-session` does: bad input when it is not a session file at
/// all (at its line), its damage otherwise.
pub fn read_session_file(file: &Path) -> Result<SessionRead, ImportError> {
    let whole_file = |code: &'static str, message: String| ImportError::new(file, None, "-", code, message);
    match std::fs::metadata(file) {
        Ok(metadata) if !metadata.is_file() => {
            return Err(whole_file(
                "session.read",
                format!(
                    "not a regular file but {}: import reads a session file",
                    crate::scenario::kind_of(&metadata.file_type())
                ),
            ))
        }
        Ok(_) => {}
        Err(error) => return Err(whole_file("session.read", format!("cannot read: {error}"))),
    }
    let opened =
        std::fs::File::open(file).map_err(|error| whole_file("session.read", format!("cannot read: {error}")))?;
    let parsed = parse_session_from(BufReader::new(opened), Limits::default()).map_err(|error| {
        let message = error.to_string();
        let message = match error.line() {
            Some(line) => message
                .strip_prefix(&format!("line {line}: "))
                .unwrap_or(&message)
                .to_string(),
            None => message,
        };
        ImportError::new(file, error.line(), "-", error.code(), message)
    })?;
    let damage = check_session(&parsed);
    let header_timestamp = parsed
        .header
        .as_ref()
        .and_then(|header| header.value.get("timestamp"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut aelix_form_line = None;
    let entries = parsed
        .records
        .into_iter()
        .filter(|record| record.kind() != Some("session"))
        .map(|mut record| {
            if super::aelix::pi_form(&mut record.value) {
                aelix_form_line.get_or_insert(record.line);
            }
            let entry = match &record.value {
                Value::Object(object) => SessionEntry::from_object(object.clone()),
                _ => Err("not a JSON object".to_string()),
            };
            FileEntry {
                line: record.line,
                value: record.value,
                entry,
            }
        })
        .collect();
    Ok(SessionRead {
        header_timestamp,
        entries,
        damage,
        aelix_form_line,
    })
}

/// The chosen path, root first, as indices into `SessionRead::entries`, and the notes its walk
/// made (a duplicate id on the path, a parent no entry has).
pub(super) struct ChosenPath {
    pub indices: Vec<usize>,
    pub notes: Vec<super::ImportNote>,
}

/// The path from the root (or the first entry whose parent is missing) to `leaf` (default: the
/// file's last entry with an id). An id held by several entries names the last of them, as Pi's
/// session manager reads a file; a parent chain that loops is an error at the line it loops on.
pub(super) fn chosen_path(file: &Path, session: &SessionRead, leaf: Option<&str>) -> Result<ChosenPath, ImportError> {
    let mut last_by_id: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, entry) in session.entries.iter().enumerate() {
        if let Some(id) = entry.id() {
            last_by_id.insert(id, index);
        }
    }
    let start = match leaf {
        Some(leaf) => *last_by_id.get(leaf).ok_or_else(|| {
            ImportError::new(
                file,
                None,
                "--leaf",
                "import.unknown_leaf",
                format!("no entry of the file has id `{}`", printable(leaf)),
            )
        })?,
        // The file's own leaf: its last entry, or what an aelix `leaf` entry names.
        None => match super::aelix::leaf_after(&session.entries) {
            Some(Some(leaf)) => *last_by_id.get(leaf).ok_or_else(|| {
                ImportError::new(
                    file,
                    None,
                    "targetId",
                    "import.unknown_leaf",
                    format!(
                        "the file's last `leaf` entry names `{}`, which no entry has",
                        printable(leaf)
                    ),
                )
            })?,
            Some(None) => {
                return Err(ImportError::new(
                    file,
                    None,
                    "targetId",
                    "import.null_leaf",
                    "the file's last `leaf` entry names no leaf: there is no path to replay (give --leaf)",
                ))
            }
            None => {
                return Err(ImportError::new(
                    file,
                    None,
                    "-",
                    "import.no_entries",
                    "the file holds no entry with an id: there is no path to replay",
                ))
            }
        },
    };
    let mut notes = Vec::new();
    let mut indices = vec![start];
    let mut on_path: std::collections::BTreeSet<usize> = std::collections::BTreeSet::from([start]);
    let mut current = start;
    loop {
        let entry = &session.entries[current];
        let parent = match entry.parent_id() {
            Some(Some(parent)) => parent,
            Some(None) => break,
            None => {
                notes.push(super::ImportNote {
                    line: entry.line,
                    field: "parentId".into(),
                    message: "missing or neither a string nor null: the path starts here".into(),
                });
                break;
            }
        };
        let Some(&parent_index) = last_by_id.get(parent) else {
            notes.push(super::ImportNote {
                line: entry.line,
                field: "parentId".into(),
                message: format!(
                    "names `{}`, which no entry of the file has: the path starts here",
                    printable(parent)
                ),
            });
            break;
        };
        if on_path.contains(&parent_index) {
            return Err(ImportError::new(
                file,
                Some(entry.line),
                "parentId",
                "import.cycle",
                format!(
                    "the parent chain from the leaf loops: `{}` is already on it (line {})",
                    printable(parent),
                    session.entries[parent_index].line
                ),
            ));
        }
        let duplicates = session
            .entries
            .iter()
            .filter(|other| other.id() == Some(parent))
            .count();
        if duplicates > 1 {
            notes.push(super::ImportNote {
                line: session.entries[parent_index].line,
                field: "id".into(),
                message: format!(
                    "`{}` is the id of {duplicates} entries: the path takes the last, as Pi reads a file",
                    printable(parent)
                ),
            });
        }
        on_path.insert(parent_index);
        indices.push(parent_index);
        current = parent_index;
    }
    indices.reverse();
    Ok(ChosenPath { indices, notes })
}
