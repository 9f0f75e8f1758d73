//! How a run compares with an expectation file: the failures it observed, confirmed, stale or
//! unexpected, per cause; the pairs allowed under exploration.

use std::collections::BTreeSet;

use super::{broken_rule, rule_order, DeviationVerdict, ExpectationFile, Pair};
use crate::run::{CaseReport, Verdict};

/// How a run compares with an expectation file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Listed (canonical or explored) and observed.
    pub confirmed: Vec<Pair>,
    /// Observed, not listed; with the first violation's message.
    pub unexpected: Vec<(Pair, String)>,
    /// Listed, but the scenario ran, was judged, and did not fail the rule; with the cause's id.
    pub stale: Vec<(Pair, String)>,
    /// Listed, but the scenario was not run, not applicable or broken.
    pub unjudged: Vec<Pair>,
    /// The same, per cause, in the file's order.
    pub causes: Vec<CauseComparison>,
}

/// How one cause's pairs compare with a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CauseComparison {
    pub id: String,
    pub verdict: DeviationVerdict,
    /// Its canonical pairs.
    pub listed: usize,
    /// Its canonical pairs observed, and its explored pairs observed.
    pub confirmed: Vec<Pair>,
    pub stale: Vec<Pair>,
    pub unjudged: Vec<Pair>,
}

impl Comparison {
    /// The run matches the file exactly.
    pub fn holds(&self) -> bool {
        self.unexpected.is_empty() && self.stale.is_empty()
    }
}

/// How an exploration's failures compare with a file: `(scenario, rule)` pairs seen and listed
/// (under `pairs` or `explored`), and those seen but not listed. Under exploration nothing
/// is stale: a schedule-dependent deviation need not show on the schedules explored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExploredComparison {
    pub listed: Vec<Pair>,
    pub unexpected: Vec<(Pair, String)>,
}

pub fn compare_explored(file: &ExpectationFile, failures: &[(Pair, String)]) -> ExploredComparison {
    let allowed: BTreeSet<Pair> = file
        .causes
        .iter()
        .flat_map(|cause| cause.canonical_pairs().into_iter().chain(cause.explored_pairs()))
        .collect();
    let mut comparison = ExploredComparison::default();
    for (pair, message) in failures {
        if allowed.contains(pair) {
            if !comparison.listed.contains(pair) {
                comparison.listed.push(pair.clone());
            }
        } else if !comparison.unexpected.iter().any(|(seen, _)| seen == pair) {
            comparison.unexpected.push((pair.clone(), message.clone()));
        }
    }
    comparison.listed.sort();
    comparison.unexpected.sort();
    comparison
}

/// The (scenario, rule) failures of `reports`, each with its first message: every rule a failed
/// case's violations name, and `broken:<code>` for a broken case.
pub fn observed_failures(reports: &[CaseReport]) -> Vec<(Pair, String)> {
    let mut observed: Vec<(Pair, String)> = Vec::new();
    let mut seen: BTreeSet<Pair> = BTreeSet::new();
    for report in reports {
        if let Verdict::Broken(failure) = &report.verdict {
            let pair = Pair {
                scenario: report.name.clone(),
                rule: broken_rule(failure),
            };
            if seen.insert(pair.clone()) {
                observed.push((pair, failure.to_string()));
            }
            continue;
        }
        if report.verdict != Verdict::Failed {
            continue;
        }
        for violation in &report.violations {
            let pair = Pair {
                scenario: report.name.clone(),
                rule: violation.rule.clone(),
            };
            if seen.insert(pair.clone()) {
                observed.push((pair, violation.message.clone()));
            }
        }
    }
    observed
}

/// Compares the failures of `reports` with `file`.
pub fn compare(file: &ExpectationFile, reports: &[CaseReport]) -> Comparison {
    let observed = observed_failures(reports);
    let failing: BTreeSet<&Pair> = observed.iter().map(|(pair, _)| pair).collect();
    let judged = |scenario: &str| {
        reports
            .iter()
            .find(|report| report.name == scenario)
            .is_some_and(|report| matches!(report.verdict, Verdict::Passed | Verdict::Failed | Verdict::Broken(_)))
    };
    let mut comparison = Comparison::default();
    let mut listed = BTreeSet::new();
    for cause in &file.causes {
        let canonical = cause.canonical_pairs();
        let mut mine = CauseComparison {
            id: cause.id.clone(),
            verdict: cause.verdict,
            listed: canonical.len(),
            confirmed: Vec::new(),
            stale: Vec::new(),
            unjudged: Vec::new(),
        };
        for pair in canonical {
            listed.insert(pair.clone());
            if failing.contains(&pair) {
                mine.confirmed.push(pair);
            } else if judged(&pair.scenario) {
                mine.stale.push(pair);
            } else {
                mine.unjudged.push(pair);
            }
        }
        // Schedule-dependent: allowed on the canonical schedule too, never required.
        for pair in cause.explored_pairs() {
            if failing.contains(&pair) {
                mine.confirmed.push(pair.clone());
            }
            listed.insert(pair);
        }
        comparison.confirmed.extend(mine.confirmed.iter().cloned());
        comparison
            .stale
            .extend(mine.stale.iter().map(|pair| (pair.clone(), cause.id.clone())));
        comparison.unjudged.extend(mine.unjudged.iter().cloned());
        comparison.causes.push(mine);
    }
    for (pair, message) in observed {
        if !listed.contains(&pair) {
            comparison.unexpected.push((pair, message));
        }
    }
    comparison.confirmed.sort();
    comparison.unexpected.sort();
    comparison.stale.sort();
    comparison.unjudged.sort();
    comparison
}

/// `PERSIST-6 on a, b; POISON-1 on c`: pairs grouped by rule, in rule order.
pub fn pairs_by_rule(pairs: &[Pair]) -> String {
    let mut by_rule: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut sorted: Vec<&Pair> = pairs.iter().collect();
    sorted.sort_by(|a, b| {
        rule_order(&a.rule)
            .cmp(&rule_order(&b.rule))
            .then(a.scenario.cmp(&b.scenario))
    });
    for pair in sorted {
        match by_rule.last_mut() {
            Some((rule, scenarios)) if *rule == pair.rule => scenarios.push(&pair.scenario),
            _ => by_rule.push((&pair.rule, vec![&pair.scenario])),
        }
    }
    by_rule
        .iter()
        .map(|(rule, scenarios)| format!("{rule} on {}", scenarios.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The human line of a cause with stale pairs: `STALE cause ID (bug): 3 of 12 pairs no longer
/// fail: PERSIST-6 on a, b; POISON-1 on c`.
pub fn stale_line(cause: &CauseComparison) -> String {
    format!(
        "STALE cause {} ({}): {} of {} pair{} no longer fail: {}",
        cause.id,
        cause.verdict.word(),
        cause.stale.len(),
        cause.listed,
        if cause.listed == 1 { "" } else { "s" },
        pairs_by_rule(&cause.stale)
    )
}
