//! Round trip of a Pi session file (JSONL): a header line, then one entry per line.
//!
//! The file below is written by hand the way Pi 0.73 writes one: every object's fields in the
//! order Pi's code builds them (`SessionManager.append*` for entries, pi-ai for messages), and
//! numbers as JavaScript prints them (a zero cost is `0`). Most entries are
//! `{type, id, parentId, timestamp, ...}`; Pi builds a `custom` entry as
//! `{type, customType, data, id, parentId, timestamp}`.

use agentsim::model::{ContextBudget, EntryBody, Message, SessionEntry, SessionHeader};
use agentsim::runtime::{Runtime, RuntimeConfig, RuntimeDeps};
use serde_json::Value;

const PI_SESSION: &str = r#"{"type":"session","version":3,"id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}
{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"check the parser"}],"timestamp":1767225601000}}
{"type":"message","id":"b2c3d4e5","parentId":"a1b2c3d4","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"Read parse() first."},{"type":"text","text":"Reading the parser."},{"type":"toolCall","id":"toolu_01","name":"read","arguments":{"path":"src/parser.rs","limit":200}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":120,"output":40,"cacheRead":0,"cacheWrite":0,"totalTokens":160,"cost":{"input":0.00036,"output":0.0006,"cacheRead":0,"cacheWrite":0,"total":0.00096}},"stopReason":"toolUse","timestamp":1767225602000}}
{"type":"message","id":"c3d4e5f6","parentId":"b2c3d4e5","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"toolu_01","toolName":"read","content":[{"type":"text","text":"fn parse() {}"}],"details":{"lines":1,"truncated":false},"isError":false,"timestamp":1767225603000}}
{"type":"compaction","id":"d4e5f6a7","parentId":"c3d4e5f6","timestamp":"2026-01-01T00:00:04.000Z","summary":"The user asked to check the parser; it was read.","firstKeptEntryId":"b2c3d4e5","tokensBefore":1234}
{"type":"model_change","id":"e5f6a7b8","parentId":"d4e5f6a7","timestamp":"2026-01-01T00:00:05.000Z","provider":"openai","modelId":"gpt-5"}
{"type":"label","id":"f6a7b8c9","parentId":"e5f6a7b8","timestamp":"2026-01-01T00:00:06.000Z","targetId":"b2c3d4e5","label":"parser read"}
{"type":"custom","customType":"review-policy","data":{"allowed":["review_note"],"count":1},"id":"a7b8c9d0","parentId":"f6a7b8c9","timestamp":"2026-01-01T00:00:07.000Z"}"#;

fn header_line() -> &'static str {
    PI_SESSION.lines().next().expect("a header line")
}

fn entry_lines() -> Vec<&'static str> {
    PI_SESSION.lines().skip(1).collect()
}

fn parse_entry(line: &str) -> SessionEntry {
    serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}"))
}

/// Every object's keys, depth first, each prefixed by its JSON path.
fn key_order(value: &Value, path: &str, keys: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            keys.push(format!(
                "{path}{{{}}}",
                fields.keys().cloned().collect::<Vec<_>>().join(",")
            ));
            for (name, field) in fields {
                key_order(field, &format!("{path}.{name}"), keys);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                key_order(item, &format!("{path}[{index}]"), keys);
            }
        }
        _ => {}
    }
}

/// Each line parsed into our types and serialized back.
fn round_trip() -> Vec<(&'static str, String)> {
    let header: SessionHeader = serde_json::from_str(header_line()).expect("the header parses");
    let mut lines = vec![(header_line(), serde_json::to_string(&header).expect("serializes"))];
    for line in entry_lines() {
        lines.push((line, serde_json::to_string(&parse_entry(line)).expect("serializes")));
    }
    lines
}

#[test]
fn pi_session_file_parses_into_header_and_entries_and_restores() {
    let header: SessionHeader = serde_json::from_str(header_line()).expect("the header parses");
    assert_eq!(
        (header.kind.as_str(), header.version, header.cwd.as_str()),
        ("session", 3, "/tmp")
    );

    let entries: Vec<SessionEntry> = entry_lines().into_iter().map(parse_entry).collect();
    let kinds: Vec<&str> = entries.iter().map(SessionEntry::kind).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "message",
            "compaction",
            "model_change",
            "label",
            "custom"
        ]
    );
    let roles: Vec<&str> = entries
        .iter()
        .filter_map(|e| e.as_message().map(Message::role))
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult"]);
    let EntryBody::Compaction(compaction) = &entries[3].body else {
        panic!("entry 4 is a compaction")
    };
    assert_eq!(
        (compaction.first_kept_entry_id.as_str(), compaction.tokens_before),
        ("b2c3d4e5", 1234)
    );

    // Serialized and parsed again, every line means the same.
    for (line, ours) in round_trip().into_iter().skip(1) {
        assert_eq!(parse_entry(&ours), parse_entry(line), "{line}");
    }

    // The kit's runtime restores from a Pi file: the leaf chooses the path, messages only.
    let config = RuntimeConfig {
        active_leaf_id: Some("a7b8c9d0".to_string()),
        system_prompt: None,
        steps_max: 8,
        context: large_budget(),
    };
    let mut runtime = Runtime::restore(config, RuntimeDeps::default(), &entries).expect("restores");
    assert_eq!(runtime.active_path().len(), 7);
    assert_eq!(runtime.control().state().messages.len(), 3);
    assert_eq!(runtime.persisted_message_count(), 3);
}

#[test]
fn pi_session_file_round_trip_keeps_pi_field_order() {
    let mut differences = Vec::new();
    for (number, (line, ours)) in round_trip().into_iter().enumerate() {
        let (mut pi_keys, mut our_keys) = (Vec::new(), Vec::new());
        key_order(&serde_json::from_str(line).expect("json"), "", &mut pi_keys);
        key_order(&serde_json::from_str(&ours).expect("json"), "", &mut our_keys);
        for (pi, ours) in pi_keys.iter().zip(&our_keys) {
            if pi != ours {
                differences.push(format!("line {}: Pi {pi}\n        ours {ours}", number + 1));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "field order differs:\n{}",
        differences.join("\n")
    );
}

#[test]
fn pi_session_file_round_trip_is_byte_identical() {
    let differences: Vec<String> = round_trip()
        .into_iter()
        .enumerate()
        .filter(|(_, (line, ours))| line != ours)
        .map(|(number, (line, ours))| format!("line {}:\n  Pi   {line}\n  ours {ours}", number + 1))
        .collect();
    assert!(
        differences.is_empty(),
        "{} lines differ:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

/// A budget large enough that nothing is ever dropped (the networked tests use it too).
pub fn large_budget() -> ContextBudget {
    ContextBudget {
        total: 1_000_000,
        reserved_output: 0,
        safety_margin: 0,
    }
}
