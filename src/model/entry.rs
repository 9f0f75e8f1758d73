//! Session entries in Pi's session-file shape: `{type, id, parentId, timestamp, ...}`.
//!
//! A session is a tree: every entry names its parent, and a leaf selects one branch. Only
//! `message` and `compaction` entries carry meaning for the runtime; the metadata kinds are kept
//! field for field so that a Pi file reads and writes back unchanged. This module is data only.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::message::Message;

/// One entry of a session tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEntry {
    #[serde(flatten)]
    pub body: EntryBody,
    pub id: String,
    #[serde(rename = "parentId")]
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
}

/// The typed part of an entry. Metadata kinds keep their fields as an ordered JSON map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum EntryBody {
    #[serde(rename = "message")]
    Message { message: Message },
    #[serde(rename = "compaction")]
    Compaction(Compaction),
    #[serde(rename = "branch_summary")]
    BranchSummary(Metadata),
    #[serde(rename = "model_change")]
    ModelChange(Metadata),
    #[serde(rename = "thinking_level_change")]
    ThinkingLevelChange(Metadata),
    #[serde(rename = "custom")]
    Custom(Metadata),
    #[serde(rename = "custom_message")]
    CustomMessage(Metadata),
    #[serde(rename = "label")]
    Label(Metadata),
    #[serde(rename = "session_info")]
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

/// The fields of a metadata entry other than `type`, `id`, `parentId` and `timestamp`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    #[serde(flatten)]
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
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamp_matches_known_instants() {
        assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_timestamp(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso_timestamp(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
