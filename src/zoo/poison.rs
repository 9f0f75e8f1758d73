//! Poison bugs: a store client that turns an append's failure into success, so the runtime
//! goes on where it must stop for good.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Operation, SessionEntry};
use crate::runtime::{
    unknown_mode_cause, Cause, Completion, Effect, EffectId, Input, Mode, OpId, Settlement, StoreOutcome,
};

use super::seam::{Bug, Seam};

/// What a store client that turns a failure into success does to the rest of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterFailure {
    /// The chapter's fault injection: the failure is rethrown but not stored as poison; later
    /// prompts run as if nothing happened.
    Forgotten,
    /// Poison is stored (new prompts and flushes are refused with the cause), but the prompts
    /// already queued still run.
    QueueRuns,
}

/// A failed append ends its prompt with the failure, and the runtime goes on: the wrapped
/// runtime is told the append succeeded, the rest of that run's appends (and a mode's output)
/// never reach the world, and the prompt's success becomes the failure. Later entries name the
/// last entry the store accepted as their parent, as the buggy runtime's leaf never moved.
struct FailureNotPoison {
    after: AfterFailure,
    /// The runtime's appends shown to the store: effect -> entry.
    appends: BTreeMap<EffectId, SessionEntry>,
    /// The failed run: its prompt and the cause.
    failing: Option<(Option<OpId>, Cause)>,
    /// Entries the store never stored -> the parent the buggy runtime's leaf stayed at.
    ghosts: BTreeMap<String, Option<String>>,
    /// The cause of the first failure (`QueueRuns`: poison for new calls).
    poison: Option<Cause>,
    /// Flushes not settled yet: with `QueueRuns`, one that settles after the failure reports the
    /// poison.
    flushes: BTreeSet<OpId>,
}

impl FailureNotPoison {
    fn new(after: AfterFailure) -> FailureNotPoison {
        FailureNotPoison {
            after,
            appends: BTreeMap::new(),
            failing: None,
            ghosts: BTreeMap::new(),
            poison: None,
            flushes: BTreeSet::new(),
        }
    }

    /// The parent the buggy runtime gives an entry whose runtime parent was never stored.
    fn stored_parent(&self, parent: Option<String>) -> Option<String> {
        match parent {
            Some(id) if self.ghosts.contains_key(&id) => self.ghosts[&id].clone(),
            other => other,
        }
    }
}

impl Bug for FailureNotPoison {
    /// The runtime's leaf as the bug's story has it: a failed entry the runtime was told was
    /// accepted (a ghost) never became the leaf, nor counts as persisted.
    fn state(
        &self,
        probed: Option<crate::trace::StateProbe>,
        _: &super::seam::Watch,
    ) -> Option<crate::trace::StateProbe> {
        let probed = probed?;
        Some(crate::trace::StateProbe {
            leaf: self.stored_parent(probed.leaf),
            persisted: probed.persisted.saturating_sub(self.ghosts.len() as u64),
        })
    }

    fn input(&mut self, input: Input, seam: &mut Seam) {
        match input {
            Input::Complete {
                effect,
                completion: Completion::Append(StoreOutcome::Failed(cause)),
            } if self.appends.contains_key(&effect) => {
                let entry = self.appends.remove(&effect).expect("checked above");
                self.ghosts.insert(entry.id.clone(), entry.parent_id.clone());
                self.failing = Some((seam.watch().prompts.first().copied(), cause.clone()));
                self.poison.get_or_insert(cause);
                seam.answer(effect, Completion::Append(StoreOutcome::Ok));
            }
            Input::Operation { op, operation }
                if operation.is_prompt_like() && self.after == AfterFailure::QueueRuns && self.poison.is_some() =>
            {
                let cause = match &operation {
                    Operation::Mode { mode, .. } if Mode::parse(mode).is_none() => unknown_mode_cause(mode),
                    _ => self.poison.clone().expect("checked above"),
                };
                seam.settle(op, Settlement::Rejected(cause));
            }
            Input::Operation {
                op,
                operation: Operation::Flush,
            } => {
                self.flushes.insert(op);
                seam.deliver(Input::Operation {
                    op,
                    operation: Operation::Flush,
                });
            }
            other => {
                if let Input::Complete { effect, .. } = &other {
                    self.appends.remove(effect);
                }
                seam.deliver(other);
            }
        }
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            // The rest of the failed run never reaches the store or the sink.
            Effect::Append { effect, entry } if self.failing.is_some() => {
                let parent = self.stored_parent(entry.parent_id.clone());
                self.ghosts.insert(entry.id, parent);
                seam.answer(effect, Completion::Append(StoreOutcome::Ok));
            }
            Effect::Write { effect, .. } if self.failing.is_some() => {
                seam.answer(effect, Completion::Write(StoreOutcome::Ok));
            }
            Effect::Append { effect, mut entry } => {
                entry.parent_id = self.stored_parent(entry.parent_id);
                self.appends.insert(effect, entry.clone());
                seam.emit(Effect::Append { effect, entry });
            }
            Effect::Settled { op, settlement } => {
                let settlement = match &self.failing {
                    Some((failing, cause)) if *failing == Some(op) => {
                        let cause = cause.clone();
                        self.failing = None;
                        Settlement::Rejected(cause)
                    }
                    _ if self.flushes.remove(&op) => match (self.after, &self.poison, settlement) {
                        (AfterFailure::QueueRuns, Some(cause), Settlement::Resolved(_)) => {
                            Settlement::Rejected(cause.clone())
                        }
                        (_, _, settlement) => settlement,
                    },
                    _ => settlement,
                };
                seam.settle(op, settlement);
            }
            other => seam.emit(other),
        }
    }
}

/// The chapter's fault injection: the append failure is rethrown but not stored as poison.
pub(crate) fn poison_not_stored() -> Box<dyn Bug> {
    Box::new(FailureNotPoison::new(AfterFailure::Forgotten))
}

/// Queued prompts still run after poison (new calls are rejected).
pub(crate) fn queued_run_after_poison() -> Box<dyn Bug> {
    Box::new(FailureNotPoison::new(AfterFailure::QueueRuns))
}
