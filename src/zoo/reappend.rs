//! Stale-count bugs: a runtime that computes its run's suffix from a count read at the wrong
//! time appends again messages the store already holds.

use std::collections::BTreeMap;

use crate::model::{iso_timestamp, parse_iso_timestamp, Message, SessionEntry};
use crate::runtime::{Completion, Effect, EffectId, Input, OpId, StoreOutcome};

use super::seam::{Bug, Seam};

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
    /// The appends it makes of its own are no runtime's: the wrapped runtime's leaf never
    /// names them, so it reports no state rather than a story it does not keep.
    fn state(&self, _: Option<crate::trace::StateProbe>, _: &super::seam::Watch) -> Option<crate::trace::StateProbe> {
        None
    }

    fn input(&mut self, input: Input, seam: &mut Seam) {
        match &input {
            Input::Operation { op, operation } if operation.is_prompt_like() => {
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
