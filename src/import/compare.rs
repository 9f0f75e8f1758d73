//! `import --check`: the imported scenario run on the reference (canonical schedule, in
//! process), and what the reference stores compared with the replayed part of the file, entry
//! by entry, as the module docs of `import` say: ids and times by order, what the fakes give in
//! the form they give it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::model::{first_json_difference, parse_iso_timestamp};
use crate::sim::reference::ReferenceSubject;
use crate::sim::{simulate, Scripted};
use crate::trace::Event;

use super::{ImportError, Imported};

/// What the reference's run of an imported scenario says about the file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    /// The reference's restore failure (its code and message), when it refused the session.
    pub restore_failed: Option<String>,
    /// How many entries the replayed part of the file holds, and the reference stored.
    pub file_entries: usize,
    pub reference_entries: usize,
    pub agreement: Agreement,
    /// The compared entries carry the file's ids and times as written, not only in order.
    pub ids_as_recorded: bool,
    pub times_as_recorded: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "verdict")]
pub enum Agreement {
    /// The reference stores what the file holds.
    Same,
    /// The first entry that differs.
    Differs(Difference),
}

/// The first entry of the replay where the file and the reference differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// 1-based place in the replay.
    pub entry: usize,
    /// The file's line of that entry; `None` when the file's path ends before it.
    pub line: Option<usize>,
    /// The first field that differs (normalized), `-` for the entry as a whole.
    pub field: String,
    /// Both sides, shortened; `nothing` for a side that has no such entry.
    pub file: String,
    pub reference: String,
}

impl CheckReport {
    pub fn agrees(&self) -> bool {
        self.agreement == Agreement::Same
    }
}

/// Runs the imported scenario on the reference and compares what it stores with the file.
pub fn check_imported(imported: &Imported) -> Result<CheckReport, ImportError> {
    let scenario = &imported.scenario;
    let outcome = simulate(scenario, &mut ReferenceSubject::new(), &mut Scripted).map_err(|failure| {
        ImportError::new(
            &imported.file,
            None,
            "-",
            "import.reference_failed",
            format!("the reference could not run the imported scenario: {failure}"),
        )
    })?;
    let restore_failed = outcome.trace.events.iter().find_map(|event| match event {
        Event::RestoreFailed { cause } => Some(cause.to_string()),
        _ => None,
    });
    let stored: Vec<Value> = outcome.stored(scenario)[scenario.session.len()..]
        .iter()
        .map(|entry| serde_json::to_value(entry).expect("entries serialize"))
        .collect();
    let recorded: Vec<Value> = imported.replayed.iter().map(|entry| entry.value.clone()).collect();
    let restored: BTreeSet<&str> = scenario.session.iter().map(|entry| entry.id.as_str()).collect();
    let file_side = normalize(&recorded, &restored);
    let reference_side = normalize(&stored, &restored);
    let mut agreement = Agreement::Same;
    for index in 0..file_side.len().max(reference_side.len()) {
        let line = imported.replayed.get(index).map(|entry| entry.line);
        let difference = match (file_side.get(index), reference_side.get(index)) {
            (Some(file), Some(reference)) => {
                first_json_difference(file, reference).map(|(field, file, reference)| Difference {
                    entry: index + 1,
                    line,
                    field: if field.is_empty() { "-".into() } else { field },
                    file,
                    reference,
                })
            }
            (file, reference) => Some(Difference {
                entry: index + 1,
                line,
                field: "-".into(),
                file: file.map_or("nothing".into(), describe),
                reference: reference.map_or("nothing".into(), describe),
            }),
        };
        if let Some(difference) = difference {
            agreement = Agreement::Differs(difference);
            break;
        }
    }
    let pairs = || recorded.iter().zip(&stored);
    let same = |value: &Value, other: &Value, key: &str| value.get(key) == other.get(key);
    let ids_as_recorded =
        pairs().all(|(file, reference)| same(file, reference, "id") && same(file, reference, "parentId"));
    let times_as_recorded = pairs().all(|(file, reference)| {
        same(file, reference, "timestamp")
            && file.get("message").and_then(|message| message.get("timestamp"))
                == reference.get("message").and_then(|message| message.get("timestamp"))
    });
    Ok(CheckReport {
        restore_failed,
        file_entries: recorded.len(),
        reference_entries: stored.len(),
        agreement,
        ids_as_recorded,
        times_as_recorded,
    })
}

/// An entry in a few words: its type, and its role for a message.
fn describe(entry: &Value) -> String {
    let kind = entry.get("type").and_then(Value::as_str).unwrap_or("-");
    match entry
        .get("message")
        .and_then(|message| message.get("role"))
        .and_then(Value::as_str)
    {
        Some(role) => format!("a `{kind}` entry ({role})"),
        None => format!("a `{kind}` entry"),
    }
}

/// The entries as the comparison sees them (the module docs of `import`): new ids by first
/// appearance, times by order (entries' and messages' apart), messages in the form the fakes give.
pub fn normalize(entries: &[Value], restored: &BTreeSet<&str>) -> Vec<Value> {
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    let mut name_id = |id: &Value| -> Value {
        match id.as_str() {
            Some(id) if !restored.contains(id) => {
                let next = format!("#{}", ids.len() + 1);
                Value::String(ids.entry(id.to_string()).or_insert(next).clone())
            }
            _ => id.clone(),
        }
    };
    let entry_time = |entry: &Value| {
        entry
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(parse_iso_timestamp)
    };
    // A message's time and whose clock it is: an assistant message is stamped by the model
    // (pi-ai's provider, the scripted model), any other by the runtime.
    let message_time = |entry: &Value| -> Option<(bool, u64)> {
        let message = entry.get("message")?;
        let by_model = message.get("role").and_then(Value::as_str) == Some("assistant");
        Some((by_model, message.get("timestamp")?.as_u64()?))
    };
    // An entry's time (when it was stored), its message's (when it was made) and the model's
    // are ranked apart: each is a reading of a clock for a purpose of its own.
    let ranks = |times: BTreeSet<u64>| -> BTreeMap<u64, usize> {
        times
            .into_iter()
            .enumerate()
            .map(|(place, time)| (time, place + 1))
            .collect()
    };
    let entry_places = ranks(entries.iter().filter_map(entry_time).collect());
    let message_places = |by_model: bool| {
        ranks(
            entries
                .iter()
                .filter_map(message_time)
                .filter(|(model, _)| *model == by_model)
                .map(|(_, time)| time)
                .collect(),
        )
    };
    let (runtime_places, model_places) = (message_places(false), message_places(true));
    entries
        .iter()
        .map(|entry| {
            let Value::Object(object) = entry else {
                return entry.clone();
            };
            let mut object = object.clone();
            for key in ["id", "parentId"] {
                if let Some(id) = object.get(key) {
                    let named = name_id(id);
                    object.insert(key.into(), named);
                }
            }
            if let Some(time) = entry_time(entry) {
                object.insert("timestamp".into(), Value::String(format!("t{}", entry_places[&time])));
            }
            if let Some(Value::Object(message)) = object.get_mut("message") {
                if let Some((by_model, time)) = message_time(entry) {
                    let (prefix, places) = if by_model {
                        ("a", &model_places)
                    } else {
                        ("m", &runtime_places)
                    };
                    message.insert("timestamp".into(), Value::String(format!("{prefix}{}", places[&time])));
                }
                canonical_message(message);
            }
            Value::Object(object)
        })
        .collect()
}

/// A message in the form the scripted fakes give it (see the module docs of `import`).
fn canonical_message(message: &mut Map<String, Value>) {
    let texts = |blocks: &[Value], kind: &str, key: &str| -> Option<String> {
        let parts: Vec<&str> = blocks
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some(kind))
            .map(|block| block.get(key).and_then(Value::as_str).unwrap_or_default())
            .collect();
        (!parts.is_empty()).then(|| parts.concat())
    };
    let blocks: Vec<Value> = match message.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
        _ => return,
    };
    match message.get("role").and_then(Value::as_str) {
        Some("assistant") => {
            for key in ["api", "provider", "model", "usage"] {
                message.shift_remove(key);
            }
            let mut content = Vec::new();
            if let Some(thinking) = texts(&blocks, "thinking", "thinking") {
                content.push(json!({"type": "thinking", "thinking": thinking}));
            }
            if let Some(text) = texts(&blocks, "text", "text") {
                content.push(json!({"type": "text", "text": text}));
            }
            for call in blocks
                .iter()
                .filter(|block| block.get("type").and_then(Value::as_str) == Some("toolCall"))
            {
                content.push(json!({
                    "type": "toolCall",
                    "id": call.get("id"),
                    "name": call.get("name"),
                    "arguments": call.get("arguments"),
                }));
            }
            message.insert("content".into(), Value::Array(content));
        }
        Some("user") => {
            let text = texts(&blocks, "text", "text").unwrap_or_default();
            message.insert("content".into(), json!([{"type": "text", "text": text}]));
        }
        Some("toolResult") => {
            message.shift_remove("details");
            let text = texts(&blocks, "text", "text").unwrap_or_default();
            message.insert("content".into(), json!([{"type": "text", "text": text}]));
        }
        _ => {}
    }
}
