//! `agentsim dashboard`: the conformance of several implementations side by side, from their
//! JSON reports (`agentsim run --impl CMD --format json --expect FILE`), as a page an implementer
//! compares on, in the manner of wpt.fyi.
//!
//! One self-contained HTML page and one compact markdown summary:
//!
//! - the **family score**: for each release set (one release of every implementation but the
//!   reference), the share of scenarios every implementation of the set passes, and the share
//!   where every one of them holds every MUST rule (wpt.fyi's Interop score);
//! - per implementation its cases, the rules it holds per level, its causes by label;
//! - the **rules table**, rules × implementations, with a sticky header row and first column, a
//!   **broken** column (how many implementations break the rule) and per cell the scenarios that
//!   passed / failed / were not applicable, counted over the scenarios that *exercise* the rule
//!   (the report's `exercised`: its situations reached, or the rule broken), filters for MUST
//!   rules only, rules broken by a bug, and the rules whose verdicts differ between the
//!   implementations;
//! - the **causes** of each implementation's expectations (from the report's
//!   `expectations.causes`, never from the file, so the command works from any folder): label,
//!   reason, source, and its pairs, each a link to the case's entry;
//! - the **case entries**: one anchor per implementation and scenario with its root cause, the
//!   first violation of each rule it broke, the causes that explain it, its replay command, and
//!   its page when the report's pages folder is given (`REPORT.json=PAGES_DIR`, linked relative
//!   to the page).
//!
//! The causes and the cases are data (one JSON block, its strings shared, so the three Pi
//! releases cost little more than one) that a short script renders; the rest reads without it.
//! The output holds no time, no absolute path and no command line of its own, so the same
//! reports give the same bytes (CI compares the committed `docs/dashboard.*` with what its runs
//! produce); an adapter command's temporary folder (`HOME=/tmp/tmp.X`) is shown as
//! `HOME=$(mktemp -d)` for the same reason.
//!
//! The reports are read in `report.rs`, the markdown summary is written in `markdown.rs` and the
//! HTML page with its data, style and script in `page.rs`; this file holds the columns they share
//! and what both renderings count from them (each rule's cell, the levels held, the release sets).

mod markdown;
mod page;
mod report;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::check::{catalogue, Level};

pub use markdown::markdown;
pub use page::html;
pub use report::{link_pages, load, parse_report};

/// One report to show, and where its case pages are (`run --html-dir`), if anywhere.
#[derive(Debug, Clone)]
pub struct ReportInput {
    pub report: PathBuf,
    pub pages: Option<PathBuf>,
}

impl ReportInput {
    /// `REPORT.json` or `REPORT.json=PAGES_DIR`.
    pub fn parse(text: &str) -> ReportInput {
        match text.split_once('=') {
            Some((report, pages)) => ReportInput {
                report: PathBuf::from(report),
                pages: Some(PathBuf::from(pages)),
            },
            None => ReportInput {
                report: PathBuf::from(text),
                pages: None,
            },
        }
    }
}

/// One case of a report.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    /// `passed`, `failed`, `broken`, `not-applicable`, `bad-scenario`.
    pub status: String,
    /// `held` or `broken` (a MUST rule), when the report says.
    pub must: Option<String>,
    /// Its violations, root cause first: (rule, message).
    pub violations: Vec<(String, String)>,
    /// Why it is not applicable, or the verdict code it broke with.
    pub detail: Option<String>,
    /// The scenario file, as the report names it.
    pub path: String,
    pub replay: String,
    /// The rules its scenario names (a case with no trace fails those only).
    pub named: BTreeSet<String>,
    /// The rules its trace exercised; `None` for a report written before `exercised` (then
    /// every judged case counts for every rule).
    pub exercised: Option<BTreeSet<String>>,
}

impl Case {
    fn breaks(&self, rule: &str) -> bool {
        self.violations.iter().any(|(broken, _)| broken == rule)
    }

    fn exercises(&self, rule: &str) -> bool {
        self.exercised.as_ref().is_none_or(|rules| rules.contains(rule))
    }
}

/// One cause of an implementation's expectations, as its report compared it.
#[derive(Debug, Clone)]
pub struct CauseView {
    pub id: String,
    pub verdict: String,
    pub reason: String,
    /// `file:line`, and the function.
    pub source: Option<(String, String)>,
    pub listed: usize,
    pub confirmed: Vec<(String, String)>,
    pub stale: Vec<(String, String)>,
    pub unjudged: Vec<(String, String)>,
    pub explored: Vec<(String, String)>,
}

/// What a report says of its expectations file.
#[derive(Debug, Clone)]
pub struct Expectations {
    /// The file's name (not its path: the page is the same wherever the file was).
    pub file: String,
    pub causes: Vec<CauseView>,
    /// (scenario, rule) failures no cause lists.
    pub unexpected: Vec<(String, String)>,
}

/// One implementation's column.
#[derive(Debug, Clone)]
pub struct Column {
    pub implementation: String,
    pub cases: Vec<Case>,
    pub expectations: Option<Expectations>,
    /// The case pages' folder as given.
    pub pages: Option<PathBuf>,
    /// The same folder relative to the HTML page's (set by [`link_pages`]).
    pub pages_href: Option<String>,
}

impl Column {
    /// (scenario, rule) -> the cause (index) whose confirmed pairs hold it.
    fn causes_of_failures(&self) -> BTreeMap<(&str, &str), usize> {
        let mut owners = BTreeMap::new();
        if let Some(expectations) = &self.expectations {
            for (index, cause) in expectations.causes.iter().enumerate() {
                for (scenario, rule) in &cause.confirmed {
                    owners.insert((scenario.as_str(), rule.as_str()), index);
                }
            }
        }
        owners
    }

    fn is_reference(&self) -> bool {
        is_reference(&self.implementation)
    }
}

/// Why a report could not be read: names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct DashboardError {
    pub file: String,
    pub message: String,
}

/// The in-process reference (not a mutant of it): shown, never counted in the family score.
fn is_reference(implementation: &str) -> bool {
    let (family, _) = family_and_version(implementation);
    family == "agentsim-reference" || family.starts_with("agentsim-reference (")
}

/// `pi 0.73.1` -> (`pi`, `0.73.1`).
fn family_and_version(implementation: &str) -> (&str, &str) {
    implementation.rsplit_once(' ').unwrap_or((implementation, ""))
}

/// A rule's cell: the scenarios that exercise it and pass, those that fail it (a case with no
/// trace fails the rules its scenario names), and those not applicable among the scenarios that
/// name it.
struct Cell<'c> {
    passed: usize,
    failing: Vec<&'c str>,
    not_applicable: usize,
}

fn cell<'c>(column: &'c Column, rule: &str) -> Cell<'c> {
    let mut cell = Cell {
        passed: 0,
        failing: Vec::new(),
        not_applicable: 0,
    };
    for case in &column.cases {
        match case.status.as_str() {
            "not-applicable" if case.named.contains(rule) => cell.not_applicable += 1,
            "broken" | "bad-scenario" if case.named.contains(rule) => cell.failing.push(&case.name),
            "passed" | "failed" if case.breaks(rule) => cell.failing.push(&case.name),
            "passed" | "failed" if case.exercises(rule) => cell.passed += 1,
            _ => {}
        }
    }
    cell
}

/// `(held, judged)` rules per level: a rule holds when no case fails it.
fn levels(column: &Column) -> BTreeMap<Level, (usize, usize)> {
    let mut counts: BTreeMap<Level, (usize, usize)> = BTreeMap::new();
    for rule in catalogue() {
        let cell = cell(column, rule.id);
        // A rule that reads a state probe is not judged on a subject that reports none: it is
        // neither held nor counted (the report's levels leave it out the same way).
        if crate::check::PROBED_RULES.contains(&rule.id) && cell.passed == 0 && cell.failing.is_empty() {
            continue;
        }
        let slot = counts.entry(rule.level).or_default();
        slot.1 += 1;
        if cell.failing.is_empty() {
            slot.0 += 1;
        }
    }
    counts
}

fn status_counts(column: &Column) -> (usize, usize, usize) {
    let passed = column.cases.iter().filter(|case| case.status == "passed").count();
    let not_applicable = column
        .cases
        .iter()
        .filter(|case| case.status == "not-applicable")
        .count();
    (passed, column.cases.len() - passed - not_applicable, not_applicable)
}

fn area_of(rule: &str) -> &str {
    rule.rsplit_once('-').map_or(rule, |(area, _)| area)
}

/// One release set of the family score and its two shares.
struct ReleaseSet {
    members: Vec<usize>,
    scenarios: usize,
    passed_by_all: usize,
    must_held_by_all: usize,
}

/// Every release set: one column of each implementation but the reference (the product of
/// their releases, in column order; at most 64).
fn release_sets(columns: &[Column]) -> Vec<ReleaseSet> {
    let mut families: Vec<(&str, Vec<usize>)> = Vec::new();
    for (index, column) in columns.iter().enumerate() {
        if column.is_reference() {
            continue;
        }
        let (family, _) = family_and_version(&column.implementation);
        match families.iter_mut().find(|(name, _)| *name == family) {
            Some((_, releases)) => releases.push(index),
            None => families.push((family, vec![index])),
        }
    }
    if families.is_empty() {
        return Vec::new();
    }
    let mut sets: Vec<Vec<usize>> = vec![Vec::new()];
    for (_, releases) in &families {
        sets = sets
            .iter()
            .flat_map(|set| {
                releases.iter().map(move |release| {
                    let mut set = set.clone();
                    set.push(*release);
                    set
                })
            })
            .take(64)
            .collect();
    }
    // A set in the order the columns are, the varying release first.
    sets.into_iter()
        .map(|members| {
            let names: BTreeSet<&str> = members
                .iter()
                .flat_map(|member| columns[*member].cases.iter().map(|case| case.name.as_str()))
                .collect();
            let every = |test: &dyn Fn(&Case) -> bool, name: &str| {
                members.iter().all(|member| {
                    columns[*member]
                        .cases
                        .iter()
                        .find(|case| case.name == name)
                        .is_some_and(test)
                })
            };
            let passed = |case: &Case| case.status == "passed";
            let must_held = |case: &Case| match &case.must {
                Some(word) => word == "held",
                None => case.status == "passed",
            };
            ReleaseSet {
                scenarios: names.len(),
                passed_by_all: names.iter().filter(|name| every(&passed, name)).count(),
                must_held_by_all: names.iter().filter(|name| every(&must_held, name)).count(),
                members,
            }
        })
        .collect()
}

fn set_name(columns: &[Column], set: &ReleaseSet) -> String {
    set.members
        .iter()
        .map(|member| columns[*member].implementation.as_str())
        .collect::<Vec<_>>()
        .join(" + ")
}

/// `12 of 169 (7.1%)`, the share in tenths of a percent, rounded down.
fn share(count: usize, of: usize) -> (String, usize) {
    let tenths = (count * 1000).checked_div(of).unwrap_or(0);
    (format!("{count} of {of} ({}.{}%)", tenths / 10, tenths % 10), tenths)
}

/// Per rule and column: whether it fails, and whether a bug cause explains one of its failures.
struct RuleRow<'c> {
    cells: Vec<Cell<'c>>,
    bugs: Vec<bool>,
    /// The implementations but the reference that break it.
    broken_by: Vec<&'c str>,
    differs: bool,
}

fn rule_row<'c>(columns: &'c [Column], owners: &[BTreeMap<(&str, &str), usize>], rule: &str) -> RuleRow<'c> {
    let cells: Vec<Cell> = columns.iter().map(|column| cell(column, rule)).collect();
    let bugs = columns
        .iter()
        .zip(&cells)
        .zip(owners)
        .map(|((column, cell), owners)| {
            cell.failing.iter().any(|scenario| {
                owners
                    .get(&(*scenario, rule))
                    .and_then(|index| column.expectations.as_ref()?.causes.get(*index))
                    .is_some_and(|cause| cause.verdict == "bug")
            })
        })
        .collect();
    let compared: Vec<usize> = if columns.iter().filter(|column| !column.is_reference()).count() >= 2 {
        (0..columns.len())
            .filter(|index| !columns[*index].is_reference())
            .collect()
    } else {
        (0..columns.len()).collect()
    };
    let verdicts: BTreeSet<bool> = compared.iter().map(|index| cells[*index].failing.is_empty()).collect();
    let broken_by = columns
        .iter()
        .zip(&cells)
        .filter(|(column, cell)| !column.is_reference() && !cell.failing.is_empty())
        .map(|(column, _)| column.implementation.as_str())
        .collect();
    RuleRow {
        cells,
        bugs,
        broken_by,
        differs: verdicts.len() > 1,
    }
}

/// The count of causes by label: `(bugs, choices)`.
fn labels(expectations: &Expectations) -> (usize, usize) {
    let bugs = expectations
        .causes
        .iter()
        .filter(|cause| cause.verdict == "bug")
        .count();
    (bugs, expectations.causes.len() - bugs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_and_families() {
        assert!(is_reference("agentsim-reference (in process) 0.1.0"));
        assert!(is_reference("agentsim-reference 0.1.0"));
        assert!(!is_reference("agentsim-reference+poison-not-stored 0.1.0"));
        assert_eq!(family_and_version("oh-my-pi 18.2.3"), ("oh-my-pi", "18.2.3"));
        assert_eq!(share(1, 3).0, "1 of 3 (33.3%)");
        assert_eq!(share(0, 0).0, "0 of 0 (0.0%)");
    }
}
