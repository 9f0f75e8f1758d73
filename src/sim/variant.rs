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
//!
//! `tests/kit/fairness.rs` runs the whole corpus on it, on the canonical schedule and under
//! exploration, and demands no failure and no divergence that matters. In the networked world
//! (`net` scenarios) the variant is the reference with the same clock and id readers; the
//! world numbers the effects there.

use std::collections::BTreeMap;

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
        self.inner.start(scenario)
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
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
            effects.push(renamed);
        }
        Ok(())
    }
}
