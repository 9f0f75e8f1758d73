//! Expected deviations of an implementation: the `expectations/<impl>.json` files and how a run
//! is judged against one (`agentsim run --expect FILE`).
//!
//! A file lists **causes**: each is one thing the implementation does differently, with one
//! label, its reason, its place in the implementation's installed code, and the (scenario,
//! rule) pairs it explains:
//!
//! ```json
//! {"implementation": "pi-0.73.1",
//!  "causes": [
//!   {"id": "failed-append-swallowed", "verdict": "bug",
//!    "reason": "why this implementation's trace differs",
//!    "source": {"file": "node_modules/pkg/dist/session.js", "function": "Session.persist", "line": 120},
//!    "firstDivergence": "the first divergent trace line (informational)",
//!    "pairs": {"PERSIST-6": ["wiring/walkthrough"], "POISON-1": ["poison/flush-before-failure"]},
//!    "explored": {"POISON-2": ["poison/failure-in-second-prompt"]}}]}
//! ```
//!
//! A rule of `pairs` or `explored` is a rule ID of conformance.md, or `expect` (a scenario's own
//! `expect` block), `model[N].expect` (a request check of the scripted model) or
//! `broken:<verdict code>` (a scenario on which the implementation itself breaks, e.g. hangs:
//! exit code 3 unless listed); its scenarios are test names as `run` prints them. With
//! `--expect`, a run passes only when the (scenario, rule) failures it observes are exactly the
//! `pairs` of the file among the scenarios it ran: an unlisted failure is **unexpected**, a
//! listed failure that no longer happens is **stale** (reported per cause); both fail the run.
//! Listed scenarios that were not run, or ran as not applicable, are reported and neither
//! confirm nor contradict the file. `explored` pairs show only on some schedules: `run` allows
//! them and never calls them stale, and `agentsim explore --expect FILE` passes when every
//! (scenario, rule) failure it finds is listed under either key.
//!
//! What a file may say is checked when it is read: unknown fields are rejected, a cause's `id` is
//! unique, a pair has at most one cause, the source is the implementation's installed code (never
//! the adapter's), and a cause that explains a broken MUST rule is labelled `bug`. Every problem
//! names the file, line and field. This module reads and compares; it never runs anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::check::{level_of, Level, RULE_IDS};
use crate::run::{CaseReport, Verdict};
use crate::scenario::locate::{find_duplicate_key, line_of, render_path, Segment};
use crate::scenario::{clip_message, printable};

/// One `expectations/<impl>.json` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectationFile {
    /// Which implementation (and version) the file describes, e.g. `pi-0.73.1`.
    pub implementation: String,
    pub causes: Vec<Cause>,
}

/// Rule -> the scenarios where the rule fails for this cause.
pub type RulePairs = BTreeMap<String, Vec<String>>;

/// One cause of deviations: what the implementation does, where, with one label, and the
/// (scenario, rule) pairs it explains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Cause {
    /// Names the cause in reports and on the dashboard, e.g. `failed-append-swallowed`.
    pub id: String,
    /// Whether the cause is a bug of the implementation or a design choice of it.
    pub verdict: DeviationVerdict,
    pub reason: String,
    /// Where in the implementation's installed source the trace comes to differ, confirmed by
    /// reading that source.
    pub source: SourceRef,
    /// The first divergent trace line when the file was written; for readers, not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_divergence: Option<String>,
    /// Pairs that fail on the canonical schedule (`run`): each must fail.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pairs: RulePairs,
    /// Pairs that fail only on some explored schedules (`explore --expect`): allowed to fail,
    /// never required to.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub explored: RulePairs,
}

impl Cause {
    /// Its canonical pairs, in rule order ([`rule_order`]), scenarios sorted.
    pub fn canonical_pairs(&self) -> Vec<Pair> {
        flatten(&self.pairs)
    }

    /// Its explored pairs, in rule order, scenarios sorted.
    pub fn explored_pairs(&self) -> Vec<Pair> {
        flatten(&self.explored)
    }
}

fn flatten(pairs: &RulePairs) -> Vec<Pair> {
    let mut flat: Vec<Pair> = pairs
        .iter()
        .flat_map(|(rule, scenarios)| {
            scenarios.iter().map(move |scenario| Pair {
                scenario: scenario.clone(),
                rule: rule.clone(),
            })
        })
        .collect();
    flat.sort_by(|a, b| {
        rule_order(&a.rule)
            .cmp(&rule_order(&b.rule))
            .then(a.scenario.cmp(&b.scenario))
    });
    flat
}

/// A place in an implementation's installed source: the file (as installed, relative to the
/// adapter's folder, e.g. `node_modules/@mariozechner/pi-coding-agent/dist/core/agent-session.js`),
/// the function and the line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SourceRef {
    pub file: String,
    pub function: String,
    pub line: u32,
}

/// What a cause is, for the implementation's users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviationVerdict {
    /// Data loss, a lost message, a prompt resolved before its entries were stored, a hang.
    Bug,
    /// A documented or deliberate design of the implementation that the contract does not share
    /// (never of a MUST rule).
    Choice,
}

impl DeviationVerdict {
    pub fn word(self) -> &'static str {
        match self {
            DeviationVerdict::Bug => "bug",
            DeviationVerdict::Choice => "choice",
        }
    }
}

/// An expectation file that could not be used. Names the file, line and field; printed on one
/// line, with the input it quotes cut and its control characters escaped, as a scenario
/// file's errors are (`scenario::clip_message`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {}: {}", printable(&file.display().to_string()), printable(field), clip_message(message))]
pub struct ExpectationError {
    pub file: PathBuf,
    pub line: usize,
    pub field: String,
    pub message: String,
}

impl ExpectationError {
    pub fn code(&self) -> &'static str {
        "expectations.invalid"
    }
}

/// Reads and validates an expectation file.
pub fn load(path: &Path) -> Result<ExpectationFile, ExpectationError> {
    let error = |line: usize, field: String, message: String| ExpectationError {
        file: path.to_path_buf(),
        line,
        field,
        message,
    };
    // Lines are 1-based: a problem with the file as a whole is reported at its first line.
    let cannot_read = |problem: std::io::Error| error(1, "-".into(), format!("cannot read: {problem}"));
    // Only a regular file is read: a FIFO nobody writes would block, a device never end.
    let kind = std::fs::metadata(path).map_err(cannot_read)?.file_type();
    if !kind.is_file() {
        return Err(error(
            1,
            "-".into(),
            format!(
                "not a regular file but {}: an expectations file is a JSON file",
                crate::scenario::kind_of(&kind)
            ),
        ));
    }
    let bytes = std::fs::read(path).map_err(cannot_read)?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        Err(problem) => {
            let (line, field, message) = crate::scenario::locate::invalid_utf8(&bytes, problem);
            return Err(error(line, field, message));
        }
    };
    parse(path, text)
}

/// The message of a source that cites something else than the implementation's installed code.
pub const ADAPTER_SOURCE: &str = "a deviation cites the implementation's code, not the adapter's: \
     name the file as installed below the adapter's folder (e.g. `node_modules/...`, `.venv/...`)";

/// The message of a `choice` cause that lists a pair of a MUST rule.
pub const MUST_IS_A_BUG: &str = "a broken MUST rule is a bug, never a choice: label the cause bug, \
     or argue in conformance.md that the rule is SHOULD";

/// Parses and validates expectation text.
pub fn parse(path: &Path, text: &str) -> Result<ExpectationFile, ExpectationError> {
    let error = |line: usize, field: String, message: String| ExpectationError {
        file: path.to_path_buf(),
        line,
        field,
        message,
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let file: ExpectationFile = serde_path_to_error::deserialize(&mut deserializer).map_err(|problem| {
        let field = problem.path().to_string();
        let inner = problem.into_inner();
        let message = inner.to_string();
        let message = match message.rfind(" at line ") {
            Some(at) => message[..at].to_string(),
            None => message,
        };
        // The whole file (`-`) when the path is empty: an unknown key `` at the top names none.
        let field = if inner.is_syntax() || inner.is_eof() || field == "." || field.is_empty() {
            "-".to_string()
        } else {
            field
        };
        error(inner.line(), field, message)
    })?;
    deserializer
        .end()
        .map_err(|problem| error(problem.line(), "-".into(), "trailing characters".into()))?;
    if let Some((path, line, key)) = find_duplicate_key(text) {
        return Err(error(
            line,
            render_path(&path),
            format!("`{key}` is given twice in one object"),
        ));
    }
    let at = |segments: Vec<Segment>, message: String| error(line_of(text, &segments), render_path(&segments), message);
    let key = |name: &str| Segment::Key(name.to_string());
    if file.implementation.trim().is_empty() {
        return Err(at(
            vec![key("implementation")],
            "name the implementation, e.g. `pi-0.73.1`".into(),
        ));
    }
    let mut ids: BTreeMap<&str, usize> = BTreeMap::new();
    // (scenario, rule) -> the cause that lists it.
    let mut owners: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (index, cause) in file.causes.iter().enumerate() {
        let field = |rest: &[Segment]| {
            let mut segments = vec![key("causes"), Segment::Index(index)];
            segments.extend_from_slice(rest);
            segments
        };
        if cause.id.trim().is_empty() {
            return Err(at(
                field(&[key("id")]),
                "name the cause, e.g. `failed-append-swallowed`".into(),
            ));
        }
        if let Some(first) = ids.insert(cause.id.as_str(), index) {
            return Err(at(
                field(&[key("id")]),
                format!("cause `{}` is also causes[{first}]: a cause's id is unique", cause.id),
            ));
        }
        if cause.reason.trim().is_empty() {
            return Err(at(field(&[key("reason")]), "every cause needs its reason".into()));
        }
        let source = &cause.source;
        if source.file.trim().is_empty() || source.function.trim().is_empty() || source.line == 0 {
            return Err(at(
                field(&[key("source")]),
                "a source names the installed file, the function and its 1-based line".into(),
            ));
        }
        if !is_installed_code(&source.file) {
            return Err(at(field(&[key("source"), key("file")]), ADAPTER_SOURCE.into()));
        }
        if cause.pairs.is_empty() && cause.explored.is_empty() {
            return Err(at(
                field(&[key("pairs")]),
                "name at least one (scenario, rule) pair (under `pairs`, or `explored` for one seen only under exploration)"
                    .into(),
            ));
        }
        for (list, pairs) in [("pairs", &cause.pairs), ("explored", &cause.explored)] {
            for (rule, scenarios) in pairs {
                if !is_known_rule(rule) {
                    return Err(at(
                        field(&[key(list), key(rule)]),
                        format!(
                            "unknown rule ID `{rule}` (a rule of conformance.md, `expect`, `model[N].expect` or `broken:<code>`)"
                        ),
                    ));
                }
                if scenarios.is_empty() {
                    return Err(at(
                        field(&[key(list), key(rule)]),
                        format!("name at least one scenario where {rule} fails, or leave the rule out"),
                    ));
                }
                for (scenario_index, scenario) in scenarios.iter().enumerate() {
                    let place = field(&[key(list), key(rule), Segment::Index(scenario_index)]);
                    if scenario.trim().is_empty() {
                        return Err(at(place, "a scenario is named as `run` prints it".into()));
                    }
                    match owners.insert((scenario.as_str(), rule.as_str()), index) {
                        Some(owner) if owner == index => {
                            return Err(at(
                                place,
                                format!("`{scenario}` is listed twice for {rule} in cause `{}`", cause.id),
                            ))
                        }
                        Some(owner) => {
                            return Err(at(
                                place,
                                format!(
                                    "`{scenario}` {rule} is listed by cause `{}` and by cause `{}`: a (scenario, rule) pair has one cause",
                                    file.causes[owner].id, cause.id
                                ),
                            ))
                        }
                        None => {}
                    }
                }
            }
        }
        if cause.verdict == DeviationVerdict::Choice {
            let must: Vec<&str> = cause
                .pairs
                .keys()
                .chain(cause.explored.keys())
                .filter(|rule| level_of(rule) == Some(Level::Must))
                .map(String::as_str)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            if !must.is_empty() {
                return Err(at(
                    field(&[key("verdict")]),
                    format!("{MUST_IS_A_BUG} (cause `{}` lists {})", cause.id, must.join(", ")),
                ));
            }
        }
    }
    Ok(file)
}

/// Whether `file` names the implementation's installed code: relative, inside the adapter's
/// folder, and not the adapter's own files.
pub fn is_installed_code(file: &str) -> bool {
    let file = file.trim();
    !(file.starts_with("adapters/")
        || file.starts_with("../")
        || file.starts_with('/')
        || file.starts_with('\\')
        || file.contains("/adapters/")
        || file.split(['/', '\\']).any(|part| part == ".."))
}

fn is_known_rule(rule: &str) -> bool {
    if RULE_IDS.contains(&rule) || rule == "expect" {
        return true;
    }
    if let Some(code) = rule.strip_prefix("broken:") {
        return code.starts_with("subject.") && code.len() > "subject.".len();
    }
    model_check_index(rule).is_some()
}

fn model_check_index(rule: &str) -> Option<usize> {
    rule.strip_prefix("model[")
        .and_then(|rest| rest.strip_suffix("].expect"))
        .filter(|index| !index.is_empty() && index.bytes().all(|byte| byte.is_ascii_digit()))
        .and_then(|index| index.parse().ok())
}

/// The order rules are shown in: the catalogue's, then `expect`, the model's request checks by
/// index, and broken verdicts.
pub fn rule_order(rule: &str) -> (usize, usize, String) {
    if let Some(position) = RULE_IDS.iter().position(|id| *id == rule) {
        return (0, position, String::new());
    }
    if rule == "expect" {
        return (1, 0, String::new());
    }
    if let Some(index) = model_check_index(rule) {
        return (2, index, String::new());
    }
    (3, 0, rule.to_string())
}

/// The pseudo-rule under which a broken verdict is listed: `broken:<code>`.
pub fn broken_rule(failure: &crate::sim::SubjectFailure) -> String {
    format!("broken:{}", failure.code())
}

/// One (scenario, rule) pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pair {
    pub scenario: String,
    pub rule: String,
}

impl ExpectationFile {
    /// Keeps only the pairs whose rule `keep` accepts (the rules that judge a run): the others
    /// are neither confirmed nor stale. A cause left without pairs stays, with none.
    pub fn retain_rules(&mut self, keep: impl Fn(&str) -> bool) {
        for cause in &mut self.causes {
            cause.pairs.retain(|rule, _| keep(rule));
            cause.explored.retain(|rule, _| keep(rule));
        }
    }

    /// The cause with this id.
    pub fn cause(&self, id: &str) -> Option<&Cause> {
        self.causes.iter().find(|cause| cause.id == id)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "expectations/x.json";

    fn parse_text(text: &str) -> Result<ExpectationFile, ExpectationError> {
        parse(Path::new(FILE), text)
    }

    const SOURCE: &str = r#""source":{"file":"dist/a.js","function":"A.b","line":3}"#;

    /// A file of one cause with `fields` after its id.
    fn one_cause(fields: &str) -> String {
        format!(r#"{{"implementation":"pi","causes":[{{"id":"c",{fields}}}]}}"#)
    }

    #[test]
    fn a_valid_file_reads() {
        let file = parse_text(&format!(
            r#"{{"implementation":"pi-0.73.1","causes":[
                {{"id":"persist-at-message-end","verdict":"choice","reason":"r",{SOURCE},"firstDivergence":"0011 ...",
                  "pairs":{{"PERSIST-7":["wiring/walkthrough","a/b"],"model[0].expect":["a/b"]}}}},
                {{"id":"hangs","verdict":"bug","reason":"r",{SOURCE},
                  "pairs":{{"broken:subject.timeout":["a"]}},"explored":{{"POISON-2":["a/b"]}}}}]}}"#
        ))
        .expect("valid");
        assert_eq!(file.causes.len(), 2);
        assert_eq!(file.causes[0].verdict, DeviationVerdict::Choice);
        assert_eq!(
            file.causes[0].canonical_pairs(),
            [
                Pair {
                    scenario: "a/b".into(),
                    rule: "PERSIST-7".into()
                },
                Pair {
                    scenario: "wiring/walkthrough".into(),
                    rule: "PERSIST-7".into()
                },
                Pair {
                    scenario: "a/b".into(),
                    rule: "model[0].expect".into()
                }
            ]
        );
        assert_eq!(file.causes[1].explored_pairs().len(), 1);
    }

    #[test]
    fn a_broken_verdict_can_be_expected_by_its_code() {
        let ok = one_cause(&format!(
            r#""verdict":"bug","reason":"hangs",{SOURCE},"pairs":{{"broken:subject.timeout":["a"]}}"#
        ));
        assert!(parse_text(&ok).is_ok());
        let bad = one_cause(&format!(
            r#""verdict":"bug","reason":"hangs",{SOURCE},"pairs":{{"broken:":["a"]}}"#
        ));
        let error = parse_text(&bad).unwrap_err();
        assert_eq!(error.field, "causes[0].pairs[\"broken:\"]");
    }

    /// Every problem names the file, the line and the field, whether serde or validation found it.
    #[test]
    fn problems_name_file_line_and_field() {
        let cases: &[(&str, usize, &str, &str)] = &[
            // An unknown rule, on the line of its key.
            (
                "{\"implementation\":\"pi\",\n\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\n\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\n\"pairs\":{\"PERSIST-99\":[\"a\"]}}]}",
                4,
                "causes[0].pairs.PERSIST-99",
                "unknown rule ID `PERSIST-99`",
            ),
            // An unknown field, found by serde.
            (
                "{\"implementation\":\"pi\",\n\"causes\":[],\n\"extra\":1}",
                3,
                "extra",
                "unknown field `extra`",
            ),
            // No verdict.
            (
                "{\"implementation\":\"pi\",\"causes\":[\n{\"id\":\"c\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\"pairs\":{\"expect\":[\"a\"]}}]}",
                2,
                "causes[0]",
                "missing field `verdict`",
            ),
            // A verdict that is neither.
            (
                "{\"implementation\":\"pi\",\"causes\":[\n{\"id\":\"c\",\"verdict\":\"maybe\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\"pairs\":{\"expect\":[\"a\"]}}]}",
                2,
                "causes[0].verdict",
                "unknown variant `maybe`",
            ),
            // A blank reason.
            (
                "{\"implementation\":\"pi\",\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\n\"reason\":\" \",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\"pairs\":{\"expect\":[\"a\"]}}]}",
                2,
                "causes[0].reason",
                "needs its reason",
            ),
            // A source line 0.
            (
                "{\"implementation\":\"pi\",\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\n\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":0},\"pairs\":{\"expect\":[\"a\"]}}]}",
                2,
                "causes[0].source",
                "1-based line",
            ),
            // No pair at all.
            (
                "{\"implementation\":\"pi\",\"causes\":[\n{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1}}]}",
                2,
                "causes[0].pairs",
                "at least one (scenario, rule) pair",
            ),
            // A rule with no scenario.
            (
                "{\"implementation\":\"pi\",\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\n\"pairs\":{\n\"model[1].expect\":[]}}]}",
                3,
                "causes[0].pairs[\"model[1].expect\"]",
                "at least one scenario",
            ),
            // The same scenario twice for one rule of one cause.
            (
                "{\"implementation\":\"pi\",\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\n\"pairs\":{\"expect\":[\"a\"]},\n\"explored\":{\"expect\":[\"a\"]}}]}",
                3,
                "causes[0].explored.expect[0]",
                "`a` is listed twice for expect in cause `c`",
            ),
            // A key given twice.
            (
                "{\"implementation\":\"pi\",\"causes\":[{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\"source\":{\"file\":\"dist/a.js\",\"function\":\"f\",\"line\":1},\"pairs\":{\"expect\":[\"a\"],\n\"expect\":[\"b\"]}}]}",
                2,
                "causes[0].pairs.expect",
                "given twice",
            ),
            // No implementation.
            ("{\"implementation\":\" \",\n\"causes\":[]}", 1, "implementation", "name the implementation"),
            // A syntax error.
            ("{\"implementation\":\"pi\",\n\"causes\":[}", 2, "-", "expected value"),
        ];
        for (text, line, field, message) in cases {
            let error = parse_text(text).unwrap_err();
            assert_eq!(error.file, Path::new(FILE), "{error}");
            assert_eq!((error.line, error.field.as_str()), (*line, *field), "{error}");
            assert!(error.message.contains(message), "{error}");
            assert!(
                error.to_string().starts_with(&format!("{FILE}:{line}: {field}: ")),
                "{error}"
            );
        }
    }

    #[test]
    fn a_cause_id_is_given_once() {
        let text = format!(
            "{{\"implementation\":\"pi\",\"causes\":[\n{{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",{SOURCE},\"pairs\":{{\"expect\":[\"a\"]}}}},\n{{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",{SOURCE},\"pairs\":{{\"expect\":[\"b\"]}}}}]}}"
        );
        let error = parse_text(&text).unwrap_err();
        assert_eq!((error.line, error.field.as_str()), (3, "causes[1].id"), "{error}");
        assert!(error.message.contains("also causes[0]"), "{error}");
        let blank = one_cause(&format!(
            r#""verdict":"bug","reason":"r",{SOURCE},"pairs":{{"expect":["a"]}}"#
        ))
        .replace("\"id\":\"c\"", "\"id\":\"\"");
        assert_eq!(parse_text(&blank).unwrap_err().field, "causes[0].id");
    }

    /// A (scenario, rule) pair has one cause: listed by two, the error names both.
    #[test]
    fn a_pair_in_two_causes_is_refused() {
        let text = format!(
            "{{\"implementation\":\"pi\",\"causes\":[\n{{\"id\":\"first\",\"verdict\":\"bug\",\"reason\":\"r\",{SOURCE},\"pairs\":{{\"POISON-1\":[\"a\",\"b\"]}}}},\n{{\"id\":\"second\",\"verdict\":\"bug\",\"reason\":\"r\",{SOURCE},\n\"explored\":{{\"POISON-1\":[\"b\"]}}}}]}}"
        );
        let error = parse_text(&text).unwrap_err();
        assert_eq!(
            (error.line, error.field.as_str()),
            (4, "causes[1].explored.POISON-1[0]"),
            "{error}"
        );
        assert!(
            error.message.contains("listed by cause `first` and by cause `second`"),
            "{error}"
        );
    }

    /// A source cites the implementation's installed code: never a file of the adapter.
    #[test]
    fn an_adapter_source_is_refused() {
        for file in [
            "adapters/pi/adapter.mjs",
            "../pi-family/family.mjs",
            "/usr/lib/node_modules/pi/dist/a.js",
            "releases/0.70.6/adapters/pi/x.js",
            "node_modules/../../family.mjs",
        ] {
            let text = format!(
                "{{\"implementation\":\"pi\",\"causes\":[{{\"id\":\"c\",\"verdict\":\"bug\",\"reason\":\"r\",\n\"source\":{{\n\"file\":{},\"function\":\"f\",\"line\":1}},\"pairs\":{{\"expect\":[\"a\"]}}}}]}}",
                serde_json::to_string(file).expect("a string")
            );
            let error = parse_text(&text).unwrap_err();
            assert_eq!(
                (error.line, error.field.as_str()),
                (3, "causes[0].source.file"),
                "{file}: {error}"
            );
            assert!(error.message.contains("not the adapter's"), "{error}");
        }
        for file in [
            "node_modules/@mariozechner/pi-coding-agent/dist/core/agent-session.js",
            "releases/0.70.6/node_modules/pkg/dist/a.js",
            ".venv/lib/python3.11/site-packages/aelix_agent_core/harness/core.py",
        ] {
            assert!(is_installed_code(file), "{file}");
        }
    }

    /// A cause labelled `choice` may not explain a broken MUST rule, under `pairs` or `explored`.
    #[test]
    fn a_must_pair_under_a_choice_cause_is_refused() {
        assert_eq!(level_of("POISON-1"), Some(Level::Must));
        assert_eq!(level_of("PROJECT-2"), Some(Level::Should));
        for list in ["pairs", "explored"] {
            let text = format!(
                "{{\"implementation\":\"pi\",\"causes\":[{{\"id\":\"swallowed\",\n\"verdict\":\"choice\",\"reason\":\"r\",{SOURCE},\n\"{list}\":{{\"PROJECT-2\":[\"a\"],\"POISON-1\":[\"b\"]}}}}]}}"
            );
            let error = parse_text(&text).unwrap_err();
            assert_eq!((error.line, error.field.as_str()), (2, "causes[0].verdict"), "{error}");
            assert!(error.message.starts_with(MUST_IS_A_BUG), "{error}");
            assert!(error.message.contains("lists POISON-1"), "{error}");
            assert!(parse_text(&text.replace("\"choice\"", "\"bug\"")).is_ok());
        }
        // SHOULD rules and the scenario's own checks may be a choice.
        let text = one_cause(&format!(
            r#""verdict":"choice","reason":"r",{SOURCE},"pairs":{{"PROJECT-2":["a"],"expect":["a"],"model[0].expect":["a"],"broken:subject.timeout":["b"]}}"#
        ));
        assert!(parse_text(&text).is_ok());
    }

    fn pair(scenario: &str, rule: &str) -> Pair {
        Pair {
            scenario: scenario.into(),
            rule: rule.into(),
        }
    }

    /// A passed case, and a failed one breaking `rules`.
    fn case(name: &str, rules: &[&str]) -> CaseReport {
        let mut report = CaseReport::unrun(
            name,
            crate::run::Run::at(PathBuf::from(format!("scenarios/{name}.json"))),
        );
        if rules.is_empty() {
            report.verdict = Verdict::Passed;
        } else {
            report.verdict = Verdict::Failed;
            report.violations = rules
                .iter()
                .map(|rule| crate::check::Violation {
                    rule: rule.to_string(),
                    clause: None,
                    lines: vec![1],
                    message: format!("{rule} broke"),
                    evident_at: None,
                })
                .collect();
        }
        report
    }

    #[test]
    fn explored_deviations_are_allowed_never_required() {
        let file = parse_text(&one_cause(&format!(
            r#""verdict":"bug","reason":"r",{SOURCE},"pairs":{{"PERSIST-7":["a"]}},"explored":{{"PERSIST-7":["b","c"]}}"#
        )))
        .expect("valid");
        // Under exploration: listed under either key is fine, anything else is unexpected.
        let found = [
            (pair("a", "PERSIST-7"), "m".to_string()),
            (pair("c", "PERSIST-7"), "m".to_string()),
            (pair("c", "PERSIST-6"), "m".to_string()),
        ];
        let explored = compare_explored(&file, &found);
        assert_eq!(explored.listed, [pair("a", "PERSIST-7"), pair("c", "PERSIST-7")]);
        assert_eq!(explored.unexpected, [(pair("c", "PERSIST-6"), "m".to_string())]);
        // On the canonical schedule an explored pair that passes is not stale; a canonical one is.
        let comparison = compare(&file, &[]);
        assert!(comparison.stale.is_empty());
        assert_eq!(comparison.unjudged, [pair("a", "PERSIST-7")]);
        let comparison = compare(&file, &[case("a", &[]), case("b", &[]), case("c", &["PERSIST-7"])]);
        assert_eq!(comparison.stale, [(pair("a", "PERSIST-7"), "c".to_string())]);
        assert_eq!(comparison.confirmed, [pair("c", "PERSIST-7")]);
    }

    /// Stale pairs are told per cause: one line per cause, its pairs by rule; unexpected ones
    /// stay one per pair, and a cause whose pairs all still fail says nothing.
    #[test]
    fn stale_pairs_are_grouped_by_cause() {
        let file = parse_text(&format!(
            r#"{{"implementation":"pi","causes":[
                {{"id":"failed-append-swallowed","verdict":"bug","reason":"r",{SOURCE},
                  "pairs":{{"POISON-1":["c","d"],"PERSIST-6":["a","b","d"]}}}},
                {{"id":"system-prompt","verdict":"choice","reason":"r",{SOURCE},"pairs":{{"PROJECT-2":["a","b"]}}}},
                {{"id":"not-run","verdict":"choice","reason":"r",{SOURCE},"pairs":{{"PROJECT-2":["z"]}}}}]}}"#
        ))
        .expect("valid");
        let reports = [
            case("a", &["PROJECT-2"]),
            case("b", &["PROJECT-2", "WIRE-1"]),
            case("c", &[]),
            case("d", &["POISON-1", "PERSIST-6"]),
        ];
        let comparison = compare(&file, &reports);
        assert!(!comparison.holds());
        assert_eq!(
            comparison.unexpected,
            [(pair("b", "WIRE-1"), "WIRE-1 broke".to_string())]
        );
        assert_eq!(comparison.unjudged, [pair("z", "PROJECT-2")]);
        let stale: Vec<String> = comparison
            .causes
            .iter()
            .filter(|cause| !cause.stale.is_empty())
            .map(stale_line)
            .collect();
        assert_eq!(
            stale,
            ["STALE cause failed-append-swallowed (bug): 3 of 5 pairs no longer fail: PERSIST-6 on a, b; POISON-1 on c"]
        );
        let swallowed = &comparison.causes[0];
        assert_eq!(swallowed.confirmed, [pair("d", "PERSIST-6"), pair("d", "POISON-1")]);
        assert_eq!(comparison.causes[1].confirmed.len(), 2);
        assert!(comparison.causes[1].stale.is_empty());
        assert_eq!(comparison.causes[2].unjudged, [pair("z", "PROJECT-2")]);
        assert_eq!(comparison.stale.len(), 3);
        assert!(comparison
            .stale
            .iter()
            .all(|(_, cause)| cause == "failed-append-swallowed"));
    }

    #[test]
    fn rules_are_ordered_as_the_catalogue_then_the_scenario_checks() {
        let mut rules = vec![
            "broken:subject.timeout",
            "model[10].expect",
            "expect",
            "POISON-1",
            "model[2].expect",
            "RESTORE-1",
        ];
        rules.sort_by_key(|rule| rule_order(rule));
        assert_eq!(
            rules,
            [
                "RESTORE-1",
                "POISON-1",
                "expect",
                "model[2].expect",
                "model[10].expect",
                "broken:subject.timeout"
            ]
        );
    }
}
