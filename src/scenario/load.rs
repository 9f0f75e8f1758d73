//! Reading a scenario file: size and UTF-8 checks, strict parsing with the JSON path of the
//! first problem, and the error that names the file, line and field.

use std::path::{Path, PathBuf};

use crate::limits;

use super::locate::{self, line_of, render_path, Segment};
use super::validate::{validate, validate_limits, validate_session_keys};
use super::{LoadedScenario, Scenario};

/// A scenario file that could not be used. Always names the file, line and field. Displayed,
/// it is one line: control characters in any part are escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {}: {}", printable(&file.display().to_string()), printable(field), printable(message))]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: usize,
    /// The JSON path of the field, e.g. `operations[2].after`; `-` for the whole file.
    pub field: String,
    pub message: String,
}

impl ScenarioError {
    /// An error with its message fit to print ([`clip_message`]).
    pub fn new(file: &Path, line: usize, field: impl Into<String>, message: impl AsRef<str>) -> ScenarioError {
        ScenarioError {
            file: file.to_path_buf(),
            line,
            field: field.into(),
            message: clip_message(message.as_ref()),
        }
    }

    pub fn code(&self) -> &'static str {
        "scenario.invalid"
    }
}

/// Reads, parses and validates a scenario file. `known_rules` are the catalogue's IDs.
pub fn load(path: &Path, name: &str, known_rules: &[&str]) -> Result<LoadedScenario, ScenarioError> {
    // Lines are 1-based: a problem with the file as a whole is reported at its first line.
    let cannot_read = |message: String| ScenarioError::new(path, 1, "-", message);
    // Only a regular file is opened: a FIFO nobody writes would block, a device never end.
    let kind = std::fs::metadata(path)
        .map_err(|error| cannot_read(format!("cannot read: {error}")))?
        .file_type();
    if !kind.is_file() {
        return Err(cannot_read(format!(
            "not a regular file but {}: a scenario is a `*.json` file",
            super::kind_of(&kind)
        )));
    }
    let file = std::fs::File::open(path).map_err(|error| cannot_read(format!("cannot read: {error}")))?;
    // Read at most one byte over the limit, so that a huge file is refused without being held.
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, limits::FILE_BYTES_MAX + 1), &mut bytes)
        .map_err(|error| cannot_read(format!("cannot read: {error}")))?;
    if bytes.len() as u64 > limits::FILE_BYTES_MAX {
        return Err(cannot_read(format!(
            "the file is over the limit of {} bytes for a scenario",
            limits::FILE_BYTES_MAX
        )));
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        Err(error) => {
            let (line, field, message) = locate::invalid_utf8(&bytes, error);
            return Err(ScenarioError::new(path, line, field, message));
        }
    };
    let scenario = parse(path, text, known_rules)?;
    Ok(LoadedScenario {
        path: path.to_path_buf(),
        name: name.to_string(),
        scenario,
    })
}

/// Parses and validates scenario text.
pub fn parse(file: &Path, text: &str, known_rules: &[&str]) -> Result<Scenario, ScenarioError> {
    // Duplicate keys first, anywhere in a well-formed text: serde would keep the last value of
    // a free-form object (or of a session entry) and report something else, or nothing.
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
        if let Some((path, line, key)) = locate::find_duplicate_key(text) {
            return Err(ScenarioError::new(
                file,
                line,
                render_path(&path),
                format!("duplicate key `{key}`: every key may appear once per object"),
            ));
        }
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let scenario: Scenario = match serde_path_to_error::deserialize(&mut deserializer) {
        Ok(scenario) => scenario,
        Err(error) => {
            let mut segments = segments_of(error.path());
            let unknown_position = error
                .path()
                .iter()
                .any(|segment| matches!(segment, serde_path_to_error::Segment::Unknown));
            let inner = error.into_inner();
            let mut message = strip_position(&inner.to_string());
            let mut line = inner.line();
            let field = if inner.is_syntax() || inner.is_eof() || unknown_position {
                "-".to_string()
            } else {
                // An entry's own reader names the field inside the object: `field `x`: ...`;
                // a missing or repeated field is named by serde in its message.
                for (prefix, keep_prefix) in [
                    ("field `", false),
                    ("missing field `", true),
                    ("duplicate field `", true),
                ] {
                    let Some(rest) = message.strip_prefix(prefix) else {
                        continue;
                    };
                    let split = if keep_prefix {
                        rest.split_once('`')
                    } else {
                        rest.split_once("`: ")
                    };
                    if let Some((name, problem)) = split {
                        segments.push(Segment::Key(name.to_string()));
                        if !keep_prefix {
                            message = problem.to_string();
                        }
                    }
                    break;
                }
                line = line.min(line_of(text, &segments));
                let field = render_path(&segments);
                if field.is_empty() {
                    "-".to_string()
                } else {
                    field
                }
            };
            return Err(ScenarioError::new(file, line, field, message));
        }
    };
    if let Err(problem) = deserializer.end() {
        return Err(ScenarioError::new(
            file,
            problem.line(),
            "-",
            strip_position(&problem.to_string()),
        ));
    }
    let problem = validate_limits(&scenario)
        .and_then(|()| validate(&scenario, known_rules))
        .and_then(|()| validate_session_keys(text));
    problem.map_err(|(path, message)| ScenarioError::new(file, line_of(text, &path), render_path(&path), message))?;
    Ok(scenario)
}

fn segments_of(path: &serde_path_to_error::Path) -> Vec<Segment> {
    path.iter()
        .filter_map(|segment| match segment {
            serde_path_to_error::Segment::Seq { index } => Some(Segment::Index(*index)),
            serde_path_to_error::Segment::Map { key } => Some(Segment::Key(key.clone())),
            serde_path_to_error::Segment::Enum { variant } => Some(Segment::Key(variant.clone())),
            serde_path_to_error::Segment::Unknown => None,
        })
        .collect()
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// How many characters of quoted input (between backticks) a message keeps.
const QUOTED_CHARS_MAX: usize = 80;

/// How many characters a whole message keeps.
const MESSAGE_CHARS_MAX: usize = 1_000;

/// `text` with every control character escaped (`\n`, `\u{1b}`): printed, it stays on one line
/// and cannot repaint a terminal.
pub fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            c if c.is_control() => escaped.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => escaped.push(c),
        }
    }
    escaped
}

/// A message fit to print: quoted input (between backticks) cut after 80 characters, the
/// whole cut after 1,000, control characters escaped.
pub fn clip_message(message: &str) -> String {
    let mut clipped = String::new();
    for (index, piece) in message.split('`').enumerate() {
        if index > 0 {
            clipped.push('`');
        }
        if index % 2 == 1 && piece.chars().count() > QUOTED_CHARS_MAX {
            clipped.extend(piece.chars().take(QUOTED_CHARS_MAX));
            clipped.push('…');
        } else {
            clipped.push_str(piece);
        }
    }
    if clipped.chars().count() > MESSAGE_CHARS_MAX {
        clipped = clipped.chars().take(MESSAGE_CHARS_MAX).collect();
        clipped.push('…');
    }
    printable(&clipped)
}
