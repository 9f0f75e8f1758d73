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

use crate::model::{iso_timestamp, parse_iso_timestamp, Message, SessionEntry};
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
        let settlement = match &input {
            Input::Mode { mode, .. } if Mode::parse(mode).is_none() => Settlement::Rejected(unknown_mode_cause(mode)),
            Input::Prompt { .. } | Input::Mode { .. } | Input::Library { .. } | Input::Flush { .. } => {
                Settlement::Rejected(self.cause.clone())
            }
            Input::Dispose { .. } | Input::Steer { .. } | Input::FollowUp { .. } | Input::Abort { .. } => {
                Settlement::Resolved(OpValue::Unit)
            }
            Input::Complete { .. } => return,
        };
        let op = match input {
            Input::Prompt { op, .. }
            | Input::Mode { op, .. }
            | Input::Library { op, .. }
            | Input::Flush { op }
            | Input::Dispose { op }
            | Input::Steer { op, .. }
            | Input::FollowUp { op, .. }
            | Input::Abort { op } => op,
            Input::Complete { .. } => return,
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

/// The operation an input from the world is, if it is one.
fn operation(input: &Input) -> Option<OpId> {
    match input {
        Input::Prompt { op, .. }
        | Input::Mode { op, .. }
        | Input::Library { op, .. }
        | Input::Flush { op }
        | Input::Dispose { op }
        | Input::Steer { op, .. }
        | Input::FollowUp { op, .. }
        | Input::Abort { op } => Some(*op),
        Input::Complete { .. } => None,
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
        self.current = operation(&input);
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
        self.current = operation(&input);
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
            Input::Prompt { op, .. } | Input::Mode { op, .. } | Input::Library { op, .. }
                if self.after == AfterFailure::QueueRuns && self.poison.is_some() =>
            {
                let cause = match &input {
                    Input::Mode { mode, .. } if Mode::parse(mode).is_none() => unknown_mode_cause(mode),
                    _ => self.poison.clone().expect("checked above"),
                };
                seam.settle(op, Settlement::Rejected(cause));
            }
            Input::Flush { op } => {
                self.flushes.insert(op);
                seam.deliver(Input::Flush { op });
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

/// Which messages a runtime that computes its suffix from a stale count appends again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stale {
    /// `beforeCount` is 0: every run appends the whole transcript, the restored history first.
    Zero,
    /// `beforeCount` is read when prompt() is called, not when the operation starts: a prompt
    /// queued behind a run appends that run's messages produced after the call again.
    AtCall,
}

/// A runtime whose run suffix starts too early: before a run's own entries, it appends again
/// messages the store already holds. The store client holds the run's first append, appends
/// the stale messages first (one at a time, each parented on the one before, with ids of the
/// rule and fresh stamps), then lets the run's own entries follow.
struct Reappend {
    stale: Stale,
    /// The transcript as appended: the restored messages, then every message the runtime
    /// appended.
    transcript: Option<Vec<Message>>,
    /// The prompt whose entries were appended last.
    persisting: Option<OpId>,
    /// `AtCall`: the transcript's length when each queued prompt was called.
    called_at: BTreeMap<OpId, usize>,
    /// `AtCall`: the active run's start (the transcript's length then) and its messages so far.
    active: Option<(usize, usize)>,
    /// Ids of the rule handed out (the runtime's are renumbered: the stale entries take ids too).
    ids_handed: u64,
    /// The runtime's entry ids -> the ids the store sees.
    renamed: BTreeMap<String, String>,
    /// The runtime's appends shown to the store -> the ids the store sees.
    shown: BTreeMap<EffectId, String>,
    /// The last entry the store accepted (the leaf the stale entries chain from).
    leaf: Option<Option<String>>,
    last_stamp: Option<u64>,
    /// The stale messages still to append, the one in flight, and the run's first append held
    /// behind them.
    queue: Vec<Message>,
    in_flight: Option<(EffectId, String)>,
    held: Option<(EffectId, SessionEntry)>,
}

impl Reappend {
    fn new(stale: Stale) -> Reappend {
        Reappend {
            stale,
            transcript: None,
            persisting: None,
            called_at: BTreeMap::new(),
            active: None,
            ids_handed: 0,
            renamed: BTreeMap::new(),
            shown: BTreeMap::new(),
            leaf: None,
            last_stamp: None,
            queue: Vec::new(),
            in_flight: None,
            held: None,
        }
    }

    fn transcript(&mut self, seam: &Seam) -> &mut Vec<Message> {
        self.transcript
            .get_or_insert_with(|| seam.watch().restored_messages().to_vec())
    }

    fn leaf(&mut self, seam: &Seam) -> Option<String> {
        self.leaf
            .get_or_insert_with(|| seam.watch().leaf().map(str::to_string))
            .clone()
    }

    /// The next id of the rule, and a stamp no earlier than `wanted` and later than the last.
    fn next_id_and_stamp(&mut self, seam: &Seam, wanted: &str) -> (String, String) {
        let id = seam.facts.ids.nth(self.ids_handed);
        self.ids_handed += 1;
        let clock = &seam.facts.clock;
        let wanted = parse_iso_timestamp(wanted).unwrap_or(clock.start_ms);
        let stamp = match (self.last_stamp, clock.step_ms) {
            (Some(last), step) if step > 0 && wanted <= last => last + step,
            _ => wanted,
        };
        self.last_stamp = Some(stamp);
        (id, iso_timestamp(stamp))
    }

    /// Appends the next stale message, or, when none is left, shows the held first append.
    fn append_next(&mut self, seam: &mut Seam) {
        let Some((effect, entry)) = self.held.clone() else {
            return;
        };
        if self.queue.is_empty() {
            self.held = None;
            return self.show(effect, entry, true, seam);
        }
        let message = self.queue.remove(0);
        let (id, stamp) = self.next_id_and_stamp(seam, &entry.timestamp);
        let parent = self.leaf(seam);
        let stale = SessionEntry::message(id.clone(), parent.as_deref(), stamp, message);
        let own = seam.fresh_effect();
        self.in_flight = Some((own, id));
        seam.inject(Effect::Append {
            effect: own,
            entry: stale,
        });
    }

    /// Shows one of the runtime's appends under the id of the rule it gets here.
    fn show(&mut self, effect: EffectId, mut entry: SessionEntry, first_of_run: bool, seam: &mut Seam) {
        if let Some(message) = entry.as_message() {
            let message = message.clone();
            self.transcript(seam).push(message);
        }
        let (id, stamp) = self.next_id_and_stamp(seam, &entry.timestamp);
        self.renamed.insert(entry.id.clone(), id.clone());
        entry.parent_id = match first_of_run {
            true => self.leaf(seam),
            false => entry
                .parent_id
                .map(|parent| self.renamed.get(&parent).cloned().unwrap_or(parent)),
        };
        entry.id = id.clone();
        entry.timestamp = stamp;
        self.shown.insert(effect, id);
        seam.emit(Effect::Append { effect, entry });
    }
}

impl Bug for Reappend {
    fn input(&mut self, input: Input, seam: &mut Seam) {
        match &input {
            Input::Prompt { op, .. } | Input::Mode { op, .. } | Input::Library { op, .. } => {
                if let (Stale::AtCall, Some((start, so_far))) = (self.stale, self.active) {
                    self.called_at.insert(*op, start + so_far);
                }
            }
            Input::Complete {
                completion: Completion::ModelFinal { .. },
                ..
            } => {
                if let Some((_, so_far)) = self.active.as_mut() {
                    *so_far += 1;
                }
            }
            Input::Complete {
                effect,
                completion: Completion::Append(StoreOutcome::Ok),
            } => {
                if let Some(id) = self.shown.remove(effect) {
                    self.leaf = Some(Some(id));
                }
            }
            _ => {}
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::ModelRequest { ref request, .. } => {
                let suffix = request.messages.len() - seam.watch().persisted_prefix(&request.messages);
                let start = match self.active {
                    Some((start, _)) => start,
                    None => self.transcript(seam).len(),
                };
                self.active = Some((start, suffix));
                seam.emit(effect);
            }
            Effect::Append { effect, entry } => {
                let op = seam.watch().prompts.first().copied();
                let first_of_run = op != self.persisting;
                self.persisting = op;
                if !first_of_run {
                    return self.show(effect, entry, false, seam);
                }
                let transcript = self.transcript(seam).clone();
                let from = match self.stale {
                    Stale::Zero => 0,
                    Stale::AtCall => op
                        .and_then(|op| self.called_at.remove(&op))
                        .unwrap_or(transcript.len())
                        .min(transcript.len()),
                };
                self.queue = transcript[from..].to_vec();
                self.held = Some((effect, entry));
                self.append_next(seam);
            }
            Effect::Settled { op, settlement } => {
                if seam.watch().prompts.contains(&op) {
                    self.active = None;
                }
                seam.settle(op, settlement);
            }
            other => seam.emit(other),
        }
    }

    fn own_answer(&mut self, effect: EffectId, completion: Completion, seam: &mut Seam) {
        let Some((own, id)) = self.in_flight.take() else {
            return;
        };
        if own != effect {
            return;
        }
        match completion {
            Completion::Append(StoreOutcome::Ok) => {
                self.leaf = Some(Some(id));
                self.append_next(seam);
            }
            // The run's first append is the one that failed, as far as the runtime knows.
            failed => {
                if let Some((held, _)) = self.held.take() {
                    self.queue.clear();
                    seam.answer(held, failed);
                }
            }
        }
    }
}

/// The whole transcript is persisted: every run appends the restored history (and every
/// earlier run) again before its own entries.
pub(crate) fn restored_history_reappended() -> Box<dyn Bug> {
    Box::new(Reappend::new(Stale::Zero))
}

/// `beforeCount` is read when prompt() is called, not when the operation starts.
pub(crate) fn before_count_at_call() -> Box<dyn Bug> {
    Box::new(Reappend::new(Stale::AtCall))
}
