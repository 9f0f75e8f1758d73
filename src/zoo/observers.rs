//! Observer bugs: an extension host that lets its event handlers hold up, break or miss the
//! run they watch.

use std::collections::BTreeSet;

use crate::runtime::{Cause, Completion, Effect, Input, NotifyOutcome, ObservedEvent, OpValue, Settlement};

use super::seam::{Bug, Seam};

/// The runtime waits for its observers before it stores (Pi awaits extension handlers first):
/// while a notification is unanswered, appends are held back, and they go out, in order, with
/// the world's next input once every notification has been answered.
#[derive(Default)]
pub(crate) struct AppendsWaitForObservers {
    held: Vec<Effect>,
}

impl Bug for AppendsWaitForObservers {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if seam.watch().notifications.is_empty() {
            for append in self.held.drain(..) {
                seam.emit(append);
            }
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let waits = !seam.watch().notifications.is_empty() || !self.held.is_empty();
        match effect {
            Effect::Append { .. } if waits => self.held.push(effect),
            effect => seam.emit(effect),
        }
    }
}

/// An observer's error escapes the extension host: the next run result to settle is rejected
/// with it (`extension.error`).
#[derive(Default)]
pub(crate) struct ObserverErrorRejectsPrompt {
    /// The last error an observer threw, not yet reported.
    error: Option<String>,
}

impl Bug for ObserverErrorRejectsPrompt {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if let Input::Complete {
            completion: Completion::Notify(NotifyOutcome::Threw { message }),
            ..
        } = &input
        {
            self.error = Some(message.clone());
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Settled {
                op,
                settlement: Settlement::Resolved(OpValue::Run(_)),
            } if self.error.is_some() => {
                let message = self.error.take().unwrap_or_default();
                seam.settle(op, Settlement::Rejected(Cause::new("extension.error", message)));
            }
            effect => seam.emit(effect),
        }
    }
}

/// `agent_end` handlers are registered to fire once: an observer hears only the first run's
/// end, and the host answers the later ones itself.
#[derive(Default)]
pub(crate) struct AgentEndToldOnce {
    /// Observers already told of a run's end.
    told: BTreeSet<String>,
}

impl Bug for AgentEndToldOnce {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        if let Effect::Notify {
            effect: id,
            observer,
            event: ObservedEvent::AgentEnd { .. },
        } = &effect
        {
            if !self.told.insert(observer.clone()) {
                return seam.answer(*id, Completion::Notify(NotifyOutcome::Ok));
            }
        }
        seam.emit(effect);
    }
}

/// The extension host tells of a run's end with the whole transcript, the restored history and
/// earlier runs included, instead of the run's own messages (oh-my-pi's extension `agent_end`).
#[derive(Default)]
pub(crate) struct AgentEndCarriesTranscript;

impl Bug for AgentEndCarriesTranscript {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Notify {
                effect,
                observer,
                event: ObservedEvent::AgentEnd { messages },
            } => {
                let transcript = seam.watch().persisted.iter().cloned().chain(messages).collect();
                seam.emit(Effect::Notify {
                    effect,
                    observer,
                    event: ObservedEvent::AgentEnd { messages: transcript },
                });
            }
            effect => seam.emit(effect),
        }
    }
}

/// The extension host tells of a turn's end without its tool results (aelix's hook event
/// carries the message only).
#[derive(Default)]
pub(crate) struct TurnEndDropsToolResults;

impl Bug for TurnEndDropsToolResults {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Notify {
                effect,
                observer,
                event: ObservedEvent::TurnEnd { message, .. },
            } => seam.emit(Effect::Notify {
                effect,
                observer,
                event: ObservedEvent::TurnEnd {
                    message,
                    tool_results: Vec::new(),
                },
            }),
            effect => seam.emit(effect),
        }
    }
}
