//! The context-projecting model adapter (Lab 13.2): before every model request, the latest
//! snapshot of the persisted path is joined with the unpersisted suffix of the transcript as
//! temporary entries, and the one `build_context` decides what the model sees.
//!
//! Temporary entries are named `__runtime_context_N`, with more leading `_` while a name
//! collides with an id on the path; they are never stored and `createId` is never called.

use crate::model::{build_context, iso_timestamp, ContextBudget, Message, SessionEntry, ToolSpec};

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
    tools: &[ToolSpec],
) -> Result<ModelRequest, ProjectionError> {
    let count = snapshot.persisted_message_count;
    if count > messages.len() {
        return Err(ProjectionError::CountOutOfRange {
            count,
            len: messages.len(),
        });
    }
    let mut path: Vec<SessionEntry> = snapshot.active_path.to_vec();
    path.extend(temporary_entries(snapshot.active_path, &messages[count..]));
    let projected = build_context(&path, system_prompt, budget);
    Ok(ModelRequest {
        system_prompt: projected.system_prompt,
        messages: projected.messages,
        tools: tools.to_vec(),
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
