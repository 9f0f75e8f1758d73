//! Expected deviations of an implementation: the `expectations/<impl>.json` files and how a run
//! is judged against one (`agentsim run --expect FILE`).
//!
//! ```json
//! {"implementation": "pi-0.73.1",
//!  "deviations": [{"rule": "PERSIST-7", "scenarios": ["wiring/walkthrough"],
//!                  "reason": "why this implementation breaks the rule here",
//!                  "firstDivergence": "the first divergent trace line (informational)",
//!                  "source": {"file": "node_modules/pkg/dist/session.js", "function": "Session.persist", "line": 120},
//!                  "verdict": "bug"}]}
//! ```
//!
//! A deviation names a rule ID of conformance.md (or `expect` for a scenario's own `expect`
//! block, or `model[N].expect` for a request check, or `broken:<verdict code>` for a scenario on
//! which the implementation itself breaks, e.g. hangs: exit code 3 unless listed) and the scenarios (test names, as `run`
//! prints them) where that rule is expected to fail, with the reason. With `--expect`, a run
//! passes only when the (scenario, rule) failures it observes are exactly the listed ones among
//! the scenarios it ran: an unlisted failure is **unexpected**, a listed failure that no longer
//! happens is **stale**; both fail the run. Listed scenarios that were not run, or ran as not
//! applicable, are reported and neither confirm nor contradict the file.
//!
//! A deviation that shows only on some schedules lists those scenarios under `explored`
//! instead: `run` allows them and never calls them stale, and `agentsim explore --expect FILE`
//! passes when every (scenario, rule) failure it finds is listed under either key.
//!
//! The file is strict like a scenario: unknown fields are rejected and every problem names the
//! file, line and field. This module reads and compares; it never runs anything.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::check::RULE_IDS;
use crate::scenario::locate::{line_of, parse_path};
use crate::suite::{CaseReport, Verdict};

/// One `expectations/<impl>.json` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectationFile {
    /// Which implementation (and version) the file describes, e.g. `pi-0.73.1`.
    pub implementation: String,
    pub deviations: Vec<Deviation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Deviation {
    pub rule: String,
    /// Scenarios where the rule fails on the canonical schedule (`run`): each must fail.
    pub scenarios: Vec<String>,
    /// Scenarios where the same deviation shows only on some explored schedules (`explore
    /// --expect`): allowed to fail, never required to, so the deviation stays listed once, by
    /// rule and reason, whatever the schedule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explored: Vec<String>,
    pub reason: String,
    /// The first divergent trace line when the file was written; for readers, not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_divergence: Option<String>,
    /// Where in the implementation's installed source the trace comes to differ, confirmed by
    /// reading that source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceRef>,
    /// Whether the deviation is a real bug of the implementation or a design choice of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<DeviationVerdict>,
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

/// What a deviation is, for the implementation's users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviationVerdict {
    /// Data loss, a lost message, a prompt resolved before its entries were stored, a hang.
    Bug,
    /// A documented or deliberate design of the implementation that the contract does not share.
    Choice,
}

/// An expectation file that could not be used. Names the file, line and field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {field}: {message}")]
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
    let text = std::fs::read_to_string(path).map_err(|error| ExpectationError {
        file: path.to_path_buf(),
        line: 0,
        field: "-".into(),
        message: format!("cannot read: {error}"),
    })?;
    parse(path, &text)
}

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
        let field = if inner.is_syntax() || inner.is_eof() || field == "." {
            "-".to_string()
        } else {
            field
        };
        error(inner.line(), field, message)
    })?;
    deserializer
        .end()
        .map_err(|problem| error(problem.line(), "-".into(), "trailing characters".into()))?;
    let at = |field: String, message: String| error(line_of(text, &parse_path(&field)), field, message);
    if file.implementation.trim().is_empty() {
        return Err(at(
            "implementation".into(),
            "name the implementation, e.g. `pi-0.73.1`".into(),
        ));
    }
    let mut pairs = BTreeSet::new();
    for (index, deviation) in file.deviations.iter().enumerate() {
        if !is_known_rule(&deviation.rule) {
            return Err(at(
                format!("deviations[{index}].rule"),
                format!(
                    "unknown rule ID `{}` (a rule of conformance.md, `expect`, `model[N].expect` or `broken:<code>`)",
                    deviation.rule
                ),
            ));
        }
        if deviation.reason.trim().is_empty() {
            return Err(at(
                format!("deviations[{index}].reason"),
                "every deviation needs its reason".into(),
            ));
        }
        if let Some(source) = &deviation.source {
            if source.file.trim().is_empty() || source.function.trim().is_empty() || source.line == 0 {
                return Err(at(
                    format!("deviations[{index}].source"),
                    "a source names the installed file, the function and its 1-based line".into(),
                ));
            }
        }
        if deviation.scenarios.is_empty() && deviation.explored.is_empty() {
            return Err(at(
                format!("deviations[{index}].scenarios"),
                "name at least one scenario (under `scenarios`, or `explored` for one seen only under exploration)"
                    .into(),
            ));
        }
        for (scenario_index, scenario) in deviation.scenarios.iter().enumerate() {
            if !pairs.insert((scenario.clone(), deviation.rule.clone())) {
                return Err(at(
                    format!("deviations[{index}].scenarios[{scenario_index}]"),
                    format!("`{scenario}` is listed twice for {}", deviation.rule),
                ));
            }
        }
        for (scenario_index, scenario) in deviation.explored.iter().enumerate() {
            if !pairs.insert((scenario.clone(), deviation.rule.clone())) {
                return Err(at(
                    format!("deviations[{index}].explored[{scenario_index}]"),
                    format!("`{scenario}` is listed twice for {}", deviation.rule),
                ));
            }
        }
    }
    Ok(file)
}

fn is_known_rule(rule: &str) -> bool {
    if RULE_IDS.contains(&rule) || rule == "expect" {
        return true;
    }
    if let Some(code) = rule.strip_prefix("broken:") {
        return code.starts_with("subject.") && code.len() > "subject.".len();
    }
    rule.strip_prefix("model[")
        .and_then(|rest| rest.strip_suffix("].expect"))
        .is_some_and(|index| !index.is_empty() && index.bytes().all(|byte| byte.is_ascii_digit()))
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

/// How a run compares with an expectation file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Listed and observed.
    pub confirmed: Vec<Pair>,
    /// Observed, not listed; with the first violation's message.
    pub unexpected: Vec<(Pair, String)>,
    /// Listed, but the scenario ran, was judged, and did not fail the rule; with the reason.
    pub stale: Vec<(Pair, String)>,
    /// Listed, but the scenario was not run, not applicable or broken.
    pub unjudged: Vec<Pair>,
}

impl Comparison {
    /// The run matches the file exactly.
    pub fn holds(&self) -> bool {
        self.unexpected.is_empty() && self.stale.is_empty()
    }
}

/// Compares the failures of `reports` with `file`.
/// How an exploration's failures compare with a file: `(scenario, rule)` pairs seen and listed
/// (under `scenarios` or `explored`), and those seen but not listed. Under exploration nothing
/// is stale: a schedule-dependent deviation need not show on the schedules explored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExploredComparison {
    pub listed: Vec<Pair>,
    pub unexpected: Vec<(Pair, String)>,
}

pub fn compare_explored(file: &ExpectationFile, failures: &[(Pair, String)]) -> ExploredComparison {
    let allowed: BTreeSet<Pair> = file
        .deviations
        .iter()
        .flat_map(|deviation| {
            deviation
                .scenarios
                .iter()
                .chain(&deviation.explored)
                .map(|scenario| Pair {
                    scenario: scenario.clone(),
                    rule: deviation.rule.clone(),
                })
        })
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

pub fn compare(file: &ExpectationFile, reports: &[CaseReport]) -> Comparison {
    let mut observed: Vec<(Pair, String)> = Vec::new();
    for report in reports {
        if let Verdict::Broken(failure) = &report.verdict {
            let pair = Pair {
                scenario: report.name.clone(),
                rule: broken_rule(failure),
            };
            observed.push((pair, failure.to_string()));
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
            if !observed.iter().any(|(seen, _)| *seen == pair) {
                observed.push((pair, violation.message.clone()));
            }
        }
    }
    let mut comparison = Comparison::default();
    let mut listed = BTreeSet::new();
    for deviation in &file.deviations {
        // Schedule-dependent: allowed on the canonical schedule too, never required.
        for scenario in &deviation.explored {
            let pair = Pair {
                scenario: scenario.clone(),
                rule: deviation.rule.clone(),
            };
            if observed.iter().any(|(seen, _)| *seen == pair) {
                comparison.confirmed.push(pair.clone());
            }
            listed.insert(pair);
        }
        for scenario in &deviation.scenarios {
            let pair = Pair {
                scenario: scenario.clone(),
                rule: deviation.rule.clone(),
            };
            listed.insert(pair.clone());
            let judged = reports
                .iter()
                .find(|report| report.name == *scenario)
                .is_some_and(|report| matches!(report.verdict, Verdict::Passed | Verdict::Failed | Verdict::Broken(_)));
            if observed.iter().any(|(seen, _)| *seen == pair) {
                comparison.confirmed.push(pair);
            } else if judged {
                comparison.stale.push((pair, deviation.reason.clone()));
            } else {
                comparison.unjudged.push(pair);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<ExpectationFile, ExpectationError> {
        parse(Path::new("expectations/x.json"), text)
    }

    #[test]
    fn a_broken_verdict_can_be_expected_by_its_code() {
        let ok = r#"{"implementation":"pi","deviations":[{"rule":"broken:subject.timeout","scenarios":["a"],"reason":"hangs"}]}"#;
        assert!(parse_text(ok).is_ok());
        let bad = r#"{"implementation":"pi","deviations":[{"rule":"broken:","scenarios":["a"],"reason":"hangs"}]}"#;
        assert!(parse_text(bad).is_err());
    }

    #[test]
    fn a_valid_file_reads() {
        let file = parse_text(
            r#"{"implementation":"pi-0.73.1","deviations":[
                {"rule":"PERSIST-7","scenarios":["wiring/walkthrough"],"reason":"r","firstDivergence":"0011 ..."},
                {"rule":"model[0].expect","scenarios":["a/b"],"reason":"r",
                 "source":{"file":"dist/a.js","function":"A.b","line":3},"verdict":"choice"}]}"#,
        )
        .expect("valid");
        assert_eq!(file.deviations.len(), 2);
        assert_eq!(file.deviations[1].verdict, Some(DeviationVerdict::Choice));
        let error = parse_text(
            r#"{"implementation":"pi","deviations":[{"rule":"expect","scenarios":["a"],"reason":"r",
                "source":{"file":"dist/a.js","function":"A.b","line":0}}]}"#,
        )
        .unwrap_err();
        assert_eq!(error.field, "deviations[0].source");
        let error = parse_text(
            r#"{"implementation":"pi","deviations":[{"rule":"expect","scenarios":["a"],"reason":"r","verdict":"maybe"}]}"#,
        )
        .unwrap_err();
        assert!(error.message.contains("unknown variant"), "{error}");
    }

    #[test]
    fn problems_name_line_and_field() {
        let error = parse_text("{\"implementation\":\"pi\",\n\"deviations\":[\n{\"rule\":\"PERSIST-99\",\"scenarios\":[\"a\"],\"reason\":\"r\"}]}")
            .unwrap_err();
        assert_eq!(error.line, 3);
        assert_eq!(error.field, "deviations[0].rule");
        let error = parse_text(r#"{"implementation":"pi","deviations":[],"extra":1}"#).unwrap_err();
        assert!(error.message.contains("unknown field `extra`"), "{error}");
        let error = parse_text(
            r#"{"implementation":"pi","deviations":[{"rule":"expect","scenarios":["a","a"],"reason":"r"}]}"#,
        )
        .unwrap_err();
        assert_eq!(error.field, "deviations[0].scenarios[1]");
        let error =
            parse_text(r#"{"implementation":"pi","deviations":[{"rule":"expect","scenarios":["a"],"reason":" "}]}"#)
                .unwrap_err();
        assert_eq!(error.field, "deviations[0].reason");
        let error = parse_text(
            r#"{"implementation":"pi","deviations":[{"rule":"expect","scenarios":["a"],"explored":["a"],"reason":"r"}]}"#,
        )
        .unwrap_err();
        assert_eq!(error.field, "deviations[0].explored[0]");
        let error =
            parse_text(r#"{"implementation":"pi","deviations":[{"rule":"expect","scenarios":[],"reason":"r"}]}"#)
                .unwrap_err();
        assert_eq!(error.field, "deviations[0].scenarios");
    }

    #[test]
    fn explored_deviations_are_allowed_never_required() {
        let file = parse_text(
            r#"{"implementation":"pi","deviations":[
                {"rule":"PERSIST-7","scenarios":["a"],"explored":["b","c"],"reason":"r"}]}"#,
        )
        .expect("valid");
        let pair = |scenario: &str, rule: &str| Pair {
            scenario: scenario.into(),
            rule: rule.into(),
        };
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
    }
}
