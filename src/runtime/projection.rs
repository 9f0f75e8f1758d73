//! The context-projecting model adapter (Lab 13.2): before every model request, the latest
//! snapshot of the persisted path is joined with the unpersisted suffix of the transcript as
//! temporary entries, and the one `build_context` decides what the model sees.
//!
//! Temporary entries are named `__runtime_context_N`, with more leading `_` while a name
//! collides with an id on the path; they are never stored and `createId` is never called.

use crate::model::{build_context_with_suffix, iso_timestamp, ContextBudget, Message, SessionEntry, ToolSpec};

use super::io::ModelRequest;

/// `ContextProjectionSnapshot`: the active path and how many of its message entries are
/// persisted (metadata and compaction entries do not count).
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    pub active_path: &'a [SessionEntry],
    pub persisted_message_count: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectionError {
    #[error("persisted message count {count} is outside 0..={len} (transcript length)")]
    CountOutOfRange { count: usize, len: usize },
}

impl ProjectionError {
    pub fn code(&self) -> &'static str {
        match self {
            ProjectionError::CountOutOfRange { .. } => "projection.count_out_of_range",
        }
    }
}

/// Builds one model request. `messages` is the agent's whole transcript; its first
/// `persisted_message_count` messages are trusted to equal the path's message entries.
pub fn project(
    snapshot: Snapshot<'_>,
    messages: &[Message],
    system_prompt: Option<&str>,
    budget: &ContextBudget,
    tools: &std::sync::Arc<[ToolSpec]>,
) -> Result<ModelRequest, ProjectionError> {
    let count = snapshot.persisted_message_count;
    if count > messages.len() {
        return Err(ProjectionError::CountOutOfRange {
            count,
            len: messages.len(),
        });
    }
    // Equivalent to build_context(active path + temporary_entries(suffix)): temporary entries
    // are message entries, so only their messages matter (tested below).
    let projected = build_context_with_suffix(snapshot.active_path, &messages[count..], system_prompt, budget);
    Ok(ModelRequest {
        system_prompt: projected.system_prompt,
        messages: projected.messages,
        tools: tools.clone(),
    })
}

/// The unpersisted suffix as entries chained from the path's leaf.
pub fn temporary_entries(active_path: &[SessionEntry], suffix: &[Message]) -> Vec<SessionEntry> {
    let mut parent = active_path.last().map(|entry| entry.id.clone());
    let mut entries = Vec::with_capacity(suffix.len());
    for (index, message) in suffix.iter().enumerate() {
        let id = temporary_id(active_path, index);
        let timestamp = iso_timestamp(message_timestamp(message));
        entries.push(SessionEntry::message(
            id.clone(),
            parent.as_deref(),
            timestamp,
            message.clone(),
        ));
        parent = Some(id);
    }
    entries
}

/// `__runtime_context_N`, with one more leading `_` for as long as the id is on the path.
pub fn temporary_id(active_path: &[SessionEntry], index: usize) -> String {
    let mut id = format!("__runtime_context_{index}");
    while active_path.iter().any(|entry| entry.id == id) {
        id.insert(0, '_');
    }
    id
}

fn message_timestamp(message: &Message) -> u64 {
    match message {
        Message::User(user) => user.timestamp,
        Message::Assistant(assistant) => assistant.timestamp,
        Message::ToolResult(result) => result.timestamp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        build_context, AssistantBlock, AssistantMessage, StopReason, ToolCall, ToolResultMessage, Usage,
    };

    fn assistant(text: &str, call: Option<&str>) -> Message {
        let mut content = vec![AssistantBlock::Text { text: text.into() }];
        if let Some(id) = call {
            content.push(AssistantBlock::ToolCall(ToolCall {
                id: id.into(),
                name: "note".into(),
                arguments: serde_json::json!({"note": text}),
            }));
        }
        Message::Assistant(AssistantMessage {
            content,
            api: "a".into(),
            provider: "p".into(),
            model: "m".into(),
            usage: Usage::default(),
            stop_reason: if call.is_some() {
                StopReason::ToolUse
            } else {
                StopReason::Stop
            },
            error_message: None,
            timestamp: 1,
        })
    }

    #[test]
    fn projection_equals_build_context_over_materialized_temporary_entries() {
        let history = vec![
            Message::user("first question", 1),
            assistant("first answer", None),
            Message::user("second question with more words", 2),
            assistant("calling", Some("c1")),
            Message::ToolResult(ToolResultMessage::error(
                &ToolCall {
                    id: "c1".into(),
                    name: "note".into(),
                    arguments: serde_json::json!({}),
                },
                "result text",
                3,
            )),
            assistant("done", None),
            Message::user("third", 4),
        ];
        for persisted in 0..=history.len() {
            let path = temporary_entries(&[], &history[..persisted])
                .into_iter()
                .enumerate()
                .map(|(index, mut entry)| {
                    entry.id = format!("e{index}");
                    entry.parent_id = index.checked_sub(1).map(|parent| format!("e{parent}"));
                    entry
                })
                .collect::<Vec<_>>();
            for total in [0, 5, 12, 20, 40, 1000] {
                let budget = ContextBudget {
                    total,
                    reserved_output: 2,
                    safety_margin: 1,
                };
                let snapshot = Snapshot {
                    active_path: &path,
                    persisted_message_count: persisted,
                };
                let request =
                    project(snapshot, &history, Some("sys"), &budget, &Vec::new().into()).expect("count in range");
                let mut materialized = path.clone();
                materialized.extend(temporary_entries(&path, &history[persisted..]));
                let expected = build_context(&materialized, Some("sys"), &budget);
                assert_eq!(
                    request.messages, expected.messages,
                    "persisted {persisted}, total {total}"
                );
            }
        }
    }

    #[test]
    fn temporary_ids_avoid_collisions_with_more_underscores() {
        let path = temporary_entries(&[], &[Message::user("x", 1)])
            .into_iter()
            .map(|mut entry| {
                entry.id = "__runtime_context_0".into();
                entry
            })
            .collect::<Vec<_>>();
        assert_eq!(temporary_id(&path, 0), "___runtime_context_0");
        assert_eq!(temporary_id(&path, 1), "__runtime_context_1");
    }

    #[test]
    fn a_count_beyond_the_transcript_is_rejected() {
        let snapshot = Snapshot {
            active_path: &[],
            persisted_message_count: 2,
        };
        let error = project(
            snapshot,
            &[Message::user("x", 1)],
            None,
            &ContextBudget {
                total: 10,
                reserved_output: 0,
                safety_margin: 0,
            },
            &Vec::new().into(),
        );
        assert_eq!(error.unwrap_err().code(), "projection.count_out_of_range");
    }
}
