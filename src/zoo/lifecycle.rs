//! Lifecycle bugs: how `dispose()` closes the runtime and what later calls are told.

use crate::model::Operation;
use crate::runtime::{Cause, Effect, Input, OpId, Settlement};

use super::seam::{Bug, Seam};

/// dispose() closes the entry only after the queue drained: while a prompt is unsettled the
/// dispose is held back (prompts sent in between are accepted and run), and it reaches the
/// runtime once the last prompt settled.
#[derive(Default)]
pub(crate) struct DisposeClosesLate {
    held: Vec<OpId>,
}

impl Bug for DisposeClosesLate {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        match input {
            Input::Operation {
                op,
                operation: Operation::Dispose,
            } if !seam.watch().prompts.is_empty() => self.held.push(op),
            input => seam.deliver(input),
        }
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        seam.emit(effect);
        if seam.watch().prompts.is_empty() {
            for op in self.held.drain(..) {
                seam.deliver(Input::Operation {
                    op,
                    operation: Operation::Dispose,
                });
            }
        }
    }
}

/// Prompts after dispose are rejected with a code of the runtime's own (`runtime.closed`).
#[derive(Default)]
pub(crate) struct DisposedCodeRenamed;

impl Bug for DisposedCodeRenamed {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Settled {
                op,
                settlement: Settlement::Rejected(cause),
            } if cause.code == "runtime.disposed" => {
                seam.settle(op, Settlement::Rejected(Cause::new("runtime.closed", cause.message)))
            }
            effect => seam.emit(effect),
        }
    }
}
