//! A case report: a [`Run`] and what it came to (its verdict, violations, outcome and
//! divergence from the reference).

use crate::check::{self, Violation};
use crate::scenario::ScenarioError;
use crate::sim::{RunOutcome, SubjectFailure};

use super::Run;

/// How one case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed,
    /// The subject could not be driven (exit code 3).
    Broken(SubjectFailure),
    /// The scenario cannot run as written (exit code 2).
    BadScenario(ScenarioError),
    /// The implementation declared an operation the scenario uses unsupported (`hello`); the
    /// case neither passes nor fails, and does not change the exit code.
    NotApplicable {
        reason: String,
    },
}

/// How a case ran in the networked world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetInfo {
    /// The seed turmoil's RNG got (derived from the kit's seed).
    pub turmoil_seed: u64,
    /// Faults drawn from the seed were added to the scenario's (`--world net`).
    pub seeded_faults: bool,
    /// The store host crashed at this step, with this sync policy (the crash test).
    pub crash: Option<(u64, crate::store::SyncPolicy)>,
}

/// One run and what it came to.
#[derive(Debug, Clone)]
pub struct CaseReport {
    /// The scenario's name in its corpus.
    pub name: String,
    /// What ran: its replay command is `run.command()`. For a run on a choice sequence, the
    /// whole sequence the run took.
    pub run: Run,
    pub verdict: Verdict,
    pub violations: Vec<Violation>,
    pub outcome: Option<RunOutcome>,
    /// Where the implementation's trace first departs from the reference's (adapters always,
    /// mutants when they fail).
    pub divergence: Option<crate::protocol::diff::Divergence>,
    /// Set when the case ran in the networked world.
    pub net: Option<NetInfo>,
}

impl CaseReport {
    /// A report of `run` of the scenario `name` that has not run yet: `Passed` with nothing
    /// attached.
    pub fn unrun(name: &str, run: Run) -> CaseReport {
        CaseReport {
            name: name.to_string(),
            run,
            verdict: Verdict::Passed,
            violations: Vec::new(),
            outcome: None,
            divergence: None,
            net: None,
        }
    }

    /// The case broke after all, by a breach found once it had been judged (a bad answer to the
    /// `reset` that ended its run, which shows only in the adapter's next line): its trace and
    /// judgement go, as for a case that broke during its run.
    pub fn break_with(&mut self, failure: SubjectFailure) {
        self.verdict = Verdict::Broken(failure);
        self.violations.clear();
        self.outcome = None;
        self.divergence = None;
    }

    /// The report judged by `violations` on `outcome`, its root cause first.
    pub(super) fn judged(
        mut self,
        scenario: &crate::scenario::Scenario,
        violations: Vec<Violation>,
        outcome: RunOutcome,
    ) -> CaseReport {
        self.verdict = if violations.is_empty() {
            Verdict::Passed
        } else {
            Verdict::Failed
        };
        self.violations = if violations.is_empty() {
            violations
        } else {
            check::cause::order_by_cause(scenario, &outcome.trace, &outcome.stored(scenario), violations)
        };
        self.outcome = Some(outcome);
        self
    }

    /// Sets where the implementation's trace first departs from the reference's, and ranks the
    /// violations again with it: the root cause is never one cited only on lines identical to
    /// the reference's (`check::cause`).
    pub fn set_divergence(&mut self, divergence: Option<crate::protocol::diff::Divergence>) {
        check::cause::rank_by_importance(
            &mut self.violations,
            divergence.as_ref().map(|divergence| divergence.line),
        );
        self.divergence = divergence;
    }

    /// Keeps only the violations the run's rules judge; a failed case with none left passes.
    pub(super) fn restrict(&mut self) {
        let selection = &self.run.judging;
        if selection.is_all() {
            return;
        }
        self.violations.retain(|violation| selection.judges(&violation.rule));
        if self.verdict == Verdict::Failed && self.violations.is_empty() {
            self.verdict = Verdict::Passed;
        }
    }

    /// The verdict's word, as every report format spells it.
    pub fn status(&self) -> &'static str {
        match self.verdict {
            Verdict::Passed => "passed",
            Verdict::Failed => "failed",
            Verdict::BadScenario(_) => "bad-scenario",
            Verdict::Broken(_) => "broken",
            Verdict::NotApplicable { .. } => "not-applicable",
        }
    }

    /// The one command that replays this case.
    pub fn replay_command(&self) -> String {
        self.run.command()
    }
}
