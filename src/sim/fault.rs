//! The store and output fakes that play a scenario's fault plan. The fault model (which faults
//! exist and what a correct runtime must do under each) is written beside the plan's types,
//! in `scenario::fault`.

use crate::runtime::Cause;
use crate::scenario::{default_disk_error, AppendFault, AppendFaultKind, FaultPlan};
use crate::trace::AppendAnswer;

/// The session store as the world plays it: it numbers appends and writes and answers each as
/// the fault plan says. What it holds is what its answers say it applied, read from the trace
/// (`RunOutcome::stored`), so it keeps no copy of the entries.
#[derive(Debug, Clone, Default)]
pub struct StoreFake {
    appends_seen: u32,
    writes_seen: u32,
}

impl StoreFake {
    /// Numbers a new append (1-based) and returns the fault planned for it.
    pub fn plan_append<'p>(&mut self, plan: &'p FaultPlan) -> (u32, Option<&'p AppendFault>) {
        self.appends_seen += 1;
        let index = self.appends_seen;
        (index, plan.appends.iter().find(|fault| fault.at == index))
    }

    /// The store's answer to an append under its planned fault: whether it applied the entry.
    pub fn answer_append(&self, fault: Option<&AppendFault>) -> AppendAnswer {
        let cause = || {
            fault
                .and_then(|fault| fault.error.clone())
                .unwrap_or_else(default_disk_error)
        };
        match fault.map(|fault| fault.fault) {
            None | Some(AppendFaultKind::Late) => AppendAnswer::Ok,
            Some(AppendFaultKind::Reject) => AppendAnswer::Rejected { cause: cause() },
            Some(AppendFaultKind::AppliedThenFail) => AppendAnswer::AppliedThenFailed { cause: cause() },
        }
    }

    /// Numbers a new write (1-based) and returns its planned error, if any.
    pub fn plan_write(&mut self, plan: &FaultPlan) -> Option<Cause> {
        self.writes_seen += 1;
        let index = self.writes_seen;
        plan.writes
            .iter()
            .find(|fault| fault.at == index)
            .map(|fault| fault.error.clone())
    }
}
