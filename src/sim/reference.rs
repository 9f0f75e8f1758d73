//! The reference Runtime as a Subject, in process.

use crate::model::Operation;
use crate::runtime::{
    AgentEvent, Cause, Completion, Effect, EffectId, Input, InputError, OtherReaders, Runtime, RuntimeConfig,
    RuntimeDeps, StoreOutcome, SubscriptionId,
};
use crate::scenario::Scenario;

use super::{Restored, Subject, SubjectFailure};

/// Drives `runtime::Runtime` directly, cross-checking its embedding API after every input.
#[derive(Debug, Default)]
pub struct ReferenceSubject {
    runtime: Option<Runtime>,
    /// Who else reads the runtime's clock and id rules (nobody, but in the fairness test).
    other_readers: OtherReaders,
    /// Cross-checks of the reference's own accessors.
    self_check: Option<SelfCheck>,
    /// `without_self_check`: the bench's measure of the scheduler alone.
    skip_self_check: bool,
    /// The restored transcript's length: what the runtime's persisted message count starts at.
    restored_messages: usize,
}

impl ReferenceSubject {
    pub fn new() -> ReferenceSubject {
        ReferenceSubject::default()
    }

    /// The reference without its self-check: only for `agentsim bench`, to show what the
    /// scheduler costs on its own. Every run of the kit checks the reference.
    pub fn without_self_check() -> ReferenceSubject {
        ReferenceSubject {
            skip_self_check: true,
            ..ReferenceSubject::default()
        }
    }

    /// The reference whose clock and id rules other readers draw from too.
    pub fn with_other_readers(other_readers: OtherReaders) -> ReferenceSubject {
        ReferenceSubject {
            other_readers,
            ..ReferenceSubject::default()
        }
    }
}

/// The runtime configuration and dependencies a scenario describes.
pub fn runtime_parts(scenario: &Scenario) -> (RuntimeConfig, RuntimeDeps) {
    let config = RuntimeConfig {
        active_leaf_id: scenario.config.active_leaf_id.clone(),
        system_prompt: scenario.config.system_prompt.clone(),
        steps_max: scenario.config.max_steps,
        context: scenario.config.context,
    };
    let deps = RuntimeDeps {
        resources: scenario.resources.clone(),
        extensions: scenario.extensions.iter().map(|script| script.name.clone()).collect(),
        tools: crate::model::ToolRegistry::new(scenario.tools.iter().map(|tool| tool.spec()).collect()),
        ids: scenario.config.ids.clone(),
        clock: scenario.config.clock.clone(),
        observers: scenario
            .observers
            .iter()
            .map(crate::scenario::ObserverScript::spec)
            .collect(),
        other_readers: OtherReaders::default(),
    };
    (config, deps)
}

impl Subject for ReferenceSubject {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        let (config, mut deps) = runtime_parts(scenario);
        deps.other_readers = self.other_readers;
        match Runtime::restore(config, deps, &scenario.session) {
            Ok(mut runtime) => {
                let restored = Restored {
                    leaf: runtime.leaf().map(str::to_string),
                    messages: runtime.control().view().messages.len(),
                    setup: Vec::new(),
                };
                self.restored_messages = runtime.persisted_message_count();
                if !self.skip_self_check {
                    self.self_check = Some(SelfCheck::start(scenario, &mut runtime).map_err(self_check_failure)?);
                }
                self.runtime = Some(runtime);
                Ok(Ok(restored))
            }
            Err(error) => {
                self.runtime = None;
                Ok(Err(Cause::new(error.code(), error.to_string())))
            }
        }
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        let runtime = self.runtime.as_mut().ok_or_else(|| SubjectFailure::Protocol {
            message: "an input was delivered before a successful start".into(),
        })?;
        if let Some(check) = self.self_check.as_mut() {
            check.before(&input);
        }
        runtime.handle_input(input).map_err(|error| SubjectFailure::Protocol {
            message: format!("{}: {error}", error.code()),
        })?;
        let first = effects.len();
        while let Some(effect) = runtime.poll_effect() {
            effects.push(effect);
        }
        if let Some(check) = self.self_check.as_mut() {
            check.after(runtime, &effects[first..]).map_err(self_check_failure)?;
        }
        Ok(())
    }

    /// The runtime's leaf and the messages it persisted since the restore (it appends message
    /// entries only, one per message).
    fn state(&self) -> Option<crate::trace::StateProbe> {
        let runtime = self.runtime.as_ref()?;
        Some(crate::trace::StateProbe {
            leaf: runtime.leaf().map(str::to_string),
            persisted: runtime.persisted_message_count().saturating_sub(self.restored_messages) as u64,
        })
    }
}

fn self_check_failure(message: String) -> SubjectFailure {
    SubjectFailure::Protocol {
        message: format!("reference self-check: {message}"),
    }
}

/// The reference's accessors, agent events and input errors, checked against the effects it
/// emitted after every input. Reference only: the rule checkers read only what every Subject
/// shows, and these are the embedding API of the in-process Runtime.
#[derive(Debug)]
struct SelfCheck {
    subscription: SubscriptionId,
    /// Subscribed and unsubscribed at once: must never receive an event.
    unsubscribed: SubscriptionId,
    /// Pending effects and the name of their kind, as `InputError::CompletionMismatch` says it,
    /// sorted by id (ids grow through a run: an insertion is a push).
    pending: Vec<(EffectId, &'static str)>,
    appends: u64,
    accepted: usize,
    restored_messages: usize,
    messages: usize,
    poison: Option<Cause>,
    disposed: bool,
    /// The text streamed so far for each pending model request that streamed some.
    streamed: Vec<(EffectId, String)>,
    /// The chunk of the input being delivered, if it is one.
    chunk: Option<(EffectId, String)>,
    /// A buffer reused by every input's check: the streamed deltas.
    deltas: String,
}

fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: T, expected: T) -> Result<(), String> {
    if got == expected {
        Ok(())
    } else {
        Err(format!("{what} is {got:?}, expected {expected:?}"))
    }
}

impl SelfCheck {
    fn start(scenario: &Scenario, runtime: &mut Runtime) -> Result<SelfCheck, String> {
        // Compared piece by piece; the merged text is built only to describe a difference.
        let configured = scenario.config.system_prompt.as_deref();
        if !crate::model::is_merged_system_prompt(runtime.system_prompt(), configured, &scenario.resources) {
            check(
                "system_prompt()",
                runtime.system_prompt(),
                crate::model::merge_system_prompt(configured, &scenario.resources).as_deref(),
            )?;
        }
        // Compared with the scenario in place; the runtime's parts are built again only to
        // describe a difference.
        let extensions_same = runtime
            .extensions()
            .iter()
            .eq(scenario.extensions.iter().map(|script| &script.name));
        let tools_same = runtime.tools().specs().len() == scenario.tools.len()
            && runtime.tools().specs().iter().zip(&scenario.tools).all(|(spec, tool)| {
                spec.name == tool.name && spec.description == tool.description && spec.parameters == tool.parameters
            });
        if runtime.resources() != &scenario.resources || !extensions_same || !tools_same {
            let (_, deps) = runtime_parts(scenario);
            check("resources()", runtime.resources(), &deps.resources)?;
            check("extensions()", runtime.extensions(), &deps.extensions[..])?;
            check("tools()", runtime.tools(), &deps.tools)?;
        }
        let subscription = runtime.control().subscribe();
        let unsubscribed = runtime.control().subscribe();
        runtime.control().unsubscribe(unsubscribed);
        let messages = runtime.control().view().messages.len();
        Ok(SelfCheck {
            subscription,
            unsubscribed,
            pending: Vec::new(),
            appends: 0,
            accepted: 0,
            restored_messages: messages,
            messages,
            poison: None,
            disposed: false,
            streamed: Vec::new(),
            chunk: None,
            deltas: String::new(),
        })
    }

    fn before(&mut self, input: &Input) {
        self.chunk = None;
        match input {
            Input::Operation {
                operation: Operation::Dispose,
                ..
            } => self.disposed = true,
            Input::Complete { effect, completion } => match completion {
                Completion::ModelChunk { text } => {
                    match self.streamed.iter_mut().find(|(id, _)| id == effect) {
                        Some((_, streamed)) => streamed.push_str(text),
                        None => self.streamed.push((*effect, text.clone())),
                    }
                    self.chunk = Some((*effect, text.clone()));
                }
                _ => {
                    if let Ok(at) = self.pending.binary_search_by_key(effect, |(id, _)| *id) {
                        let (_, kind) = self.pending.remove(at);
                        self.streamed.retain(|(id, _)| id != effect);
                        match completion {
                            Completion::Append(StoreOutcome::Ok) if kind == "append" => self.accepted += 1,
                            Completion::Append(StoreOutcome::Failed(cause)) if kind == "append" => {
                                self.poison.get_or_insert_with(|| cause.clone());
                            }
                            _ => {}
                        }
                    }
                }
            },
            _ => {}
        }
    }

    fn after(&mut self, runtime: &mut Runtime, effects: &[Effect]) -> Result<(), String> {
        for effect in effects {
            let kind = match effect {
                Effect::ModelRequest { .. } => "model request",
                Effect::ToolCall { .. } => "tool call",
                Effect::Hook { .. } => "hook",
                Effect::Append { .. } => {
                    self.appends += 1;
                    "append"
                }
                Effect::Write { .. } => "write",
                Effect::Notify { .. } => "notification",
                Effect::AbortSignal { .. } | Effect::Settled { .. } => continue,
            };
            let id = effect
                .pending_id()
                .ok_or_else(|| format!("{effect:?} has no pending_id()"))?;
            match self.pending.binary_search_by_key(&id, |(pending, _)| *pending) {
                Ok(at) => self.pending[at].1 = kind,
                Err(at) => self.pending.insert(at, (id, kind)),
            }
        }
        if !runtime.pending_effect_ids().eq(self.pending.iter().map(|(id, _)| *id)) {
            check(
                "pending_effects()",
                runtime.pending_effects(),
                self.pending.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            )?;
        }
        check("ids_issued()", runtime.ids_issued(), self.appends)?;
        check("poison()", runtime.poison(), self.poison.as_ref())?;
        check("is_closed()", runtime.is_closed(), self.disposed)?;
        check(
            "persisted_message_count()",
            runtime.persisted_message_count(),
            self.restored_messages + self.accepted,
        )?;
        // Agent events: one message_end per message that joined the transcript, one
        // message_update per streamed chunk, nothing for an unsubscribed subscriber.
        // Read through the borrowed `view()` and `take_events()`, of which `state()` and
        // `drain_events()` are copies: nothing is cloned on the passing path.
        let events = runtime.control().take_events(self.subscription);
        let ended = events
            .iter()
            .filter(|event| matches!(event, AgentEvent::MessageEnd { .. }))
            .count();
        self.deltas.clear();
        for event in events {
            if let AgentEvent::MessageUpdate { delta } = event {
                self.deltas.push_str(delta);
            }
        }
        let state = runtime.control().view();
        check("message_end events", ended, state.messages.len() - self.messages)?;
        self.messages = state.messages.len();
        // Most inputs are not chunks and stream nothing: nothing to compare.
        if !(self.deltas.is_empty() && self.chunk.is_none()) {
            check(
                "message_update deltas",
                self.deltas.as_str(),
                self.chunk.as_ref().map_or("", |(_, text)| text.as_str()),
            )?;
        }
        if let Some((effect, _)) = &self.chunk {
            if self.pending.binary_search_by_key(effect, |(id, _)| *id).is_ok() {
                let streamed = self.streamed.iter().find(|(id, _)| id == effect);
                check(
                    "state().streaming_text",
                    state.streaming_text,
                    streamed.map(|(_, text)| text.as_str()),
                )?;
            }
        }
        check(
            "events of an unsubscribed subscriber",
            runtime.control().take_events(self.unsubscribed),
            &[][..],
        )?;
        // A driver's mistakes are refused and change nothing.
        let unknown = EffectId(u32::MAX);
        let error = runtime
            .handle_input(Completion::Write(StoreOutcome::Ok).into_input(unknown))
            .err()
            .ok_or("completing an unknown effect was accepted")?;
        check("an unknown effect's error code", error.code(), "input.unknown_effect")?;
        if let Some(&(effect, kind)) = self.pending.first() {
            let (completion, got) = if kind == "write" {
                (Completion::Append(StoreOutcome::Ok), "an append outcome")
            } else {
                (Completion::Write(StoreOutcome::Ok), "a write outcome")
            };
            let error = runtime
                .handle_input(completion.into_input(effect))
                .err()
                .ok_or("a mismatched completion was accepted")?;
            check(
                "a mismatched completion's error code",
                error.code(),
                "input.completion_mismatch",
            )?;
            // The error's text is a function of its fields (a unit test checks it for every
            // kind): the fields are compared at every input, the text only to describe a
            // difference, so no verdict depends on what a process checked before.
            let same_fields = matches!(
                error,
                InputError::CompletionMismatch { effect: refused, expected, got: named }
                    if refused == effect && expected == kind && named == got
            );
            if !same_fields {
                return Err(format!(
                    "a mismatched completion's error: got {error:?} (\"{error}\"), expected \"{effect} is a pending \
                     {kind}; it cannot be completed with {got}\""
                ));
            }
        }
        if let Some(effect) = runtime.poll_effect() {
            return Err(format!("a refused input produced {effect:?}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::runtime::{EffectId, InputError};

    /// The self-check compares a refused completion's fields at every input and its text only
    /// to describe a difference: the text of every kind is checked here.
    #[test]
    fn a_mismatched_completion_says_what_the_effect_is_and_what_it_got() {
        let kinds = ["model request", "tool call", "hook", "append", "write", "notification"];
        let texts: Vec<String> = kinds
            .iter()
            .map(|kind| {
                InputError::CompletionMismatch {
                    effect: EffectId(7),
                    expected: kind,
                    got: "a write outcome",
                }
                .to_string()
            })
            .collect();
        assert_eq!(
            texts,
            [
                "fx#7 is a pending model request; it cannot be completed with a write outcome",
                "fx#7 is a pending tool call; it cannot be completed with a write outcome",
                "fx#7 is a pending hook; it cannot be completed with a write outcome",
                "fx#7 is a pending append; it cannot be completed with a write outcome",
                "fx#7 is a pending write; it cannot be completed with a write outcome",
                "fx#7 is a pending notification; it cannot be completed with a write outcome",
            ]
        );
    }
}
