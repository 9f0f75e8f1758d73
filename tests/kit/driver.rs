//! A small deterministic driver for the sans-IO [`Runtime`], and the fixtures the kit's tests share.
//!
//! The driver plays the world: it delivers operations, then completes the runtime's pending
//! effects in FIFO order from a script (model answers, tool answers per tool name, hook answers
//! per extension and phase, a store fault plan, output sink outcomes). It records every effect
//! it sees, in order, and keeps the entries the store accepted in `store`. It never reads a
//! clock or draws a random number, so one script always gives one run.

use std::collections::{BTreeMap, VecDeque};

use agentsim::model::{
    AssistantBlock, AssistantMessage, ContentBlock, ContextBudget, Message, SessionEntry, StopReason, ToolCall,
    ToolSpec, Usage,
};
use agentsim::runtime::{
    Cause, Completion, Effect, EffectId, HookOutcome, HookPhase, Input, InputError, ModelRequest, OpId, OpValue,
    RunResult, Runtime, RuntimeConfig, RuntimeDeps, Settlement, StoreOutcome, ToolOutcome,
};
use serde_json::{json, Value};

/// The timestamp every scripted model answer carries.
pub const MODEL_TIMESTAMP: u64 = 1_767_000_000_000;

/// The timestamp of the hand-made session entries.
pub const ENTRY_TIMESTAMP: &str = "2025-12-31T00:00:00.000Z";

pub fn assistant(content: Vec<AssistantBlock>, stop_reason: StopReason) -> AssistantMessage {
    AssistantMessage {
        content,
        api: "faux".to_string(),
        provider: "faux".to_string(),
        model: "faux-1".to_string(),
        usage: Usage::default(),
        stop_reason,
        error_message: None,
        timestamp: MODEL_TIMESTAMP,
    }
}

/// A final text answer.
pub fn assistant_text(text: &str) -> AssistantMessage {
    assistant(vec![AssistantBlock::Text { text: text.to_string() }], StopReason::Stop)
}

/// An answer with one tool call.
pub fn assistant_tool_call(id: &str, name: &str, arguments: Value) -> AssistantMessage {
    assistant(
        vec![AssistantBlock::ToolCall(tool_call(id, name, arguments))],
        StopReason::ToolUse,
    )
}

pub fn tool_call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments,
    }
}

/// A successful tool answer with one text block.
pub fn tool_text(text: &str) -> ToolOutcome {
    ToolOutcome::Ok {
        content: vec![ContentBlock::text(text)],
        details: None,
        is_error: false,
    }
}

pub fn message_entry(id: &str, parent_id: Option<&str>, message: Message) -> SessionEntry {
    SessionEntry::message(id, parent_id, ENTRY_TIMESTAMP, message)
}

/// The chapter's restored session: `old-user -> old-assistant`.
pub fn old_session() -> Vec<SessionEntry> {
    vec![
        message_entry("old-user", None, old_user()),
        message_entry("old-assistant", Some("old-user"), old_assistant()),
    ]
}

pub fn old_user() -> Message {
    Message::user("继续检查 parser", 1_000)
}

pub fn old_assistant() -> Message {
    Message::Assistant(assistant_text("我会先看现有实现"))
}

/// The chapter's tool.
pub fn review_note_spec() -> ToolSpec {
    ToolSpec {
        name: "review_note".to_string(),
        description: "Record a review note".to_string(),
        parameters: json!({"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}),
    }
}

/// A budget large enough that nothing is ever dropped.
pub fn large_budget() -> ContextBudget {
    ContextBudget {
        total: 1_000_000,
        reserved_output: 0,
        safety_margin: 0,
    }
}

pub fn config(leaf: Option<&str>) -> RuntimeConfig {
    RuntimeConfig {
        active_leaf_id: leaf.map(str::to_string),
        system_prompt: None,
        steps_max: 8,
        context: large_budget(),
    }
}

/// `old_session()` restored at `old-assistant`, with the given deps.
pub fn restore_old_session(deps: RuntimeDeps) -> Runtime {
    Runtime::restore(config(Some("old-assistant")), deps, &old_session()).expect("the old session restores")
}

pub fn disk_error() -> Cause {
    Cause::new("diskError", "disk full")
}

pub struct Driver {
    pub runtime: Runtime,
    /// Model answers, consumed one per model request.
    pub model_answers: VecDeque<AssistantMessage>,
    /// The core tool's answer per tool name; a tool without one answers `tool_text("ok")`.
    pub tool_answers: BTreeMap<String, ToolOutcome>,
    /// Hook answers per (extension, phase); otherwise before hooks allow and after hooks observe.
    pub hook_answers: BTreeMap<(String, HookPhase), HookOutcome>,
    /// The store fault plan: the k-th append (1-based) is rejected with this cause.
    pub append_faults: BTreeMap<usize, Cause>,
    /// Output sink answers, one per write; `Ok` once they run out.
    pub write_outcomes: VecDeque<StoreOutcome>,
    /// The entries the store accepted during this drive, in append order.
    pub store: Vec<SessionEntry>,
    /// Every effect the runtime produced, in order.
    pub seen: Vec<Effect>,
    pending: VecDeque<Effect>,
    appends_answered: usize,
    op_next: u32,
}

impl Driver {
    pub fn new(runtime: Runtime) -> Driver {
        Driver {
            runtime,
            model_answers: VecDeque::new(),
            tool_answers: BTreeMap::new(),
            hook_answers: BTreeMap::new(),
            append_faults: BTreeMap::new(),
            write_outcomes: VecDeque::new(),
            store: Vec::new(),
            seen: Vec::new(),
            pending: VecDeque::new(),
            appends_answered: 0,
            op_next: 1,
        }
    }

    // ----- the script -----

    pub fn answer(mut self, message: AssistantMessage) -> Driver {
        self.model_answers.push_back(message);
        self
    }

    pub fn tool(mut self, name: &str, outcome: ToolOutcome) -> Driver {
        self.tool_answers.insert(name.to_string(), outcome);
        self
    }

    pub fn hook(mut self, extension: &str, phase: HookPhase, outcome: HookOutcome) -> Driver {
        self.hook_answers.insert((extension.to_string(), phase), outcome);
        self
    }

    pub fn fail_append(mut self, k: usize, cause: Cause) -> Driver {
        self.append_faults.insert(k, cause);
        self
    }

    pub fn write_outcome(mut self, outcome: StoreOutcome) -> Driver {
        self.write_outcomes.push_back(outcome);
        self
    }

    // ----- operations -----

    /// Delivers the operation `input(op)` under the next operation id, and returns that id.
    pub fn operation(&mut self, input: impl FnOnce(OpId) -> Input) -> OpId {
        let op = OpId(self.op_next);
        self.op_next += 1;
        self.send(input(op));
        op
    }

    pub fn prompt(&mut self, text: &str) -> OpId {
        self.operation(|op| Input::Prompt { op, text: text.into() })
    }

    pub fn mode(&mut self, mode: &str, text: &str) -> OpId {
        self.operation(|op| Input::Mode {
            op,
            mode: mode.into(),
            text: text.into(),
        })
    }

    pub fn flush(&mut self) -> OpId {
        self.operation(|op| Input::Flush { op })
    }

    pub fn dispose(&mut self) -> OpId {
        self.operation(|op| Input::Dispose { op })
    }

    pub fn steer(&mut self, text: &str) -> OpId {
        self.operation(|op| Input::Steer { op, text: text.into() })
    }

    pub fn follow_up(&mut self, text: &str) -> OpId {
        self.operation(|op| Input::FollowUp { op, text: text.into() })
    }

    pub fn abort(&mut self) -> OpId {
        self.operation(|op| Input::Abort { op })
    }

    /// Delivers one input, which the runtime must accept, and collects its effects.
    pub fn send(&mut self, input: Input) {
        if let Err(error) = self.try_send(input) {
            panic!("the runtime refused an input: {error}");
        }
    }

    /// Delivers one input and collects its effects; a refused input changes nothing here.
    pub fn try_send(&mut self, input: Input) -> Result<(), InputError> {
        let completed = match &input {
            Input::Complete {
                effect,
                completion: Completion::ModelFinal { .. } | Completion::Tool(_) | Completion::Hook(_),
            } => Some((*effect, None)),
            Input::Complete {
                effect,
                completion: Completion::Append(outcome) | Completion::Write(outcome),
            } => Some((*effect, Some(outcome.clone()))),
            _ => None,
        };
        self.runtime.handle_input(input)?;
        if let Some((effect, outcome)) = completed {
            let index = self
                .pending
                .iter()
                .position(|pending| pending.pending_id() == Some(effect));
            let pending = self
                .pending
                .remove(index.expect("the driver saw this effect"))
                .expect("in range");
            if let (Effect::Append { entry, .. }, Some(StoreOutcome::Ok)) = (pending, outcome) {
                self.store.push(entry);
            }
        }
        while let Some(effect) = self.runtime.poll_effect() {
            if effect.pending_id().is_some() {
                self.pending.push_back(effect.clone());
            }
            self.seen.push(effect);
        }
        Ok(())
    }

    // ----- completing effects -----

    /// Completes the oldest pending effect from the script. Returns false when none is pending.
    pub fn step(&mut self) -> bool {
        let Some(effect) = self.pending.front().cloned() else {
            return false;
        };
        let completion = self.scripted_completion(&effect);
        self.complete(effect.pending_id().expect("pending"), completion);
        true
    }

    /// Completes pending effects, oldest first, until none is pending.
    pub fn run_until_quiet(&mut self) {
        for _ in 0..10_000 {
            if !self.step() {
                return;
            }
        }
        panic!("the runtime did not become quiet within 10000 completions");
    }

    /// Steps until an effect of the given kind is the oldest pending one.
    pub fn run_until_pending(&mut self, kind: &str) {
        while self.pending.front().map(effect_kind) != Some(kind) {
            assert!(self.step(), "the runtime went quiet before a pending {kind}");
        }
    }

    /// Completes one pending effect with the given completion.
    pub fn complete(&mut self, effect: EffectId, completion: Completion) {
        self.send(Input::Complete { effect, completion });
    }

    /// Completes the oldest pending effect with the given completion, bypassing the script.
    pub fn complete_next(&mut self, completion: Completion) {
        let effect = self.pending_ids().first().copied().expect("an effect is pending");
        self.complete(effect, completion);
    }

    fn scripted_completion(&mut self, effect: &Effect) -> Completion {
        match effect {
            Effect::ModelRequest { .. } => {
                let message = self.model_answers.pop_front().unwrap_or_else(|| {
                    panic!(
                        "no scripted model answer left for model request {}",
                        self.model_requests().len()
                    )
                });
                Completion::ModelFinal { message }
            }
            Effect::ToolCall { call, .. } => Completion::Tool(
                self.tool_answers
                    .get(&call.name)
                    .cloned()
                    .unwrap_or_else(|| tool_text("ok")),
            ),
            Effect::Hook { extension, phase, .. } => {
                let default = match phase {
                    HookPhase::Before => HookOutcome::Allow,
                    HookPhase::After => HookOutcome::Observe,
                };
                let answer = self.hook_answers.get(&(extension.clone(), *phase)).cloned();
                Completion::Hook(answer.unwrap_or(default))
            }
            Effect::Append { .. } => {
                self.appends_answered += 1;
                match self.append_faults.get(&self.appends_answered) {
                    Some(cause) => Completion::Append(StoreOutcome::Failed(cause.clone())),
                    None => Completion::Append(StoreOutcome::Ok),
                }
            }
            Effect::Write { .. } => Completion::Write(self.write_outcomes.pop_front().unwrap_or(StoreOutcome::Ok)),
            Effect::Notify { .. } => Completion::Notify(agentsim::runtime::NotifyOutcome::Ok),
            Effect::AbortSignal { .. } | Effect::Settled { .. } => unreachable!("notifications are never pending"),
        }
    }

    // ----- what was seen -----

    /// The ids of the effects waiting for the world, oldest first.
    pub fn pending_ids(&self) -> Vec<EffectId> {
        self.pending.iter().filter_map(Effect::pending_id).collect()
    }

    pub fn model_requests(&self) -> Vec<&ModelRequest> {
        self.seen
            .iter()
            .filter_map(|effect| match effect {
                Effect::ModelRequest { request, .. } => Some(request),
                _ => None,
            })
            .collect()
    }

    /// Every entry the runtime asked the store to append, accepted or not.
    pub fn appended(&self) -> Vec<&SessionEntry> {
        self.seen
            .iter()
            .filter_map(|effect| match effect {
                Effect::Append { entry, .. } => Some(entry),
                _ => None,
            })
            .collect()
    }

    pub fn writes(&self) -> Vec<&str> {
        self.seen
            .iter()
            .filter_map(|effect| match effect {
                Effect::Write { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn settlement(&self, op: OpId) -> Option<&Settlement> {
        self.seen.iter().find_map(|effect| match effect {
            Effect::Settled {
                op: settled,
                settlement,
            } if *settled == op => Some(settlement),
            _ => None,
        })
    }

    /// The run result an operation resolved with; panics otherwise.
    pub fn run_result(&self, op: OpId) -> &RunResult {
        match self.settlement(op) {
            Some(Settlement::Resolved(OpValue::Run(result))) => result,
            other => panic!("{op} did not resolve with a run result: {other:?}"),
        }
    }

    /// The cause an operation was rejected with; panics otherwise.
    pub fn rejection(&self, op: OpId) -> &Cause {
        match self.settlement(op) {
            Some(Settlement::Rejected(cause)) => cause,
            other => panic!("{op} was not rejected: {other:?}"),
        }
    }

    /// One line per effect seen, e.g. `hook review-policy before review_note`.
    pub fn trace(&self) -> Vec<String> {
        self.seen.iter().map(render).collect()
    }

    /// The index in `trace()` of the first line equal to `line`.
    pub fn position(&self, line: &str) -> usize {
        let trace = self.trace();
        trace
            .iter()
            .position(|seen| seen == line)
            .unwrap_or_else(|| panic!("`{line}` is not in the trace:\n{}", trace.join("\n")))
    }
}

fn effect_kind(effect: &Effect) -> &'static str {
    match effect {
        Effect::ModelRequest { .. } => "model",
        Effect::ToolCall { .. } => "tool",
        Effect::Hook { .. } => "hook",
        Effect::Append { .. } => "append",
        Effect::Write { .. } => "write",
        Effect::Notify { .. } => "notify",
        Effect::AbortSignal { .. } => "abort",
        Effect::Settled { .. } => "settled",
    }
}

fn render(effect: &Effect) -> String {
    let kind = effect_kind(effect);
    match effect {
        Effect::ModelRequest { signal, .. } => format!("{kind} {signal}"),
        Effect::ToolCall { signal, call, .. } => format!("{kind} {} {signal}", call.name),
        Effect::Hook {
            extension, phase, call, ..
        } => format!("{kind} {extension} {} {}", phase.as_str(), call.name),
        Effect::Append { entry, .. } => {
            format!(
                "{kind} {} <- {}",
                entry.id,
                entry.parent_id.as_deref().unwrap_or("null")
            )
        }
        Effect::Write { .. } => kind.to_string(),
        Effect::Notify { observer, event, .. } => format!("{kind} {observer} {}", event.kind().name()),
        Effect::AbortSignal { signal } => format!("{kind} {signal}"),
        Effect::Settled { op, settlement } => match settlement {
            Settlement::Resolved(_) => format!("{kind} {op} resolved"),
            Settlement::Rejected(cause) => format!("{kind} {op} rejected {}", cause.code),
        },
    }
}
