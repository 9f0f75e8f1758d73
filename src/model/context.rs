//! `build_context`: the one projection from a session path to a bounded model input.
//!
//! The algorithm (conformance.md, CONTEXT rules) is fixed here and nowhere else:
//! 1. Fixed costs first: `reserved_output + safety_margin + tokens(system_prompt)` are taken
//!    from `total`; what remains (saturating at 0) is the message budget.
//! 2. Compaction: if the path holds a `compaction` entry, the latest one wins. Its summary
//!    becomes the first message (a user message, see `compaction_summary_message`) and is a
//!    fixed cost too; then come the message entries from `firstKeptEntryId` (inclusive) up to the
//!    compaction, then the message entries after it. Without a compaction, all message entries.
//!    Metadata entries never project.
//! 3. Interactions: the projected messages are cut into interactions, each starting at a user
//!    message and running to the next user message (leading non-user messages form one
//!    interaction of their own). A tool call and its result are therefore never split.
//! 4. Newest first: interactions are taken from the newest backwards while their summed tokens
//!    fit the remaining budget; the first one that does not fit stops the walk (no gaps). If
//!    even the newest does not fit, no message is kept.
//!
//! The default token estimator is `ceil(utf8_bytes / 4)` per text; see `estimate_*`.

use super::entry::{Compaction, EntryBody, SessionEntry};
use super::message::{AssistantBlock, ContentBlock, Message, UserContent};

/// The context budget of a runtime, in estimated tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextBudget {
    pub total: u64,
    #[serde(default)]
    pub reserved_output: u64,
    #[serde(default)]
    pub safety_margin: u64,
}

/// The result of one projection.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectedContext {
    pub system_prompt: Option<String>,
    pub messages: Vec<Message>,
    /// reserved output + safety margin + system prompt (+ compaction summary) tokens.
    pub fixed_tokens: u64,
    /// tokens of the kept messages, the summary excluded.
    pub kept_tokens: u64,
    /// how many interactions were left out because they did not fit.
    pub dropped_interactions: usize,
}

/// Projects `path` (root first, as returned by `path_to`, possibly extended with temporary
/// entries) under `budget`. Total: never fails.
pub fn build_context(path: &[SessionEntry], system_prompt: Option<&str>, budget: &ContextBudget) -> ProjectedContext {
    build_context_with_suffix(path, &[], system_prompt, budget)
}

/// `build_context(path + temporary entries holding suffix, ...)` without materializing the
/// temporary entries: they are message entries, so only their messages can matter (a unit test
/// checks the two agree).
pub fn build_context_with_suffix(
    path: &[SessionEntry],
    suffix: &[Message],
    system_prompt: Option<&str>,
    budget: &ContextBudget,
) -> ProjectedContext {
    build_context_over(path, suffix, system_prompt, budget)
}

/// `build_context_with_suffix` for a suffix given as any sequence of messages.
pub fn build_context_over<'m>(
    path: &'m [SessionEntry],
    suffix: impl IntoIterator<Item = &'m Message>,
    system_prompt: Option<&str>,
    budget: &ContextBudget,
) -> ProjectedContext {
    let projection = project_over(path.iter(), suffix, system_prompt, budget);
    let mut messages: Vec<Message> = Vec::with_capacity(projection.kept.len() + 1);
    messages.extend(projection.summary);
    messages.extend(projection.kept.into_iter().cloned());
    ProjectedContext {
        system_prompt: system_prompt.map(str::to_string),
        messages,
        fixed_tokens: projection.fixed_tokens,
        kept_tokens: projection.kept_tokens,
        dropped_interactions: projection.dropped_interactions,
    }
}

/// A projection whose kept messages are lent from the path and the suffix it was computed
/// over: what `build_context_over` copies into a [`ProjectedContext`]. A checker that only
/// compares the projection with a request reads it without copying a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection<'m> {
    /// The compaction summary, which comes first when the path holds a compaction (built here,
    /// so owned).
    pub summary: Option<Message>,
    /// The kept messages after the summary, oldest first.
    pub kept: Vec<&'m Message>,
    pub fixed_tokens: u64,
    pub kept_tokens: u64,
    pub dropped_interactions: usize,
}

impl Projection<'_> {
    /// The projected messages in order: the summary, then the kept messages.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.summary.iter().chain(self.kept.iter().copied())
    }

    /// How many messages the projection holds.
    pub fn len(&self) -> usize {
        usize::from(self.summary.is_some()) + self.kept.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The projection of `path` (its entries root first, from a slice of entries or of entries
/// lent from elsewhere) and `suffix`: the algorithm of this module, lending the kept messages
/// instead of copying them.
pub fn project_over<'m>(
    path: impl PathEntries<'m>,
    suffix: impl IntoIterator<Item = &'m Message>,
    system_prompt: Option<&str>,
    budget: &ContextBudget,
) -> Projection<'m> {
    let system_prompt_tokens = system_prompt.map_or(0, estimate_text_tokens);
    let mut fixed_tokens = budget
        .reserved_output
        .saturating_add(budget.safety_margin)
        .saturating_add(system_prompt_tokens);

    let (summary_message, mut candidates) = project_messages(path);
    candidates.extend(suffix);
    if let Some(summary_message) = &summary_message {
        fixed_tokens = fixed_tokens.saturating_add(estimate_message_tokens(summary_message));
    }
    let message_budget = budget.total.saturating_sub(fixed_tokens);

    // Interactions as start indexes into `candidates`, newest walked first.
    let starts: Vec<usize> = candidates
        .iter()
        .enumerate()
        .filter(|(index, message)| *index == 0 || matches!(message, Message::User(_)))
        .map(|(index, _)| index)
        .collect();
    let mut kept_tokens: u64 = 0;
    let mut kept_from = candidates.len();
    let mut kept_interactions = 0;
    for (position, start) in starts.iter().enumerate().rev() {
        let end = starts.get(position + 1).copied().unwrap_or(candidates.len());
        let interaction_tokens = candidates[*start..end]
            .iter()
            .map(|message| estimate_message_tokens(message))
            .fold(0u64, u64::saturating_add);
        let tokens_if_kept = kept_tokens.saturating_add(interaction_tokens);
        if tokens_if_kept > message_budget {
            break;
        }
        kept_tokens = tokens_if_kept;
        kept_from = *start;
        kept_interactions += 1;
    }
    let dropped_interactions = starts.len() - kept_interactions;
    candidates.drain(..kept_from);

    Projection {
        summary: summary_message,
        kept: candidates,
        fixed_tokens,
        kept_tokens,
        dropped_interactions,
    }
}

/// The entries of a path, root first, walked more than once: `entries.iter()` or
/// `lent.iter().copied()`.
pub trait PathEntries<'m>: Iterator<Item = &'m SessionEntry> + DoubleEndedIterator + ExactSizeIterator + Clone {}

impl<'m, I> PathEntries<'m> for I where
    I: Iterator<Item = &'m SessionEntry> + DoubleEndedIterator + ExactSizeIterator + Clone
{
}

fn project_messages<'m>(path: impl PathEntries<'m>) -> (Option<Message>, Vec<&'m Message>) {
    let Some((compaction_index, compaction)) = latest_compaction(path.clone()) else {
        return (None, messages_of(path));
    };

    let before_compaction = path.clone().take(compaction_index);
    let after_compaction = path.skip(compaction_index + 1);
    let first_kept_index = before_compaction
        .clone()
        .position(|entry| entry.id == compaction.first_kept_entry_id)
        .unwrap_or(compaction_index);

    let summary_message = compaction_summary_message(&compaction.summary, 0);
    let mut candidate_messages = messages_of(before_compaction.skip(first_kept_index));
    candidate_messages.extend(messages_of(after_compaction));
    (Some(summary_message), candidate_messages)
}

fn latest_compaction<'m>(path: impl PathEntries<'m>) -> Option<(usize, &'m Compaction)> {
    path.enumerate().rev().find_map(|(index, entry)| match &entry.body {
        EntryBody::Compaction(compaction) => Some((index, compaction)),
        _ => None,
    })
}

fn messages_of<'m>(entries: impl Iterator<Item = &'m SessionEntry>) -> Vec<&'m Message> {
    entries.filter_map(SessionEntry::as_message).collect()
}

pub fn compaction_summary_message(summary: &str, timestamp: u64) -> Message {
    Message::user(
        format!(
            "The conversation history before this point was compacted into the following \
             summary:\n\n<summary>\n{summary}\n</summary>"
        ),
        timestamp,
    )
}

/// `ceil(utf8_bytes / 4)`; 0 for the empty string.
pub fn estimate_text_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// Sum of the text estimates of every block: text, thinking, tool-call name plus its
/// arguments serialized as compact JSON, tool-result text; an image counts 1000.
///
/// Each text is estimated on its own and the estimates are summed; a tool call counts as two
/// texts (its name and its compact JSON arguments). A user message with string content counts
/// as one text. Role, ids, tool names of results and usage are not counted.
pub fn estimate_message_tokens(message: &Message) -> u64 {
    match message {
        Message::User(user) => match &user.content {
            UserContent::Text(text) => estimate_text_tokens(text),
            UserContent::Blocks(blocks) => estimate_content_blocks_tokens(blocks),
        },
        Message::Assistant(assistant) => assistant
            .content
            .iter()
            .map(|block| match block {
                AssistantBlock::Text { text } => estimate_text_tokens(text),
                AssistantBlock::Thinking { thinking } => estimate_text_tokens(thinking),
                AssistantBlock::ToolCall(call) => {
                    let arguments_bytes = json_len(&call.arguments);
                    estimate_text_tokens(&call.name).saturating_add((arguments_bytes as u64).div_ceil(4))
                }
            })
            .fold(0u64, u64::saturating_add),
        Message::ToolResult(result) => estimate_content_blocks_tokens(&result.content),
    }
}

/// The length of `value` as compact JSON, counted without building the string.
fn json_len(value: &serde_json::Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, value).expect("a serde_json::Value always serializes");
    counter.0
}

const IMAGE_TOKENS: u64 = 1000;

fn estimate_content_blocks_tokens(blocks: &[ContentBlock]) -> u64 {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => estimate_text_tokens(text),
            ContentBlock::Image { .. } => IMAGE_TOKENS,
        })
        .fold(0u64, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::entry::Metadata;
    use crate::model::message::{AssistantMessage, StopReason, ToolCall, ToolResultMessage, Usage, UserMessage};
    use serde_json::json;

    const TIMESTAMP: &str = "2026-01-01T00:00:00.000Z";

    fn assistant_with(content: Vec<AssistantBlock>) -> Message {
        Message::Assistant(AssistantMessage {
            content,
            api: "test-api".to_string(),
            provider: "test-provider".to_string(),
            model: "test-model".to_string(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp: 0,
        })
    }

    fn assistant_text(text: &str) -> Message {
        assistant_with(vec![AssistantBlock::Text { text: text.to_string() }])
    }

    fn tool_call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments,
        }
    }

    fn tool_result(call: &ToolCall, text: &str) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: vec![ContentBlock::text(text)],
            details: None,
            is_error: false,
            timestamp: 0,
        })
    }

    /// Chains `messages` into a single branch of message entries `e0`, `e1`, ...
    fn chain(messages: Vec<Message>) -> Vec<SessionEntry> {
        let mut entries: Vec<SessionEntry> = Vec::new();
        for (index, message) in messages.into_iter().enumerate() {
            let parent_id = entries.last().map(|entry| entry.id.clone());
            entries.push(SessionEntry::message(
                format!("e{index}"),
                parent_id.as_deref(),
                TIMESTAMP,
                message,
            ));
        }
        entries
    }

    fn metadata_entry(id: &str, body: EntryBody) -> SessionEntry {
        SessionEntry {
            body,
            id: id.to_string(),
            parent_id: None,
            timestamp: TIMESTAMP.to_string(),
        }
    }

    fn compaction_entry(id: &str, summary: &str, first_kept_entry_id: &str) -> SessionEntry {
        metadata_entry(
            id,
            EntryBody::Compaction(Compaction {
                summary: summary.to_string(),
                first_kept_entry_id: first_kept_entry_id.to_string(),
                tokens_before: 0,
                extra: Default::default(),
            }),
        )
    }

    fn budget(total: u64, reserved_output: u64, safety_margin: u64) -> ContextBudget {
        ContextBudget {
            total,
            reserved_output,
            safety_margin,
        }
    }

    fn texts(projected: &ProjectedContext) -> Vec<String> {
        projected.messages.iter().map(Message::text).collect()
    }

    #[test]
    fn text_estimate_is_ceil_of_utf8_bytes_over_four() {
        assert_eq!(estimate_text_tokens(""), 0);
        assert_eq!(estimate_text_tokens("a"), 1);
        assert_eq!(estimate_text_tokens("abcd"), 1);
        assert_eq!(estimate_text_tokens("abcde"), 2);
        // Two characters, six UTF-8 bytes.
        assert_eq!(estimate_text_tokens("中文"), 2);
    }

    #[test]
    fn message_estimate_sums_each_block() {
        assert_eq!(estimate_message_tokens(&Message::user("abcdefgh", 0)), 2);

        let user_blocks = Message::User(UserMessage {
            content: UserContent::Blocks(vec![
                ContentBlock::text("abcde"),
                ContentBlock::Image {
                    data: "AAAA".to_string(),
                    mime_type: "image/png".to_string(),
                },
                ContentBlock::text("a"),
            ]),
            timestamp: 0,
        });
        // Each block is estimated on its own: 2 + 1000 + 1.
        assert_eq!(estimate_message_tokens(&user_blocks), 1003);

        // `{"path":"a"}` is 12 bytes (3 tokens); `read` is 1 token.
        let call = tool_call("call-1", "read", json!({"path": "a"}));
        let assistant = assistant_with(vec![
            AssistantBlock::Thinking {
                thinking: "abcdefghi".to_string(),
            },
            AssistantBlock::Text {
                text: "abcd".to_string(),
            },
            AssistantBlock::ToolCall(call.clone()),
        ]);
        assert_eq!(estimate_message_tokens(&assistant), 3 + 1 + 1 + 3);

        assert_eq!(estimate_message_tokens(&tool_result(&call, "abcdefghijkl")), 3);
    }

    #[test]
    fn compaction_summary_message_has_the_fixed_wording() {
        let message = compaction_summary_message("S", 7);
        assert_eq!(
            message,
            Message::user(
                "The conversation history before this point was compacted into the following \
                 summary:\n\n<summary>\nS\n</summary>",
                7
            )
        );
    }

    /// Two interactions: `older` (user, 2 tokens) and `newer` (user + assistant, 4 tokens).
    fn two_interactions() -> Vec<SessionEntry> {
        chain(vec![
            Message::user("older-u1", 0),
            Message::user("newer-u2", 0),
            assistant_text("newer-a2"),
        ])
    }

    #[test]
    fn exact_fit_keeps_the_newest_interaction() {
        // Fixed: 10 + 5 + 1 (system prompt "sys!") = 16; newest interaction: 4.
        let projected = build_context(&two_interactions(), Some("sys!"), &budget(20, 10, 5));
        assert_eq!(texts(&projected), ["newer-u2", "newer-a2"]);
        assert_eq!(projected.fixed_tokens, 16);
        assert_eq!(projected.kept_tokens, 4);
        assert_eq!(projected.dropped_interactions, 1);
        assert_eq!(projected.system_prompt.as_deref(), Some("sys!"));
    }

    #[test]
    fn one_token_over_drops_the_interaction() {
        let projected = build_context(&two_interactions(), Some("sys!"), &budget(19, 10, 5));
        assert!(projected.messages.is_empty());
        assert_eq!(projected.kept_tokens, 0);
        assert_eq!(projected.dropped_interactions, 2);

        // One token short of both: only the newest stays.
        let projected = build_context(&two_interactions(), Some("sys!"), &budget(21, 10, 5));
        assert_eq!(texts(&projected), ["newer-u2", "newer-a2"]);
        let projected = build_context(&two_interactions(), Some("sys!"), &budget(22, 10, 5));
        assert_eq!(texts(&projected), ["older-u1", "newer-u2", "newer-a2"]);
        assert_eq!(projected.dropped_interactions, 0);
    }

    #[test]
    fn system_prompt_tokens_are_a_fixed_cost() {
        let without_prompt = build_context(&two_interactions(), None, &budget(4, 0, 0));
        assert_eq!(texts(&without_prompt), ["newer-u2", "newer-a2"]);
        assert_eq!(without_prompt.fixed_tokens, 0);
        assert_eq!(without_prompt.system_prompt, None);

        let with_prompt = build_context(&two_interactions(), Some("s"), &budget(4, 0, 0));
        assert!(with_prompt.messages.is_empty());
        assert_eq!(with_prompt.fixed_tokens, 1);
    }

    #[test]
    fn fixed_costs_exceeding_total_keep_nothing() {
        let projected = build_context(&two_interactions(), Some("sys!"), &budget(10, 8, 8));
        assert!(projected.messages.is_empty());
        assert_eq!(projected.fixed_tokens, 17);
        assert_eq!(projected.kept_tokens, 0);
        assert_eq!(projected.dropped_interactions, 2);
    }

    /// An old small interaction, then a tool interaction of 10 tokens:
    /// user 2, assistant tool call 4, tool result 2, assistant text 2.
    fn tool_interaction_path() -> Vec<SessionEntry> {
        let call = tool_call("call-1", "read", json!({"path": "a"}));
        chain(vec![
            Message::user("old", 0),
            Message::user("newer-u2", 0),
            assistant_with(vec![AssistantBlock::ToolCall(call.clone())]),
            tool_result(&call, "result!!"),
            assistant_text("answer!!"),
        ])
    }

    #[test]
    fn tool_call_and_result_are_kept_together_at_the_boundary() {
        let projected = build_context(&tool_interaction_path(), None, &budget(10, 0, 0));
        let roles: Vec<&str> = projected.messages.iter().map(Message::role).collect();
        assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
        assert_eq!(projected.kept_tokens, 10);
        assert_eq!(projected.dropped_interactions, 1);
    }

    #[test]
    fn tool_call_and_result_are_dropped_together_and_no_older_interaction_fills_the_gap() {
        // 9 would hold the user, the call and the result, or the old interaction, but the
        // newest interaction does not fit whole, so nothing is kept.
        let projected = build_context(&tool_interaction_path(), None, &budget(9, 0, 0));
        assert!(projected.messages.is_empty());
        assert_eq!(projected.dropped_interactions, 2);
    }

    #[test]
    fn leading_non_user_messages_form_their_own_interaction() {
        let path = chain(vec![
            assistant_text("lead-a0"),
            Message::user("u1", 0),
            assistant_text("a1"),
        ]);
        // The user interaction costs 2; the leading assistant costs 2 more.
        let projected = build_context(&path, None, &budget(2, 0, 0));
        assert_eq!(texts(&projected), ["u1", "a1"]);
        assert_eq!(projected.dropped_interactions, 1);
        let projected = build_context(&path, None, &budget(4, 0, 0));
        assert_eq!(texts(&projected), ["lead-a0", "u1", "a1"]);
    }

    #[test]
    fn metadata_entries_never_project() {
        let mut path = chain(vec![Message::user("u1", 0), assistant_text("a1")]);
        path.insert(1, metadata_entry("meta-1", EntryBody::ModelChange(Metadata::default())));
        path.push(metadata_entry("meta-2", EntryBody::Label(Metadata::default())));
        let projected = build_context(&path, None, &budget(1000, 0, 0));
        assert_eq!(texts(&projected), ["u1", "a1"]);
        assert_eq!(projected.dropped_interactions, 0);
    }

    /// e0 u-old, e1 a-old, e2 u-kept, e3 a-kept, compaction (first kept e2), e5 u-new, e6 a-new.
    fn compacted_path(first_kept_entry_id: &str) -> Vec<SessionEntry> {
        let mut path = chain(vec![
            Message::user("u-old", 0),
            assistant_text("a-old"),
            Message::user("u-kept", 0),
            assistant_text("a-kept"),
            Message::user("placeholder", 0),
            Message::user("u-new", 0),
            assistant_text("a-new"),
        ]);
        path[4] = compaction_entry("e4", "SUMMARY", first_kept_entry_id);
        path
    }

    #[test]
    fn compaction_summary_comes_first_then_messages_from_first_kept_entry() {
        let projected = build_context(&compacted_path("e2"), None, &budget(1000, 0, 0));
        let summary = compaction_summary_message("SUMMARY", 0);
        assert_eq!(projected.messages[0], summary);
        assert_eq!(texts(&projected)[1..], ["u-kept", "a-kept", "u-new", "a-new"]);
        assert_eq!(projected.fixed_tokens, estimate_message_tokens(&summary));
        // u-kept 2, a-kept 2, u-new 2, a-new 2: the summary is not counted as kept.
        assert_eq!(projected.kept_tokens, 8);
        assert_eq!(projected.dropped_interactions, 0);
    }

    #[test]
    fn compaction_summary_is_a_fixed_cost_that_squeezes_the_message_budget() {
        let summary_tokens = estimate_message_tokens(&compaction_summary_message("SUMMARY", 0));
        let projected = build_context(&compacted_path("e2"), None, &budget(summary_tokens + 4, 0, 0));
        assert_eq!(texts(&projected)[1..], ["u-new", "a-new"]);
        assert_eq!(projected.dropped_interactions, 1);

        // With no room for messages the summary still stands in for the history.
        let projected = build_context(&compacted_path("e2"), None, &budget(0, 0, 0));
        assert_eq!(projected.messages, [compaction_summary_message("SUMMARY", 0)]);
        assert_eq!(projected.dropped_interactions, 2);
    }

    #[test]
    fn compaction_with_first_kept_entry_off_the_path_keeps_no_earlier_messages() {
        let projected = build_context(&compacted_path("elsewhere"), None, &budget(1000, 0, 0));
        assert_eq!(texts(&projected)[1..], ["u-new", "a-new"]);
    }

    #[test]
    fn latest_compaction_wins() {
        let mut path = compacted_path("e2");
        let parent_id = path.last().map(|entry| entry.id.clone());
        let mut second = compaction_entry("e7", "SECOND", "e5");
        second.parent_id = parent_id;
        path.push(second);
        path.push(SessionEntry::message(
            "e8",
            Some("e7"),
            TIMESTAMP,
            Message::user("u-last", 0),
        ));
        let projected = build_context(&path, None, &budget(1000, 0, 0));
        assert_eq!(projected.messages[0], compaction_summary_message("SECOND", 0));
        assert_eq!(texts(&projected)[1..], ["u-new", "a-new", "u-last"]);
    }
}
