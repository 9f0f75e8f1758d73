//! Queue and lifecycle bugs: in what order prompts run, what flush and dispose wait for.
//!
//! The queue bugs keep a queue of their own in front of the runtime's: a prompt that arrives
//! while the runtime works is held at the seam and delivered when the runtime is idle, so the
//! bug decides which prompt runs next and what becomes of the waiting ones. A flush or dispose
//! that arrives while prompts are held waits behind them, so it still covers every prompt
//! accepted before it.

use std::collections::VecDeque;

use crate::model::Operation;
use crate::runtime::{disposed_cause, Cause, Effect, Input, Mode, OpId, Settlement};

use super::seam::{Bug, Seam};

/// What the held queue does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    /// The newest waiting prompt runs first.
    Lifo,
    /// The first dispose clears the queue: its prompts never run and never settle.
    DisposeDrops,
    /// The first dispose rejects the queued prompts with a code of the runtime's own.
    DisposeRejects,
}

/// A queue in front of the runtime's (see the module documentation).
struct HeldQueue {
    policy: Policy,
    /// Inputs waiting for the runtime to be idle, in arrival order.
    held: VecDeque<Input>,
    /// Prompts delivered to the runtime and not settled yet.
    in_runtime: Vec<OpId>,
    /// A dispose was delivered (or is held).
    disposing: bool,
    /// The dispose dropped or rejected queued prompts, which the runtime had counted as
    /// accepted: a flush after that waits for them for ever.
    abandoned: bool,
}

impl HeldQueue {
    fn new(policy: Policy) -> HeldQueue {
        HeldQueue {
            policy,
            held: VecDeque::new(),
            in_runtime: Vec::new(),
            disposing: false,
            abandoned: false,
        }
    }

    fn holds_prompts(&self) -> bool {
        self.held.iter().any(is_prompt)
    }

    /// Delivers what may go to the runtime now: while it is idle, the next prompt (by policy),
    /// then every flush or dispose no held prompt precedes.
    fn release(&mut self, seam: &mut Seam) {
        loop {
            let busy = !self.in_runtime.is_empty();
            match self.held.front() {
                Some(input) if !is_prompt(input) => {
                    let input = self.held.pop_front().expect("checked above");
                    seam.deliver(input);
                    continue;
                }
                _ => {}
            }
            if busy {
                return;
            }
            let next = match self.policy {
                Policy::Lifo => {
                    // The newest prompt held before the first held flush or dispose.
                    let end = self
                        .held
                        .iter()
                        .position(|input| !is_prompt(input))
                        .unwrap_or(self.held.len());
                    end.checked_sub(1).and_then(|index| self.held.remove(index))
                }
                Policy::DisposeDrops | Policy::DisposeRejects => self.held.pop_front(),
            };
            match next {
                Some(input) => self.deliver_prompt(input, seam),
                None => return,
            }
        }
    }
}

impl HeldQueue {
    /// A prompt after dispose: the runtime refuses it at once (its poison first), whether or
    /// not the dispose has reached it yet.
    fn after_dispose(&mut self, input: Input, seam: &mut Seam) {
        let dispose_held = self
            .held
            .iter()
            .any(|held| held.operation() == Some(&Operation::Dispose));
        match op_of(&input) {
            Some(op) if dispose_held => {
                let cause = seam.watch().poison.clone().unwrap_or_else(disposed_cause);
                seam.settle(op, Settlement::Rejected(cause));
            }
            _ => self.deliver_prompt(input, seam),
        }
    }

    fn deliver_prompt(&mut self, input: Input, seam: &mut Seam) {
        if let Some(op) = op_of(&input) {
            self.in_runtime.push(op);
        }
        seam.deliver(input);
    }
}

fn is_prompt(input: &Input) -> bool {
    input.operation().is_some_and(Operation::is_prompt_like)
}

fn unknown_mode(input: &Input) -> bool {
    matches!(input.operation(), Some(Operation::Mode { mode, .. }) if Mode::parse(mode).is_none())
}

/// The prompt-like operation an input is, if it is one.
fn op_of(input: &Input) -> Option<OpId> {
    input.op().filter(|_| is_prompt(input))
}

impl Bug for HeldQueue {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        match &input {
            _ if is_prompt(&input) && self.disposing => self.after_dispose(input, seam),
            // What the runtime refuses at once never waits in a queue: a prompt of a poisoned
            // runtime, a mode it does not know.
            _ if is_prompt(&input) && (seam.watch().poison.is_some() || unknown_mode(&input)) => {
                self.deliver_prompt(input, seam)
            }
            _ if is_prompt(&input) => {
                self.held.push_back(input);
                self.release(seam);
            }
            Input::Operation {
                op,
                operation: Operation::Dispose,
            } if !self.disposing && self.policy != Policy::Lifo => {
                self.disposing = true;
                let op = *op;
                let queued: Vec<Input> = self.held.drain(..).collect();
                self.abandoned = queued.iter().any(is_prompt);
                // A flush held behind the queued prompts waits for them: it never settles.
                for queued in queued {
                    if let (Policy::DisposeRejects, Some(queued_op)) = (self.policy, op_of(&queued)) {
                        let cause = Cause::new("runtime.shutdown", "the runtime shut down before this prompt started");
                        seam.settle(queued_op, Settlement::Rejected(cause));
                    }
                }
                seam.deliver(Input::Operation {
                    op,
                    operation: Operation::Dispose,
                });
            }
            Input::Operation {
                operation: Operation::Dispose,
                ..
            } if self.holds_prompts() => {
                self.disposing = true;
                self.held.push_back(input);
            }
            Input::Operation {
                operation: Operation::Flush,
                ..
            } if self.abandoned => {}
            Input::Operation {
                operation: Operation::Flush,
                ..
            } if self.holds_prompts() => self.held.push_back(input),
            Input::Operation {
                operation: Operation::Dispose,
                ..
            } => {
                self.disposing = true;
                seam.deliver(input);
            }
            _ => seam.deliver(input),
        }
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let settled = match &effect {
            Effect::Settled { op, .. } => Some(*op),
            _ => None,
        };
        seam.emit(effect);
        if let Some(op) = settled.filter(|op| self.in_runtime.contains(op)) {
            self.in_runtime.retain(|other| *other != op);
            self.release(seam);
        }
    }
}

/// The queue starts the newest waiting prompt first.
pub(crate) fn queue_lifo() -> Box<dyn Bug> {
    Box::new(HeldQueue::new(Policy::Lifo))
}

/// The first dispose clears the queue: its prompts never run and never settle.
pub(crate) fn dispose_drops_queued() -> Box<dyn Bug> {
    Box::new(HeldQueue::new(Policy::DisposeDrops))
}

/// The first dispose rejects the queued prompts (`runtime.shutdown`) instead of running them.
pub(crate) fn dispose_rejects_queued() -> Box<dyn Bug> {
    Box::new(HeldQueue::new(Policy::DisposeRejects))
}

/// A second dispose rejects instead of returning the first one's outcome.
#[derive(Default)]
pub(crate) struct DisposeNotIdempotent {
    disposed: bool,
}

impl Bug for DisposeNotIdempotent {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        match input {
            Input::Operation {
                op,
                operation: Operation::Dispose,
            } if self.disposed => {
                let cause = Cause::new("runtime.already_disposed", "dispose() was already called");
                seam.settle(op, Settlement::Rejected(cause));
            }
            input @ Input::Operation {
                operation: Operation::Dispose,
                ..
            } => {
                self.disposed = true;
                seam.deliver(input);
            }
            other => seam.deliver(other),
        }
    }
}

/// flush() starts an agent run of its own (an empty prompt) unless the runtime is poisoned.
#[derive(Default)]
pub(crate) struct FlushCreatesWork;

impl Bug for FlushCreatesWork {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        match input {
            Input::Operation {
                op,
                operation: Operation::Flush,
            } if seam.watch().poison.is_none() => seam.deliver(Input::Operation {
                op,
                operation: Operation::Prompt { text: String::new() },
            }),
            other => seam.deliver(other),
        }
    }
}

/// A prompt that arrives while another is running or waiting is refused as busy
/// (`runtime.busy`) instead of queued: the runtime has no queue of its own and passes the
/// Agent's refusal on (Pi's `AgentSession.prompt()` does this).
#[derive(Default)]
pub(crate) struct BusyPromptRejected {
    /// Prompts delivered to the runtime and not settled yet.
    in_runtime: Vec<OpId>,
}

impl Bug for BusyPromptRejected {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        let healthy = seam.watch().poison.is_none() && !seam.watch().disposed;
        match op_of(&input) {
            Some(op) if healthy && !self.in_runtime.is_empty() && !unknown_mode(&input) => {
                let cause = Cause::new("runtime.busy", "the agent is already processing a prompt");
                seam.settle(op, Settlement::Rejected(cause));
            }
            Some(op) => {
                self.in_runtime.push(op);
                seam.deliver(input);
            }
            None => seam.deliver(input),
        }
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        if let Effect::Settled { op, .. } = &effect {
            self.in_runtime.retain(|other| other != op);
        }
        seam.emit(effect);
    }
}
