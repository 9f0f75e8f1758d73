//! The one operation queue and the lifecycle around it: prompts accepted in arrival order and
//! started one at a time (poison re-checked and `beforeCount` read when each starts), flush
//! waiting for the queue's tail, dispose closing the entry at once and waiting for the work
//! accepted before it, and the settlement of each.

use crate::model::Message;
use crate::runtime::{
    disposed_cause, Active, Disposal, OpId, OpValue, Purpose, Queued, Runtime, Settlement, SignalId, Stage,
};

impl Runtime {
    pub(super) fn handle_prompt(&mut self, op: OpId, purpose: Purpose, text: String) {
        if let Some(cause) = self.poison.clone() {
            return self.settle(op, Settlement::Rejected(cause));
        }
        if self.disposal.is_some() {
            return self.settle(op, Settlement::Rejected(disposed_cause()));
        }
        self.accepted_through += 1;
        self.queue.push_back(Queued {
            op,
            seq: self.accepted_through,
            purpose,
            text,
        });
        self.pump();
    }

    pub(super) fn handle_flush(&mut self, op: OpId) {
        self.flushes.push((op, self.accepted_through));
        self.settle_waiters();
    }

    pub(super) fn handle_dispose(&mut self, op: OpId) {
        let upto = self.accepted_through;
        match &mut self.disposal {
            Some(disposal) => match disposal.outcome.clone() {
                Some(outcome) => self.settle(op, outcome),
                None => disposal.waiting.push(op),
            },
            None => {
                self.disposal = Some(Disposal {
                    waiting: vec![op],
                    upto,
                    outcome: None,
                });
                self.settle_waiters();
            }
        }
    }

    /// Starts queued operations while none is active.
    pub(super) fn pump(&mut self) {
        while self.active.is_none() {
            let Some(queued) = self.queue.pop_front() else { return };
            if let Some(cause) = self.poison.clone() {
                self.finish_operation(queued.op, queued.seq, Settlement::Rejected(cause));
                continue;
            }
            // beforeCount is read now, when the operation starts, not when prompt() was called.
            let before_count = self.agent.messages().len();
            let signal = SignalId(self.signal_next);
            self.signal_next += 1;
            self.observers.run_started(self.agent.messages().len());
            let user = Message::user(queued.text, self.ids_and_clock.now());
            let step = self
                .agent
                .prompt(user, signal)
                .expect("the runtime starts one run at a time");
            self.active = Some(Active {
                op: queued.op,
                seq: queued.seq,
                purpose: queued.purpose,
                before_count,
                stage: Stage::Agent { execution: None },
            });
            self.advance(step);
        }
    }

    pub(super) fn finish_operation(&mut self, op: OpId, seq: u64, settlement: Settlement) {
        self.settle(op, settlement);
        self.mark_settled(seq);
    }

    pub(super) fn mark_settled(&mut self, seq: u64) {
        self.settled_through = seq;
        self.settle_waiters();
        self.pump();
    }

    /// Settles the flushes and disposes whose awaited work is done.
    pub(super) fn settle_waiters(&mut self) {
        let settled_through = self.settled_through;
        let (ready, waiting): (Vec<_>, Vec<_>) = self.flushes.drain(..).partition(|(_, upto)| *upto <= settled_through);
        self.flushes = waiting;
        for (op, _) in ready {
            let settlement = match &self.poison {
                Some(cause) => Settlement::Rejected(cause.clone()),
                None => Settlement::Resolved(OpValue::Unit),
            };
            self.settle(op, settlement);
        }
        let Some(disposal) = self.disposal.as_mut() else { return };
        if disposal.outcome.is_none() && disposal.upto <= settled_through {
            let outcome = Settlement::Resolved(OpValue::Unit);
            disposal.outcome = Some(outcome.clone());
            let waiting = std::mem::take(&mut disposal.waiting);
            for op in waiting {
                self.settle(op, outcome.clone());
            }
        }
    }
}
