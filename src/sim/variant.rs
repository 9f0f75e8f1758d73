//! A different-but-correct implementation: the reference as another conforming runtime would
//! show itself at the seam, for the kit's fairness test.
//!
//! The seed leaves some choices open, and no verdict may depend on them. This subject makes
//! every one of them differently from the reference while keeping the contract:
//!
//! - **When the clock is read.** Another reader shares the clock (see
//!   [`OtherReaders`](crate::runtime::OtherReaders)): every timestamp the runtime stamps is a
//!   later reading of the clock rule than the reference's, so message and entry timestamps all
//!   differ, while each append still reads the clock afresh (PERSIST-8).
//! - **Which ids.** Another reader draws from the id rule too: the appended entries carry ids
//!   of the rule with gaps (`entry-2`, `entry-4`, ...), in increasing order (PERSIST-4).
//! - **Effect and signal ids.** An adapter numbers its effects and signals as it likes: here
//!   effect ids count down from a million and signal ids start at 90 in steps of 3, so any
//!   verdict that read meaning into an id's value or order would show.
//! - **When an observer hears of an event** (`with_serial_observers`, judged by the rules
//!   only: the order of its notifications differs from the reference's). The seed says only
//!   that nothing waits for an observer. This subject's event bus is then serial per observer: it hands an observer its next
//!   event only after the observer answered the previous one (never holding the runtime back),
//!   so a run's `agent_end` may reach an observer while the next run is in progress.
//!
//! `tests/kit/fairness.rs` runs the whole corpus on it, on the canonical schedule and under
//! exploration, and demands no failure and no divergence that matters. In the networked world
//! (`net` scenarios) the variant is the reference with the same clock and id readers; the
//! world numbers the effects there.

use std::collections::{BTreeMap, VecDeque};

use crate::runtime::{Cause, Effect, EffectId, Input, OtherReaders, SignalId};
use crate::scenario::Scenario;

use super::reference::ReferenceSubject;
use super::{Restored, Subject, SubjectFailure};

/// Effect ids count down from here.
const EFFECT_ID_TOP: u32 = 1_000_000;

/// The reference with every open choice made another way (see the module documentation).
pub struct ConformingVariant {
    inner: ReferenceSubject,
    /// Outer (this subject's) effect id -> the reference's.
    effects: BTreeMap<u32, u32>,
    /// Whether the event bus is serial per observer (the module documentation).
    serial_observers: bool,
    /// Per observer: the notification it was handed and has not answered (outer id), and the
    /// ones the bus holds back until it does, in order.
    observers: BTreeMap<String, (EffectId, VecDeque<Effect>)>,
}

impl Default for ConformingVariant {
    fn default() -> ConformingVariant {
        ConformingVariant::new()
    }
}

impl ConformingVariant {
    pub fn new() -> ConformingVariant {
        ConformingVariant {
            inner: ReferenceSubject::with_other_readers(OtherReaders {
                clock_every: 2,
                ids_every: 3,
            }),
            effects: BTreeMap::new(),
            serial_observers: false,
            observers: BTreeMap::new(),
        }
    }

    /// This variant with an event bus serial per observer, or not.
    pub fn with_serial_observers(mut self, serial_observers: bool) -> ConformingVariant {
        self.serial_observers = serial_observers;
        self
    }

    /// Passes `effect` on, unless it is a notification for an observer still busy with one:
    /// then the bus holds it back.
    fn pass(&mut self, effect: Effect, effects: &mut Vec<Effect>) {
        if let (
            true,
            Effect::Notify {
                effect: id, observer, ..
            },
        ) = (self.serial_observers, &effect)
        {
            match self.observers.get_mut(observer) {
                Some((_, held)) => {
                    held.push_back(effect);
                    return;
                }
                None => {
                    self.observers.insert(observer.clone(), (*id, VecDeque::new()));
                }
            }
        }
        effects.push(effect);
    }

    /// The observer answered `answered`: the bus hands it the next event it held back.
    fn release(&mut self, answered: EffectId, effects: &mut Vec<Effect>) {
        let Some(observer) = self
            .observers
            .iter()
            .find(|(_, (busy, _))| *busy == answered)
            .map(|(observer, _)| observer.clone())
        else {
            return;
        };
        let next = self.observers.get_mut(&observer).and_then(|(_, held)| held.pop_front());
        match next {
            Some(next) => {
                if let (Effect::Notify { effect, .. }, Some((busy, _))) = (&next, self.observers.get_mut(&observer)) {
                    *busy = *effect;
                }
                effects.push(next);
            }
            None => {
                self.observers.remove(&observer);
            }
        }
    }

    fn outer_effect(&mut self, inner: EffectId) -> EffectId {
        let outer = EFFECT_ID_TOP - inner.0;
        self.effects.insert(outer, inner.0);
        EffectId(outer)
    }

    fn outer_signal(inner: SignalId) -> SignalId {
        SignalId(90 + 3 * inner.0)
    }

    fn rename(&mut self, effect: Effect) -> Effect {
        match effect {
            Effect::ModelRequest {
                effect,
                signal,
                request,
            } => Effect::ModelRequest {
                effect: self.outer_effect(effect),
                signal: Self::outer_signal(signal),
                request,
            },
            Effect::ToolCall { effect, signal, call } => Effect::ToolCall {
                effect: self.outer_effect(effect),
                signal: Self::outer_signal(signal),
                call,
            },
            Effect::Hook {
                effect,
                extension,
                phase,
                call,
                result,
            } => Effect::Hook {
                effect: self.outer_effect(effect),
                extension,
                phase,
                call,
                result,
            },
            Effect::Append { effect, entry } => Effect::Append {
                effect: self.outer_effect(effect),
                entry,
            },
            Effect::Write { effect, text } => Effect::Write {
                effect: self.outer_effect(effect),
                text,
            },
            Effect::Notify {
                effect,
                observer,
                event,
            } => Effect::Notify {
                effect: self.outer_effect(effect),
                observer,
                event,
            },
            Effect::AbortSignal { signal } => Effect::AbortSignal {
                signal: Self::outer_signal(signal),
            },
            settled @ Effect::Settled { .. } => settled,
        }
    }
}

impl Subject for ConformingVariant {
    /// In the networked world the runtime is a host's task built from these: the reference
    /// with the same other readers (its effect ids there are the world's own).
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        self.effects.clear();
        self.observers.clear();
        self.inner.start(scenario)
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        let answered = match &input {
            Input::Complete { effect, .. } => Some(*effect),
            _ => None,
        };
        let input = match input {
            Input::Complete { effect, completion } => {
                let inner = self
                    .effects
                    .get(&effect.0)
                    .copied()
                    .ok_or_else(|| SubjectFailure::Protocol {
                        message: format!("{effect} was never issued"),
                    })?;
                Input::Complete {
                    effect: EffectId(inner),
                    completion,
                }
            }
            other => other,
        };
        let mut produced = Vec::new();
        self.inner.deliver(input, &mut produced)?;
        for effect in produced {
            let renamed = self.rename(effect);
            self.pass(renamed, effects);
        }
        if let Some(answered) = answered {
            self.release(answered, effects);
        }
        Ok(())
    }

    fn state(&self) -> Option<crate::trace::StateProbe> {
        self.inner.state()
    }
}
