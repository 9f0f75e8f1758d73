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
//! Reading a file is here, comparing a run with it is `compare.rs`.

mod compare;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::check::{level_of, Level, RULE_IDS};
use crate::scenario::locate::{find_duplicate_key, line_of, render_path, Segment};
use crate::scenario::{clip_message, printable};

pub use compare::{
    compare, compare_explored, observed_failures, pairs_by_rule, stale_line, CauseComparison, Comparison,
    ExploredComparison,
};

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
