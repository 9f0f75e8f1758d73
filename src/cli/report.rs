//! Output formats for a set of cases: human lines, a JSON report, JUnit XML (the markdown
//! conformance matrix is `matrix`). None of them contains a time or an address, so two runs
//! print the same bytes. Text that comes from input (a violation's message quoting a scenario,
//! a verdict quoting an adapter's line, its stderr) is printed with its control characters
//! escaped ([`shown`]): on a terminal it stays on its line and repaints nothing, and JUnit's XML
//! stays XML.

use serde_json::json;

use crate::sim::StrategyKind;
use crate::suite::{CaseReport, Verdict};
use crate::trace::render_line;

/// (passed, failed, not applicable); broken and bad cases count as failed.
pub(crate) fn counts(reports: &[CaseReport]) -> (usize, usize, usize) {
    let passed = reports
        .iter()
        .filter(|report| report.verdict == Verdict::Passed)
        .count();
    let not_applicable = reports
        .iter()
        .filter(|report| matches!(report.verdict, Verdict::NotApplicable { .. }))
        .count();
    (passed, reports.len() - passed - not_applicable, not_applicable)
}

/// The closing line every format's human form ends with: `N passed, N failed`, preceded by a
/// `N not applicable` line when some cases were.
pub(crate) fn summary(reports: &[CaseReport]) -> String {
    let (passed, failed, not_applicable) = counts(reports);
    let mut text = String::new();
    if not_applicable > 0 {
        text.push_str(&format!("{not_applicable} not applicable\n"));
    }
    text.push_str(&format!("{passed} passed, {failed} failed\n"));
    text
}

/// `text` from input, as the human and JUnit reports print it: control characters escaped.
fn shown(text: &str) -> String {
    crate::scenario::printable(text)
}

/// How many stderr lines of a broken adapter the human report shows.
const STDERR_LINES_SHOWN: usize = 10;

/// The human report without its summary: one block per case.
pub(crate) fn human_cases(reports: &[CaseReport]) -> String {
    let mut text = String::new();
    for report in reports {
        match &report.verdict {
            Verdict::Passed => text.push_str(&format!("ok     {}\n", report.name)),
            Verdict::Failed => {
                text.push_str(&format!("FAIL   {}\n", report.name));
                for (index, violation) in report.violations.iter().enumerate() {
                    if index == 0 {
                        text.push_str(&format!("       root cause: {}\n", violation_line(violation)));
                        let later = report.violations.len() - 1;
                        if later > 0 {
                            text.push_str(&format!(
                                "       then {later} later violation{}, which may follow from it:\n",
                                if later == 1 { "" } else { "s" }
                            ));
                        }
                    } else {
                        text.push_str(&format!("         {}\n", violation_line(violation)));
                    }
                }
                if let Some(divergence) = &report.divergence {
                    for line in divergence.describe() {
                        text.push_str(&format!("       {}\n", shown(&line)));
                    }
                }
                text.push_str(&format!("       replay: {}\n", report.replay_command()));
            }
            Verdict::BadScenario(error) => {
                text.push_str(&format!("BAD    {}: {}\n", report.name, shown(&error.to_string())))
            }
            Verdict::Broken(failure) => {
                text.push_str(&format!(
                    "BROKEN {}: {} ({})\n",
                    report.name,
                    shown(&failure.to_string()),
                    failure.code()
                ));
                let tail = failure.stderr_tail();
                for line in &tail[tail.len().saturating_sub(STDERR_LINES_SHOWN)..] {
                    text.push_str(&format!("       stderr: {}\n", shown(line)));
                }
                text.push_str(&format!("       replay: {}\n", report.replay_command()));
            }
            Verdict::NotApplicable { reason } => text.push_str(&format!("n/a    {}: {}\n", report.name, shown(reason))),
        }
    }
    text
}

/// `RULE [trace 0012,0014] message`, with the line where it became evident when the lines
/// it names do not include it.
pub(crate) fn violation_line(violation: &crate::check::Violation) -> String {
    let lines: Vec<String> = violation.lines.iter().map(|line| format!("{line:04}")).collect();
    let evident = match violation.evident_at {
        Some(at) if !violation.lines.contains(&at) => format!("; evident at {at:04}"),
        _ => String::new(),
    };
    format!(
        "{} [trace {}{evident}] {}",
        violation.id(),
        lines.join(","),
        shown(&violation.message)
    )
}

/// What the failing cases come to (root causes, findings), the level reached and, for an
/// implementation, the features it declared and fails: printed after the cases.
pub(crate) fn corpus_summary(
    reports: &[CaseReport],
    selection: &crate::check::Selection,
    hello: Option<&crate::protocol::wire::Hello>,
    corpus: &[crate::scenario::LoadedScenario],
) -> String {
    let mut text = tally(reports, &named_rules(corpus)).text("case");
    // With no case judged, every rule would "hold": say nothing rather than something vacuous.
    if reports
        .iter()
        .any(|report| matches!(report.verdict, Verdict::Passed | Verdict::Failed))
    {
        text.push_str(&super::findings::level_line(
            &level_counts(reports, selection, corpus),
            "case",
        ));
    }
    if !selection.is_all() {
        text.push_str(&format!("judged by {}\n", selection.describe()));
    }
    if let Some(hello) = hello {
        for line in super::findings::declared_and_failing(reports, hello, corpus) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    text
}

/// The root causes and findings of the failing cases; a case with no trace (broken, a bad
/// scenario) breaks the rules it names (`rules_of` gives a scenario's).
pub(crate) fn tally(reports: &[CaseReport], rules_of: &dyn Fn(&str) -> Vec<String>) -> crate::findings::Tally {
    let mut tally = crate::findings::Tally::default();
    for report in reports {
        match report.verdict {
            Verdict::Failed => tally.add(&report.name, &report.violations, report.divergence.as_ref()),
            Verdict::Broken(_) | Verdict::BadScenario(_) => tally.add_untraced(&rules_of(&report.name)),
            Verdict::Passed | Verdict::NotApplicable { .. } => {}
        }
    }
    tally
}

/// A scenario's named rules, looked up in `corpus`.
fn named_rules(corpus: &[crate::scenario::LoadedScenario]) -> impl Fn(&str) -> Vec<String> + '_ {
    move |name| {
        corpus
            .iter()
            .find(|loaded| loaded.name == name)
            .map(|loaded| loaded.scenario.rules.clone())
            .unwrap_or_default()
    }
}

fn level_counts(
    reports: &[CaseReport],
    selection: &crate::check::Selection,
    corpus: &[crate::scenario::LoadedScenario],
) -> std::collections::BTreeMap<crate::check::Level, (usize, usize)> {
    tally(reports, &named_rules(corpus)).level_counts(selection)
}

/// The JSON report with what the corpus comes to: `rootCauses`, `findings`, `levels`.
pub(crate) fn json_judged(
    reports: &[CaseReport],
    strategy: StrategyKind,
    seed: u64,
    selection: &crate::check::Selection,
    hello: Option<&crate::protocol::wire::Hello>,
    corpus: &[crate::scenario::LoadedScenario],
) -> String {
    let text = json(reports, strategy, seed);
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("the report is JSON");
    let findings: Vec<serde_json::Value> = tally(reports, &named_rules(corpus))
        .findings()
        .iter()
        .map(|finding| {
            json!({
                "rule": finding.rule,
                "signature": finding.signature,
                "cases": finding.count,
                "scenarios": finding.scenarios,
            })
        })
        .collect();
    value["findings"] = json!(findings);
    // Each case's named rules: a case with no trace fails those (the dashboard's counts).
    if let Some(results) = value["results"].as_array_mut() {
        let rules_of = named_rules(corpus);
        for result in results {
            let name = result["name"].as_str().unwrap_or_default().to_string();
            result["rules"] = json!(rules_of(&name));
        }
    }
    value["levels"] = super::findings::level_json(&level_counts(reports, selection, corpus));
    value["judged"] = json!(selection.describe());
    if let Some(hello) = hello {
        value["declaredAndFailing"] = json!(super::findings::declared_and_failing(reports, hello, corpus));
    }
    let mut text = serde_json::to_string_pretty(&value).expect("reports serialize");
    text.push('\n');
    text
}

pub fn json(reports: &[CaseReport], strategy: StrategyKind, seed: u64) -> String {
    let results: Vec<serde_json::Value> = reports
        .iter()
        .map(|report| {
            let violations: Vec<serde_json::Value> = report
                .violations
                .iter()
                .map(|violation| {
                    json!({"rule": violation.rule, "clause": violation.clause, "lines": violation.lines, "evidentAt": violation.evident_at, "message": violation.message})
                })
                .collect();
            let detail = match &report.verdict {
                Verdict::BadScenario(error) => Some(error.to_string()),
                Verdict::Broken(failure) => Some(format!("{failure} ({})", failure.code())),
                Verdict::NotApplicable { reason } => Some(reason.clone()),
                _ => None,
            };
            let mut result = json!({
                "name": report.name,
                "path": report.path.display().to_string(),
                "status": report.status(),
                // The first violation is the root cause; the rest came later in the trace.
                "rootCause": report.violations.first().map(|violation| violation.rule.clone()),
                "violations": violations,
                "detail": detail,
                "replay": report.replay_command(),
            });
            if let Verdict::Broken(failure) = &report.verdict {
                result["code"] = json!(failure.code());
                result["stderrTail"] = json!(failure.stderr_tail());
            }
            if let Some(divergence) = &report.divergence {
                result["firstDivergence"] = json!({
                    "line": divergence.line,
                    "reference": divergence.reference,
                    "implementation": divergence.implementation,
                    "field": divergence.field.as_ref().map(|field| field.path.clone()),
                });
            }
            result
        })
        .collect();
    let (passed, failed, not_applicable) = counts(reports);
    let value = json!({
        "strategy": strategy.spelling(),
        "seed": seed,
        "passed": passed,
        "failed": failed,
        "notApplicable": not_applicable,
        "results": results,
    });
    let mut text = serde_json::to_string_pretty(&value).expect("reports serialize");
    text.push('\n');
    text
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn junit(reports: &[CaseReport]) -> String {
    let (_, failures, skipped) = counts(reports);
    let mut text = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    text.push_str(&format!(
        "<testsuite name=\"agentsim\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">\n",
        reports.len()
    ));
    for report in reports {
        let (class, name) = match report.name.rsplit_once('/') {
            Some((folder, file)) => (folder.replace('/', "."), file.to_string()),
            None => ("scenarios".to_string(), report.name.clone()),
        };
        text.push_str(&format!(
            "  <testcase classname=\"{}\" name=\"{}\"",
            xml_escape(&class),
            xml_escape(&name)
        ));
        if report.verdict == Verdict::Passed {
            text.push_str("/>\n");
            continue;
        }
        if let Verdict::NotApplicable { reason } = &report.verdict {
            text.push_str(&format!(
                ">\n    <skipped message=\"{}\"/>\n  </testcase>\n",
                xml_escape(&shown(reason))
            ));
            continue;
        }
        text.push_str(">\n");
        let mut body = String::new();
        for violation in &report.violations {
            body.push_str(&format!(
                "{} {:?} {}\n",
                violation.rule,
                violation.lines,
                shown(&violation.message)
            ));
        }
        match &report.verdict {
            Verdict::BadScenario(error) => body.push_str(&format!("{}\n", shown(&error.to_string()))),
            Verdict::Broken(failure) => {
                body.push_str(&format!("{} ({})\n", shown(&failure.to_string()), failure.code()));
                for line in failure.stderr_tail() {
                    body.push_str(&format!("stderr: {}\n", shown(line)));
                }
            }
            _ => {}
        }
        if let Some(divergence) = &report.divergence {
            for line in divergence.describe() {
                body.push_str(&format!("{}\n", shown(&line)));
            }
        }
        body.push_str(&format!("replay: {}\n", report.replay_command()));
        text.push_str(&format!(
            "    <failure message=\"{}\">{}</failure>\n  </testcase>\n",
            report.status(),
            xml_escape(&body)
        ));
    }
    text.push_str("</testsuite>\n");
    text
}

/// The rendered trace with each violation printed under the lines it names.
pub fn annotated_trace(report: &CaseReport) -> String {
    let mut text = String::new();
    if let Some(outcome) = &report.outcome {
        for (index, event) in outcome.trace.events.iter().enumerate() {
            let number = index + 1;
            let marked: Vec<_> = report
                .violations
                .iter()
                .filter(|violation| violation.lines.contains(&number))
                .collect();
            let prefix = if marked.is_empty() { "  " } else { "!!" };
            text.push_str(&format!("{prefix} {}\n", render_line(number, event)));
            for violation in marked {
                text.push_str(&format!("   ^^^^ {}: {}\n", violation.id(), shown(&violation.message)));
            }
        }
    }
    match &report.verdict {
        Verdict::Passed => text.push_str(&format!("{}: passed\n", report.name)),
        Verdict::Failed => {
            let unplaced: Vec<_> = report
                .violations
                .iter()
                .filter(|violation| violation.lines.is_empty())
                .collect();
            for violation in unplaced {
                text.push_str(&format!("{}: {}\n", violation.id(), shown(&violation.message)));
            }
            text.push_str(&format!("{}: {} violations\n", report.name, report.violations.len()));
        }
        Verdict::BadScenario(error) => text.push_str(&format!("{}\n", shown(&error.to_string()))),
        Verdict::Broken(failure) => {
            for line in failure.stderr_tail() {
                text.push_str(&format!("stderr: {}\n", shown(line)));
            }
            text.push_str(&format!(
                "{}: broken: {} ({})\n",
                report.name,
                shown(&failure.to_string()),
                failure.code()
            ));
        }
        Verdict::NotApplicable { reason } => {
            text.push_str(&format!("{}: not applicable: {}\n", report.name, shown(reason)))
        }
    }
    if let Some(divergence) = &report.divergence {
        for line in divergence.describe() {
            text.push_str(&format!("{}\n", shown(&line)));
        }
    }
    text
}
