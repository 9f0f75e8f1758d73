//! Persistence bugs: what the runtime writes into the entries it stores, and when its leaf moves.

use std::collections::BTreeMap;

use serde_json::{json, Map};

use crate::model::{iso_timestamp, parse_iso_timestamp, EntryBody, Message, Metadata, SessionEntry};
use crate::runtime::{Completion, Effect, EffectId, StoreOutcome};

use super::seam::{Bug, Detour, Facts, Seam};
use crate::trace::StateProbe;

// ----- timestamps -----

/// Entries are written with timestamp 0 (the epoch) instead of the clock's time.
#[derive(Default)]
pub(crate) struct TimestampsNotFromClock;

impl Bug for TimestampsNotFromClock {
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        match effect {
            Effect::Append { effect, mut entry } => {
                entry.timestamp = "1970-01-01T00:00:00.000Z".to_string();
                seam.emit(Effect::Append { effect, entry });
            }
            effect => seam.emit(effect),
        }
    }
}

// ----- what lands in the tree -----

/// A `custom` entry recording each tool round is stored between the assistant's tool calls and
/// their first result, the way oh-my-pi stores its `tool_execution_start` entry or a Pi extension
/// calls `appendEntry` while the round runs: when the runtime stores the round's first result,
/// the record goes in first, right below the calls, and the result is parented on it. The
/// record takes the result's id and clock reading, and every later entry of the runtime the next
/// ones, so the ids stay createId's in order and the stamps increase; nothing but the tree's
/// shape tells. A record the store refuses is the result's failure to the runtime.
#[derive(Default)]
pub(crate) struct ToolRunLoggedBeforeResult {
    /// Records stored so far: the runtime's later ids and stamps move on by as many.
    records: u64,
    /// The runtime's entry ids as they were stored, where they differ.
    renamed: BTreeMap<String, String>,
    /// The id, as stored, of the last entry shown when it was an assistant message with tool
    /// calls: the next result below it is its round's first.
    calls_entry: Option<String>,
    /// The round's first result, held with what follows it until the world answered the record.
    detour: Detour,
}

impl ToolRunLoggedBeforeResult {
    /// `id` as stored: the id `createId` hands out as many places later as records were stored
    /// (an id of no rule stays as it is).
    fn stored_id(&self, id: &str, facts: &Facts) -> String {
        match facts.ids.index_of(id) {
            Some(index) if self.records > 0 => facts.ids.nth(index + self.records),
            _ => id.to_string(),
        }
    }

    /// `timestamp` moved on by as many clock steps as records were stored.
    fn stored_timestamp(&self, timestamp: &str, facts: &Facts) -> String {
        match parse_iso_timestamp(timestamp) {
            Some(ms) if self.records > 0 => iso_timestamp(ms + self.records * facts.clock.step_ms),
            _ => timestamp.to_string(),
        }
    }
}

impl Bug for ToolRunLoggedBeforeResult {
    /// The records it stores and the ids it renames are no runtime's: the wrapped runtime's
    /// leaf never names them, so it reports no state rather than a story it does not keep.
    fn state(&self, _: Option<StateProbe>, _: &super::seam::Watch) -> Option<StateProbe> {
        None
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        let Some(effect) = self.detour.hold(effect) else {
            return;
        };
        let Effect::Append { effect, mut entry } = effect else {
            return seam.emit(effect);
        };
        let runtime_id = entry.id.clone();
        if let Some(parent) = entry.parent_id.as_mut() {
            if let Some(stored) = self.renamed.get(parent.as_str()) {
                *parent = stored.clone();
            }
        }
        entry.id = self.stored_id(&runtime_id, seam.facts);
        entry.timestamp = self.stored_timestamp(&entry.timestamp, seam.facts);
        let first_result = matches!(entry.as_message(), Some(Message::ToolResult(_)))
            && entry.parent_id.is_some()
            && entry.parent_id == self.calls_entry;
        self.calls_entry = match entry.as_message() {
            Some(Message::Assistant(assistant)) if !assistant.tool_calls().is_empty() => Some(entry.id.clone()),
            _ => None,
        };
        if first_result && seam.facts.ids.index_of(&runtime_id).is_some() {
            let mut fields = Map::new();
            fields.insert("customType".into(), json!("tool_run"));
            fields.insert("data".into(), json!({ "round": self.records + 1 }));
            let record = SessionEntry {
                body: EntryBody::Custom(Metadata { fields }),
                id: entry.id.clone(),
                parent_id: entry.parent_id.clone(),
                timestamp: entry.timestamp.clone(),
            };
            self.records += 1;
            entry.parent_id = Some(record.id.clone());
            entry.id = self.stored_id(&runtime_id, seam.facts);
            entry.timestamp =
                iso_timestamp(parse_iso_timestamp(&entry.timestamp).unwrap_or_default() + seam.facts.clock.step_ms);
            self.renamed.insert(runtime_id, entry.id.clone());
            let own = seam.fresh_effect();
            return self.detour.start(
                Effect::Append {
                    effect: own,
                    entry: record,
                },
                Effect::Append { effect, entry },
                seam,
            );
        }
        if entry.id != runtime_id {
            self.renamed.insert(runtime_id, entry.id.clone());
        }
        seam.emit(Effect::Append { effect, entry });
    }

    fn own_answer(&mut self, _: EffectId, completion: Completion, seam: &mut Seam) {
        let mut held = self.detour.end().into_iter();
        if let Some(result) = held.next() {
            match (completion, result.pending_id()) {
                (Completion::Append(StoreOutcome::Failed(cause)), Some(id)) => {
                    seam.answer(id, Completion::Append(StoreOutcome::Failed(cause)));
                }
                _ => seam.emit(result),
            }
        }
        for effect in held {
            self.effect(effect, seam);
        }
    }
}

// ----- when the leaf moves -----

/// The runtime sets its leaf to an entry before it awaits the entry's append (`activeLeafId =
/// entry.id; await session.append(entry)`), and a failed append leaves it there. Its entries
/// chain by a variable of the run, so no append, request or settlement shows it: only the
/// state the runtime reports does (PERSIST-10).
#[derive(Default)]
pub(crate) struct LeafSetBeforeAwait {
    /// The entry the leaf names ahead of the store: the append in flight, or one that failed.
    early: Option<(EffectId, String)>,
    /// The early leaf's append failed: the leaf stays there.
    failed: bool,
}

impl Bug for LeafSetBeforeAwait {
    fn input(&mut self, input: crate::runtime::Input, seam: &mut Seam) {
        if let crate::runtime::Input::Complete {
            effect,
            completion: Completion::Append(outcome),
        } = &input
        {
            if self.early.as_ref().is_some_and(|(early, _)| early == effect) && !self.failed {
                match outcome {
                    StoreOutcome::Ok => self.early = None,
                    StoreOutcome::Failed(_) => self.failed = true,
                }
            }
        }
        seam.deliver(input);
    }

    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        if let Effect::Append { effect: id, entry } = &effect {
            if !self.failed {
                self.early = Some((*id, entry.id.clone()));
            }
        }
        seam.emit(effect);
    }

    fn state(&self, probed: Option<StateProbe>, _: &super::seam::Watch) -> Option<StateProbe> {
        let mut state = probed?;
        if let Some((_, leaf)) = &self.early {
            state.leaf = Some(leaf.clone());
        }
        Some(state)
    }
}
