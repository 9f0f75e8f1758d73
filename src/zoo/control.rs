//! Control bugs: `abort()`, `steer()` and `followUp()` wired to the wrong place or settled at
//! the wrong time, and the step bound read wrong.

use crate::model::{Operation, StopReason};
use crate::runtime::{Cause, Completion, Effect, EffectId, Input, OpValue, RunReason, RunResult, Settlement, SignalId};
use crate::scenario::Scenario;

use super::seam::{Bug, Detour, Facts, Seam};

/// `control.abort()` is accepted (and resolves) but never reaches the agent: the signal never
/// fires.
#[derive(Default)]
pub(crate) struct AbortIgnored;

impl Bug for AbortIgnored {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        match input {
            Input::Operation {
                op,
                operation: Operation::Abort,
            } => seam.settle(op, Settlement::Resolved(OpValue::Unit)),
            input => seam.deliver(input),
        }
    }
}

/// The two queues a control call puts a message on during a run.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Queue {
    /// Delivered at the next turn of the running agent.
    Steer,
    /// Delivered once the agent would otherwise stop.
    FollowUp,
}

/// A call meant for one queue puts its message on the other: `steer()` waits like a follow-up,
/// or `followUp()` lands mid-run like a steer.
pub(crate) struct WrongQueue {
    pub meant: Queue,
}

impl Bug for WrongQueue {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        seam.deliver(match (self.meant, input) {
            (
                Queue::Steer,
                Input::Operation {
                    op,
                    operation: Operation::Steer { text },
                },
            ) => Input::Operation {
                op,
                operation: Operation::FollowUp { text },
            },
            (
                Queue::FollowUp,
                Input::Operation {
                    op,
                    operation: Operation::FollowUp { text },
                },
            ) => Input::Operation {
                op,
                operation: Operation::Steer { text },
            },
            (_, input) => input,
        });
    }
}

/// The step bound is read off by one: the agent is built with maxSteps + 1.
#[derive(Default)]
pub(crate) struct MaxStepsOffByOne;

impl Bug for MaxStepsOffByOne {
    fn start(&mut self, given: &mut Scenario, _: &Facts) -> Result<(), Cause> {
        given.config.max_steps += 1;
        Ok(())
    }
}

/// A run result counts its steps from one (the loop's counter is read after its last
/// increment): `steps` is one more than the model requests the run made.
#[derive(Default)]
pub(crate) struct StepsCountedFromOne;

impl Bug for StepsCountedFromOne {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        seam.emit(with_run_result(effect, |result| result.steps += 1));
    }
}

/// `effect` with its run result changed by `change`, when it resolves a prompt or a mode with
/// one; any other effect as it is.
fn with_run_result(effect: Effect, change: impl FnOnce(&mut RunResult)) -> Effect {
    match effect {
        Effect::Settled {
            op,
            settlement: Settlement::Resolved(OpValue::Run(mut result)),
        } => {
            change(&mut result);
            Effect::Settled {
                op,
                settlement: Settlement::Resolved(OpValue::Run(result)),
            }
        }
        effect => effect,
    }
}

/// The run's reason is read from the stream's stop reason, not from the signal: a run aborted
/// between requests (its last response ended with `stop`, or `toolUse` before a tool the abort
/// closed) resolves with reason `stop`, as if nothing had fired.
#[derive(Default)]
pub(crate) struct AbortedRunReportsStop;

impl Bug for AbortedRunReportsStop {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        seam.emit(with_run_result(effect, |result| {
            if result.reason == RunReason::Aborted {
                result.reason = RunReason::Stop;
            }
        }));
    }
}

/// The "aborted" flag is never cleared: once a run was aborted, every later run that ends with
/// `stop` reports `aborted`, though no signal fired for it.
#[derive(Default)]
pub(crate) struct AbortedFlagNeverCleared {
    aborted_once: bool,
}

impl Bug for AbortedFlagNeverCleared {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let aborted_once = &mut self.aborted_once;
        seam.emit(with_run_result(effect, |result| {
            if result.reason == RunReason::Aborted {
                *aborted_once = true;
            } else if *aborted_once && result.reason == RunReason::Stop {
                result.reason = RunReason::Aborted;
            }
        }));
    }
}

/// What makes a run's loop go round once more when it should have ended.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Again {
    /// The loop checks the signal before a tool, never before a request: once the abort fired,
    /// the run still asks the model once more.
    AfterAbort,
    /// A response with stopReason `error` is retried once (an auto-retry left on).
    AfterError,
}

/// The run asks the model once more where it should have ended (see [`Again`]): before the
/// run's first append, the request it last made goes out again; the run goes on once the model
/// has answered it, and the answer is dropped.
pub(crate) struct RequestAgain {
    again: Again,
    /// The run's last request, with its signal.
    last_request: Option<(SignalId, crate::runtime::ModelRequest)>,
    armed: bool,
    /// The subject's effects held while the repeated request waits for its answer.
    detour: Detour,
}

impl RequestAgain {
    pub fn new(again: Again) -> RequestAgain {
        RequestAgain {
            again,
            last_request: None,
            armed: false,
            detour: Detour::default(),
        }
    }
}

impl Bug for RequestAgain {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if let (
            Again::AfterError,
            Input::Complete {
                completion: Completion::ModelFinal { message },
                ..
            },
        ) = (self.again, &input)
        {
            if message.stop_reason == StopReason::Error {
                self.armed = true;
            }
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let Some(effect) = self.detour.hold(effect) else {
            return;
        };
        match &effect {
            Effect::ModelRequest { signal, request, .. } => {
                self.last_request = Some((*signal, request.clone()));
            }
            Effect::AbortSignal { .. } if matches!(self.again, Again::AfterAbort) => self.armed = true,
            Effect::Append { .. } if self.armed => {
                self.armed = false;
                if let Some((signal, request)) = self.last_request.clone() {
                    let id = seam.fresh_effect();
                    let again = Effect::ModelRequest {
                        effect: id,
                        signal,
                        request,
                    };
                    self.detour.start(again, effect, seam);
                    return;
                }
            }
            _ => {}
        }
        seam.emit(effect);
    }

    fn own_answer(&mut self, _: EffectId, completion: Completion, seam: &mut Seam) {
        if matches!(completion, Completion::ModelFinal { .. }) {
            for effect in self.detour.end() {
                self.effect(effect, seam);
            }
        }
    }
}
