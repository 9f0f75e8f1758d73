//! A Pi session file (JSONL): parsing it read-only with line numbers, and the append-only
//! [`FileStore`] over a [`Disk`].
//!
//! The file is one JSON object per `\n`-terminated line: the header `{"type":"session",...}` on
//! line 1, then one entry per line in append order (PI-FACTS.md). An append is acknowledged only
//! once its whole line, newline included, has been written, so a last line without its newline
//! is a write cut short by a crash: a [`TornTail`]. It is reported, kept out of the session, and
//! cut off before the next append, never merged with it.
//!
//! Reading (`read_session`, behind [`parse_session_from`] and `check::check_session_from`)
//! rejects what is not a session file at all ([`SessionFileError`]: not UTF-8, not JSON, a line
//! over the byte limit, no Pi record anywhere, empty) and accepts everything else as raw JSON,
//! however broken the tree: judging a session is `store::check`'s business. A lone surrogate
//! escape (`"\ud800"`, which JavaScript's `JSON.stringify` writes for half of a split emoji) is
//! read as U+FFFD rather than refused, so real Pi files can be judged. Lines are read through a
//! bounded reader, one at a time, so a huge line is measured and rejected without being held
//! whole, and a caller that keeps only each line's facts holds none of the file's text.
//! Nothing here panics on any input.

use std::io::{self, BufRead};
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{SessionEntry, SessionHeader};

use super::disk::Disk;
use super::facts::LineFacts;
pub use super::facts::PI_ENTRY_TYPES;

/// The longest line accepted by default: 16 MiB (a message with a large tool result fits).
pub const LINE_BYTES_MAX_DEFAULT: usize = 16 * 1024 * 1024;

/// Bounds on what parsing accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest accepted line in bytes, without its newline.
    pub line_bytes_max: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            line_bytes_max: LINE_BYTES_MAX_DEFAULT,
        }
    }
}

/// One complete line of the file, parsed as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1-based line number.
    pub line: usize,
    pub value: Value,
    /// Where the line's bytes are in the file, without its newline.
    pub bytes: Range<u64>,
}

impl Record {
    /// The record's `type` when it is a string.
    pub fn kind(&self) -> Option<&str> {
        self.value.get("type").and_then(Value::as_str)
    }
}

/// The last line of the file when it lacks its terminating `\n`: a write cut short. When
/// [`FileStore::open`] recovers a file, also the damaged lines from the first one that does
/// not parse to the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TornTail {
    /// 1-based line number.
    pub line: usize,
    /// Where the torn line starts: the length the file is truncated to.
    pub offset: u64,
    /// How many bytes the torn line holds.
    pub bytes: u64,
}

/// A session file read as raw JSON records.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSession {
    /// Line 1 when it is a `{"type":"session"}` object.
    pub header: Option<Record>,
    /// Every other complete, non-blank line in file order (a misplaced header included).
    pub records: Vec<Record>,
    pub torn: Option<TornTail>,
}

/// Why bytes are not a Pi session file. Each variant has a stable [`code`](Self::code); the
/// message starts with `line N: ` when a line is to blame, and the caller adds the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionFileError {
    #[error("the file is empty or blank: a Pi session file starts with a header line")]
    Empty,
    #[error("line {line}: not valid UTF-8 at byte {column} of the line")]
    NotUtf8 { line: usize, column: usize },
    #[error("line {line}: not JSON at column {column}: {message}")]
    NotJson {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("line {line}: {bytes} bytes, over the limit of {limit} bytes per line")]
    LineTooLong { line: usize, bytes: u64, limit: usize },
    #[error("line {line}: not a Pi session: no line is a Pi session record; line {line} is {reason}")]
    NotPiSession { line: usize, reason: String },
    #[error("cannot read: {message}")]
    Read { message: String },
}

impl SessionFileError {
    pub fn code(&self) -> &'static str {
        match self {
            SessionFileError::Empty => "session.empty",
            SessionFileError::NotUtf8 { .. } => "session.not_utf8",
            SessionFileError::NotJson { .. } => "session.not_jsonl",
            SessionFileError::LineTooLong { .. } => "session.line_too_long",
            SessionFileError::NotPiSession { .. } => "session.not_pi",
            SessionFileError::Read { .. } => "session.read",
        }
    }

    /// The 1-based line the problem is on, when there is one.
    pub fn line(&self) -> Option<usize> {
        match self {
            SessionFileError::NotUtf8 { line, .. }
            | SessionFileError::NotJson { line, .. }
            | SessionFileError::LineTooLong { line, .. }
            | SessionFileError::NotPiSession { line, .. } => Some(*line),
            SessionFileError::Empty | SessionFileError::Read { .. } => None,
        }
    }
}

/// Parses a whole session file held in memory.
pub fn parse_session(bytes: &[u8], limits: Limits) -> Result<ParsedSession, SessionFileError> {
    parse_session_from(bytes, limits)
}

/// Parses a session file from a reader, holding at most `limits.line_bytes_max` bytes of any
/// one line.
pub fn parse_session_from(reader: impl BufRead, limits: Limits) -> Result<ParsedSession, SessionFileError> {
    let mut parsed = ParsedSession {
        header: None,
        records: Vec::new(),
        torn: None,
    };
    parsed.torn = read_session(reader, limits, Keep::Values, |line| {
        let record = Record {
            line: line.line,
            // Every line's value is kept under `Keep::Values`.
            value: line.value.unwrap_or(Value::Null),
            bytes: line.bytes,
        };
        if line.is_header {
            parsed.header = Some(record);
        } else {
            parsed.records.push(record);
        }
    })?;
    Ok(parsed)
}

/// Whether a JSON value looks like a line Pi writes: the header, an entry of a known type, or an
/// entry of a type Pi may add later (a string `type` with an `id` and a `parentId`).
pub fn is_pi_record(value: &Value) -> bool {
    LineFacts::of_value(value).is_pi_record()
}

/// What [`read_session`] keeps of each line besides its [`LineFacts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// The whole JSON value of every line.
    Values,
    /// Only the header's value (line 1, when it is a `session` record): the text of the other
    /// lines is dropped as soon as their facts are read.
    Facts,
}

/// One complete, non-blank line of a session file, read.
pub(crate) struct ReadLine {
    /// 1-based line number.
    pub line: usize,
    /// Where the line's bytes are in the file, without its newline.
    pub bytes: Range<u64>,
    pub facts: LineFacts,
    /// The line's value, under [`Keep::Values`] or when the line is the header.
    pub value: Option<Value>,
    /// Line 1 and a `{"type":"session"}` object.
    pub is_header: bool,
}

/// Reads a session file line by line, handing each complete, non-blank line to `each` as soon
/// as it is read, and decides what is not a session file at all; returns the torn last line.
///
/// It holds one line at a time (at most `limits.line_bytes_max` bytes of it), so what the
/// caller keeps is all the memory a file costs. A torn last line is judged only when it is all
/// the file holds: then it is the only evidence of what kind of file this is.
pub(crate) fn read_session(
    mut reader: impl BufRead,
    limits: Limits,
    keep: Keep,
    mut each: impl FnMut(ReadLine),
) -> Result<Option<TornTail>, SessionFileError> {
    let mut line_bytes = Vec::new();
    let mut offset: u64 = 0;
    let mut line: usize = 0;
    let mut first_content_line: Option<usize> = None;
    let mut torn = None;
    let mut header_seen = false;
    // For a file without a header: the first record's line and what it is, and whether any
    // record is one Pi writes.
    let mut first_record: Option<(usize, String)> = None;
    let mut pi_record_seen = false;
    loop {
        let read = read_line_bounded(&mut reader, limits.line_bytes_max, &mut line_bytes).map_err(|error| {
            SessionFileError::Read {
                message: error.to_string(),
            }
        })?;
        let (size, terminated) = match read {
            LineRead::End => break,
            LineRead::TooLong { size } => {
                return Err(SessionFileError::LineTooLong {
                    line: line + 1,
                    bytes: size,
                    limit: limits.line_bytes_max,
                })
            }
            LineRead::Line { size, terminated } => (size, terminated),
        };
        line += 1;
        let start = offset;
        offset += size + u64::from(terminated);
        let blank = line_bytes.iter().all(u8::is_ascii_whitespace);
        if !terminated {
            torn = Some(TornTail {
                line,
                offset: start,
                bytes: size,
            });
            if first_content_line.is_none() && !blank {
                let facts: LineFacts = parse_line(&line_bytes, line, true)?;
                if !facts.is_pi_record() {
                    return Err(SessionFileError::NotPiSession {
                        line,
                        reason: facts.not_pi_reason(),
                    });
                }
                first_content_line = Some(line);
            }
            break;
        }
        if blank {
            continue;
        }
        let first = first_content_line.is_none();
        let (facts, value) = if keep == Keep::Values || line == 1 {
            let value: Value = parse_line(&line_bytes, line, first)?;
            (LineFacts::of_value(&value), Some(value))
        } else {
            (parse_line::<LineFacts>(&line_bytes, line, first)?, None)
        };
        first_content_line.get_or_insert(line);
        let is_header = line == 1 && facts.kind() == Some("session");
        if is_header {
            header_seen = true;
        } else {
            pi_record_seen |= facts.is_pi_record();
            if first_record.is_none() {
                first_record = Some((line, facts.not_pi_reason()));
            }
        }
        let value = if keep == Keep::Values || is_header { value } else { None };
        each(ReadLine {
            line,
            bytes: start..start + size,
            facts,
            value,
            is_header,
        });
    }
    if first_content_line.is_none() {
        return Err(SessionFileError::Empty);
    }
    if let (false, false, Some((line, reason))) = (header_seen, pi_record_seen, first_record) {
        return Err(SessionFileError::NotPiSession { line, reason });
    }
    Ok(torn)
}

/// One line as JSON. On the file's first content line, an unfinished `{` or `[` is a JSON
/// document spread over several lines (a package.json), reported as not a Pi session.
fn parse_line<T: DeserializeOwned>(bytes: &[u8], line: usize, first_content_line: bool) -> Result<T, SessionFileError> {
    let text = std::str::from_utf8(bytes).map_err(|error| SessionFileError::NotUtf8 {
        line,
        column: error.valid_up_to() + 1,
    })?;
    let parsed = serde_json::from_str(text).or_else(|error| {
        // JavaScript's JSON.stringify writes a lone surrogate (`"\ud800"`, half of a split
        // emoji) as an escape that strict JSON refuses. Pi writes such lines, so they are read
        // with each lone surrogate as U+FFFD: the checks judge ids and the tree, never text.
        match repair_lone_surrogates(text) {
            Some(repaired) => serde_json::from_str(&repaired).map_err(|_| error),
            None => Err(error),
        }
    });
    parsed.map_err(|error| {
        let opens_document = matches!(text.trim_start().as_bytes().first(), Some(b'{' | b'['));
        if first_content_line && error.is_eof() && opens_document {
            return SessionFileError::NotPiSession {
                line,
                reason: "the start of a JSON document spread over several lines (like package.json), \
                         not one record per line"
                    .to_string(),
            };
        }
        SessionFileError::NotJson {
            line,
            column: error.column(),
            message: strip_position(&error.to_string()),
        }
    })
}

/// `text` with every lone surrogate escape (`\\uD800`-`\\uDFFF` not in a valid pair) replaced
/// by `\\uFFFD`; `None` when there is none. Linear in the text.
fn repair_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let escape_at = |at: usize| -> Option<u32> {
        let digits = bytes.get(at + 2..at + 6)?;
        if bytes.get(at) != Some(&b'\\') || bytes.get(at + 1) != Some(&b'u') {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let mut repaired = String::with_capacity(text.len());
    let mut changed = false;
    let mut copied_to = 0;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        match escape_at(at) {
            Some(0xD800..=0xDBFF) if matches!(escape_at(at + 6), Some(0xDC00..=0xDFFF)) => {
                at += 12;
            }
            Some(0xD800..=0xDFFF) => {
                repaired.push_str(&text[copied_to..at]);
                repaired.push_str("\\uFFFD");
                changed = true;
                at += 6;
                copied_to = at;
            }
            // Any other escape: skip the backslash and the escaped character.
            _ => at += 2,
        }
    }
    if !changed {
        return None;
    }
    repaired.push_str(&text[copied_to.min(text.len())..]);
    Some(repaired)
}

/// serde_json's message without its ` at line L column C` suffix (the line is the file's, not
/// the one-line document's).
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_string(),
        None => message.to_string(),
    }
}

enum LineRead {
    End,
    /// A line of `size` bytes (without its newline) is in the buffer.
    Line {
        size: u64,
        terminated: bool,
    },
    /// A line over the limit was consumed and measured, not kept.
    TooLong {
        size: u64,
    },
}

/// Reads up to and including the next `\n`, keeping at most `limit` bytes in `buffer`.
fn read_line_bounded(reader: &mut impl BufRead, limit: usize, buffer: &mut Vec<u8>) -> io::Result<LineRead> {
    buffer.clear();
    let mut size: u64 = 0;
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if available.is_empty() {
            return Ok(match (size, too_long) {
                (0, _) => LineRead::End,
                (_, true) => LineRead::TooLong { size },
                (_, false) => LineRead::Line {
                    size,
                    terminated: false,
                },
            });
        }
        let newline = available.iter().position(|byte| *byte == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        size += chunk.len() as u64;
        if !too_long {
            if buffer.len() + chunk.len() > limit {
                too_long = true;
                buffer.clear();
            } else {
                buffer.extend_from_slice(chunk);
            }
        }
        let consumed = chunk.len() + usize::from(newline.is_some());
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(if too_long {
                LineRead::TooLong { size }
            } else {
                LineRead::Line { size, terminated: true }
            });
        }
    }
}

/// When appends become durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SyncPolicy {
    /// `fsync` after every append (and the directory after creating): an acknowledged entry
    /// survives a crash.
    #[default]
    EveryAppend,
    /// Never `fsync`: the operating system decides, and a crash may lose acknowledged entries.
    None,
}

impl SyncPolicy {
    fn syncs(self) -> bool {
        self == SyncPolicy::EveryAppend
    }
}

/// Why the file store could not do what it was asked. Each variant has a stable `code()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("{}: {operation}: {source}", path.display())]
    Io {
        path: PathBuf,
        operation: &'static str,
        source: io::Error,
    },
    #[error("{}: cannot create: the file exists", path.display())]
    Exists { path: PathBuf },
    #[error("{}: cannot open: no such file", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: SessionFileError },
    #[error("{}: line {line}: header: {message}", path.display())]
    Header {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: line {line}: entry: {message}", path.display())]
    Entry {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: cannot encode the entry: {message}", path.display())]
    Encode { path: PathBuf, message: String },
}

impl StoreError {
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Io { .. } => "store.io",
            StoreError::Exists { .. } => "store.exists",
            StoreError::NotFound { .. } => "store.not_found",
            StoreError::File { source, .. } => source.code(),
            StoreError::Header { .. } => "store.bad_header",
            StoreError::Entry { .. } => "store.bad_entry",
            StoreError::Encode { .. } => "store.encode",
        }
    }
}

/// What [`FileStore::open`] found in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    /// `None` when line 1 is not a header (the file was recreated without it).
    pub header: Option<SessionHeader>,
    pub entries: Vec<SessionEntry>,
    /// The torn last line, already cut off the file.
    pub torn: Option<TornTail>,
}

/// An append-only Pi session file.
///
/// `create` writes the header; `open` reads an existing file and cuts off a torn tail; `append`
/// writes exactly one `\n`-terminated line per entry in Pi's key order and syncs per
/// [`SyncPolicy`]. The store never validates the tree (parents, tool results): `store::check`
/// judges files, and the runtime decides what to append.
#[derive(Debug)]
pub struct FileStore<D: Disk> {
    disk: D,
    path: PathBuf,
    sync: SyncPolicy,
    entries: Vec<SessionEntry>,
}

impl<D: Disk> FileStore<D> {
    /// Creates a new session file holding `header`; fails when the file exists.
    pub fn create(
        disk: D,
        path: impl Into<PathBuf>,
        header: &SessionHeader,
        sync: SyncPolicy,
    ) -> Result<FileStore<D>, StoreError> {
        let path = path.into();
        let line = encode_line(&path, header)?;
        match disk.create_new(&path, &line, sync.syncs()) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => return Err(StoreError::Exists { path }),
            Err(source) => {
                return Err(StoreError::Io {
                    path,
                    operation: "cannot create",
                    source,
                })
            }
        }
        Ok(FileStore {
            disk,
            path,
            sync,
            entries: Vec::new(),
        })
    }

    /// Opens an existing session file: parses it, converts every entry, and cuts off a torn
    /// tail (never acknowledged) so that the next append starts on a line of its own.
    pub fn open(disk: D, path: impl Into<PathBuf>, sync: SyncPolicy) -> Result<(FileStore<D>, Opened), StoreError> {
        let path = path.into();
        let bytes = match disk.read(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(StoreError::NotFound { path }),
            Err(source) => {
                return Err(StoreError::Io {
                    path,
                    operation: "cannot read",
                    source,
                })
            }
        };
        // A crash without sync can persist some blocks of unsynced lines and not others, so a
        // damaged line may sit before complete ones. Recovery keeps the longest prefix of good
        // lines and cuts the rest, as it cuts a torn last line: nothing after the damage can
        // be trusted to be what was written.
        let (parsed, damaged) = match parse_session(&bytes, Limits::default()) {
            Ok(parsed) => (parsed, None),
            Err(SessionFileError::NotJson { line, .. } | SessionFileError::NotUtf8 { line, .. }) if line > 1 => {
                let offset = line_offset(&bytes, line);
                let tail = TornTail {
                    line,
                    offset,
                    bytes: bytes.len() as u64 - offset,
                };
                match parse_session(&bytes[..offset as usize], Limits::default()) {
                    Ok(parsed) => (parsed, Some(tail)),
                    Err(source) => return Err(StoreError::File { path, source }),
                }
            }
            Err(source) => return Err(StoreError::File { path, source }),
        };
        let mut parsed = parsed;
        if let Some(tail) = damaged {
            parsed.torn = Some(tail);
        }
        let header = match parsed.header {
            Some(record) => {
                Some(
                    serde_json::from_value::<SessionHeader>(record.value).map_err(|error| StoreError::Header {
                        path: path.clone(),
                        line: record.line,
                        message: error.to_string(),
                    })?,
                )
            }
            None => None,
        };
        let mut entries = Vec::with_capacity(parsed.records.len());
        for record in parsed.records {
            let entry = match record.value {
                Value::Object(object) => SessionEntry::from_object(object),
                _ => Err("not a JSON object".to_string()),
            };
            entries.push(entry.map_err(|message| StoreError::Entry {
                path: path.clone(),
                line: record.line,
                message,
            })?);
        }
        if let Some(torn) = parsed.torn {
            if let Err(source) = disk.truncate(&path, torn.offset, sync.syncs()) {
                return Err(StoreError::Io {
                    path,
                    operation: "cannot cut off the torn last line",
                    source,
                });
            }
        }
        let opened = Opened {
            header,
            entries: entries.clone(),
            torn: parsed.torn,
        };
        let store = FileStore {
            disk,
            path,
            sync,
            entries,
        };
        Ok((store, opened))
    }

    /// Appends one entry as one line; durable on return under [`SyncPolicy::EveryAppend`].
    pub fn append(&mut self, entry: &SessionEntry) -> Result<(), StoreError> {
        let line = encode_line(&self.path, entry)?;
        self.disk
            .append(&self.path, &line, self.sync.syncs())
            .map_err(|source| StoreError::Io {
                path: self.path.clone(),
                operation: "cannot append",
                source,
            })?;
        self.entries.push(entry.clone());
        Ok(())
    }

    /// Every entry of the file: those read by `open`, then those appended.
    pub fn entries(&self) -> &[SessionEntry] {
        &self.entries
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn sync_policy(&self) -> SyncPolicy {
        self.sync
    }

    /// From now on, sync per `sync` (a file provisioned durably, then served as configured).
    pub fn set_sync_policy(&mut self, sync: SyncPolicy) {
        self.sync = sync;
    }
}

/// One JSON line with its newline.
fn encode_line(path: &Path, value: &impl Serialize) -> Result<Vec<u8>, StoreError> {
    let mut line = serde_json::to_vec(value).map_err(|error| StoreError::Encode {
        path: path.to_path_buf(),
        message: error.to_string(),
    })?;
    line.push(b'\n');
    Ok(line)
}

/// The byte offset where 1-based `line` starts.
fn line_offset(bytes: &[u8], line: usize) -> u64 {
    if line <= 1 {
        return 0;
    }
    bytes
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .nth(line - 2)
        .map(|(index, _)| index as u64 + 1)
        .unwrap_or(bytes.len() as u64)
}
