//! Settlement bugs: an operation settled in a way the table of allowed outcomes
//! (`check::settle::allowed`, conformance.md's SETTLE) never allows in the state it met. One bug
//! per row of the table; the prompt's row is [`super::queue::BusyPromptRejected`]. And one per
//! row of the table's last column, *by when* ([`SettlesLate`]): an operation that settles with
//! the right value, but only once the world speaks again.
//!
//! Each is a wiring a runtime's author could plausibly write: a closed runtime that refuses
//! every call, a dispose that reports the failure it closes on, an adapter that wraps the errors
//! it passes on or forgets to return what it computed.

use std::collections::BTreeSet;

use crate::model::{Operation, OperationKind};
use crate::runtime::{Cause, Effect, Input, Mode, OpId, OpValue, Settlement};

use super::seam::{Bug, Seam, Watch};

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
            (
                Refused::Flush,
                Input::Operation {
                    op,
                    operation: Operation::Flush,
                },
            ) => Some(*op),
            (
                Refused::Control,
                Input::Operation {
                    op,
                    operation: Operation::Steer { .. } | Operation::FollowUp { .. } | Operation::Abort,
                },
            ) => Some(*op),
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

/// A wiring that changes how one kind of operation settles: the operations of kind `of`, and
/// `rewrite` gives one's new settlement from the one the
/// subject gave and what crossed the seam (`None`: passed on unchanged).
pub(crate) struct Resettled {
    of: OperationKind,
    rewrite: fn(&Settlement, &Watch) -> Option<Settlement>,
    ops: BTreeSet<OpId>,
}

impl Resettled {
    fn boxed(of: OperationKind, rewrite: fn(&Settlement, &Watch) -> Option<Settlement>) -> Box<dyn Bug> {
        Box::new(Resettled {
            of,
            rewrite,
            ops: BTreeSet::new(),
        })
    }
}

impl Bug for Resettled {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if let Some(op) = input.op_of_kind(self.of) {
            self.ops.insert(op);
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let rewritten = match &effect {
            Effect::Settled { op, settlement } if self.ops.contains(op) => {
                (self.rewrite)(settlement, seam.watch()).map(|settlement| (*op, settlement))
            }
            _ => None,
        };
        match rewritten {
            Some((op, settlement)) => seam.settle(op, settlement),
            None => seam.emit(effect),
        }
    }
}

/// dispose() reports what it closes on: on a poisoned runtime it rejects with the poison's
/// cause (a `finally` that rethrows the queue's failure) instead of resolving.
pub(crate) fn dispose_rejects_with_poison() -> Box<dyn Bug> {
    Resettled::boxed(OperationKind::Dispose, |settlement, watch| {
        match (settlement, &watch.poison) {
            (Settlement::Resolved(_), Some(poison)) => Some(Settlement::Rejected(poison.clone())),
            _ => None,
        }
    })
}

/// The library adapter wraps every failure in an error of its own (`library.failed`) instead of
/// passing the runtime's cause on.
pub(crate) fn library_wraps_its_rejection() -> Box<dyn Bug> {
    Resettled::boxed(OperationKind::Library, |settlement, _| match settlement {
        Settlement::Rejected(cause) => Some(Settlement::Rejected(Cause::new(
            "library.failed",
            format!("the run failed: {}", cause.message),
        ))),
        _ => None,
    })
}

/// An output mode writes its result and returns nothing: the mode's operation resolves without
/// the run result the table says it carries.
pub(crate) fn mode_resolves_with_nothing() -> Box<dyn Bug> {
    Resettled::boxed(OperationKind::Mode, |settlement, _| match settlement {
        Settlement::Resolved(OpValue::Run(_)) => Some(Settlement::Resolved(OpValue::Unit)),
        _ => None,
    })
}

/// An unknown mode name is refused with a code of the runtime's own (`mode.unsupported`)
/// instead of `mode.unknown`.
pub(crate) fn unknown_mode_code_renamed() -> Box<dyn Bug> {
    Resettled::boxed(OperationKind::Mode, |settlement, _| match settlement {
        Settlement::Rejected(cause) if cause.code == "mode.unknown" => Some(Settlement::Rejected(Cause::new(
            "mode.unsupported",
            cause.message.clone(),
        ))),
        _ => None,
    })
}

/// Which settlements [`SettlesLate`] holds back.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Late {
    /// prompt(): a promise chained on something that only moves when the runtime next wakes.
    Prompt,
    /// A known mode: its settlement after the sink answered.
    Mode,
    /// A mode name it does not know: the validation queued behind the runtime's next turn.
    UnknownMode,
    /// The library call.
    Library,
    /// flush().
    Flush,
    /// dispose(), every call of it.
    Dispose,
    /// steer(), followUp(), abort().
    Control,
    /// A prompt refused at its call (poisoned, disposed): the refusal queued behind the tail.
    Refusal,
}

impl Late {
    fn holds(self, operation: &Operation) -> bool {
        match (self, operation) {
            (Late::Prompt, Operation::Prompt { .. })
            | (Late::Library, Operation::Library { .. })
            | (Late::Flush, Operation::Flush)
            | (Late::Dispose, Operation::Dispose)
            | (Late::Control, Operation::Steer { .. } | Operation::FollowUp { .. } | Operation::Abort) => true,
            (Late::Mode, Operation::Mode { mode, .. }) => Mode::parse(mode).is_some(),
            (Late::UnknownMode, Operation::Mode { mode, .. }) => Mode::parse(mode).is_none(),
            _ => false,
        }
    }
}

/// An operation that settles with the right value, but late: its settlement waits for the
/// world's next input and comes before anything that input produces (a resolution scheduled on
/// a timer or on the next event of a bus, a refusal that goes through the queue's tail).
pub(crate) struct SettlesLate {
    late: Late,
    ops: BTreeSet<OpId>,
    /// The prompt-like operation the input being handled delivered (for [`Late::Refusal`]).
    delivering: Option<OpId>,
    held: Vec<Effect>,
}

impl SettlesLate {
    pub(crate) fn boxed(late: Late) -> Box<dyn Bug> {
        Box::new(SettlesLate {
            late,
            ops: BTreeSet::new(),
            delivering: None,
            held: Vec::new(),
        })
    }
}

impl Bug for SettlesLate {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        for settled in self.held.drain(..) {
            seam.emit(settled);
        }
        self.delivering = None;
        if let Input::Operation { op, operation } = &input {
            if self.late.holds(operation) {
                self.ops.insert(*op);
            }
            if operation.is_prompt_like() {
                self.delivering = Some(*op);
            }
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let hold = match &effect {
            Effect::Settled { op, settlement } => match self.late {
                Late::Refusal => self.delivering == Some(*op) && matches!(settlement, Settlement::Rejected(_)),
                _ => self.ops.contains(op),
            },
            _ => false,
        };
        match hold {
            true => self.held.push(effect),
            false => seam.emit(effect),
        }
    }
}
