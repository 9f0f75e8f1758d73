//! Settlement bugs: an operation settled in a way the table of allowed outcomes
//! (`check::settle::allowed`, conformance.md's SETTLE) never allows in the state it met. One bug
//! per row of the table; the prompt's row is [`super::queue::BusyPromptRejected`].
//!
//! Each is a wiring a runtime's author could plausibly write: a closed runtime that refuses
//! every call, a dispose that reports the failure it closes on, an adapter that wraps the errors
//! it passes on or forgets to return what it computed.

use std::collections::BTreeSet;

use crate::model::{Operation, OperationKind};
use crate::runtime::{Cause, Effect, Input, OpId, OpValue, Settlement};

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
