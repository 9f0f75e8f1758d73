//! Store-client bugs: how a runtime appends its run's suffix, when it counts an entry stored,
//! what it does when the store says no.
//!
//! A correct runtime appends one entry at a time and moves on only when the store accepted it.
//! These bugs are written as a store client that lies to the runtime: it acknowledges an append
//! to the runtime before the store answered (so the runtime moves on early), hides appends from
//! the store, retries one, or turns a failure into a success, and then shows the world what such
//! a runtime would do. Where the runtime has moved further than the buggy one would have (it
//! started the next prompt while the buggy one is poisoned), [`Poisoned`] answers for it.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Operation, SessionEntry};
use crate::runtime::{
    unknown_mode_cause, Cause, Completion, Effect, EffectId, Input, Mode, OpId, OpValue, Settlement, StoreOutcome,
};

use super::seam::{Bug, Seam};

/// The buggy runtime is poisoned with `cause` but the wrapped one is not (or has moved on): the
/// seam answers every operation as the poisoned runtime would, and swallows the world's
/// answers to what the wrapped one still waits for.
struct Poisoned {
    cause: Cause,
}

impl Poisoned {
    fn input(&self, input: Input, seam: &mut Seam) {
        let Input::Operation { op, operation } = input else {
            return;
        };
        let settlement = match &operation {
            Operation::Mode { mode, .. } if Mode::parse(mode).is_none() => {
                Settlement::Rejected(unknown_mode_cause(mode))
            }
            Operation::Prompt { .. } | Operation::Mode { .. } | Operation::Library { .. } | Operation::Flush => {
                Settlement::Rejected(self.cause.clone())
            }
            Operation::Dispose | Operation::Steer { .. } | Operation::FollowUp { .. } | Operation::Abort => {
                Settlement::Resolved(OpValue::Unit)
            }
        };
        seam.settle(op, settlement);
    }

    /// What the world still waits for, settled as the poisoned runtime settles it: the prompts
    /// (running ahead in the wrapped runtime, or queued) reject with the cause, as does a flush;
    /// a dispose resolves.
    fn reject_waiting(&self, seam: &mut Seam, except: Option<OpId>) {
        let watch = seam.watch();
        let prompts: Vec<OpId> = watch.prompts.iter().copied().filter(|op| Some(*op) != except).collect();
        let waits: Vec<(OpId, bool)> = watch.waits.iter().map(|(op, dispose)| (*op, *dispose)).collect();
        for op in prompts {
            seam.settle(op, Settlement::Rejected(self.cause.clone()));
        }
        for (op, dispose) in waits {
            let settlement = match dispose {
                true => Settlement::Resolved(OpValue::Unit),
                false => Settlement::Rejected(self.cause.clone()),
            };
            seam.settle(op, settlement);
        }
    }
}

/// An effect that answers the world's current call at once (its settlement, an abort's
/// signal): a held-back run does not hold it back.
fn answers_at_once(effect: &Effect, current: Option<OpId>) -> bool {
    match effect {
        Effect::AbortSignal { .. } => true,
        Effect::Settled { op, .. } => Some(*op) == current,
        _ => false,
    }
}

/// How a pipelining store client chooses a parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parent {
    /// The previous entry of the run, issued but not yet accepted: the leaf moves at issue.
    Issued,
    /// The last entry the store accepted: the leaf moves at acceptance, but the next append
    /// does not wait for it.
    Accepted,
}

/// Issues every append of a run at once, without waiting for the store's answers; the prompt
/// settles when all of them are accepted. The first failure poisons the runtime and rejects
/// the prompt.
struct Pipelined {
    parent: Parent,
    /// Appends shown to the store and not answered, acknowledged to the runtime already.
    outstanding: BTreeSet<EffectId>,
    /// The runtime's effects after its last append of the run (the prompt's settlement, a
    /// mode's output, the next run), held until the store answered every outstanding append.
    held: Option<Vec<Effect>>,
    /// The operation the world's current input is.
    current: Option<OpId>,
    poisoned: Option<Poisoned>,
}

impl Pipelined {
    fn new(parent: Parent) -> Pipelined {
        Pipelined {
            parent,
            outstanding: BTreeSet::new(),
            held: None,
            current: None,
            poisoned: None,
        }
    }
}

impl Bug for Pipelined {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if let Some(poisoned) = &self.poisoned {
            return poisoned.input(input, seam);
        }
        self.current = input.op();
        match input {
            Input::Complete {
                effect,
                completion: Completion::Append(outcome),
            } if self.outstanding.remove(&effect) => match outcome {
                StoreOutcome::Ok if self.outstanding.is_empty() => {
                    for held in self.held.take().unwrap_or_default() {
                        seam.emit(held);
                    }
                }
                StoreOutcome::Ok => {}
                StoreOutcome::Failed(cause) => {
                    let poisoned = Poisoned { cause };
                    // The prompt whose run was persisting rejects with the cause; what the
                    // runtime did after its last append never happened.
                    self.held = None;
                    poisoned.reject_waiting(seam, None);
                    self.outstanding.clear();
                    self.poisoned = Some(poisoned);
                }
            },
            other => seam.deliver(other),
        }
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        if self.poisoned.is_some() {
            return;
        }
        let holding = self.held.is_some() || !self.outstanding.is_empty();
        match effect {
            Effect::Append { effect, mut entry } if self.held.is_none() => {
                if self.parent == Parent::Accepted {
                    entry.parent_id = seam.watch().leaf().map(str::to_string);
                }
                seam.emit(Effect::Append { effect, entry });
                self.outstanding.insert(effect);
                seam.answer(effect, Completion::Append(StoreOutcome::Ok));
            }
            other if holding && !answers_at_once(&other, self.current) => {
                self.held.get_or_insert_with(Vec::new).push(other);
            }
            other => seam.emit(other),
        }
    }
}

/// The leaf (and the active path) advance when an append is issued, before it is accepted:
/// every append of a run is issued at once, each parented on the one before.
pub(crate) fn leaf_before_accept() -> Box<dyn Bug> {
    Box::new(Pipelined::new(Parent::Issued))
}

/// The next append is issued without waiting for the previous answer (the leaf still moves
/// only on acceptance, so every append of a run names the run's first parent).
pub(crate) fn two_appends_in_flight() -> Box<dyn Bug> {
    Box::new(Pipelined::new(Parent::Accepted))
}

/// The prompt resolves when its last append is issued, not when the store accepted it.
///
/// The store client acknowledges each append to the runtime at once, to learn whether it was
/// the run's last: if the runtime answers with the next append, that one is held until the store
/// accepted the previous; if it answers with the prompt's settlement, the settlement goes out
/// at once and what the runtime does next waits for the store.
#[derive(Default)]
pub(crate) struct ResolveBeforeLastAppend {
    /// The append shown to the store and acknowledged to the runtime already.
    outstanding: Option<EffectId>,
    /// The runtime's next effects, held until the store answers the outstanding append.
    held: Vec<Effect>,
    /// The outstanding append was the run's last: its prompt has settled.
    settled: Option<OpId>,
    /// The operation the world's current input is.
    current: Option<OpId>,
    poisoned: Option<Poisoned>,
}

impl ResolveBeforeLastAppend {
    /// Shows one held-back stretch of the runtime's effects, up to (and including) its next
    /// append, which is acknowledged at once.
    fn show_next(&mut self, seam: &mut Seam) {
        let held = std::mem::take(&mut self.held);
        let mut rest = held.into_iter();
        for effect in rest.by_ref() {
            self.effect(effect, seam);
            if self.outstanding.is_some() {
                break;
            }
        }
        self.held.extend(rest);
    }
}

impl Bug for ResolveBeforeLastAppend {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        if let Some(poisoned) = &self.poisoned {
            return poisoned.input(input, seam);
        }
        self.current = input.op();
        match input {
            Input::Complete {
                effect,
                completion: Completion::Append(outcome),
            } if self.outstanding == Some(effect) => {
                self.outstanding = None;
                let settled = self.settled.take();
                match outcome {
                    StoreOutcome::Ok => self.show_next(seam),
                    StoreOutcome::Failed(cause) => {
                        let poisoned = Poisoned { cause };
                        let persisting = seam.watch().prompts.first().copied();
                        if settled.is_none() {
                            if let Some(op) = persisting {
                                seam.settle(op, Settlement::Rejected(poisoned.cause.clone()));
                            }
                        }
                        poisoned.reject_waiting(seam, settled.or(persisting));
                        self.held.clear();
                        self.poisoned = Some(poisoned);
                    }
                }
            }
            other => seam.deliver(other),
        }
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        if self.poisoned.is_some() {
            return;
        }
        if self.outstanding.is_some() && self.settled.is_some() && !answers_at_once(&effect, self.current) {
            return self.held.push(effect);
        }
        match effect {
            Effect::Append { effect, entry } if self.outstanding.is_some() => {
                self.held.push(Effect::Append { effect, entry });
            }
            Effect::Append { effect, entry } => {
                seam.emit(Effect::Append { effect, entry });
                self.outstanding = Some(effect);
                seam.answer(effect, Completion::Append(StoreOutcome::Ok));
            }
            // A mode whose last append went out resolves without writing its output.
            Effect::Write { effect, .. } if self.outstanding.is_some() => {
                seam.answer(effect, Completion::Write(StoreOutcome::Ok));
            }
            Effect::Settled { op, settlement } if self.outstanding.is_some() && seam.watch().prompts.contains(&op) => {
                self.settled = Some(op);
                seam.emit(Effect::Settled { op, settlement });
            }
            other if self.outstanding.is_some() && !answers_at_once(&other, self.current) => self.held.push(other),
            other => seam.emit(other),
        }
    }
}

/// A failed append is retried once (per run) before the runtime gives up: the same entry is
/// appended again, and the retry's answer is the one the runtime gets.
#[derive(Default)]
pub(crate) struct RetryAfterFailedAppend {
    /// The retry's effect -> the failed append it stands for.
    retries: BTreeMap<EffectId, EffectId>,
    /// The runtime's appends shown to the store: effect -> (entry, the prompt persisting).
    appends: BTreeMap<EffectId, (SessionEntry, Option<OpId>)>,
    retried: BTreeSet<Option<OpId>>,
}

impl Bug for RetryAfterFailedAppend {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        match input {
            Input::Complete {
                effect,
                completion: Completion::Append(StoreOutcome::Failed(cause)),
            } => match self.appends.remove(&effect) {
                Some((entry, op)) if self.retried.insert(op) => {
                    let retry = seam.fresh_effect();
                    self.retries.insert(retry, effect);
                    seam.inject(Effect::Append { effect: retry, entry });
                }
                _ => seam.answer(effect, Completion::Append(StoreOutcome::Failed(cause))),
            },
            other => seam.deliver(other),
        }
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        if let Effect::Append { effect, entry } = &effect {
            let persisting = seam.watch().prompts.first().copied();
            self.appends.insert(*effect, (entry.clone(), persisting));
        }
        seam.emit(effect);
    }

    fn own_answer(&mut self, effect: EffectId, completion: Completion, seam: &mut Seam) {
        if let Some(failed) = self.retries.remove(&effect) {
            seam.answer(failed, completion);
        }
    }
}

/// A mode resolves when its write is issued, before the sink answers: the write is
/// acknowledged to the runtime at once, and the sink's answer comes to nobody.
#[derive(Default)]
pub(crate) struct ModeSettlesBeforeWrite {
    writes: BTreeSet<EffectId>,
}

impl Bug for ModeSettlesBeforeWrite {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        match input {
            Input::Complete { effect, .. } if self.writes.remove(&effect) => {}
            other => seam.deliver(other),
        }
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        if let Effect::Write { effect: id, .. } = &effect {
            let id = *id;
            self.writes.insert(id);
            seam.emit(effect);
            return seam.answer(id, Completion::Write(StoreOutcome::Ok));
        }
        seam.emit(effect);
    }
}
