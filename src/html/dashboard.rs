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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};

use super::{escape, page_file_name, script_json};
use crate::check::{catalogue, Level};

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

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item.as_str().map(str::to_string))
        .collect()
}

fn pairs(value: &Value) -> Vec<(String, String)> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| {
            Some((
                pair["scenario"].as_str()?.to_string(),
                pair["rule"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Reads one JSON report; everything it shows comes from the report (its expectations'
/// causes included), so the command reads the same from any folder.
pub fn load(input: &ReportInput) -> Result<Column, DashboardError> {
    let fail = |message: String| DashboardError {
        file: input.report.display().to_string(),
        message,
    };
    // Only a regular file is read: a FIFO nobody writes would block, a device never end.
    let kind = std::fs::metadata(&input.report)
        .map_err(|error| fail(format!("cannot read: {error}")))?
        .file_type();
    if !kind.is_file() {
        return Err(fail(format!(
            "not a regular file but {}: a report is a file `agentsim run --format json` wrote",
            crate::scenario::kind_of(&kind)
        )));
    }
    let text = std::fs::read_to_string(&input.report).map_err(|error| fail(format!("cannot read: {error}")))?;
    parse_report(input, &text)
}

/// A column of the dashboard from the text of a JSON report (`input` names the file and the
/// pages' folder): the report's implementation and its cases, or what is wrong with it.
pub fn parse_report(input: &ReportInput, text: &str) -> Result<Column, DashboardError> {
    let file = input.report.display().to_string();
    let fail = |message: String| DashboardError {
        file: file.clone(),
        message,
    };
    let value: Value = serde_json::from_str(text).map_err(|error| fail(format!("not a JSON report: {error}")))?;
    let implementation = value["implementation"]
        .as_str()
        .ok_or_else(|| fail("no `implementation`: write it with `agentsim run --format json`".into()))?
        .to_string();
    let results = value["results"]
        .as_array()
        .ok_or_else(|| fail("no `results` array".into()))?;
    let mut cases = Vec::new();
    for (index, result) in results.iter().enumerate() {
        let name = result["name"]
            .as_str()
            .ok_or_else(|| fail(format!("results[{index}].name is missing")))?;
        let status = result["status"]
            .as_str()
            .ok_or_else(|| fail(format!("results[{index}].status is missing")))?;
        let violations = result["violations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|violation| {
                Some((
                    violation["rule"].as_str()?.to_string(),
                    violation["message"].as_str().unwrap_or_default().to_string(),
                ))
            })
            .collect();
        cases.push(Case {
            name: name.to_string(),
            status: status.to_string(),
            must: result["must"].as_str().map(str::to_string),
            violations,
            // A broken case by its verdict code only: how an adapter died (its last effect, its
            // stderr) is the report's and the case page's to show, and may vary where the
            // verdict does not (a crash point that moves), which a page compared on must not.
            detail: match (status, result["code"].as_str()) {
                ("broken", Some(code)) => Some(format!("broken: {code} (the report and the case's replay say how)")),
                _ => result["detail"].as_str().map(str::to_string),
            },
            path: result["path"].as_str().unwrap_or_default().to_string(),
            replay: result["replay"].as_str().unwrap_or_default().to_string(),
            named: strings(&result["rules"]),
            exercised: result.get("exercised").map(strings),
        });
    }
    let expectations = value
        .get("expectations")
        .filter(|value| value.is_object())
        .map(|expected| {
            let file = expected["file"]
                .as_str()
                .map(|path| {
                    Path::new(path)
                        .file_name()
                        .map_or(path.to_string(), |name| name.to_string_lossy().into_owned())
                })
                .unwrap_or_default();
            let causes = expected["causes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|cause| CauseView {
                    id: cause["id"].as_str().unwrap_or_default().to_string(),
                    verdict: cause["verdict"].as_str().unwrap_or("-").to_string(),
                    reason: cause["reason"].as_str().unwrap_or_default().to_string(),
                    source: cause["source"]["file"].as_str().map(|source| {
                        (
                            format!("{source}:{}", cause["source"]["line"].as_u64().unwrap_or(0)),
                            cause["source"]["function"].as_str().unwrap_or_default().to_string(),
                        )
                    }),
                    listed: cause["listed"].as_u64().unwrap_or(0) as usize,
                    confirmed: pairs(&cause["confirmed"]),
                    stale: pairs(&cause["stale"]),
                    unjudged: pairs(&cause["unjudged"]),
                    explored: pairs(&cause["explored"]),
                })
                .collect();
            Expectations {
                file,
                causes,
                unexpected: pairs(&expected["unexpected"]),
            }
        });
    Ok(Column {
        implementation,
        cases,
        expectations,
        pages: input.pages.clone(),
        pages_href: None,
    })
}

/// Links each column's pages folder relative to the folder the HTML page is written to, so the
/// links resolve wherever the command ran. Names the folder that does not exist.
pub fn link_pages(columns: &mut [Column], page_folder: &Path) -> Result<(), DashboardError> {
    let base = std::fs::canonicalize(page_folder).map_err(|error| DashboardError {
        file: page_folder.display().to_string(),
        message: format!("the page's folder: {error}"),
    })?;
    for column in columns {
        if let Some(pages) = &column.pages {
            let folder = std::fs::canonicalize(pages).map_err(|error| DashboardError {
                file: pages.display().to_string(),
                message: format!("the case pages' folder: {error}"),
            })?;
            column.pages_href = Some(relative(&base, &folder));
        }
    }
    Ok(())
}

/// `to` relative to `from`, both absolute: `../pages`, `./pages`, `.`; `/` separators. Never a
/// bare first component, which a browser could read as a URL scheme (`javascript:`).
fn relative(from: &Path, to: &Path) -> String {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    if parts.is_empty() {
        parts.push(".".to_string());
    }
    parts.extend(
        to[common..]
            .iter()
            .map(|part| part.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
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
        let slot = counts.entry(rule.level).or_default();
        slot.1 += 1;
        if cell(column, rule.id).failing.is_empty() {
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

fn md(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

/// The first sentence of a reason, at most 160 characters.
fn first_sentence(text: &str) -> String {
    let end = text.find(". ").map_or(text.len(), |at| at + 1);
    let sentence: String = text[..end].chars().take(160).collect();
    if sentence.len() < end {
        format!("{sentence}…")
    } else {
        sentence
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

/// The markdown summary: the family score, the implementations, the rules table and the causes
/// with their counts.
pub fn markdown(columns: &[Column]) -> String {
    let mut text = String::from(
        "# Conformance dashboard\n\nGenerated by `agentsim dashboard` from each implementation's JSON report \
         (`agentsim run --impl CMD scenarios/ --format json --expect expectations/IMPL.json`); `.ci/run` \
         regenerates it, and the HTML page beside it (`dashboard.html`, with the causes' pairs and every \
         case), and fails when they differ.\n\n",
    );
    let sets = release_sets(columns);
    if !sets.is_empty() {
        text.push_str(
            "## Family score\n\nPer release set (one release of each implementation; the reference is not counted): \
             the scenarios every implementation of the set passes, and those where every one of them holds every \
             MUST rule.\n\n| release set | every implementation passes | every implementation holds MUST |\n|---|---:|---:|\n",
        );
        for set in &sets {
            text.push_str(&format!(
                "| {} | {} | {} |\n",
                md(&set_name(columns, set)),
                share(set.passed_by_all, set.scenarios).0,
                share(set.must_held_by_all, set.scenarios).0
            ));
        }
        text.push('\n');
    }
    text.push_str("## Implementations\n\n| implementation | cases | passed | failed | n.a. | MUST rules held | SHOULD rules held | causes: bug / choice | stale pairs | unexpected pairs |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for column in columns {
        let (passed, failed, not_applicable) = status_counts(column);
        let levels = levels(column);
        let level = |level: Level| {
            levels
                .get(&level)
                .map_or("-".to_string(), |(held, judged)| format!("{held} of {judged}"))
        };
        let (causes, stale, unexpected) = match &column.expectations {
            Some(expectations) => {
                let (bugs, choices) = labels(expectations);
                let stale: usize = expectations.causes.iter().map(|cause| cause.stale.len()).sum();
                (
                    format!("{bugs} / {choices}"),
                    stale.to_string(),
                    expectations.unexpected.len().to_string(),
                )
            }
            None => ("-".into(), "-".into(), "-".into()),
        };
        text.push_str(&format!(
            "| `{}` | {} | {passed} | {failed} | {not_applicable} | {} | {} | {causes} | {stale} | {unexpected} |\n",
            md(&column.implementation),
            column.cases.len(),
            level(Level::Must),
            level(Level::Should)
        ));
    }
    text.push_str(
        "\n## Rules\n\nEach cell: scenarios passed / failed / not applicable, counted over the scenarios that exercise \
         the rule (the trace reached one of its situations, or broke it; a case with no trace fails the rules its \
         scenario names; n.a. counts the scenarios that name the rule). Broken: the implementations, the reference \
         aside, that fail the rule somewhere.\n\n| rule | level | broken |",
    );
    for column in columns {
        text.push_str(&format!(" `{}` |", md(&column.implementation)));
    }
    text.push_str("\n|---|---|---:|");
    for _ in columns {
        text.push_str("---|");
    }
    text.push('\n');
    let owners: Vec<_> = columns.iter().map(Column::causes_of_failures).collect();
    for rule in catalogue() {
        let row = rule_row(columns, &owners, rule.id);
        text.push_str(&format!(
            "| {} | {} | {} |",
            rule.id,
            rule.level.word(),
            row.broken_by.len()
        ));
        for (cell, bug) in row.cells.iter().zip(&row.bugs) {
            text.push_str(&format!(
                " {} / {}{} / {} |",
                cell.passed,
                cell.failing.len(),
                if *bug { " (bug)" } else { "" },
                cell.not_applicable
            ));
        }
        text.push('\n');
    }
    text.push_str("\n## Causes\n\nEach implementation's expected deviations, one row per cause: its label, its (scenario, rule) pairs (listed; of them, those that no longer fail), the pairs allowed under exploration, the rules, where in the implementation's code, and the reason's first sentence. The HTML page lists every pair.\n");
    for column in columns {
        let Some(expectations) = &column.expectations else {
            continue;
        };
        text.push_str(&format!(
            "\n### `{}` ({})\n\n",
            md(&column.implementation),
            md(&expectations.file)
        ));
        if expectations.causes.is_empty() {
            text.push_str("No cause listed.\n");
            continue;
        }
        text.push_str("| cause | verdict | pairs | stale | explored | rules | source | reason |\n|---|---|---:|---:|---:|---|---|---|\n");
        for cause in &expectations.causes {
            let mut rules: Vec<&str> = cause
                .confirmed
                .iter()
                .chain(&cause.stale)
                .chain(&cause.unjudged)
                .chain(&cause.explored)
                .map(|(_, rule)| rule.as_str())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            rules.sort_by_key(|rule| crate::deviations::rule_order(rule));
            let source = cause
                .source
                .as_ref()
                .map_or("-".to_string(), |(place, function)| format!("`{place}` `{function}`"));
            text.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                md(&cause.id),
                if cause.verdict == "bug" {
                    "**bug**".to_string()
                } else {
                    md(&cause.verdict)
                },
                cause.listed,
                cause.stale.len(),
                cause.explored.len(),
                md(&rules.join(", ")),
                md(&source),
                md(&first_sentence(&cause.reason))
            ));
        }
        if !expectations.unexpected.is_empty() {
            text.push_str(&format!(
                "\n{} failing pairs no cause lists (unexpected).\n",
                expectations.unexpected.len()
            ));
        }
    }
    text
}

/// An adapter command's temporary folders (`HOME=/tmp/tmp.AbC`, made by `mktemp -d` for the
/// run) as `HOME=$(mktemp -d)`: what a reader can run, and the same bytes for every run.
fn portable(command: &str) -> String {
    let temp = std::env::temp_dir().display().to_string();
    command
        .split(' ')
        .map(|word| {
            let (quote, rest) = match word.strip_prefix('\'') {
                Some(rest) => ("'", rest),
                None => ("", word),
            };
            let Some((name, value)) = rest.split_once('=') else {
                return word.to_string();
            };
            let is_name = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit());
            let value_end = value.trim_end_matches('\'');
            let is_temporary = value_end.starts_with("/tmp/") || (temp.len() > 1 && value_end.starts_with(&temp));
            if is_name && is_temporary && !value_end.contains(['$', '`', '"']) {
                let closing = &value[value_end.len()..];
                format!("{quote}{name}=$(mktemp -d){closing}")
            } else {
                word.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Marks where the case's name is in its replay command, so that the cases of a column share
/// one template (the page's script puts the name back).
const NAME_MARK: char = '\u{1}';

/// `replay` with the case's name (inside its scenario path) as [`NAME_MARK`]; as it is when the
/// path or the name is not in it.
fn replay_template(replay: &str, path: &str, name: &str) -> String {
    if path.is_empty() || name.is_empty() || replay.contains(NAME_MARK) {
        return replay.to_string();
    }
    let Some(at) = replay.find(path) else {
        return replay.to_string();
    };
    let Some(within) = path.find(name) else {
        return replay.to_string();
    };
    let start = at + within;
    format!("{}{NAME_MARK}{}", &replay[..start], &replay[start + name.len()..])
}

/// The anchor of an implementation's case: `c2-poison-flush-before-failure` (the page's
/// script makes the same).
fn case_anchor(column: usize, scenario: &str) -> String {
    let file = page_file_name(scenario, "");
    format!("c{column}-{}", file.trim_end_matches(".html"))
}

/// Strings shared by the page's data: each once, by index.
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    index: BTreeMap<String, usize>,
}

impl Strings {
    fn of(&mut self, text: &str) -> usize {
        if let Some(index) = self.index.get(text) {
            return *index;
        }
        self.list.push(text.to_string());
        self.index.insert(text.to_string(), self.list.len() - 1);
        self.list.len() - 1
    }
}

/// How many characters of a violation's message a case entry shows.
const MESSAGE_CHARS: usize = 240;

fn clipped(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > MESSAGE_CHARS {
        format!("{}…", line.chars().take(MESSAGE_CHARS).collect::<String>())
    } else {
        line.to_string()
    }
}

/// Pairs as `[[rule, [scenario, ...]], ...]`, in rule order, scenarios sorted, by string index.
fn by_rule(strings: &mut Strings, pairs: &[(String, String)]) -> Vec<Value> {
    let mut grouped: BTreeMap<(usize, usize, String), (String, Vec<&str>)> = BTreeMap::new();
    for (scenario, rule) in pairs {
        grouped
            .entry(crate::deviations::rule_order(rule))
            .or_insert_with(|| (rule.clone(), Vec::new()))
            .1
            .push(scenario);
    }
    grouped
        .into_values()
        .map(|(rule, mut scenarios)| {
            scenarios.sort();
            let scenarios: Vec<usize> = scenarios.iter().map(|scenario| strings.of(scenario)).collect();
            json!([strings.of(&rule), scenarios])
        })
        .collect()
}

/// The data the page's script renders the causes and the cases from. Strings by index into
/// `s`; a case's record (status, MUST, detail, its rules' first violations) is shared by every
/// case that has the same one.
fn page_data(columns: &[Column]) -> Value {
    let mut strings = Strings::default();
    let mut records: Vec<Value> = Vec::new();
    let mut record_index: BTreeMap<String, usize> = BTreeMap::new();
    let mut data_columns = Vec::new();
    for column in columns {
        let mut cases = Vec::new();
        for case in &column.cases {
            // The first violation of each rule, root cause first.
            let mut seen = BTreeSet::new();
            let firsts: Vec<Value> = case
                .violations
                .iter()
                .filter(|(rule, _)| seen.insert(rule.as_str()))
                .map(|(rule, message)| json!([strings.of(rule), strings.of(&clipped(message))]))
                .collect();
            let record = json!([
                strings.of(&case.status),
                case.must.as_deref().map(|must| strings.of(must)),
                case.detail.as_deref().map(|detail| strings.of(&clipped(detail))),
                firsts,
                case.violations.len()
            ]);
            let key = record.to_string();
            let record = *record_index.entry(key).or_insert_with(|| {
                records.push(record);
                records.len() - 1
            });
            let replay = replay_template(&portable(&case.replay), &case.path, &case.name);
            let page = column
                .pages_href
                .as_ref()
                .filter(|_| !matches!(case.status.as_str(), "passed" | "not-applicable"))
                .map(|href| strings.of(&format!("{href}/{}", page_file_name(&case.name, ""))));
            cases.push(json!([strings.of(&case.name), record, strings.of(&replay), page]));
        }
        let (causes, unexpected) = match &column.expectations {
            Some(expectations) => {
                let causes: Vec<Value> = expectations
                    .causes
                    .iter()
                    .map(|cause| {
                        let source = cause
                            .source
                            .as_ref()
                            .map(|(place, function)| json!([strings.of(place), strings.of(function)]));
                        json!([
                            strings.of(&cause.id),
                            strings.of(&cause.verdict),
                            strings.of(&cause.reason),
                            source,
                            cause.listed,
                            by_rule(&mut strings, &cause.confirmed),
                            by_rule(&mut strings, &cause.stale),
                            by_rule(&mut strings, &cause.unjudged),
                            by_rule(&mut strings, &cause.explored)
                        ])
                    })
                    .collect();
                let unexpected = by_rule(&mut strings, &expectations.unexpected);
                (json!(causes), json!(unexpected))
            }
            None => (Value::Null, Value::Null),
        };
        data_columns.push(json!({
            "name": column.implementation,
            "file": column.expectations.as_ref().map(|expectations| expectations.file.clone()),
            "cases": cases,
            "causes": causes,
            "unexpected": unexpected,
        }));
    }
    json!({"s": strings.list, "records": records, "columns": data_columns})
}

/// The HTML page: self-contained, nothing from the network.
pub fn html(columns: &[Column]) -> String {
    let mut body = String::from(
        "<h1>Conformance dashboard</h1>\n<p class=\"intro\">Generated by <code>agentsim dashboard</code> from each \
         implementation's JSON report. <a href=\"#score\">Family score</a> · <a href=\"#implementations\">implementations</a> · \
         <a href=\"#rules\">rules</a> · <a href=\"#causes\">causes</a> · <a href=\"#cases\">cases</a></p>\n",
    );
    // The family score.
    let sets = release_sets(columns);
    body.push_str("<h2 id=\"score\">Family score</h2>\n");
    if sets.is_empty() {
        body.push_str("<p>No implementation but the reference: no release set to score.</p>\n");
    } else {
        body.push_str(
            "<p>Per release set (one release of each implementation; the reference is not counted), as wpt.fyi's \
             Interop score: the share of scenarios every implementation of the set passes, and of those where every \
             one of them holds every MUST rule.</p>\n<table id=\"family-score\"><thead><tr><th>release set</th>\
             <th>every implementation passes</th><th>every implementation holds MUST</th></tr></thead><tbody>\n",
        );
        for set in &sets {
            let score = |count: usize, kind: &str| {
                let (text, tenths) = share(count, set.scenarios);
                format!(
                    "<td class=\"score\" data-score=\"{kind}\" data-count=\"{count}\" data-scenarios=\"{}\">{text} <span class=\"bar\" style=\"--share:{}.{}%\"></span></td>",
                    set.scenarios,
                    tenths / 10,
                    tenths % 10
                )
            };
            body.push_str(&format!(
                "<tr class=\"release-set\"><td>{}</td>{}{}</tr>\n",
                escape(&set_name(columns, set)),
                score(set.passed_by_all, "passed"),
                score(set.must_held_by_all, "must")
            ));
        }
        body.push_str("</tbody></table>\n");
    }
    // The implementations.
    body.push_str("<h2 id=\"implementations\">Implementations</h2>\n<table id=\"implementation-summary\"><thead><tr><th>implementation</th><th>cases</th><th>passed</th><th>failed</th><th>n.a.</th><th>MUST rules held</th><th>SHOULD rules held</th><th>causes: bug / choice</th><th>stale pairs</th><th>unexpected pairs</th></tr></thead><tbody>\n");
    for (index, column) in columns.iter().enumerate() {
        let (passed, failed, not_applicable) = status_counts(column);
        let levels = levels(column);
        let fraction = |level: Level| {
            levels.get(&level).map_or("-".to_string(), |(held, judged)| {
                format!(
                    "<span class=\"held\" data-level=\"{}\" data-held=\"{held}\" data-judged=\"{judged}\">{held} of {judged}</span> <span class=\"bar\" style=\"--share:{}%\"></span>",
                    level.word(),
                    held * 100 / (*judged).max(1)
                )
            })
        };
        let expectations = match &column.expectations {
            Some(expectations) => {
                let (bugs, choices) = labels(expectations);
                let stale: usize = expectations.causes.iter().map(|cause| cause.stale.len()).sum();
                format!(
                    "<td><a href=\"#causes-c{index}\">{bugs} / {choices}</a></td><td>{stale}</td><td>{}</td>",
                    expectations.unexpected.len()
                )
            }
            None => "<td>-</td><td>-</td><td>-</td>".to_string(),
        };
        body.push_str(&format!(
            "<tr class=\"implementation\" data-implementation=\"{}\"><td><code>{}</code></td><td>{}</td><td>{passed}</td><td>{failed}</td><td>{not_applicable}</td><td>{}</td><td>{}</td>{expectations}</tr>\n",
            escape(&column.implementation),
            escape(&column.implementation),
            column.cases.len(),
            fraction(Level::Must),
            fraction(Level::Should)
        ));
    }
    body.push_str("</tbody></table>\n");
    // The rules.
    body.push_str(
        "<h2 id=\"rules\">Rules</h2>\n<p>Each cell: scenarios passed / failed / not applicable, counted over the \
         scenarios that <em>exercise</em> the rule (the trace reached one of its situations, or broke it; a case \
         with no trace fails the rules its scenario names; n.a. counts the scenarios that name the rule); a failed \
         count links to the first failing case. <span class=\"bugmark\">bug</span>: a cause labelled bug explains a \
         failure. Broken: the implementations, the reference aside, that fail the rule.</p>\n\
         <form id=\"filters\"><label><input type=\"checkbox\" id=\"only-must\"> MUST rules only</label> \
         <label><input type=\"checkbox\" id=\"only-bugs\"> bugs only</label> \
         <label><input type=\"checkbox\" id=\"only-differences\"> differences between implementations</label></form>\n\
         <div class=\"scroll\"><table id=\"rule-table\"><thead><tr><th>rule</th><th>level</th><th>broken</th>",
    );
    for column in columns {
        body.push_str(&format!("<th><code>{}</code></th>", escape(&column.implementation)));
    }
    body.push_str("</tr></thead>\n<tbody>\n");
    let owners: Vec<_> = columns.iter().map(Column::causes_of_failures).collect();
    let rows: Vec<(&crate::check::Rule, RuleRow)> = catalogue()
        .iter()
        .map(|rule| (rule, rule_row(columns, &owners, rule.id)))
        .collect();
    let mut area = "";
    for (rule, row) in &rows {
        let classes = |rule: &crate::check::Rule, row: &RuleRow| {
            let mut classes = vec![rule.level.word().to_ascii_lowercase()];
            if row.bugs.iter().any(|bug| *bug) {
                classes.push("bug".into());
            }
            if row.differs {
                classes.push("differs".into());
            }
            classes
        };
        if area_of(rule.id) != area {
            area = area_of(rule.id);
            // The area's row shows whenever one of its rules does.
            let mut shown: BTreeSet<String> = BTreeSet::new();
            for (other, other_row) in rows.iter().filter(|(other, _)| area_of(other.id) == area) {
                let classes = classes(other, other_row);
                let level = &classes[0];
                shown.insert(format!("has-{level}"));
                for class in &classes[1..] {
                    shown.insert(format!("has-{class}"));
                    shown.insert(format!("has-{level}-{class}"));
                }
                if classes.len() == 3 {
                    shown.insert(format!("has-{level}-bug-differs"));
                    shown.insert("has-bug-differs".into());
                }
            }
            body.push_str(&format!(
                "<tr class=\"area {}\"><th colspan=\"{}\">{area}</th></tr>\n",
                shown.into_iter().collect::<Vec<_>>().join(" "),
                columns.len() + 3
            ));
        }
        body.push_str(&format!(
            "<tr class=\"rule {}\" data-rule=\"{}\"><th title=\"{}\">{}</th><td>{}</td><td class=\"broken\"{}>{}</td>",
            classes(rule, row).join(" "),
            rule.id,
            escape(&super::rule_text(rule.id).unwrap_or_default()),
            rule.id,
            rule.level.word(),
            if row.broken_by.is_empty() {
                String::new()
            } else {
                format!(" title=\"{}\"", escape(&row.broken_by.join(", ")))
            },
            row.broken_by.len()
        ));
        for (index, (cell, bug)) in row.cells.iter().zip(&row.bugs).enumerate() {
            let class = match (cell.failing.is_empty(), cell.passed) {
                (false, _) => "fails",
                (true, 0) => "unexercised",
                (true, _) => "holds",
            };
            let failed = match cell.failing.first() {
                Some(first) => format!(
                    "<a href=\"#{}\">{}</a>",
                    escape(&case_anchor(index, first)),
                    cell.failing.len()
                ),
                None => "0".to_string(),
            };
            body.push_str(&format!(
                "<td class=\"{class}{}\">{} / {failed} / {}</td>",
                if *bug { " bug" } else { "" },
                cell.passed,
                cell.not_applicable
            ));
        }
        body.push_str("</tr>\n");
    }
    body.push_str("</tbody></table></div>\n");
    // The causes and the cases, rendered by the script from the data.
    body.push_str(
        "<h2 id=\"causes\">Causes</h2>\n<p>Each implementation's expected deviations (its expectations file, as its \
         report compared it), one entry per cause: its label, where in the implementation's code, the reason, and \
         the (scenario, rule) pairs it explains, each a link to the case. <span class=\"stale\">Stale</span>: listed, \
         no longer failing; explored: allowed under exploration, not required.</p>\n<noscript><p>The causes and the \
         cases need JavaScript.</p></noscript>\n<div id=\"cause-view\"></div>\n<h2 id=\"cases\">Cases</h2>\n<p>One \
         entry per implementation and scenario: its root cause, the first violation of each rule it broke, the \
         causes that explain it and its replay command.</p>\n<div id=\"case-view\"></div>\n",
    );
    let data = script_json(&page_data(columns));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>agentsim: conformance dashboard</title>\n<style>\n{STYLE}</style>\n</head>\n<body data-js=\"off\">\n{body}<script type=\"application/json\" id=\"dashboard-data\">{data}</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    )
}

const STYLE: &str = r#"body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #1d232a; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 24px; } h3 { font-size: 14px; margin: 14px 0 4px; } h4 { font-size: 13px; margin: 0; font-weight: 600; }
table { border-collapse: separate; border-spacing: 0; margin: 6px 0 12px; } th, td { border: 1px solid #d0d7de; border-width: 0 1px 1px 0; padding: 2px 8px; text-align: left; vertical-align: top; background: #fff; }
tr > :first-child { border-left-width: 1px; } thead th { border-top-width: 1px; }
.scroll { max-height: 80vh; overflow: auto; border-top: 1px solid #d0d7de; }
#rule-table thead th { position: sticky; top: 0; z-index: 2; background: #f6f8fa; }
#rule-table tbody th, #rule-table thead th:first-child { position: sticky; left: 0; z-index: 1; }
#rule-table thead th:first-child { z-index: 3; }
#rule-table tr.area th { background: #f6f8fa; }
#rule-table td { text-align: center; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.holds { background: #dafbe1; } td.fails { background: #ffebe9; } td.unexercised { background: #f6f8fa; color: #6e7781; }
td.bug::after { content: "bug"; } td.bug::after, .bugmark { margin-left: 4px; padding: 0 3px; font-size: 10px; color: #fff; background: #cf222e; border-radius: 3px; }
#rule-table td.broken { text-align: right; }
body.only-must tr.rule:not(.must), body.only-bugs tr.rule:not(.bug), body.only-differences tr.rule:not(.differs) { display: none; }
body.only-must tr.area:not(.has-must), body.only-bugs tr.area:not(.has-bug), body.only-differences tr.area:not(.has-differs) { display: none; }
body.only-must.only-bugs tr.area:not(.has-must-bug), body.only-must.only-differences tr.area:not(.has-must-differs), body.only-bugs.only-differences tr.area:not(.has-bug-differs) { display: none; }
body.only-must.only-bugs.only-differences tr.area:not(.has-must-bug-differs) { display: none; }
body.only-bugs .cause.choice { display: none; }
.bar { display: inline-block; width: 80px; height: 8px; background: linear-gradient(90deg, #2da44e var(--share), #eaeef2 var(--share)); border-radius: 4px; vertical-align: middle; }
#filters { margin: 6px 0; } #filters label { margin-right: 14px; }
.cause, .case { border: 1px solid #d0d7de; border-radius: 6px; padding: 6px 10px; margin: 6px 0; }
.cause.bug { border-left: 4px solid #cf222e; } .cause.choice { border-left: 4px solid #8c959f; }
.verdict { font-size: 11px; padding: 0 4px; border-radius: 3px; background: #eaeef2; } .verdict.bug { background: #cf222e; color: #fff; }
.reason { margin: 4px 0; } .pairs { margin: 4px 0; padding-left: 18px; } .pairs li { margin: 2px 0; }
a.stale, .stale { color: #9a6700; } a.stale { text-decoration: line-through; }
.case.passed { padding: 2px 10px; color: #1a7f37; } .case:target, .cause:target { outline: 2px solid #0969da; }
.must.broken { color: #cf222e; font-weight: 600; } .replay { font: 12px ui-monospace, Menlo, Consolas, monospace; background: #f6f8fa; padding: 2px 6px; white-space: pre-wrap; word-break: break-all; margin: 4px 0; }
.violations { margin: 4px 0; padding-left: 18px; } details > summary { cursor: pointer; font-weight: 600; margin: 6px 0; }
code { font: 12px ui-monospace, Menlo, Consolas, monospace; }
"#;

/// Renders the causes and the cases from `#dashboard-data`, opens the section a link points
/// into, and wires the filters (each sets a class on the body; the CSS hides the rows).
const SCRIPT: &str = r##"(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('dashboard-data').textContent);
  const s = data.s;
  const el = (tag, className, text) => { const e = document.createElement(tag); if (className) e.className = className; if (text !== undefined) e.textContent = text; return e; };
  const anchor = (column, scenario) => 'c' + column + '-' + scenario.replace(/[^A-Za-z0-9._-]/gu, '-');
  const link = (column, scenario, className) => { const a = el('a', className, scenario); a.href = '#' + anchor(column, scenario); return a; };
  const causeView = document.getElementById('cause-view');
  const caseView = document.getElementById('case-view');
  data.columns.forEach((column, c) => {
    // scenario -> the causes that explain some failure of it
    const explains = new Map();
    const section = el('section', 'implementation-causes'); section.id = 'causes-c' + c;
    section.appendChild(el('h3', '', column.name + (column.file ? ' (' + column.file + ')' : '')));
    const pairList = (groups, className, label, cause) => {
      const li = el('li', className); li.appendChild(el('span', '', label + s[groups[0]] + ': '));
      groups[1].forEach((scenario, i) => {
        if (i) li.appendChild(document.createTextNode(', '));
        li.appendChild(link(c, s[scenario], 'pair' + (className ? ' ' + className : '')));
        if (cause) { const list = explains.get(s[scenario]) || []; if (!list.includes(cause)) list.push(cause); explains.set(s[scenario], list); }
      });
      return li;
    };
    if (!column.causes) { section.appendChild(el('p', '', 'No expectations file.')); }
    else {
      column.causes.forEach(cause => {
        const [id, verdict, reason, source, listed, confirmed, stale, unjudged, explored] = cause;
        const div = el('div', 'cause ' + s[verdict]); div.id = 'cause-c' + c + '-' + s[id];
        const h = el('h4', '', s[id] + ' '); h.appendChild(el('span', 'verdict ' + s[verdict], s[verdict])); div.appendChild(h);
        const count = groups => groups.reduce((n, g) => n + g[1].length, 0);
        div.appendChild(el('p', 'counts', listed + (listed === 1 ? ' pair: ' : ' pairs: ') + count(confirmed) + ' fail as listed, ' + count(stale) + ' stale, ' + count(unjudged) + ' not judged; ' + count(explored) + ' allowed under exploration'));
        if (source) { const p = el('p', 'source'); p.appendChild(el('code', '', s[source[0]])); p.appendChild(document.createTextNode(' ')); p.appendChild(el('code', '', s[source[1]])); div.appendChild(p); }
        div.appendChild(el('p', 'reason', s[reason]));
        const ul = el('ul', 'pairs');
        const label = { bug: 'bug', choice: 'choice' }[s[verdict]] || s[verdict];
        const tag = [s[id], label, div.id];
        confirmed.forEach(g => ul.appendChild(pairList(g, '', '', tag)));
        stale.forEach(g => ul.appendChild(pairList(g, 'stale', 'stale: ', tag)));
        unjudged.forEach(g => ul.appendChild(pairList(g, 'unjudged', 'not judged: ')));
        explored.forEach(g => ul.appendChild(pairList(g, 'explored', 'explored: ')));
        div.appendChild(ul);
        section.appendChild(div);
      });
      if (column.unexpected.length) {
        const details = el('details', 'unexpected');
        details.appendChild(el('summary', '', column.unexpected.reduce((n, g) => n + g[1].length, 0) + ' failing pairs no cause lists (unexpected)'));
        const ul = el('ul', 'pairs');
        column.unexpected.forEach(g => ul.appendChild(pairList(g, 'unexpected', '')));
        details.appendChild(ul);
        section.appendChild(details);
      }
    }
    causeView.appendChild(section);
    const details = el('details', 'implementation-cases'); details.id = 'cases-c' + c;
    details.appendChild(el('summary', '', column.name + ': ' + column.cases.length + ' cases'));
    column.cases.forEach(([name, record, replay, page]) => {
      const [status, must, detail, firsts, total] = data.records[record];
      const div = el('div', 'case ' + s[status]); div.id = anchor(c, s[name]);
      const h = el('h4'); h.appendChild(el('code', '', s[name])); h.appendChild(document.createTextNode(' ' + s[status]));
      if (must !== null) { h.appendChild(document.createTextNode(' · ')); h.appendChild(el('span', 'must ' + s[must], 'MUST ' + s[must])); }
      div.appendChild(h);
      if (s[status] !== 'passed') {
        if (detail !== null) div.appendChild(el('p', 'detail', s[detail]));
        if (firsts.length) {
          div.appendChild(el('p', 'root', 'root cause: ' + s[firsts[0][0]] + ': ' + s[firsts[0][1]]));
          if (firsts.length > 1) {
            const ul = el('ul', 'violations');
            firsts.slice(1).forEach(([rule, message]) => ul.appendChild(el('li', '', s[rule] + ': ' + s[message])));
            div.appendChild(ul);
          }
          div.appendChild(el('p', 'total', total + ' violations of ' + firsts.length + ' rules (the first of each shown)'));
        }
        const causes = explains.get(s[name]);
        if (causes) {
          const p = el('p', 'causes', 'causes: ');
          causes.forEach(([id, label, target], i) => { if (i) p.appendChild(document.createTextNode(', ')); const a = el('a', '', id + ' (' + label + ')'); a.href = '#' + target; p.appendChild(a); });
          div.appendChild(p);
        }
        div.appendChild(el('pre', 'replay', s[replay].replace('\u0001', () => s[name])));
        if (page !== null) { const a = el('a', 'page', 'case page'); a.href = s[page]; div.appendChild(a); }
      }
      details.appendChild(div);
    });
    caseView.appendChild(details);
  });
  const open = () => {
    const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    const details = target && target.closest('details');
    if (details && !details.open) { details.open = true; target.scrollIntoView(); }
  };
  window.addEventListener('hashchange', open);
  document.addEventListener('click', event => { const a = event.target.closest('a[href^="#"]'); if (a) { const t = document.getElementById(a.getAttribute('href').slice(1)); const d = t && t.closest('details'); if (d) d.open = true; } });
  open();
  document.querySelectorAll('#filters input').forEach(box => {
    const apply = () => document.body.classList.toggle(box.id, box.checked);
    box.addEventListener('change', apply);
    apply();
  });
  document.body.setAttribute('data-js', 'ready');
})();
"##;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_between_folders() {
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/b/pages")), "./pages");
        assert_eq!(
            relative(Path::new("/a"), Path::new("/a/javascript:x")),
            "./javascript:x"
        );
        assert_eq!(relative(Path::new("/a/b/out"), Path::new("/a/b/pages")), "../pages");
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/b")), ".");
        assert_eq!(relative(Path::new("/x/y"), Path::new("/a")), "../../a");
    }

    #[test]
    fn temporary_homes_are_shown_as_a_fresh_one() {
        assert_eq!(
            portable("agentsim replay scenarios/a.json --impl 'HOME=/tmp/tmp.AbC123 node adapters/pi/adapter.mjs' --step-timeout-ms 10000"),
            "agentsim replay scenarios/a.json --impl 'HOME=$(mktemp -d) node adapters/pi/adapter.mjs' --step-timeout-ms 10000"
        );
        assert_eq!(
            portable("agentsim replay a.json --impl 'HOME=/tmp/h'"),
            "agentsim replay a.json --impl 'HOME=$(mktemp -d)'"
        );
        let kept = "agentsim replay a.json --impl 'python3 adapters/aelix/adapter.py --x=/tmp/y' --seed 0";
        assert_eq!(portable(kept), kept);
        assert_eq!(portable("agentsim replay a.json"), "agentsim replay a.json");
    }

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
