//! Persistence: the run's new suffix appended one entry at a time, each parented on the
//! previous, the leaf advanced only after the store accepted each, the operation settled only
//! after its last append was accepted; the first failure poisons the runtime for good.

use crate::model::{iso_timestamp, SessionEntry};
use crate::runtime::{
    Active, Effect, OpId, OpValue, Pending, Purpose, RunResult, Runtime, Settlement, Stage, StoreOutcome,
};

impl Runtime {
    /// Appends the next suffix message, or settles the operation when all were accepted.
    pub(super) fn append_next(&mut self) {
        let active = self.active.as_mut().expect("persisting belongs to an active operation");
        let Stage::Persist {
            suffix,
            next,
            in_flight,
            ..
        } = &mut active.stage
        else {
            unreachable!("append_next runs in the persist stage")
        };
        if *in_flight {
            return;
        }
        if *next < suffix.len() {
            // One entry at a time, parented on the leaf: the previous entry, once accepted.
            let message = suffix[*next].clone();
            *next += 1;
            *in_flight = true;
            let id = self.ids_and_clock.create_id();
            let timestamp = iso_timestamp(self.ids_and_clock.now());
            let entry = SessionEntry::message(id, self.leaf.as_deref(), timestamp, message);
            let effect = self.issue(Pending::Append {
                entry: Box::new(entry.clone()),
            });
            self.effects.push_back(Effect::Append { effect, entry });
            return;
        }
        let active = self.active.take().expect("checked above");
        let Stage::Persist { result, .. } = active.stage else {
            unreachable!("checked above")
        };
        self.finish_run(active.op, active.seq, active.purpose, result);
    }

    /// The run's suffix is stored: resolve the caller (or, for a mode, write its output).
    pub(super) fn finish_run(&mut self, op: OpId, seq: u64, purpose: Purpose, result: RunResult) {
        match purpose {
            Purpose::Prompt => self.finish_operation(op, seq, Settlement::Resolved(OpValue::Run(result))),
            Purpose::Library => {
                let value = OpValue::Library {
                    reason: result.reason,
                    text: result.final_assistant_text(),
                };
                self.finish_operation(op, seq, Settlement::Resolved(value));
            }
            Purpose::Mode(mode) => {
                // The output is the mode's; the mode settles when the sink answers, while the
                // queue moves on now: the run is stored.
                let text = mode.render(&result);
                let effect = self.issue(Pending::Write {
                    op,
                    result: Box::new(result),
                });
                self.effects.push_back(Effect::Write { effect, text });
                self.mark_settled(seq);
            }
        }
    }

    /// The entry is on the path: leaf, active path and persisted count advance together.
    pub(super) fn advance_leaf(&mut self, entry: SessionEntry) {
        self.leaf = Some(entry.id.clone());
        self.active_path.push(entry);
        self.persisted_message_count += 1;
    }

    pub(super) fn handle_append_outcome(&mut self, entry: SessionEntry, outcome: StoreOutcome) {
        match outcome {
            StoreOutcome::Ok => {
                // Only now, after the store accepted it, does the entry join the path.
                self.advance_leaf(entry);
                if let Some(Active {
                    stage: Stage::Persist { in_flight, .. },
                    ..
                }) = self.active.as_mut()
                {
                    *in_flight = false;
                }
                self.append_next();
            }
            StoreOutcome::Failed(cause) => {
                // Poisoned for good with this cause; nothing is retried (the append may have
                // been applied all the same).
                self.poison = Some(cause.clone());
                let active = self.active.take().expect("an append belongs to an active operation");
                self.finish_operation(active.op, active.seq, Settlement::Rejected(cause));
            }
        }
    }
}
