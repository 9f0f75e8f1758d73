//! The shapes of the lines an adapter writes, as data: where a malformed line is wrong and what
//! was expected there.
//!
//! `wire`'s serde types decide whether a line is accepted; when they refuse one, their error
//! names no path inside Pi's tagged shapes (a message without `role` is "missing field `role`",
//! somewhere). [`check_adapter_message`] walks the same line against the tables below and names
//! the first problem: its JSON path (`effect.entry.message.content[0].type`), what was expected
//! there (`one of "text", "image"`) and what was found. The tables mirror the serde types field
//! for field (which fields are required, optional or nullable, which objects are closed to
//! unknown fields), and `tests/fixtures/protocol/lines.json` pins both to the same answers; the
//! JavaScript and Python SDKs hold the same tables, written the same way, and their test suites
//! read the same fixture file, so the three cannot drift apart. The tables stay in one file,
//! `tables.rs`, as the serde types they mirror do; the shape language and the walk are here.
//!
//! Conventions, shared with the SDKs (docs/protocol.md, "Errors in adapter lines"):
//! - a path is keys joined by `.` with `[i]` for array items, from the line's top level;
//! - a missing field is reported at its own path, with what it should have been;
//! - an unknown field in a closed object is reported at its path, expected `no such field
//!   (fields: ...)` with the object's fields in declaration order;
//! - checks go: the value's kind, then the tag of a tagged object, then unknown fields in the
//!   order of the line, then the declared fields in declaration order.
//!
//! This module never decides acceptance (that is `wire`'s serde types) and never does IO.

mod tables;

use serde_json::Value;

pub(super) use tables::{ADAPTER_MESSAGE, CONTENT_BLOCK_SHAPE};

/// The newest protocol version this kit speaks (what `agentsim serve` says in `hello`).
pub const PROTOCOL_VERSION: u32 = 2;

/// Every version the kit accepts in `hello`: version 1 runs one scenario per process; version 2
/// adds `reset` (many scenarios on one process) and observer notifications.
pub const PROTOCOL_VERSIONS: &[u32] = &[1, 2];

/// Where a line first departs from its shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError {
    /// The stable code of the line's error: `wire.malformed`, `wire.unknown_type`,
    /// `wire.unknown_effect_kind` or `wire.version` (`LineError::code`).
    pub code: &'static str,
    /// The JSON path of the bad value (or of the missing or unknown field).
    pub path: String,
    /// What the shape wants there, in the wording the SDKs share.
    pub expected: String,
    /// What the line has there, for people (not compared by the fixtures).
    pub got: String,
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: expected {}, got {}", self.path, self.expected, self.got)
    }
}

/// The first place `message` (an adapter line, parsed) departs from its shape; `None` if it fits.
pub fn check_adapter_message(message: &Value) -> Option<ShapeError> {
    check(&ADAPTER_MESSAGE, message, &At::Root).err()
}

/// What a line is about, for a verdict: `effect append fx#6`, `settlement of op#1`, or the
/// message type (`started`); as much of it as the line lets one read.
pub fn describe_subject(message: &Value) -> String {
    let type_name = message.get("type").and_then(Value::as_str).unwrap_or("line");
    match type_name {
        "effect" => {
            let effect = message.get("effect");
            let kind = effect.and_then(|effect| effect.get("kind")).and_then(Value::as_str);
            let id = effect.and_then(|effect| effect.get("id")).and_then(Value::as_u64);
            let mut text = String::from("effect");
            if let Some(kind) = kind {
                text.push(' ');
                text.extend(kind.chars().take(NAME_CHARS_MAX));
            }
            if let Some(id) = id {
                text.push_str(&format!(" fx#{id}"));
            }
            text
        }
        "settled" => match message.get("op").and_then(Value::as_u64) {
            Some(op) => format!("settlement of op#{op}"),
            None => "settlement".to_string(),
        },
        other => format!("`{}`", other.chars().take(NAME_CHARS_MAX).collect::<String>()),
    }
}

/// How much of a kind or type name a subject quotes.
const NAME_CHARS_MAX: usize = 40;

// ---------------------------------------------------------------------------------------------
// The shape language
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
pub(super) enum Shape {
    Str,
    Bool,
    /// `u32`.
    U32,
    /// `u64` or `usize`.
    U64,
    /// `f64`: any JSON number.
    Number,
    /// Any JSON value, `null` included.
    Any,
    Nullable(&'static Shape),
    Array(&'static Shape),
    /// An object whose values are all strings (`hello.unsupported`).
    StrMap,
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// `hello.protocol`: a version this kit speaks (`wire.version` otherwise, even when missing).
    Version,
    /// A user message's content: a string, or an array of content blocks.
    UserContent,
    Record(&'static Record),
    Tagged(&'static Tagged),
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Presence {
    Required,
    /// May be absent (serde: `Option` or `#[serde(default)]`).
    Optional,
}

#[derive(Clone, Copy)]
pub(super) struct Field {
    pub(super) name: &'static str,
    pub(super) shape: Shape,
    presence: Presence,
}

/// An object with these fields. A closed one (serde's `deny_unknown_fields`) refuses others.
pub(super) struct Record {
    pub(super) fields: &'static [Field],
    closed: bool,
}

/// An object whose `tag` field names its variant.
pub(super) struct Tagged {
    pub(super) tag: &'static str,
    pub(super) variants: &'static [(&'static str, Record)],
    /// The code when the tag is present but names no variant.
    unknown_code: &'static str,
    /// The code when the tag is missing.
    missing_code: &'static str,
}

const fn req(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        presence: Presence::Required,
    }
}

const fn opt(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        presence: Presence::Optional,
    }
}

const fn closed(fields: &'static [Field]) -> Record {
    Record { fields, closed: true }
}

const fn open(fields: &'static [Field]) -> Record {
    Record { fields, closed: false }
}

const MALFORMED: &str = "wire.malformed";

const fn tagged(tag: &'static str, variants: &'static [(&'static str, Record)]) -> Tagged {
    Tagged {
        tag,
        variants,
        unknown_code: MALFORMED,
        missing_code: MALFORMED,
    }
}

// ---------------------------------------------------------------------------------------------
// The walk
// ---------------------------------------------------------------------------------------------

/// A path, built on the stack as the walk descends and rendered only for an error.
enum At<'a> {
    Root,
    Key(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl At<'_> {
    fn render(&self) -> String {
        match self {
            At::Root => String::new(),
            At::Key(parent, key) => match parent.render() {
                prefix if prefix.is_empty() => key.to_string(),
                prefix => format!("{prefix}.{key}"),
            },
            At::Index(parent, index) => format!("{}[{index}]", parent.render()),
        }
    }
}

fn fail(code: &'static str, at: &At<'_>, expected: String, got: String) -> Result<(), ShapeError> {
    Err(ShapeError {
        code,
        path: at.render(),
        expected,
        got,
    })
}

const MISSING: &str = "nothing (the field is missing)";

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(text) => crate::trace::quote_short(text),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("\"{name}\"")).collect();
    format!("one of {}", quoted.join(", "))
}

/// What `shape` wants, in the SDKs' shared wording.
fn expected(shape: &Shape) -> String {
    match shape {
        Shape::Str => "a string".into(),
        Shape::Bool => "a boolean".into(),
        Shape::U32 => "an integer from 0 to 4294967295".into(),
        Shape::U64 => "a non-negative integer".into(),
        Shape::Number => "a number".into(),
        Shape::Any => "any JSON value".into(),
        Shape::Nullable(inner) => format!("{} or null", expected(inner)),
        Shape::Array(_) => "an array".into(),
        Shape::StrMap | Shape::Record(_) | Shape::Tagged(_) => "an object".into(),
        Shape::Enum(names) => one_of(names),
        Shape::Version => format!(
            "one of {}",
            PROTOCOL_VERSIONS
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Shape::UserContent => "a string or an array".into(),
    }
}

fn check(tagged: &'static Tagged, value: &Value, at: &At<'_>) -> Result<(), ShapeError> {
    check_shape(&Shape::Tagged(tagged), value, at)
}

fn check_shape(shape: &Shape, value: &Value, at: &At<'_>) -> Result<(), ShapeError> {
    let wrong = || fail(MALFORMED, at, expected(shape), describe(value));
    match shape {
        Shape::Str if value.is_string() => Ok(()),
        Shape::Bool if value.is_boolean() => Ok(()),
        Shape::Number if value.is_number() => Ok(()),
        Shape::Str | Shape::Bool | Shape::Number => wrong(),
        Shape::U32 => match value.as_u64() {
            Some(number) if number <= u64::from(u32::MAX) => Ok(()),
            _ => wrong(),
        },
        Shape::U64 => match value.as_u64() {
            Some(_) => Ok(()),
            None => wrong(),
        },
        Shape::Any => Ok(()),
        Shape::Nullable(inner) => match value {
            Value::Null => Ok(()),
            // The inner shape's own complaint names a deeper path; a wrong kind here is ours.
            _ => check_shape(inner, value, at).map_err(|mut error| {
                if error.path == at.render() {
                    error.expected = expected(shape);
                }
                error
            }),
        },
        Shape::Array(item) => {
            let Value::Array(items) = value else { return wrong() };
            for (index, element) in items.iter().enumerate() {
                check_shape(item, element, &At::Index(at, index))?;
            }
            Ok(())
        }
        Shape::StrMap => {
            let Value::Object(object) = value else { return wrong() };
            for (key, element) in object {
                check_shape(&Shape::Str, element, &At::Key(at, key))?;
            }
            Ok(())
        }
        Shape::Enum(names) => match value.as_str() {
            Some(name) if names.contains(&name) => Ok(()),
            _ => wrong(),
        },
        Shape::Version => match value.as_u64() {
            Some(version) if PROTOCOL_VERSIONS.iter().any(|known| u64::from(*known) == version) => Ok(()),
            _ => fail("wire.version", at, expected(shape), describe(value)),
        },
        Shape::UserContent => match value {
            Value::String(_) => Ok(()),
            Value::Array(_) => check_shape(&Shape::Array(&CONTENT_BLOCK_SHAPE), value, at),
            _ => wrong(),
        },
        Shape::Record(record) => {
            if !value.is_object() {
                return wrong();
            }
            check_record(record, None, value, at)
        }
        Shape::Tagged(tagged) => {
            let Value::Object(object) = value else { return wrong() };
            let tag_at = At::Key(at, tagged.tag);
            let names: Vec<&str> = tagged.variants.iter().map(|(name, _)| *name).collect();
            let Some(tag) = object.get(tagged.tag) else {
                return fail(tagged.missing_code, &tag_at, one_of(&names), MISSING.into());
            };
            let variant = tag
                .as_str()
                .and_then(|name| tagged.variants.iter().find(|(known, _)| *known == name));
            let Some((_, record)) = variant else {
                return fail(tagged.unknown_code, &tag_at, one_of(&names), describe(tag));
            };
            check_record(record, Some(tagged.tag), value, at)
        }
    }
}

fn check_record(record: &Record, tag: Option<&str>, value: &Value, at: &At<'_>) -> Result<(), ShapeError> {
    let Value::Object(object) = value else {
        unreachable!("callers check the kind first")
    };
    if record.closed {
        for (key, element) in object {
            if Some(key.as_str()) == tag || record.fields.iter().any(|field| field.name == key) {
                continue;
            }
            let names: Vec<&str> = tag
                .into_iter()
                .chain(record.fields.iter().map(|field| field.name))
                .collect();
            let fields = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            return fail(
                MALFORMED,
                &At::Key(at, key),
                format!("no such field (fields: {fields})"),
                describe(element),
            );
        }
    }
    for field in record.fields {
        let field_at = At::Key(at, field.name);
        match object.get(field.name) {
            Some(element) => check_shape(&field.shape, element, &field_at)?,
            None if field.presence == Presence::Optional => {}
            None => {
                let code = match field.shape {
                    Shape::Version => "wire.version",
                    _ => MALFORMED,
                };
                return fail(code, &field_at, expected(&field.shape), MISSING.into());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_without_role_names_the_path_and_the_roles() {
        let line = json!({"type":"effect","effect":{"kind":"append","id":6,"entry":{
            "type":"message","id":"entry-1","parentId":null,"timestamp":"t",
            "message":{"content":"hi","timestamp":1}}}});
        let error = check_adapter_message(&line).expect("a message needs a role");
        assert_eq!(error.code, "wire.malformed");
        assert_eq!(error.path, "effect.entry.message.role");
        assert_eq!(error.expected, r#"one of "user", "assistant", "toolResult""#);
        assert_eq!(describe_subject(&line), "effect append fx#6");
    }

    #[test]
    fn nullable_keeps_the_deeper_path_of_its_inner_shape() {
        let line = json!({"type":"effect","effect":{"kind":"hook","id":2,"extension":"x","phase":"after",
            "call":{"id":"c","name":"n","arguments":{}},
            "result":{"toolCallId":"c","toolName":"n","content":[{"type":"txt"}],"isError":false,"timestamp":0}}});
        let error = check_adapter_message(&line).expect("a bad block");
        assert_eq!(error.path, "effect.result.content[0].type");
        let line = json!({"type":"effect","effect":{"kind":"hook","id":2,"extension":"x","phase":"after",
            "call":{"id":"c","name":"n","arguments":{}},"result":"done"}});
        let error = check_adapter_message(&line).expect("a string is no tool result");
        assert_eq!(
            (error.path.as_str(), error.expected.as_str()),
            ("effect.result", "an object or null")
        );
    }
}
