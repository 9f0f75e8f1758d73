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
use crate::sim::BoxedSubject;
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
    /// The step bound is read off by one: the agent is built with maxSteps + 1.
    MaxStepsOffByOne,
    /// The library adapter always reports reason `stop`.
    LibraryReasonAlwaysStop,
    /// json mode lists only the run's new messages, not the transcript.
    JsonMessagesSuffixOnly,
    /// The runtime waits for its observers before it stores: an append is issued only once
    /// every observer notification has been answered (Pi awaits extension handlers first).
    AppendsWaitForObservers,
    /// An observer's error escapes the extension host: the next prompt to settle rejects with it.
    ObserverErrorRejectsPrompt,
    /// `agent_end` handlers are registered to fire once: observers hear only the first run end.
    AgentEndToldOnce,
    // Bugs of one window of a run: what the runtime does depends on what is in flight when an
    // operation or answer arrives. Most of these windows are never opened by the canonical
    // schedule (operations first, effects oldest first): `interleaving_only` names that tier.
    /// The abort is wired to the agent only between tool rounds: while an after hook runs, it
    /// is dropped.
    AbortLostDuringAfterHook,
    /// The abort reaches only the run's first stream: during a later request it is dropped.
    AbortLostOnLaterRequest,
    /// The stream counts as done once its last chunk arrived: an abort before the final
    /// message is dropped.
    AbortLostAfterLastChunk,
    /// A steer while an after hook runs is dropped (the host holds the agent's queue).
    SteerLostDuringAfterHook,
    /// A steer while a tool runs is dropped.
    SteerLostDuringTool,
    /// A follow-up during a later request of the run is dropped.
    FollowUpLostOnLaterRequest,
    /// dispose() waits for the agent, not the store: with no prompt queued it resolves while
    /// the last run's appends are in flight.
    DisposeIgnoresPersistingRun,
    /// flush() waits for the agent, not the store: it resolves while appends are in flight.
    FlushIgnoresPersistingRun,
    /// flush() checks "no model stream open": it resolves while a tool runs.
    FlushResolvesDuringTool,
    /// dispose() checks "no model stream open": it resolves while a tool runs.
    DisposeResolvesDuringTool,
    /// A sink error that comes back after the next run got a model response is reported as a
    /// mode error of the runtime's own.
    WriteErrorWrappedWhenLate,
    /// The queue releases the next prompt before the finished one settles (a promise chain or an
    /// asyncio task that resolves the caller in a `finally` after starting the next run): the
    /// settlement is written after the next run's first model request.
    SettledAfterNextRunStarts,
    /// A steer during a later request of the run is dropped.
    SteerLostOnLaterRequest,
    /// flush() resolves while an after hook runs.
    FlushResolvesDuringAfterHook,
    /// flush() resolves during a later request of the run (it watches the first stream only).
    FlushResolvesOnLaterRequest,
    /// dispose() resolves during a later request of the run (it watches the first stream only).
    DisposeResolvesOnLaterRequest,
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
        SeamBug::MaxStepsOffByOne,
        SeamBug::LibraryReasonAlwaysStop,
        SeamBug::JsonMessagesSuffixOnly,
        SeamBug::AppendsWaitForObservers,
        SeamBug::ObserverErrorRejectsPrompt,
        SeamBug::AgentEndToldOnce,
        SeamBug::AbortLostDuringAfterHook,
        SeamBug::AbortLostOnLaterRequest,
        SeamBug::AbortLostAfterLastChunk,
        SeamBug::SteerLostDuringAfterHook,
        SeamBug::SteerLostDuringTool,
        SeamBug::FollowUpLostOnLaterRequest,
        SeamBug::DisposeIgnoresPersistingRun,
        SeamBug::FlushIgnoresPersistingRun,
        SeamBug::FlushResolvesDuringTool,
        SeamBug::DisposeResolvesDuringTool,
        SeamBug::WriteErrorWrappedWhenLate,
        SeamBug::SettledAfterNextRunStarts,
        SeamBug::SteerLostOnLaterRequest,
        SeamBug::FlushResolvesDuringAfterHook,
        SeamBug::FlushResolvesOnLaterRequest,
        SeamBug::DisposeResolvesOnLaterRequest,
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
            SeamBug::MaxStepsOffByOne => "max-steps-off-by-one",
            SeamBug::LibraryReasonAlwaysStop => "library-reason-always-stop",
            SeamBug::JsonMessagesSuffixOnly => "json-messages-suffix-only",
            SeamBug::AppendsWaitForObservers => "appends-wait-for-observers",
            SeamBug::ObserverErrorRejectsPrompt => "observer-error-rejects-prompt",
            SeamBug::AgentEndToldOnce => "agent-end-told-once",
            SeamBug::AbortLostDuringAfterHook => "abort-lost-during-after-hook",
            SeamBug::AbortLostOnLaterRequest => "abort-lost-on-later-request",
            SeamBug::AbortLostAfterLastChunk => "abort-lost-after-last-chunk",
            SeamBug::SteerLostDuringAfterHook => "steer-lost-during-after-hook",
            SeamBug::SteerLostDuringTool => "steer-lost-during-tool",
            SeamBug::FollowUpLostOnLaterRequest => "follow-up-lost-on-later-request",
            SeamBug::DisposeIgnoresPersistingRun => "dispose-ignores-persisting-run",
            SeamBug::FlushIgnoresPersistingRun => "flush-ignores-persisting-run",
            SeamBug::FlushResolvesDuringTool => "flush-resolves-during-tool",
            SeamBug::DisposeResolvesDuringTool => "dispose-resolves-during-tool",
            SeamBug::WriteErrorWrappedWhenLate => "write-error-wrapped-when-late",
            SeamBug::SettledAfterNextRunStarts => "settled-after-next-run-starts",
            SeamBug::SteerLostOnLaterRequest => "steer-lost-on-later-request",
            SeamBug::FlushResolvesDuringAfterHook => "flush-resolves-during-after-hook",
            SeamBug::FlushResolvesOnLaterRequest => "flush-resolves-on-later-request",
            SeamBug::DisposeResolvesOnLaterRequest => "dispose-resolves-on-later-request",
        }
    }

    /// Whether the bug belongs to the interleaving tier: it survives the canonical schedule of
    /// every scenario and falls only to exploration.
    pub fn interleaving_only(self) -> bool {
        matches!(
            self,
            SeamBug::AbortLostDuringAfterHook
                | SeamBug::AbortLostOnLaterRequest
                | SeamBug::AbortLostAfterLastChunk
                | SeamBug::SteerLostDuringAfterHook
                | SeamBug::SteerLostOnLaterRequest
                | SeamBug::FollowUpLostOnLaterRequest
                | SeamBug::DisposeIgnoresPersistingRun
                | SeamBug::FlushResolvesDuringTool
                | SeamBug::FlushResolvesDuringAfterHook
                | SeamBug::FlushResolvesOnLaterRequest
                | SeamBug::DisposeResolvesOnLaterRequest
                | SeamBug::WriteErrorWrappedWhenLate
        )
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
    inner: BoxedSubject,
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
    /// The window the world's next move lands in (the interleaving tier).
    window: Window,
    /// Observer notifications issued and not answered (`AppendsWaitForObservers`).
    notifications_pending: std::collections::BTreeSet<EffectId>,
    /// Appends held until no notification is pending (`AppendsWaitForObservers`).
    held_appends: Vec<Effect>,
    /// The last error an observer threw (`ObserverErrorRejectsPrompt`).
    observer_error: Option<String>,
    /// Observers already told of a run's end (`AgentEndToldOnce`).
    told_agent_end: std::collections::BTreeSet<String>,
    /// Prompt-like operations delivered (`SettledAfterNextRunStarts`).
    prompt_ops: std::collections::BTreeSet<OpId>,
}

/// What is in flight: the window an operation or an answer lands in.
#[derive(Debug, Clone, Default)]
struct Window {
    /// The pending model request: its index in the model script and the chunks it streamed.
    model: Option<(EffectId, usize, u32)>,
    /// Model requests issued so far, over the whole run of the subject.
    model_requests: usize,
    /// Model requests of the current run.
    run_requests: usize,
    /// Chunks each scripted model response streams.
    chunks: Vec<u32>,
    tools: std::collections::BTreeSet<EffectId>,
    hooks: BTreeMap<EffectId, HookPhase>,
    /// Model responses since the last write was issued (`None`: no write pending).
    responses_since_write: Option<usize>,
    /// Operations the buggy runtime settled early; the runtime's own settlement is dropped.
    settled_early: Vec<OpId>,
}

impl Window {
    fn after_hook_running(&self) -> bool {
        self.hooks.values().any(|phase| *phase == HookPhase::After)
    }

    fn later_request_running(&self) -> bool {
        self.model.is_some() && self.run_requests >= 2
    }

    fn stream_fully_chunked(&self) -> bool {
        self.model.is_some_and(|(_, index, streamed)| {
            let chunks = self.chunks.get(index).copied().unwrap_or(0);
            chunks >= 1 && streamed >= chunks
        })
    }
}

impl SeamSubject {
    pub fn new(bug: SeamBug, inner: BoxedSubject) -> SeamSubject {
        SeamSubject {
            inner,
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
            window: Window::default(),
            notifications_pending: std::collections::BTreeSet::new(),
            held_appends: Vec::new(),
            observer_error: None,
            told_agent_end: std::collections::BTreeSet::new(),
            prompt_ops: std::collections::BTreeSet::new(),
        }
    }

    /// The interleaving tier's rewrites: the operation as the buggy runtime treats it in the
    /// window it lands in. `Err(())` swallows it (its settlement already pushed).
    fn rewrite_in_window(&mut self, input: &Input, effects: &mut Vec<Effect>) -> Result<(), ()> {
        let window = &self.window;
        let persisting_alone = !self.appends_in_flight.is_empty() && self.unsettled_prompts.len() == 1;
        let resolved = |op: OpId| Effect::Settled {
            op,
            settlement: Settlement::Resolved(OpValue::Unit),
        };
        let (op, swallow) = match (self.bug, input) {
            (SeamBug::AbortLostDuringAfterHook, Input::Abort { op }) if window.after_hook_running() => (*op, true),
            (SeamBug::AbortLostOnLaterRequest, Input::Abort { op }) if window.later_request_running() => (*op, true),
            (SeamBug::AbortLostAfterLastChunk, Input::Abort { op }) if window.stream_fully_chunked() => (*op, true),
            (SeamBug::SteerLostDuringAfterHook, Input::Steer { op, .. }) if window.after_hook_running() => (*op, true),
            (SeamBug::SteerLostDuringTool, Input::Steer { op, .. }) if !window.tools.is_empty() => (*op, true),
            (SeamBug::FollowUpLostOnLaterRequest, Input::FollowUp { op, .. }) if window.later_request_running() => {
                (*op, true)
            }
            (SeamBug::DisposeIgnoresPersistingRun, Input::Dispose { op }) if persisting_alone => (*op, false),
            (SeamBug::FlushIgnoresPersistingRun, Input::Flush { op }) if persisting_alone => (*op, false),
            (SeamBug::FlushResolvesDuringTool, Input::Flush { op }) if !window.tools.is_empty() => (*op, false),
            (SeamBug::SteerLostOnLaterRequest, Input::Steer { op, .. }) if window.later_request_running() => {
                (*op, true)
            }
            (SeamBug::FlushResolvesDuringAfterHook, Input::Flush { op }) if window.after_hook_running() => (*op, false),
            (SeamBug::FlushResolvesOnLaterRequest, Input::Flush { op }) if window.later_request_running() => {
                (*op, false)
            }
            (SeamBug::DisposeResolvesOnLaterRequest, Input::Dispose { op }) if window.later_request_running() => {
                (*op, false)
            }
            (SeamBug::DisposeResolvesDuringTool, Input::Dispose { op }) if !window.tools.is_empty() => (*op, false),
            _ => return Ok(()),
        };
        effects.push(resolved(op));
        if swallow {
            return Err(());
        }
        self.window.settled_early.push(op);
        Ok(())
    }

    /// Follows what is in flight, from the input the runtime is about to get.
    fn track_input(&mut self, input: &Input) {
        let window = &mut self.window;
        if let Input::Complete { effect, completion } = input {
            match completion {
                Completion::ModelChunk { .. } => {
                    if let Some((_, _, streamed)) = window.model.as_mut() {
                        *streamed += 1;
                    }
                }
                Completion::ModelFinal { .. } => {
                    window.model = None;
                    if let Some(responses) = window.responses_since_write.as_mut() {
                        *responses += 1;
                    }
                }
                Completion::Tool(_) => {
                    window.tools.remove(effect);
                }
                Completion::Hook(_) => {
                    window.hooks.remove(effect);
                }
                Completion::Write(_) | Completion::Append(_) | Completion::Notify(_) => {}
            }
        }
    }

    /// Follows what is in flight, from an effect the runtime issued.
    fn track_effect(&mut self, effect: &Effect) {
        let window = &mut self.window;
        match effect {
            Effect::ModelRequest { effect, .. } => {
                window.model = Some((*effect, window.model_requests, 0));
                window.model_requests += 1;
                window.run_requests += 1;
            }
            Effect::ToolCall { effect, .. } => {
                window.tools.insert(*effect);
            }
            Effect::Hook { effect, phase, .. } => {
                window.hooks.insert(*effect, *phase);
            }
            Effect::Write { .. } => window.responses_since_write = Some(0),
            Effect::Settled { op, .. } if self.unsettled_prompts.contains(op) => window.run_requests = 0,
            _ => {}
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
        self.track_input(&input);
        let late_write_failure = matches!(
            &input,
            Input::Complete {
                completion: Completion::Write(StoreOutcome::Failed(_)),
                ..
            }
        ) && self
            .window
            .responses_since_write
            .is_some_and(|responses| responses >= 1);
        if matches!(
            &input,
            Input::Complete {
                completion: Completion::Write(_),
                ..
            }
        ) {
            self.window.responses_since_write = None;
        }
        match &input {
            Input::Prompt { op, .. } | Input::Mode { op, .. } | Input::Library { op, .. } => {
                self.unsettled_prompts.push(*op);
                self.prompt_ops.insert(*op);
            }
            Input::Steer { op, .. } | Input::FollowUp { op, .. } | Input::Abort { op } => self.control_ops.push(*op),
            Input::Complete {
                effect,
                completion: Completion::Notify(outcome),
            } => {
                self.notifications_pending.remove(effect);
                if let crate::runtime::NotifyOutcome::Threw { message } = outcome {
                    self.observer_error = Some(message.clone());
                }
            }
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
        if self.notifications_pending.is_empty() {
            effects.append(&mut self.held_appends);
        }
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
            self.track_effect(&effect);
            if let Some(effect) = self.rewrite_effect(effect, write_failure.as_ref(), late_write_failure) {
                effects.push(effect);
            }
        }
        Ok(())
    }

    /// The completion the buggy host gives an effect itself, never showing it to the world.
    fn answered_here(&self, effect: &Effect) -> Option<Input> {
        if let Effect::Notify {
            effect,
            observer,
            event: crate::runtime::ObservedEvent::AgentEnd { .. },
        } = effect
        {
            let silent = self.bug == SeamBug::AgentEndToldOnce && self.told_agent_end.contains(observer);
            return silent.then(|| Completion::Notify(crate::runtime::NotifyOutcome::Ok).into_input(*effect));
        }
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
    fn rewrite_effect(
        &mut self,
        effect: Effect,
        write_failure: Option<&Cause>,
        late_write_failure: bool,
    ) -> Option<Effect> {
        if let Effect::Notify {
            effect: id,
            observer,
            event,
        } = &effect
        {
            self.notifications_pending.insert(*id);
            if matches!(event, crate::runtime::ObservedEvent::AgentEnd { .. }) {
                self.told_agent_end.insert(observer.clone());
            }
        }
        match (self.bug, &effect) {
            (SeamBug::AppendsWaitForObservers, Effect::Append { .. })
                if !self.notifications_pending.is_empty() || !self.held_appends.is_empty() =>
            {
                self.held_appends.push(effect);
                return None;
            }
            (
                SeamBug::ObserverErrorRejectsPrompt,
                Effect::Settled {
                    op,
                    settlement: Settlement::Resolved(OpValue::Run(_)),
                },
            ) if self.observer_error.is_some() => {
                let message = self.observer_error.take().unwrap_or_default();
                return Some(Effect::Settled {
                    op: *op,
                    settlement: Settlement::Rejected(Cause::new("extension.error", message)),
                });
            }
            _ => {}
        }
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
                if self.window.settled_early.contains(&op) {
                    self.window.settled_early.retain(|other| *other != op);
                    return None;
                }
                let wraps = self.bug == SeamBug::WriteErrorWrapped
                    || (self.bug == SeamBug::WriteErrorWrappedWhenLate && late_write_failure);
                let settlement = match (self.bug, settlement) {
                    (_, Settlement::Rejected(cause)) if wraps && Some(&cause) == write_failure => {
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

impl SeamSubject {
    /// `SettledAfterNextRunStarts`: a prompt's settlement that comes before the next run's first
    /// model request in one batch moves to the batch's end.
    fn settle_after_next_run(&self, batch: &mut [Effect]) {
        let is_prompt_settlement =
            |effect: &Effect| matches!(effect, Effect::Settled { op, .. } if self.prompt_ops.contains(op));
        let Some(settled) = batch.iter().position(is_prompt_settlement) else {
            return;
        };
        if batch[settled..]
            .iter()
            .any(|effect| matches!(effect, Effect::ModelRequest { .. }))
        {
            batch[settled..].rotate_left(1);
        }
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
        self.window.chunks = scenario.model.iter().map(|step| step.chunks.unwrap_or(0)).collect();
        let leaf = scenario.config.active_leaf_id.as_deref();
        match self.bug {
            SeamBug::NullLeafAlwaysRejected if leaf.is_none() => {
                return Ok(Err(Cause::new(
                    "restore.leaf_required",
                    "activeLeafId is null: choose a branch explicitly",
                )))
            }
            SeamBug::MaxStepsOffByOne => {
                let mut loose = scenario.clone();
                loose.config.max_steps += 1;
                return self.inner.start(&loose);
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

    fn finish(&mut self) -> Result<(), SubjectFailure> {
        self.inner.finish()
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        let first = effects.len();
        self.deliver_rewritten(input, effects)?;
        if self.bug == SeamBug::SettledAfterNextRunStarts {
            self.settle_after_next_run(&mut effects[first..]);
        }
        Ok(())
    }
}

impl SeamSubject {
    fn deliver_rewritten(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        effects.append(&mut self.held);
        if self.rewrite_in_window(&input, effects).is_err() {
            return Ok(());
        }
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
