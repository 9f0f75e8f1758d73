//! The store and output fakes that play a scenario's fault plan. The fault model (which faults
//! exist and what a correct runtime must do under each) is written beside the plan's types,
//! in `scenario::fault`.

use crate::model::SessionEntry;
use crate::runtime::Cause;
use crate::scenario::{default_disk_error, AppendFault, AppendFaultKind, FaultPlan};
use crate::trace::AppendAnswer;

/// The session store as the world sees it: the initial entries and every applied append.
#[derive(Debug, Clone)]
pub struct StoreFake {
    pub entries: Vec<SessionEntry>,
    appends_seen: u32,
    writes_seen: u32,
}

impl StoreFake {
    pub fn new(initial: &[SessionEntry]) -> StoreFake {
        StoreFake {
            // Room for a run's appends, so the store rarely grows by copying.
            entries: {
                let mut entries = Vec::with_capacity(initial.len() + 16);
                entries.extend_from_slice(initial);
                entries
            },
            appends_seen: 0,
            writes_seen: 0,
        }
    }

    /// Numbers a new append (1-based) and returns the fault planned for it.
    pub fn plan_append<'p>(&mut self, plan: &'p FaultPlan) -> (u32, Option<&'p AppendFault>) {
        self.appends_seen += 1;
        let index = self.appends_seen;
        (index, plan.appends.iter().find(|fault| fault.at == index))
    }

    /// Applies (or not) the entry as the fault says, and gives the store's answer.
    pub fn answer_append(&mut self, entry: &SessionEntry, fault: Option<&AppendFault>) -> AppendAnswer {
        let cause = || {
            fault
                .and_then(|fault| fault.error.clone())
                .unwrap_or_else(default_disk_error)
        };
        match fault.map(|fault| fault.fault) {
            None | Some(AppendFaultKind::Late) => {
                self.entries.push(entry.clone());
                AppendAnswer::Ok
            }
            Some(AppendFaultKind::Reject) => AppendAnswer::Rejected { cause: cause() },
            Some(AppendFaultKind::AppliedThenFail) => {
                self.entries.push(entry.clone());
                AppendAnswer::AppliedThenFailed { cause: cause() }
            }
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
