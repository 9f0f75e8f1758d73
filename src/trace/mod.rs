//! Typed trace events, and their two stable renderings: one line per event (golden files,
//! humans, diffs) and JSON (reports, tools).
//!
//! A trace is everything observable about one run of a Subject: what was restored, which
//! operation arrived when, every effect the subject issued with the world's answer, and every
//! settlement. Checkers read the typed events; nothing here has a wall clock, an address or an
//! unordered map, so the same run renders to the same bytes everywhere.

use serde::{Deserialize, Serialize};

use crate::model::{AssistantMessage, Message, Operation, SessionEntry, ToolCall, ToolResultMessage, ToolSpec};
use crate::runtime::{
    Cause, Effect, EffectId, HookOutcome, HookPhase, NotifyOutcome, ObservedEvent, OpId, OpValue, Settlement, SignalId,
    ToolOutcome,
};

/// How the store answered an append.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AppendAnswer {
    Ok,
    /// Rejected and not applied.
    Rejected {
        cause: Cause,
    },
    /// Applied, then reported failed (the acknowledgement was lost).
    AppliedThenFailed {
        cause: Cause,
    },
    /// No answer came back (a timeout or a dropped connection in the networked world): the
    /// entry may or may not be stored, and the runtime cannot tell which.
    Lost {
        cause: Cause,
    },
}

impl AppendAnswer {
    pub fn applied(&self) -> bool {
        matches!(self, AppendAnswer::Ok | AppendAnswer::AppliedThenFailed { .. })
    }

    pub fn cause(&self) -> Option<&Cause> {
        match self {
            AppendAnswer::Ok => None,
            AppendAnswer::Rejected { cause }
            | AppendAnswer::AppliedThenFailed { cause }
            | AppendAnswer::Lost { cause } => Some(cause),
        }
    }
}

/// A change the networked world made (`net`): between the runtime host and the store or model
/// host, or to the store host itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NetChange {
    Partition {
        peer: String,
    },
    Repair {
        peer: String,
    },
    Hold {
        peer: String,
    },
    Release {
        peer: String,
    },
    /// The store host crashed: its unsynced writes are gone.
    Crash {
        host: String,
    },
    Restart {
        host: String,
    },
}

impl NetChange {
    pub fn describe(&self) -> String {
        match self {
            NetChange::Partition { peer } => format!("partition runtime<->{peer}"),
            NetChange::Repair { peer } => format!("repair runtime<->{peer}"),
            NetChange::Hold { peer } => format!("hold runtime<->{peer}"),
            NetChange::Release { peer } => format!("release runtime<->{peer}"),
            NetChange::Crash { host } => format!("crash {host}"),
            NetChange::Restart { host } => format!("restart {host}"),
        }
    }
}

/// One observable event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The subject was created from the session; `messages` is the restored transcript length.
    /// `probed`: the subject reports its own state at every quiescent point (an adapter's
    /// `hello.probes` holds `state`; the reference does): [`Event::State`] then records each
    /// change of it, and PERSIST-10 judges it.
    Restored {
        leaf: Option<String>,
        messages: usize,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        probed: bool,
    },
    RestoreFailed {
        cause: Cause,
    },
    Deliver {
        op: OpId,
        operation: Operation,
    },
    ModelRequest {
        effect: EffectId,
        signal: SignalId,
        system_prompt: Option<String>,
        messages: Vec<Message>,
        /// The tool specs as sent: names, descriptions and schemas (rendered by name only),
        /// shared with the request rather than copied.
        tools: std::sync::Arc<[ToolSpec]>,
    },
    ModelChunk {
        effect: EffectId,
        text: String,
    },
    ModelResponse {
        effect: EffectId,
        message: AssistantMessage,
    },
    Hook {
        effect: EffectId,
        extension: String,
        phase: HookPhase,
        call: ToolCall,
        result: Option<ToolResultMessage>,
    },
    HookAnswer {
        effect: EffectId,
        answer: HookOutcome,
    },
    ToolCall {
        effect: EffectId,
        signal: SignalId,
        call: ToolCall,
    },
    ToolAnswer {
        effect: EffectId,
        answer: ToolOutcome,
    },
    Append {
        effect: EffectId,
        entry: SessionEntry,
    },
    AppendAnswer {
        effect: EffectId,
        answer: AppendAnswer,
    },
    Write {
        effect: EffectId,
        text: String,
    },
    WriteAnswer {
        effect: EffectId,
        error: Option<Cause>,
    },
    AbortSignal {
        signal: SignalId,
    },
    Settled {
        op: OpId,
        settlement: Settlement,
    },
    /// An observer's handler was called with an agent event.
    Notify {
        effect: EffectId,
        observer: String,
        agent_event: ObservedEvent,
    },
    /// The observer's handler returned or threw.
    NotifyAnswer {
        effect: EffectId,
        answer: NotifyOutcome,
    },
    /// The networked world changed: a partition, a hold, a store crash or restart (`at_ms` is
    /// simulated time).
    Net {
        at_ms: u64,
        change: NetChange,
    },
    /// The store server opened its session file: how many entries it holds and the torn tail
    /// it excluded (bytes), if any.
    StoreOpened {
        at_ms: u64,
        entries: usize,
        torn_bytes: Option<u64>,
    },
    /// After the run (and a restart, if the store crashed), a new runtime was restored from the
    /// store's file at the last acknowledged leaf. `path` is the restored chain's entry ids.
    Reopened {
        leaf: Option<String>,
        stored: Vec<String>,
        outcome: Result<Vec<String>, Cause>,
    },
    /// The subject's own state, as it reported it at the end of a step (a state probe): its
    /// leaf and how many appends it counts as persisted since it was restored. Recorded only
    /// when it differs from the state before (at first the restored leaf and 0).
    State {
        leaf: Option<String>,
        persisted: u64,
    },
    /// The run ended: nothing was enabled. `pending` effects never completed; `undelivered`
    /// operations never had their `after` condition hold.
    End {
        pending: Vec<EffectId>,
        undelivered: Vec<OpId>,
    },
}

impl Event {
    /// The event that records `effect` as the subject issued it (before any answer); its
    /// contents move into the event.
    pub fn from_effect(effect: Effect) -> Event {
        match effect {
            Effect::ModelRequest {
                effect,
                signal,
                request,
            } => Event::ModelRequest {
                effect,
                signal,
                system_prompt: request.system_prompt,
                messages: request.messages,
                tools: request.tools,
            },
            Effect::ToolCall { effect, signal, call } => Event::ToolCall { effect, signal, call },
            Effect::Hook {
                effect,
                extension,
                phase,
                call,
                result,
            } => Event::Hook {
                effect,
                extension,
                phase,
                call,
                result,
            },
            Effect::Append { effect, entry } => Event::Append { effect, entry },
            Effect::Write { effect, text } => Event::Write { effect, text },
            Effect::Notify {
                effect,
                observer,
                event,
            } => Event::Notify {
                effect,
                observer,
                agent_event: event,
            },
            Effect::AbortSignal { signal } => Event::AbortSignal { signal },
            Effect::Settled { op, settlement } => Event::Settled { op, settlement },
        }
    }
}

/// What a subject that probes its state reports at the end of a step: its leaf, and how many
/// appends it counts as persisted (accepted by the store) since it was restored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateProbe {
    pub leaf: Option<String>,
    pub persisted: u64,
}

impl StateProbe {
    /// The state of a runtime just restored at `leaf`: nothing persisted yet.
    pub fn restored(leaf: Option<&str>) -> StateProbe {
        StateProbe {
            leaf: leaf.map(str::to_string),
            persisted: 0,
        }
    }
}

/// Records a probing subject's state in a trace, only where it changed: what every driver of a
/// subject (the scheduler, the networked world) calls after the restore and after each step.
#[derive(Debug, Clone, Default)]
pub struct StateRecorder {
    last: Option<StateProbe>,
}

impl StateRecorder {
    /// After the restore at `leaf`: the state a probing subject starts from.
    pub fn restored(leaf: Option<&str>) -> StateRecorder {
        StateRecorder {
            last: Some(StateProbe::restored(leaf)),
        }
    }

    /// The event to record for `probe`, the subject's state now, if it changed.
    pub fn observe(&mut self, probe: Option<StateProbe>) -> Option<Event> {
        let probe = probe?;
        if self.last.as_ref() == Some(&probe) {
            return None;
        }
        self.last = Some(probe.clone());
        Some(Event::State {
            leaf: probe.leaf,
            persisted: probe.persisted,
        })
    }
}

/// A whole run's events, in order. Line numbers in renderings are 1-based indexes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub events: Vec<Event>,
}

impl Trace {
    pub fn push(&mut self, event: Event) {
        self.events.push(event);
    }

    /// The store a world that applies what its answers say would hold after this trace:
    /// `initial`, then the entry of every append answered applied (`ok` or
    /// `applied_then_failed`), in the order of the answers. An answer completes the oldest
    /// unanswered append of its effect id, as the world answers its pending effects. Lent from
    /// `initial` and the trace.
    pub fn applied_store<'a>(&'a self, initial: &'a [SessionEntry]) -> Vec<&'a SessionEntry> {
        let mut entries: Vec<&SessionEntry> = Vec::with_capacity(initial.len() + 16);
        entries.extend(initial);
        let mut unanswered: Vec<(EffectId, &SessionEntry)> = Vec::new();
        for event in &self.events {
            match event {
                Event::Append { effect, entry } => unanswered.push((*effect, entry)),
                Event::AppendAnswer { effect, answer } => {
                    if let Some(at) = unanswered.iter().position(|(issued, _)| issued == effect) {
                        let (_, entry) = unanswered.remove(at);
                        if answer.applied() {
                            entries.push(entry);
                        }
                    }
                }
                _ => {}
            }
        }
        entries
    }

    /// The one-line-per-event rendering, each line ending in `\n`.
    pub fn render(&self) -> String {
        let mut text = String::new();
        for (index, event) in self.events.iter().enumerate() {
            text.push_str(&render_line(index + 1, event));
            text.push('\n');
        }
        text
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("trace events always serialize")
    }
}

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

#[cfg(test)]
mod tests {
    use super::{AppendAnswer, Event, Trace};
    use crate::model::{Message, SessionEntry};
    use crate::runtime::{Cause, EffectId};

    fn entry(id: &str, parent: Option<&str>) -> SessionEntry {
        SessionEntry::message(id, parent, "2026-01-01T00:00:00.000Z", Message::user(id, 0))
    }

    fn ids(entries: &[&SessionEntry]) -> Vec<String> {
        entries.iter().map(|entry| entry.id.clone()).collect()
    }

    /// The store a trace shows: the session, then what was answered applied, in answer order; a
    /// rejected or lost append is not in it, an applied-then-failed one is, and an answer to a
    /// reissued id completes its oldest unanswered append, as the world answers.
    #[test]
    fn the_applied_store_is_the_session_then_what_the_answers_applied_in_answer_order() {
        let session = [entry("s", None)];
        let append = |effect: u32, id: &str| Event::Append {
            effect: EffectId(effect),
            entry: entry(id, Some("s")),
        };
        let answer = |effect: u32, answer: AppendAnswer| Event::AppendAnswer {
            effect: EffectId(effect),
            answer,
        };
        let cause = || Cause::new("store.failed", "disk full");
        let trace = Trace {
            events: vec![
                append(1, "a"),
                append(2, "b"),
                append(3, "c"),
                append(4, "d"),
                append(5, "e"),
                answer(2, AppendAnswer::Ok),
                answer(1, AppendAnswer::AppliedThenFailed { cause: cause() }),
                answer(3, AppendAnswer::Rejected { cause: cause() }),
                answer(4, AppendAnswer::Lost { cause: cause() }),
                append(5, "f"),
                answer(5, AppendAnswer::Ok),
                answer(9, AppendAnswer::Ok),
            ],
        };
        assert_eq!(ids(&trace.applied_store(&session)), ["s", "b", "a", "e"]);
        // A prefix holds what was answered within it.
        let prefix = Trace {
            events: trace.events[..7].to_vec(),
        };
        assert_eq!(ids(&prefix.applied_store(&session)), ["s", "b", "a"]);
    }
}
