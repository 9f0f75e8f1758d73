//! Settlement bugs: an operation settled in a way the table of allowed outcomes
//! (`check::settle::allowed`, conformance.md's SETTLE) never allows in the state it met. One bug
//! per row of the table; the prompt's row is [`super::queue::BusyPromptRejected`].
//!
//! Each is a wiring a runtime's author could plausibly write: a closed runtime that refuses
//! every call, a dispose that reports the failure it closes on, an adapter that wraps the errors
//! it passes on or forgets to return what it computed.

use std::collections::BTreeSet;

use crate::runtime::{Cause, Effect, Input, OpId, OpValue, Settlement};

use super::seam::{Bug, Seam};

/// The calls a closed runtime refuses by mistake.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Refused {
    /// flush(): the table lets it resolve (or report the poison) after dispose.
    Flush,
    /// steer(), followUp(), abort(): the table lets them resolve in every state.
    Control,
}

/// A runtime whose dispose closes every entry point: a flush (or a control call) sent after
/// dispose is rejected `runtime.disposed` instead of settling as the table says.
pub(crate) struct RefusedAfterDispose(pub Refused);

impl Bug for RefusedAfterDispose {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        let refused = match (self.0, &input) {
            (Refused::Flush, Input::Flush { op }) => Some(*op),
            (Refused::Control, Input::Steer { op, .. } | Input::FollowUp { op, .. } | Input::Abort { op }) => Some(*op),
            _ => None,
        };
        match refused {
            Some(op) if seam.watch().disposed => {
                let cause = Cause::new("runtime.disposed", "the runtime has been disposed");
                seam.settle(op, Settlement::Rejected(cause));
            }
            _ => seam.deliver(input),
        }
    }
}

/// dispose() reports what it closes on: on a poisoned runtime it rejects with the poison's
/// cause (a `finally` that rethrows the queue's failure) instead of resolving.
#[derive(Default)]
pub(crate) struct DisposeRejectsWithPoison {
    disposes: BTreeSet<OpId>,
}

impl Bug for DisposeRejectsWithPoison {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if let Input::Dispose { op } = &input {
            self.disposes.insert(*op);
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match (&effect, seam.watch().poison.clone()) {
            (
                Effect::Settled {
                    op,
                    settlement: Settlement::Resolved(_),
                },
                Some(poison),
            ) if self.disposes.contains(op) => seam.settle(*op, Settlement::Rejected(poison)),
            _ => seam.emit(effect),
        }
    }
}

/// The library adapter wraps every failure in an error of its own (`library.failed`) instead of
/// passing the runtime's cause on.
#[derive(Default)]
pub(crate) struct LibraryWrapsItsRejection {
    calls: BTreeSet<OpId>,
}

impl Bug for LibraryWrapsItsRejection {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if let Input::Library { op, .. } = &input {
            self.calls.insert(*op);
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Settled {
                op,
                settlement: Settlement::Rejected(cause),
            } if self.calls.contains(&op) => {
                let wrapped = Cause::new("library.failed", format!("the run failed: {}", cause.message));
                seam.settle(op, Settlement::Rejected(wrapped));
            }
            effect => seam.emit(effect),
        }
    }
}

/// An output mode writes its result and returns nothing: the mode's operation resolves without
/// the run result the table says it carries.
#[derive(Default)]
pub(crate) struct ModeResolvesWithNothing {
    modes: BTreeSet<OpId>,
}

impl Bug for ModeResolvesWithNothing {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if let Input::Mode { op, .. } = &input {
            self.modes.insert(*op);
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Settled {
                op,
                settlement: Settlement::Resolved(OpValue::Run(_)),
            } if self.modes.contains(&op) => seam.settle(op, Settlement::Resolved(OpValue::Unit)),
            effect => seam.emit(effect),
        }
    }
}

/// An unknown mode name is refused with a code of the runtime's own (`mode.unsupported`)
/// instead of `mode.unknown`.
#[derive(Default)]
pub(crate) struct UnknownModeCodeRenamed;

impl Bug for UnknownModeCodeRenamed {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Settled {
                op,
                settlement: Settlement::Rejected(cause),
            } if cause.code == "mode.unknown" => {
                seam.settle(op, Settlement::Rejected(Cause::new("mode.unsupported", cause.message)))
            }
            effect => seam.emit(effect),
        }
    }
}
