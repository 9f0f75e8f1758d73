//! Bugs at the Subject seam: decorators around the reference that rewrite what crosses the
//! seam (inputs in, effects out, completions, the restore) and leave the core untouched.
//!
//! Each [`SeamBug`] is a mistake a real runtime makes in its wiring rather than inside one
//! step of its state machine: an abort that is never forwarded to the agent, an extension
//! host that drops after hooks, a projection that forgets the unpersisted suffix, a mode that
//! wraps the sink's error. The reference stays the chapter's contract; the bug lives here.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::model::{merge_system_prompt, Message, SessionEntry, ToolSpec};
use crate::runtime::{
    Cause, Completion, Effect, EffectId, HookOutcome, HookPhase, Input, OpId, OpValue, RunReason, Settlement,
    StoreOutcome,
};
use crate::scenario::Scenario;
use crate::sim::reference::ReferenceSubject;
use crate::sim::{Restored, Subject, SubjectFailure};

/// One deliberate wiring bug, expressed as a rewrite at the seam.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum SeamBug {
    /// `control.abort()` is accepted but never reaches the agent: the signal never fires.
    AbortIgnored,
    /// The extension host runs no after hook: the core result goes straight to the agent.
    AfterHooksSkipped,
    /// The host's after loop stops one short: the last extension never observes a result.
    LastAfterHookSkipped,
    /// The projection sends only persisted messages: the run's temporary suffix is missing.
    TemporarySuffixDropped,
    /// The suffix is computed once per run: later requests lack the call and its result.
    SuffixFrozenAtUser,
    /// A before hook's deny is logged but the call still runs.
    DenyIgnored,
    /// Arguments rewritten by a before hook are dropped; the original ones go on.
    RewrittenArgumentsIgnored,
    /// An after hook's rewritten result is dropped; the core result is recorded.
    AfterRewriteIgnored,
    /// `steer()` is queued as a follow-up.
    SteerAsFollowUp,
    /// `followUp()` is delivered like a steer, mid-run.
    FollowUpAsSteer,
    /// Control calls resolve only when the runtime next does something.
    ControlSettlesLate,
    /// An unknown mode name falls back to `print`.
    UnknownModeFallsBackToPrint,
    /// The sink's error is wrapped in a mode error instead of returned unchanged.
    WriteErrorWrapped,
    /// dispose() closes the entry only after the queue drained: prompts in between run.
    DisposeClosesLate,
    /// Prompts after dispose are rejected with a code of the runtime's own.
    DisposedCodeRenamed,
    /// Tools are sent sorted by name (a map keyed by name), not in registration order.
    ToolsSortedByName,
    /// Tools are sent without descriptions and with an empty parameter schema.
    ToolSchemaDropped,
    /// The resource context comes before the configured system prompt.
    ResourcesBeforeConfiguredPrompt,
    /// The formatter runs on an empty catalog: a bare `# Pi resources` header appears.
    ResourceHeaderOnEmptyCatalog,
    /// Every tree diagnostic becomes one generic restore error.
    PathErrorsGeneric,
    /// An empty session ignores the given leaf and starts a new conversation.
    EmptySessionIgnoresLeaf,
    /// A null leaf is refused even on an empty session.
    NullLeafAlwaysRejected,
    /// Entries are written with timestamp 0 instead of the clock's time.
    TimestampsNotFromClock,
    /// The library adapter always reports reason `stop`.
    LibraryReasonAlwaysStop,
    /// json mode lists only the run's new messages, not the transcript.
    JsonMessagesSuffixOnly,
}

impl SeamBug {
    pub const ALL: &'static [SeamBug] = &[
        SeamBug::AbortIgnored,
        SeamBug::AfterHooksSkipped,
        SeamBug::LastAfterHookSkipped,
        SeamBug::TemporarySuffixDropped,
        SeamBug::SuffixFrozenAtUser,
        SeamBug::DenyIgnored,
        SeamBug::RewrittenArgumentsIgnored,
        SeamBug::AfterRewriteIgnored,
        SeamBug::SteerAsFollowUp,
        SeamBug::FollowUpAsSteer,
        SeamBug::ControlSettlesLate,
        SeamBug::UnknownModeFallsBackToPrint,
        SeamBug::WriteErrorWrapped,
        SeamBug::DisposeClosesLate,
        SeamBug::DisposedCodeRenamed,
        SeamBug::ToolsSortedByName,
        SeamBug::ToolSchemaDropped,
        SeamBug::ResourcesBeforeConfiguredPrompt,
        SeamBug::ResourceHeaderOnEmptyCatalog,
        SeamBug::PathErrorsGeneric,
        SeamBug::EmptySessionIgnoresLeaf,
        SeamBug::NullLeafAlwaysRejected,
        SeamBug::TimestampsNotFromClock,
        SeamBug::LibraryReasonAlwaysStop,
        SeamBug::JsonMessagesSuffixOnly,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SeamBug::AbortIgnored => "abort-ignored",
            SeamBug::AfterHooksSkipped => "after-hooks-skipped",
            SeamBug::LastAfterHookSkipped => "last-after-hook-skipped",
            SeamBug::TemporarySuffixDropped => "temporary-suffix-dropped",
            SeamBug::SuffixFrozenAtUser => "suffix-frozen-at-user",
            SeamBug::DenyIgnored => "deny-ignored",
            SeamBug::RewrittenArgumentsIgnored => "rewritten-arguments-ignored",
            SeamBug::AfterRewriteIgnored => "after-rewrite-ignored",
            SeamBug::SteerAsFollowUp => "steer-as-follow-up",
            SeamBug::FollowUpAsSteer => "follow-up-as-steer",
            SeamBug::ControlSettlesLate => "control-settles-late",
            SeamBug::UnknownModeFallsBackToPrint => "unknown-mode-falls-back-to-print",
            SeamBug::WriteErrorWrapped => "write-error-wrapped",
            SeamBug::DisposeClosesLate => "dispose-closes-late",
            SeamBug::DisposedCodeRenamed => "disposed-code-renamed",
            SeamBug::ToolsSortedByName => "tools-sorted-by-name",
            SeamBug::ToolSchemaDropped => "tool-schema-dropped",
            SeamBug::ResourcesBeforeConfiguredPrompt => "resources-before-configured-prompt",
            SeamBug::ResourceHeaderOnEmptyCatalog => "resource-header-on-empty-catalog",
            SeamBug::PathErrorsGeneric => "path-errors-generic",
            SeamBug::EmptySessionIgnoresLeaf => "empty-session-ignores-leaf",
            SeamBug::NullLeafAlwaysRejected => "null-leaf-always-rejected",
            SeamBug::TimestampsNotFromClock => "timestamps-not-from-clock",
            SeamBug::LibraryReasonAlwaysStop => "library-reason-always-stop",
            SeamBug::JsonMessagesSuffixOnly => "json-messages-suffix-only",
        }
    }
}

/// What the decorator knows of the scenario: the parts a wiring bug rewrites.
#[derive(Debug, Clone, Default)]
struct Facts {
    configured_prompt: Option<String>,
    resources_empty: bool,
    merged_prompt: Option<String>,
    /// Extension names, in hook order.
    extensions: Vec<String>,
}

/// The reference behind one seam bug.
pub struct SeamSubject {
    inner: ReferenceSubject,
    bug: SeamBug,
    facts: Facts,
    /// Messages the store accepted, the restored ones first (projection bugs).
    persisted: Vec<Message>,
    /// Appends issued and not answered: effect -> message.
    appends_in_flight: BTreeMap<EffectId, Option<Message>>,
    /// Messages the current run has (for `SuffixFrozenAtUser`: how many the first request sent).
    frozen_suffix_len: Option<usize>,
    /// Settlements of control calls held back (`ControlSettlesLate`).
    held: Vec<Effect>,
    /// Prompt-like operations delivered and not settled (`DisposeClosesLate`).
    unsettled_prompts: Vec<OpId>,
    /// Dispose operations not yet passed to the runtime (`DisposeClosesLate`).
    held_disposes: Vec<OpId>,
    /// Control operations delivered, whose settlement is held.
    control_ops: Vec<OpId>,
    /// Appends issued since the last run finished (`JsonMessagesSuffixOnly`).
    appends_this_run: usize,
}

impl SeamSubject {
    pub fn new(bug: SeamBug) -> SeamSubject {
        SeamSubject {
            inner: ReferenceSubject::new(),
            bug,
            facts: Facts::default(),
            persisted: Vec::new(),
            appends_in_flight: BTreeMap::new(),
            frozen_suffix_len: None,
            held: Vec::new(),
            unsettled_prompts: Vec::new(),
            held_disposes: Vec::new(),
            control_ops: Vec::new(),
            appends_this_run: 0,
        }
    }

    /// The input as the buggy wiring passes it on; `None` when it never reaches the runtime
    /// (its effects, if any, are pushed to `effects`).
    fn rewrite_input(&mut self, input: Input, effects: &mut Vec<Effect>) -> Option<Input> {
        match (self.bug, input) {
            (SeamBug::AbortIgnored, Input::Abort { op }) => {
                effects.push(Effect::Settled {
                    op,
                    settlement: Settlement::Resolved(OpValue::Unit),
                });
                None
            }
            (SeamBug::SteerAsFollowUp, Input::Steer { op, text }) => Some(Input::FollowUp { op, text }),
            (SeamBug::FollowUpAsSteer, Input::FollowUp { op, text }) => Some(Input::Steer { op, text }),
            (SeamBug::UnknownModeFallsBackToPrint, Input::Mode { op, mode, text })
                if !matches!(mode.as_str(), "interactive" | "print" | "json") =>
            {
                Some(Input::Mode {
                    op,
                    mode: "print".into(),
                    text,
                })
            }
            (SeamBug::DisposeClosesLate, Input::Dispose { op }) if !self.unsettled_prompts.is_empty() => {
                self.held_disposes.push(op);
                None
            }
            (
                SeamBug::DenyIgnored,
                Input::Complete {
                    effect,
                    completion: Completion::Hook(HookOutcome::Deny { .. }),
                },
            ) => Some(Completion::Hook(HookOutcome::Allow).into_input(effect)),
            (
                SeamBug::RewrittenArgumentsIgnored,
                Input::Complete {
                    effect,
                    completion: Completion::Hook(HookOutcome::RewriteArguments { .. }),
                },
            ) => Some(Completion::Hook(HookOutcome::Allow).into_input(effect)),
            (
                SeamBug::AfterRewriteIgnored,
                Input::Complete {
                    effect,
                    completion: Completion::Hook(HookOutcome::RewriteResult { .. }),
                },
            ) => Some(Completion::Hook(HookOutcome::Observe).into_input(effect)),
            (_, input) => Some(input),
        }
    }

    /// Passes one input to the runtime and rewrites what comes back.
    fn pass(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        match &input {
            Input::Prompt { op, .. } | Input::Mode { op, .. } | Input::Library { op, .. } => {
                self.unsettled_prompts.push(*op);
            }
            Input::Steer { op, .. } | Input::FollowUp { op, .. } | Input::Abort { op } => self.control_ops.push(*op),
            Input::Complete {
                effect,
                completion: Completion::Append(outcome),
            } => {
                if let Some(message) = self.appends_in_flight.remove(effect).flatten() {
                    if *outcome == StoreOutcome::Ok {
                        self.persisted.push(message);
                    }
                }
            }
            _ => {}
        }
        let write_failure = match &input {
            Input::Complete {
                completion: Completion::Write(StoreOutcome::Failed(cause)),
                ..
            } => Some(cause.clone()),
            _ => None,
        };
        let mut produced = Vec::new();
        self.inner.deliver(input, &mut produced)?;
        let mut queue: std::collections::VecDeque<Effect> = produced.into();
        while let Some(effect) = queue.pop_front() {
            if let Some(answer) = self.answered_here(&effect) {
                let mut more = Vec::new();
                self.inner.deliver(answer, &mut more)?;
                for (index, effect) in more.into_iter().enumerate() {
                    queue.insert(index, effect);
                }
                continue;
            }
            if let Some(effect) = self.rewrite_effect(effect, write_failure.as_ref()) {
                effects.push(effect);
            }
        }
        Ok(())
    }

    /// The completion the buggy host gives an effect itself, never showing it to the world.
    fn answered_here(&self, effect: &Effect) -> Option<Input> {
        let Effect::Hook {
            effect,
            extension,
            phase: HookPhase::After,
            ..
        } = effect
        else {
            return None;
        };
        let skip = match self.bug {
            SeamBug::AfterHooksSkipped => true,
            SeamBug::LastAfterHookSkipped => self.facts.extensions.last() == Some(extension),
            _ => false,
        };
        skip.then(|| Completion::Hook(HookOutcome::Observe).into_input(*effect))
    }

    /// The effect as the world sees it; `None` when the bug holds it back.
    fn rewrite_effect(&mut self, effect: Effect, write_failure: Option<&Cause>) -> Option<Effect> {
        match effect {
            Effect::ModelRequest {
                effect,
                signal,
                mut request,
            } => {
                match self.bug {
                    SeamBug::TemporarySuffixDropped => {
                        request.messages.truncate(self.persisted_prefix(&request.messages))
                    }
                    SeamBug::SuffixFrozenAtUser => {
                        let persisted = self.persisted_prefix(&request.messages);
                        let frozen = *self
                            .frozen_suffix_len
                            .get_or_insert(request.messages.len().saturating_sub(persisted));
                        request.messages.truncate(persisted + frozen);
                    }
                    SeamBug::ToolsSortedByName => {
                        let mut tools = request.tools.to_vec();
                        tools.sort_by(|a, b| a.name.cmp(&b.name));
                        request.tools = Arc::from(tools);
                    }
                    SeamBug::ToolSchemaDropped => {
                        let tools: Vec<ToolSpec> = request
                            .tools
                            .iter()
                            .map(|tool| ToolSpec {
                                name: tool.name.clone(),
                                description: String::new(),
                                parameters: serde_json::json!({"type": "object"}),
                            })
                            .collect();
                        request.tools = Arc::from(tools);
                    }
                    SeamBug::ResourcesBeforeConfiguredPrompt => {
                        if let (Some(configured), Some(merged)) =
                            (&self.facts.configured_prompt, &self.facts.merged_prompt)
                        {
                            if let Some(resources) = merged.strip_prefix(&format!("{configured}\n\n")) {
                                request.system_prompt = Some(format!("{resources}\n\n{configured}"));
                            }
                        }
                    }
                    SeamBug::ResourceHeaderOnEmptyCatalog if self.facts.resources_empty => {
                        request.system_prompt = Some(match request.system_prompt.take() {
                            Some(prompt) => format!("{prompt}\n\n# Pi resources"),
                            None => "# Pi resources".to_string(),
                        });
                    }
                    _ => {}
                }
                Some(Effect::ModelRequest {
                    effect,
                    signal,
                    request,
                })
            }
            Effect::Append { effect, mut entry } => {
                if self.bug == SeamBug::TimestampsNotFromClock {
                    entry.timestamp = "1970-01-01T00:00:00.000Z".to_string();
                }
                self.appends_in_flight.insert(effect, entry.as_message().cloned());
                self.appends_this_run += 1;
                Some(Effect::Append { effect, entry })
            }
            Effect::Write { effect, text } => {
                let text = match self.bug {
                    SeamBug::JsonMessagesSuffixOnly => keep_last_messages(&text, self.appends_this_run),
                    _ => text,
                };
                self.appends_this_run = 0;
                Some(Effect::Write { effect, text })
            }
            Effect::Settled { op, settlement } => {
                let is_prompt = self.unsettled_prompts.contains(&op);
                self.unsettled_prompts.retain(|other| *other != op);
                if is_prompt {
                    self.frozen_suffix_len = None;
                    if matches!(
                        settlement,
                        Settlement::Resolved(OpValue::Run(_) | OpValue::Library { .. })
                    ) {
                        self.appends_this_run = 0;
                    }
                }
                let settlement = match (self.bug, settlement) {
                    (SeamBug::WriteErrorWrapped, Settlement::Rejected(cause)) if Some(&cause) == write_failure => {
                        Settlement::Rejected(Cause::new("mode.output_failed", format!("output failed: {cause}")))
                    }
                    (SeamBug::DisposedCodeRenamed, Settlement::Rejected(cause)) if cause.code == "runtime.disposed" => {
                        Settlement::Rejected(Cause::new("runtime.closed", cause.message))
                    }
                    (SeamBug::LibraryReasonAlwaysStop, Settlement::Resolved(OpValue::Library { text, .. })) => {
                        Settlement::Resolved(OpValue::Library {
                            reason: RunReason::Stop,
                            text,
                        })
                    }
                    (_, settlement) => settlement,
                };
                let effect = Effect::Settled { op, settlement };
                if self.bug == SeamBug::ControlSettlesLate && self.control_ops.contains(&op) {
                    self.control_ops.retain(|other| *other != op);
                    self.held.push(effect);
                    return None;
                }
                Some(effect)
            }
            other => Some(other),
        }
    }

    /// How many leading messages of a request are persisted (restored or accepted): the
    /// longest tail of the persisted transcript the request starts with (the budget may have
    /// dropped the oldest interactions).
    fn persisted_prefix(&self, messages: &[Message]) -> usize {
        (0..=self.persisted.len())
            .map(|dropped| &self.persisted[dropped..])
            .find(|tail| messages.starts_with(tail))
            .map_or(0, <[Message]>::len)
    }
}

/// json mode output with only the last `keep` messages.
fn keep_last_messages(text: &str, keep: usize) -> String {
    let Ok(mut value) = serde_json::from_str::<Value>(text.trim_end()) else {
        return text.to_string();
    };
    if let Some(Value::Array(messages)) = value.get_mut("messages") {
        let drop = messages.len().saturating_sub(keep);
        messages.drain(..drop);
    }
    format!("{value}\n")
}

impl Subject for SeamSubject {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        self.facts = Facts {
            configured_prompt: scenario
                .config
                .system_prompt
                .clone()
                .filter(|text| !text.trim().is_empty()),
            resources_empty: scenario.resources.is_empty(),
            merged_prompt: merge_system_prompt(scenario.config.system_prompt.as_deref(), &scenario.resources),
            extensions: scenario.extensions.iter().map(|script| script.name.clone()).collect(),
        };
        let leaf = scenario.config.active_leaf_id.as_deref();
        match self.bug {
            SeamBug::NullLeafAlwaysRejected if leaf.is_none() => {
                return Ok(Err(Cause::new(
                    "restore.leaf_required",
                    "activeLeafId is null: choose a branch explicitly",
                )))
            }
            SeamBug::EmptySessionIgnoresLeaf if scenario.session.is_empty() && leaf.is_some() => {
                let mut fresh = scenario.clone();
                fresh.config.active_leaf_id = None;
                return self.inner.start(&fresh);
            }
            _ => {}
        }
        let started = self.inner.start(scenario)?;
        if let (Ok(_), Some(leaf)) = (&started, leaf) {
            if let Ok(path) = crate::model::path_to(&scenario.session, leaf) {
                self.persisted = path.iter().filter_map(SessionEntry::as_message).cloned().collect();
            }
        }
        Ok(match (self.bug, started) {
            (SeamBug::PathErrorsGeneric, Err(cause)) if cause.code.starts_with("path.") => Err(Cause::new(
                "restore.invalid_tree",
                format!("the session tree is invalid ({})", cause.message),
            )),
            (_, started) => started,
        })
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        effects.append(&mut self.held);
        let Some(input) = self.rewrite_input(input, effects) else {
            return Ok(());
        };
        self.pass(input, effects)?;
        while self.unsettled_prompts.is_empty() && !self.held_disposes.is_empty() {
            let op = self.held_disposes.remove(0);
            self.pass(Input::Dispose { op }, effects)?;
        }
        Ok(())
    }
}
