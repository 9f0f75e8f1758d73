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
    Cause, Effect, EffectId, HookOutcome, HookPhase, NotifyOutcome, ObservedEvent, OpId, Settlement, SignalId,
    ToolOutcome,
};

mod render;

pub use render::{describe_settlement, quote, quote_short, render_line};

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
    /// Whether the event is the world's input to the runtime: an operation delivered or an
    /// effect answered. The outputs between one input and the next are one step of the runtime,
    /// issued until it was quiescent.
    pub fn is_input(&self) -> bool {
        matches!(self, Event::Deliver { .. }) || self.answered().is_some()
    }

    /// The effect this event answers, if it is the world's answer to one.
    pub fn answered(&self) -> Option<EffectId> {
        match self {
            Event::ModelChunk { effect, .. }
            | Event::ModelResponse { effect, .. }
            | Event::ToolAnswer { effect, .. }
            | Event::HookAnswer { effect, .. }
            | Event::AppendAnswer { effect, .. }
            | Event::WriteAnswer { effect, .. }
            | Event::NotifyAnswer { effect, .. } => Some(*effect),
            _ => None,
        }
    }

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
