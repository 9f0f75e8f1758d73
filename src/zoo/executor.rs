//! Executor bugs: how the core executor and the extension host's wrapper around it run a call.

use crate::model::ToolCall;
use crate::runtime::{Cause, Completion, Effect, HookOutcome, HookPhase, SignalId};
use crate::scenario::Scenario;

use super::seam::{Bug, Detour, Facts, Seam};

/// The core executor runs outside the extension host: no hook sees a call (the host wraps
/// nothing), so no extension can deny, rewrite or observe one.
#[derive(Default)]
pub(crate) struct CoreOutsideHooks;

impl Bug for CoreOutsideHooks {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Hook { effect, phase, .. } => {
                let passed = match phase {
                    HookPhase::Before => HookOutcome::Allow,
                    HookPhase::After => HookOutcome::Observe,
                };
                seam.answer(effect, Completion::Hook(passed));
            }
            other => seam.emit(other),
        }
    }
}

/// The core executor does not validate arguments against the tool's schema: it is built with
/// schemas that accept anything, while the model is still shown the real ones.
#[derive(Default)]
pub(crate) struct ArgumentsNotValidated;

impl Bug for ArgumentsNotValidated {
    fn start(&mut self, given: &mut Scenario, _: &Facts) -> Result<(), Cause> {
        for tool in &mut given.tools {
            tool.parameters = serde_json::json!({});
        }
        Ok(())
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::ModelRequest {
                effect,
                signal,
                mut request,
            } => {
                request.tools = seam.facts.tools.clone().into();
                seam.emit(Effect::ModelRequest {
                    effect,
                    signal,
                    request,
                });
            }
            other => seam.emit(other),
        }
    }
}

/// The core tool starts even when the run's signal fired while the before hooks ran: the call
/// goes to the tool, and what the runtime does next waits for the tool's answer.
#[derive(Default)]
pub(crate) struct ToolStartsAfterAbort {
    /// The run's signal (the latest request's) and the call whose before hooks run.
    signal: Option<SignalId>,
    call: Option<ToolCall>,
    /// The signal fired while that call's before hooks ran.
    aborted_in_hooks: bool,
    /// The runtime's effects after it skipped the core, held until the tool answers.
    detour: Detour,
}

impl Bug for ToolStartsAfterAbort {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let Some(effect) = self.detour.hold(effect) else {
            return;
        };
        match &effect {
            Effect::ModelRequest { signal, .. } => self.signal = Some(*signal),
            Effect::Hook {
                phase: HookPhase::Before,
                call,
                ..
            } => {
                if self.call.as_ref().map(|known| &known.id) != Some(&call.id) {
                    self.aborted_in_hooks = false;
                }
                self.call = Some(call.clone());
            }
            Effect::AbortSignal { .. } => {
                let before_hook_running = seam.watch().hooks.values().any(|phase| *phase == HookPhase::Before);
                self.aborted_in_hooks |= before_hook_running;
            }
            _ => {}
        }
        let skipped_core = self.aborted_in_hooks
            && !matches!(
                effect,
                Effect::Hook {
                    phase: HookPhase::Before,
                    ..
                } | Effect::AbortSignal { .. }
                    | Effect::Settled { .. }
            );
        if skipped_core {
            if let (Some(call), Some(signal)) = (self.call.take(), self.signal) {
                self.aborted_in_hooks = false;
                let id = seam.fresh_effect();
                let tool = Effect::ToolCall {
                    effect: id,
                    signal,
                    call,
                };
                self.detour.start(tool, effect, seam);
                return;
            }
        }
        seam.emit(effect);
    }

    fn own_answer(&mut self, _: crate::runtime::EffectId, _: Completion, seam: &mut Seam) {
        for effect in self.detour.end() {
            self.effect(effect, seam);
        }
    }
}
