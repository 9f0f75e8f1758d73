//! Session entries in Pi's session-file shape: `{type, id, parentId, timestamp, ...}`.
//!
//! A session is a tree: every entry names its parent, and a leaf selects one branch. Only
//! `message` and `compaction` entries carry meaning for the runtime; the metadata kinds are kept
//! field for field so that a Pi file reads and writes back unchanged. This module is data only.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::message::Message;

/// One entry of a session tree.
///
/// Serialized field for field as Pi writes it: `{type, id, parentId, timestamp, ...}` for
/// messages and compactions; a metadata entry keeps the exact key order it was read with (Pi
/// writes `custom` as `{type, customType, data, id, parentId, timestamp}`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEntry {
    pub body: EntryBody,
    pub id: String,
    pub parent_id: Option<String>,
    /// ISO-8601 time as Pi writes it (`2026-01-01T00:00:00.000Z`).
    pub timestamp: String,
}

impl SessionEntry {
    pub fn message(
        id: impl Into<String>,
        parent_id: Option<&str>,
        timestamp: impl Into<String>,
        message: Message,
    ) -> SessionEntry {
        SessionEntry {
            body: EntryBody::Message { message },
            id: id.into(),
            parent_id: parent_id.map(str::to_string),
            timestamp: timestamp.into(),
        }
    }

    /// The entry's `type` as it appears in JSON.
    pub fn kind(&self) -> &'static str {
        self.body.kind()
    }

    pub fn as_message(&self) -> Option<&Message> {
        match &self.body {
            EntryBody::Message { message } => Some(message),
            _ => None,
        }
    }

    /// The entry as a JSON object, in Pi's key order.
    pub fn to_object(&self) -> Map<String, Value> {
        let mut object = Map::new();
        let identity = |object: &mut Map<String, Value>| {
            object.insert("id".into(), Value::String(self.id.clone()));
            object.insert(
                "parentId".into(),
                self.parent_id.clone().map(Value::String).unwrap_or(Value::Null),
            );
            object.insert("timestamp".into(), Value::String(self.timestamp.clone()));
        };
        object.insert("type".into(), Value::String(self.kind().into()));
        match &self.body {
            EntryBody::Message { message } => {
                identity(&mut object);
                object.insert(
                    "message".into(),
                    serde_json::to_value(message).expect("messages serialize"),
                );
            }
            EntryBody::Compaction(compaction) => {
                identity(&mut object);
                if let Value::Object(fields) = serde_json::to_value(compaction).expect("compactions serialize") {
                    object.extend(fields);
                }
            }
            EntryBody::BranchSummary(metadata)
            | EntryBody::ModelChange(metadata)
            | EntryBody::ThinkingLevelChange(metadata)
            | EntryBody::Custom(metadata)
            | EntryBody::CustomMessage(metadata)
            | EntryBody::Label(metadata)
            | EntryBody::SessionInfo(metadata) => {
                let placed = ["id", "parentId", "timestamp"]
                    .iter()
                    .all(|key| metadata.fields.contains_key(*key));
                if !placed {
                    identity(&mut object);
                }
                for (key, value) in &metadata.fields {
                    match key.as_str() {
                        "type" => {}
                        "id" | "parentId" | "timestamp" if placed => identity_field(&mut object, key, self),
                        "id" | "parentId" | "timestamp" => {}
                        _ => {
                            object.insert(key.clone(), value.clone());
                        }
                    }
                }
            }
        }
        object
    }

    /// Reads an entry from a JSON object; the error names the offending field.
    pub fn from_object(object: Map<String, Value>) -> Result<SessionEntry, String> {
        let text = |key: &str| -> Result<String, String> {
            match object.get(key) {
                Some(Value::String(text)) => Ok(text.clone()),
                Some(_) => Err(format!("field `{key}`: must be a string")),
                None => Err(format!("field `{key}`: missing")),
            }
        };
        let kind = text("type")?;
        let id = text("id")?;
        let timestamp = text("timestamp")?;
        let parent_id = match object.get("parentId") {
            Some(Value::String(parent)) => Some(parent.clone()),
            Some(Value::Null) => None,
            Some(_) => return Err("field `parentId`: must be a string or null".into()),
            None => return Err("field `parentId`: missing".into()),
        };
        // The object is spent on the body: moved, never copied.
        let mut object = object;
        let metadata = |object: Map<String, Value>| Metadata { fields: object };
        let body = match kind.as_str() {
            "message" => {
                let message = object.remove("message").ok_or("field `message`: missing")?;
                let message = serde_json::from_value(message).map_err(|error| format!("field `message`: {error}"))?;
                EntryBody::Message { message }
            }
            "compaction" => {
                for key in ["type", "id", "parentId", "timestamp"] {
                    object.shift_remove(key);
                }
                EntryBody::Compaction(
                    serde_json::from_value(Value::Object(object)).map_err(|error| format!("compaction: {error}"))?,
                )
            }
            "branch_summary" => EntryBody::BranchSummary(metadata(object)),
            "model_change" => EntryBody::ModelChange(metadata(object)),
            "thinking_level_change" => EntryBody::ThinkingLevelChange(metadata(object)),
            "custom" => EntryBody::Custom(metadata(object)),
            "custom_message" => EntryBody::CustomMessage(metadata(object)),
            "label" => EntryBody::Label(metadata(object)),
            "session_info" => EntryBody::SessionInfo(metadata(object)),
            other => return Err(format!("field `type`: unknown entry type `{other}`")),
        };
        Ok(SessionEntry {
            body,
            id,
            parent_id,
            timestamp,
        })
    }
}

fn identity_field(object: &mut Map<String, Value>, key: &str, entry: &SessionEntry) {
    let value = match key {
        "id" => Value::String(entry.id.clone()),
        "parentId" => entry.parent_id.clone().map(Value::String).unwrap_or(Value::Null),
        _ => Value::String(entry.timestamp.clone()),
    };
    object.insert(key.to_string(), value);
}

impl Serialize for SessionEntry {
    /// A message entry is written straight from its fields (the bytes `to_object` would give,
    /// without building the message as a `Value` first); every other kind through `to_object`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match &self.body {
            EntryBody::Message { message } => {
                let mut map = serializer.serialize_map(Some(5))?;
                map.serialize_entry("type", self.kind())?;
                map.serialize_entry("id", &self.id)?;
                map.serialize_entry("parentId", &self.parent_id)?;
                map.serialize_entry("timestamp", &self.timestamp)?;
                map.serialize_entry("message", message)?;
                map.end()
            }
            _ => self.to_object().serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for SessionEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<SessionEntry, D::Error> {
        let object = Map::<String, Value>::deserialize(deserializer)?;
        SessionEntry::from_object(object).map_err(serde::de::Error::custom)
    }
}

/// The typed part of an entry. A metadata kind keeps the whole object it was read from, in
/// order, so that it writes back unchanged.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryBody {
    Message { message: Message },
    Compaction(Compaction),
    BranchSummary(Metadata),
    ModelChange(Metadata),
    ThinkingLevelChange(Metadata),
    Custom(Metadata),
    CustomMessage(Metadata),
    Label(Metadata),
    SessionInfo(Metadata),
}

impl EntryBody {
    pub fn kind(&self) -> &'static str {
        match self {
            EntryBody::Message { .. } => "message",
            EntryBody::Compaction(_) => "compaction",
            EntryBody::BranchSummary(_) => "branch_summary",
            EntryBody::ModelChange(_) => "model_change",
            EntryBody::ThinkingLevelChange(_) => "thinking_level_change",
            EntryBody::Custom(_) => "custom",
            EntryBody::CustomMessage(_) => "custom_message",
            EntryBody::Label(_) => "label",
            EntryBody::SessionInfo(_) => "session_info",
        }
    }
}

/// A compaction: the summary stands in for everything before `firstKeptEntryId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    /// Pi's optional fields (`details`, `fromHook`), kept as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A metadata entry's whole JSON object as read (its identity fields are kept in step with the
/// entry's own on writing).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    pub fields: Map<String, Value>,
}

/// The first line of a Pi session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u32,
    pub id: String,
    pub timestamp: String,
    pub cwd: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Formats milliseconds since the Unix epoch as Pi's ISO-8601 UTC timestamp.
///
/// Hand-written (days-from-civil) so that the kit needs no clock or calendar crate.
pub fn iso_timestamp(epoch_ms: u64) -> String {
    let millis = epoch_ms % 1000;
    let secs = epoch_ms / 1000;
    let (hour, minute, second) = ((secs / 3600) % 24, (secs / 60) % 60, secs % 60);
    let days = (secs / 86_400) as i64;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if year > 9999 {
        return format!("{year}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z");
    }
    // Written digit by digit: the reference stamps every entry, and `format!` cost it a tenth
    // of a run.
    let mut text = String::with_capacity(24);
    let fields = [
        (year as u64, 4, '-'),
        (month as u64, 2, '-'),
        (day as u64, 2, 'T'),
        (hour, 2, ':'),
        (minute, 2, ':'),
        (second, 2, '.'),
        (millis, 3, 'Z'),
    ];
    for (value, width, separator) in fields {
        for place in (0..width).rev() {
            let digit = (value / 10u64.pow(place)) % 10;
            text.push(char::from(b'0' + digit as u8));
        }
        text.push(separator);
    }
    text
}

/// Milliseconds since the epoch of an ISO-8601 time as Pi writes it
/// (`2026-01-01T00:00:00.000Z`); `None` for anything else.
pub fn parse_iso_timestamp(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let separators = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ];
    if !text.is_ascii() || bytes.len() != 24 || separators.iter().any(|&(at, byte)| bytes[at] != byte) {
        return None;
    }
    let number = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second, millis) = (number(11..13)?, number(14..16)?, number(17..19)?, number(20..23)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let ms = ((days * 86_400 + hour * 3600 + minute * 60 + second) * 1000) + millis;
    u64::try_from(ms).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamp_matches_known_instants() {
        assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_timestamp(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso_timestamp(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_timestamp(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(iso_timestamp(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
    }

    /// An instant in every seventh day of four centuries from 1970, at a time of day that
    /// varies to the millisecond: what the digits written one by one say reads back as the
    /// instant, in Pi's 24 bytes.
    #[test]
    fn iso_timestamp_round_trips() {
        for day in (0..146_097u64).step_by(7) {
            let epoch_ms = day * 86_400_000 + (day * 7_919_113) % 86_400_000;
            let text = iso_timestamp(epoch_ms);
            assert_eq!(parse_iso_timestamp(&text), Some(epoch_ms), "{text}");
            let bytes = text.as_bytes();
            assert!(bytes.len() == 24 && text.is_ascii(), "{text}");
        }
    }

    /// A compaction with Pi's optional fields writes back in the order it was read.
    #[test]
    fn a_compaction_writes_back_in_the_order_it_was_read() {
        let line = r#"{"type":"compaction","id":"c1","parentId":"e1","timestamp":"2026-01-01T00:00:00.000Z","summary":"s","firstKeptEntryId":"e1","tokensBefore":7,"details":{"a":1},"fromHook":false}"#;
        let entry: SessionEntry = serde_json::from_str(line).expect("a compaction");
        assert_eq!(serde_json::to_string(&entry).unwrap(), line);
    }

    /// Every entry of every scenario's session: the direct serialization of a message entry
    /// writes the bytes that serializing `to_object` writes.
    #[test]
    fn an_entry_serializes_to_the_bytes_of_its_object() {
        let mut files = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios"
        ))];
        let (mut messages, mut others) = (0, 0);
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|entry| entry.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|extension| extension != "json") {
                continue;
            }
            let scenario: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let Some(Value::Array(session)) = scenario.get("session") else {
                continue;
            };
            for value in session {
                let Ok(entry) = serde_json::from_value::<SessionEntry>(value.clone()) else {
                    continue;
                };
                match entry.body {
                    EntryBody::Message { .. } => messages += 1,
                    _ => others += 1,
                }
                assert_eq!(
                    serde_json::to_string(&entry).unwrap(),
                    serde_json::to_string(&Value::Object(entry.to_object())).unwrap(),
                    "{}",
                    path.display()
                );
            }
        }
        assert!(
            messages > 100 && others > 0,
            "{messages} message entries, {others} others"
        );
    }
}
