//! The one-line rendering of trace events (golden files, humans, diffs): an event's line number,
//! its id column, its kind and a compact description.

use crate::model::{AssistantMessage, Message, Operation, SessionEntry, ToolResultMessage};
use crate::runtime::{HookOutcome, NotifyOutcome, ObservedEvent, OpValue, Settlement, ToolOutcome};

use super::{AppendAnswer, Event};

/// `NNNN <subject> <verb padded to 14> <detail>`.
pub fn render_line(number: usize, event: &Event) -> String {
    let (subject, verb, detail) = describe(event);
    let line = format!("{number:04} {subject:<6} {verb:<14} {detail}");
    line.trim_end().to_string()
}

fn describe(event: &Event) -> (String, &'static str, String) {
    match event {
        Event::Restored { leaf, messages, .. } => (
            "-".into(),
            "restored",
            format!("leaf={} messages={messages}", leaf.as_deref().unwrap_or("null")),
        ),
        Event::RestoreFailed { cause } => ("-".into(), "restore_failed", cause.to_string()),
        Event::Deliver { op, operation } => {
            let detail = match operation {
                Operation::Mode { mode, text } => format!("{mode} {}", quote(text)),
                other => other.text().map(quote).unwrap_or_default(),
            };
            (op.to_string(), operation.name(), detail)
        }
        Event::ModelRequest {
            effect,
            signal,
            system_prompt,
            messages,
            tools,
        } => {
            let roles: Vec<&str> = messages.iter().map(Message::role).collect();
            let tools: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
            let system = system_prompt
                .as_deref()
                .map(quote_short)
                .unwrap_or_else(|| "none".into());
            (
                effect.to_string(),
                "model_request",
                format!(
                    "{signal} system={system} messages=[{}] tools=[{}]",
                    roles.join(","),
                    tools.join(",")
                ),
            )
        }
        Event::ModelChunk { effect, text } => (effect.to_string(), "chunk", quote(text)),
        Event::ModelResponse { effect, message } => (effect.to_string(), "complete", describe_assistant(message)),
        Event::Hook {
            effect,
            extension,
            phase,
            call,
            result,
        } => {
            let mut detail = format!("{extension} {} {}({})", phase.as_str(), call.name, call.id);
            if let Some(result) = result {
                detail.push_str(&format!(" result={}", describe_result(result)));
            }
            (effect.to_string(), "hook", detail)
        }
        Event::HookAnswer { effect, answer } => (effect.to_string(), "complete", describe_hook_answer(answer)),
        Event::ToolCall { effect, signal, call } => (
            effect.to_string(),
            "tool_call",
            format!("{signal} {}({}) {}", call.name, call.id, compact(&call.arguments)),
        ),
        Event::ToolAnswer { effect, answer } => (effect.to_string(), "complete", describe_tool_answer(answer)),
        Event::Append { effect, entry } => (
            effect.to_string(),
            "append",
            format!(
                "{} parent={} {}",
                entry.id,
                entry.parent_id.as_deref().unwrap_or("null"),
                describe_entry(entry)
            ),
        ),
        Event::AppendAnswer { effect, answer } => {
            let detail = match answer {
                AppendAnswer::Ok => "ok".to_string(),
                AppendAnswer::Rejected { cause } => format!("rejected {cause}"),
                AppendAnswer::AppliedThenFailed { cause } => format!("applied_then_failed {cause}"),
                AppendAnswer::Lost { cause } => format!("lost {cause}"),
            };
            (effect.to_string(), "complete", detail)
        }
        Event::Write { effect, text } => (effect.to_string(), "write", quote(text)),
        Event::WriteAnswer { effect, error } => (
            effect.to_string(),
            "complete",
            error
                .as_ref()
                .map(|cause| format!("failed {cause}"))
                .unwrap_or_else(|| "ok".into()),
        ),
        Event::Notify {
            effect,
            observer,
            agent_event,
        } => (
            effect.to_string(),
            "notify",
            format!("{observer} {}", describe_observed(agent_event)),
        ),
        Event::NotifyAnswer { effect, answer } => (
            effect.to_string(),
            "complete",
            match answer {
                NotifyOutcome::Ok => "returned".to_string(),
                NotifyOutcome::Threw { message } => format!("threw {}", quote(message)),
            },
        ),
        Event::AbortSignal { signal } => (signal.to_string(), "abort_signal", String::new()),
        Event::Settled { op, settlement } => (op.to_string(), "settled", describe_settlement(settlement)),
        Event::Net { at_ms, change } => ("-".into(), "net", format!("t={at_ms}ms {}", change.describe())),
        Event::StoreOpened {
            at_ms,
            entries,
            torn_bytes,
        } => (
            "-".into(),
            "store_opened",
            match torn_bytes {
                None => format!("t={at_ms}ms entries={entries}"),
                Some(bytes) => format!("t={at_ms}ms entries={entries} torn_tail_excluded={bytes}B"),
            },
        ),
        Event::Reopened { leaf, stored, outcome } => (
            "-".into(),
            "reopened",
            format!(
                "leaf={} stored={} {}",
                leaf.as_deref().unwrap_or("null"),
                stored.len(),
                match outcome {
                    Ok(path) => format!("path=[{}]", path.join(",")),
                    Err(cause) => format!("failed {cause}"),
                }
            ),
        ),
        Event::State { leaf, persisted } => (
            "-".into(),
            "state",
            format!("leaf={} persisted={persisted}", leaf.as_deref().unwrap_or("null")),
        ),
        Event::End { pending, undelivered } => {
            let pending: Vec<String> = pending.iter().map(ToString::to_string).collect();
            let undelivered: Vec<String> = undelivered.iter().map(ToString::to_string).collect();
            (
                "-".into(),
                "end",
                format!(
                    "pending=[{}] undelivered=[{}]",
                    pending.join(","),
                    undelivered.join(",")
                ),
            )
        }
    }
}

/// `message_end assistant`, `turn_end assistant results=2`, `agent_end messages=[user,assistant]`.
fn describe_observed(event: &ObservedEvent) -> String {
    match event {
        ObservedEvent::MessageEnd { message } => format!("message_end {}", message.role()),
        ObservedEvent::TurnEnd { message, tool_results } => {
            format!("turn_end {} results={}", message.role(), tool_results.len())
        }
        ObservedEvent::AgentEnd { messages } => {
            let roles: Vec<&str> = messages.iter().map(Message::role).collect();
            format!("agent_end messages=[{}]", roles.join(","))
        }
    }
}

pub fn describe_settlement(settlement: &Settlement) -> String {
    match settlement {
        Settlement::Resolved(OpValue::Unit) => "resolved".into(),
        Settlement::Resolved(OpValue::Run(result)) => format!(
            "resolved reason={} steps={} messages={}",
            result.reason.as_str(),
            result.steps,
            result.messages.len()
        ),
        Settlement::Resolved(OpValue::Library { reason, text }) => {
            format!("resolved reason={} text={}", reason.as_str(), quote(text))
        }
        Settlement::Rejected(cause) => format!("rejected {cause}"),
    }
}

fn describe_assistant(message: &AssistantMessage) -> String {
    let mut parts = vec![format!("assistant {}", message.stop_reason.as_str())];
    let text = message.text();
    if !text.is_empty() {
        parts.push(quote(&text));
    }
    for call in message.tool_calls() {
        parts.push(format!("toolCall {}({})", call.name, call.id));
    }
    if let Some(error) = &message.error_message {
        parts.push(format!("error={}", quote(error)));
    }
    parts.join(" ")
}

fn describe_result(result: &ToolResultMessage) -> String {
    let text = Message::ToolResult(result.clone()).text();
    format!("{}{}", if result.is_error { "error " } else { "" }, quote(&text))
}

fn describe_hook_answer(answer: &HookOutcome) -> String {
    match answer {
        HookOutcome::Allow => "allow".into(),
        HookOutcome::Deny { reason } => format!("deny {}", quote(reason)),
        HookOutcome::RewriteArguments { arguments } => format!("rewrite_arguments {}", compact(arguments)),
        HookOutcome::Observe => "observe".into(),
        HookOutcome::RewriteResult { content, is_error } => {
            let text: Vec<String> = content
                .iter()
                .map(|block| serde_json::to_string(block).expect("blocks serialize"))
                .collect();
            format!("rewrite_result is_error={is_error} [{}]", text.join(","))
        }
        HookOutcome::Threw { message } => format!("threw {}", quote(message)),
    }
}

fn describe_tool_answer(answer: &ToolOutcome) -> String {
    match answer {
        ToolOutcome::Ok { content, is_error, .. } => {
            let text: String = content
                .iter()
                .filter_map(|block| match block {
                    crate::model::ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            format!("{}{}", if *is_error { "error " } else { "ok " }, quote(&text))
        }
        ToolOutcome::Threw { message } => format!("threw {}", quote(message)),
        ToolOutcome::Aborted => "aborted".into(),
    }
}

fn describe_entry(entry: &SessionEntry) -> String {
    match entry.as_message() {
        Some(Message::Assistant(assistant)) => {
            let calls: Vec<String> = assistant.tool_calls().iter().map(|call| call.name.clone()).collect();
            if calls.is_empty() {
                format!("assistant {}", quote_short(&assistant.text()))
            } else {
                format!("assistant toolCall {}", calls.join(","))
            }
        }
        Some(Message::ToolResult(result)) => format!("toolResult {}", result.tool_call_id),
        Some(message) => format!("{} {}", message.role(), quote_short(&message.text())),
        None => entry.kind().to_string(),
    }
}

/// A JSON string literal: stable, escapes newlines and quotes.
pub fn quote(text: &str) -> String {
    serde_json::to_string(text).expect("strings serialize")
}

/// Like `quote`, cut to 40 characters with `…`.
pub fn quote_short(text: &str) -> String {
    const LIMIT: usize = 40;
    if text.chars().count() <= LIMIT {
        return quote(text);
    }
    let cut: String = text.chars().take(LIMIT).collect();
    quote(&format!("{cut}…"))
}

fn compact(value: &serde_json::Value) -> String {
    serde_json::to_string(value).expect("values serialize")
}
