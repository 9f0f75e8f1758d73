//! Window bugs: what the runtime does with an operation depends on what is in flight when it
//! lands (an after hook, a tool, a later request of the run, a stream past its last chunk, the
//! run's appends), or the queue lets the next run start inside the window before the finished
//! prompt settles.
//!
//! The canonical schedule (operations first, effects oldest first) never opens most of these
//! windows, so most of these mutants are of the interleaving tier and fall only to
//! exploration; the zoo's list says which. Every window is read from [`Watch`], what the world
//! was shown, so a bug's window opens exactly where the world can see it open. One mutant of
//! the tier lives with its family: `write-error-wrapped-when-late` is
//! [`super::modes::WriteErrorWrapped`] wrapping only a sink error that comes back late.
//!
//! [`Watch`]: super::seam::Watch

use std::collections::BTreeSet;

use crate::model::OperationKind;
use crate::runtime::{Cause, Effect, HookPhase, Input, OpId, OpValue, Settlement};

use super::seam::{Bug, Seam};

/// What may be in flight when an operation lands.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Window {
    /// A before hook runs.
    BeforeHook,
    /// An after hook runs.
    AfterHook,
    /// A tool runs.
    Tool,
    /// A model request of the run other than its first is streaming.
    LaterRequest,
    /// The model request in flight streamed every chunk it has, and its final message is due.
    AfterLastChunk,
    /// The only unsettled prompt's appends are in flight: its run is persisting.
    PersistingRun,
    /// An append is in flight.
    Append,
    /// The run's first append is in flight.
    FirstAppend,
    /// An append of the run other than its first is in flight.
    LaterAppend,
    /// A mode's write to its sink is in flight.
    ModeWrite,
}

impl Window {
    fn is_open(self, seam: &Seam) -> bool {
        let watch = seam.watch();
        match self {
            Window::BeforeHook => watch.hooks.values().any(|phase| *phase == HookPhase::Before),
            Window::AfterHook => watch.after_hook_running(),
            Window::Tool => !watch.tools.is_empty(),
            Window::LaterRequest => watch.later_request_running(),
            Window::AfterLastChunk => watch.model.is_some_and(|(_, index, streamed)| {
                let chunks = seam.facts.chunks.get(index).copied().unwrap_or(0);
                chunks >= 1 && streamed >= chunks
            }),
            Window::PersistingRun => !watch.appends.is_empty() && watch.prompts.len() == 1,
            Window::Append => !watch.appends.is_empty(),
            Window::FirstAppend => !watch.appends.is_empty() && watch.run_appends == 1,
            Window::LaterAppend => !watch.appends.is_empty() && watch.run_appends >= 2,
            Window::ModeWrite => !watch.writes.is_empty(),
        }
    }
}

/// An operation of one kind that lands while one window is open is resolved at once, the way
/// a runtime that checks the wrong condition would: a control call is then dropped (it never
/// reaches the runtime); a flush or a dispose still goes on, and the runtime's own settlement
/// of it is dropped.
pub(crate) struct ResolvedInWindow {
    /// Abort, steer, followUp, flush or dispose; a prompt-like call is [`RefusedInWindow`]'s.
    operation: OperationKind,
    window: Window,
    /// Operations resolved here whose settlement by the runtime is still to come.
    resolved_early: BTreeSet<OpId>,
}

impl ResolvedInWindow {
    pub fn new(operation: OperationKind, window: Window) -> ResolvedInWindow {
        debug_assert!(!operation.is_prompt_like(), "a call is refused, never resolved early");
        ResolvedInWindow {
            operation,
            window,
            resolved_early: BTreeSet::new(),
        }
    }
}

impl Bug for ResolvedInWindow {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        let Some(op) = input.op_of_kind(self.operation) else {
            return seam.deliver(input);
        };
        if !self.window.is_open(seam) {
            return seam.deliver(input);
        }
        seam.settle(op, Settlement::Resolved(OpValue::Unit));
        // A control call is dropped once resolved; a flush or a dispose still reaches the runtime.
        if matches!(
            self.operation,
            OperationKind::Abort | OperationKind::Steer | OperationKind::FollowUp
        ) {
            return;
        }
        self.resolved_early.insert(op);
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match &effect {
            Effect::Settled { op, .. } if self.resolved_early.remove(op) => {}
            _ => seam.emit(effect),
        }
    }
}

/// A busy guard that reads the wrong flag: a call of one kind that lands while one window is
/// open is refused `runtime.busy` instead of queued (a runtime that checks "a hook is running"
/// or "the store is writing" where it should enqueue). It never reaches the runtime.
pub(crate) struct RefusedInWindow {
    /// Prompt, mode or library.
    call: OperationKind,
    window: Window,
}

impl RefusedInWindow {
    pub fn new(call: OperationKind, window: Window) -> RefusedInWindow {
        debug_assert!(
            call.is_prompt_like(),
            "a busy guard refuses only a call that starts a run"
        );
        RefusedInWindow { call, window }
    }
}

impl Bug for RefusedInWindow {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        match input.op_of_kind(self.call) {
            Some(op) if self.window.is_open(seam) => {
                let cause = Cause::new("runtime.busy", "the runtime is busy; try again later");
                seam.settle(op, Settlement::Rejected(cause));
            }
            _ => seam.deliver(input),
        }
    }
}

/// The queue releases the next prompt before the finished one settles (a promise chain or an
/// asyncio task that resolves the caller in a `finally` after starting the next run): when one
/// input both settles a prompt and starts the next run's first model request, the settlement
/// goes out last.
#[derive(Default)]
pub(crate) struct SettledAfterNextRunStarts {
    /// Every prompt-like operation (prompt, mode, library) the world sent.
    prompts: BTreeSet<OpId>,
}

impl Bug for SettledAfterNextRunStarts {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if let Input::Operation { op, operation } = &input {
            if operation.is_prompt_like() {
                self.prompts.insert(*op);
            }
        }
        seam.deliver(input);
    }

    fn batch(&mut self, effects: &mut [Effect]) {
        let settles_prompt =
            |effect: &Effect| matches!(effect, Effect::Settled { op, .. } if self.prompts.contains(op));
        let Some(settled) = effects.iter().position(settles_prompt) else {
            return;
        };
        let next_run_starts = effects[settled..]
            .iter()
            .any(|effect| matches!(effect, Effect::ModelRequest { .. }));
        if next_run_starts {
            effects[settled..].rotate_left(1);
        }
    }
}
