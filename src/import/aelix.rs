//! aelix's session file where it differs from Pi's: its messages are written in aelix's own
//! form (`dataclasses.asdict` of aelix_ai's messages: `stop_reason`, `error_message`,
//! `tool_call_id`, `tool_name`, `is_error`, tool calls as `{tool_call_id, tool_name, input}`,
//! times in seconds), and it chooses a branch by appending a `leaf` entry whose `targetId` is the
//! session's leaf from then on (aelix `jsonl_storage.py`, `_leaf_id_after_entry`). The header and
//! every entry's `type`, `id`, `parentId` and `timestamp` are Pi's.
//!
//! [`pi_form`] reads such a message as pi-ai's shape, as the kit's aelix adapter does
//! (`aelix_dict_to_pi`), so that the rest of the import and the comparison see one form.

use serde_json::{json, Map, Value};

/// aelix writes times as seconds since the epoch; a number at least this big is milliseconds.
const MS_FROM: f64 = 1e11;

/// Whether a message (the `message` of a `message` entry) is in aelix's own form.
fn is_aelix_form(message: &Map<String, Value>) -> bool {
    const MESSAGE_KEYS: [&str; 5] = ["stop_reason", "error_message", "tool_call_id", "is_error", "tool_name"];
    const BLOCK_KEYS: [&str; 4] = [
        "tool_call_id",
        "text_signature",
        "thought_signature",
        "thinking_signature",
    ];
    MESSAGE_KEYS.iter().any(|key| message.contains_key(*key))
        || message.get("content").and_then(Value::as_array).is_some_and(|blocks| {
            blocks
                .iter()
                .any(|block| BLOCK_KEYS.iter().any(|key| block.get(*key).is_some()))
        })
}

/// An aelix time (seconds, or milliseconds) in milliseconds; 0 when there is none.
fn milliseconds(stamp: Option<&Value>) -> Value {
    match stamp.and_then(Value::as_f64) {
        Some(stamp) if stamp >= MS_FROM => json!(stamp.round() as u64),
        Some(stamp) if stamp >= 0.0 => json!((stamp * 1000.0).round() as u64),
        _ => json!(0),
    }
}

/// Text and image blocks in pi-ai's shape.
fn media_blocks(blocks: Option<&Value>) -> Vec<Value> {
    let text = |block: &Value, key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    blocks
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .map(|block| match block.get("type").and_then(Value::as_str) {
                    Some("image") => {
                        json!({"type": "image", "data": text(block, "data"), "mimeType": text(block, "mime_type")})
                    }
                    _ => json!({"type": "text", "text": text(block, "text")}),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The entry's message in pi-ai's shape when it is in aelix's own; `true` when it was.
pub(super) fn pi_form(entry: &mut Value) -> bool {
    if entry.get("type").and_then(Value::as_str) != Some("message") {
        return false;
    }
    let Some(Value::Object(message)) = entry.get("message") else {
        return false;
    };
    if !is_aelix_form(message) {
        return false;
    }
    let text = |key: &str| message.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let timestamp = milliseconds(message.get("timestamp"));
    let translated = match message.get("role").and_then(Value::as_str) {
        Some("user") => {
            json!({"role": "user", "content": media_blocks(message.get("content")), "timestamp": timestamp})
        }
        Some("toolResult") => json!({
            "role": "toolResult",
            "toolCallId": text("tool_call_id"),
            "toolName": text("tool_name"),
            "content": media_blocks(message.get("content")),
            "isError": message.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            "timestamp": timestamp,
        }),
        Some("assistant") => {
            let blocks = message
                .get("content")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let content: Vec<Value> = blocks
                .iter()
                .map(|block| {
                    let field = |key: &str| block.get(key).cloned().unwrap_or_else(|| json!(""));
                    match block.get("type").and_then(Value::as_str) {
                        Some("toolCall") => json!({
                            "type": "toolCall",
                            "id": field("tool_call_id"),
                            "name": field("tool_name"),
                            "arguments": block.get("input").cloned().unwrap_or_else(|| json!({})),
                        }),
                        Some("thinking") => json!({"type": "thinking", "thinking": field("thinking")}),
                        _ => json!({"type": "text", "text": field("text")}),
                    }
                })
                .collect();
            let mut assistant = json!({
                "role": "assistant",
                "content": content,
                "api": text("api"),
                "provider": text("provider"),
                "model": text("model"),
                // aelix's usage is its own shape (or null): the comparison leaves usage out.
                "usage": {
                    "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
                "stopReason": message.get("stop_reason").and_then(Value::as_str).unwrap_or("stop"),
                "timestamp": timestamp,
            });
            if let Some(error) = message.get("error_message").filter(|error| !error.is_null()) {
                assistant["errorMessage"] = error.clone();
            }
            assistant
        }
        _ => return false,
    };
    entry["message"] = translated;
    true
}

/// The session's leaf as aelix reads the file: the last entry's id, or the `targetId` of a
/// `leaf` entry (`None` for a null target).
pub(super) fn leaf_after(entries: &[super::FileEntry]) -> Option<Option<&str>> {
    entries.iter().rfind(|entry| entry.id().is_some()).map(|entry| {
        if entry.kind() == "leaf" {
            entry.value.get("targetId").and_then(Value::as_str)
        } else {
            entry.id()
        }
    })
}
