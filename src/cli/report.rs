//! Output formats for a set of cases: human lines, a JSON report, JUnit XML. None of them
//! contains a time or an address, so two runs print the same bytes.

use serde_json::json;

use crate::sim::StrategyKind;
use crate::suite::{CaseReport, Verdict};
use crate::trace::render_line;

fn status(report: &CaseReport) -> &'static str {
    match report.verdict {
        Verdict::Passed => "passed",
        Verdict::Failed => "failed",
        Verdict::BadScenario(_) => "bad-scenario",
        Verdict::Broken(_) => "broken",
    }
}

/// The closing line every format's human form ends with.
fn summary(reports: &[CaseReport]) -> String {
    let passed = reports
        .iter()
        .filter(|report| report.verdict == Verdict::Passed)
        .count();
    format!("{passed} passed, {} failed\n", reports.len() - passed)
}

pub fn human(reports: &[CaseReport]) -> String {
    let mut text = String::new();
    for report in reports {
        match &report.verdict {
            Verdict::Passed => text.push_str(&format!("ok     {}\n", report.name)),
            Verdict::Failed => {
                text.push_str(&format!("FAIL   {}\n", report.name));
                for violation in &report.violations {
                    let lines: Vec<String> = violation.lines.iter().map(|line| format!("{line:04}")).collect();
                    text.push_str(&format!(
                        "       {} [trace {}] {}\n",
                        violation.rule,
                        lines.join(","),
                        violation.message
                    ));
                }
                text.push_str(&format!("       replay: {}\n", report.replay_command()));
            }
            Verdict::BadScenario(error) => text.push_str(&format!("BAD    {}: {error}\n", report.name)),
            Verdict::Broken(failure) => {
                text.push_str(&format!("BROKEN {}: {} ({})\n", report.name, failure, failure.code()));
                text.push_str(&format!("       replay: {}\n", report.replay_command()));
            }
        }
    }
    text.push_str(&summary(reports));
    text
}

pub fn json(reports: &[CaseReport], strategy: StrategyKind, seed: u64) -> String {
    let results: Vec<serde_json::Value> = reports
        .iter()
        .map(|report| {
            let violations: Vec<serde_json::Value> = report
                .violations
                .iter()
                .map(
                    |violation| json!({"rule": violation.rule, "lines": violation.lines, "message": violation.message}),
                )
                .collect();
            let detail = match &report.verdict {
                Verdict::BadScenario(error) => Some(error.to_string()),
                Verdict::Broken(failure) => Some(failure.to_string()),
                _ => None,
            };
            json!({
                "name": report.name,
                "path": report.path.display().to_string(),
                "status": status(report),
                "violations": violations,
                "detail": detail,
                "replay": report.replay_command(),
            })
        })
        .collect();
    let passed = reports
        .iter()
        .filter(|report| report.verdict == Verdict::Passed)
        .count();
    let value = json!({
        "strategy": strategy.spelling(),
        "seed": seed,
        "passed": passed,
        "failed": reports.len() - passed,
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
    let failures = reports
        .iter()
        .filter(|report| report.verdict != Verdict::Passed)
        .count();
    let mut text = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    text.push_str(&format!(
        "<testsuite name=\"agentsim\" tests=\"{}\" failures=\"{failures}\">\n",
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
        text.push_str(">\n");
        let mut body = String::new();
        for violation in &report.violations {
            body.push_str(&format!(
                "{} {:?} {}\n",
                violation.rule, violation.lines, violation.message
            ));
        }
        match &report.verdict {
            Verdict::BadScenario(error) => body.push_str(&format!("{error}\n")),
            Verdict::Broken(failure) => body.push_str(&format!("{failure}\n")),
            _ => {}
        }
        body.push_str(&format!("replay: {}\n", report.replay_command()));
        text.push_str(&format!(
            "    <failure message=\"{}\">{}</failure>\n  </testcase>\n",
            status(report),
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
                text.push_str(&format!("   ^^^^ {}: {}\n", violation.rule, violation.message));
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
                text.push_str(&format!("{}: {}\n", violation.rule, violation.message));
            }
            text.push_str(&format!("{}: {} violations\n", report.name, report.violations.len()));
        }
        Verdict::BadScenario(error) => text.push_str(&format!("{error}\n")),
        Verdict::Broken(failure) => text.push_str(&format!("{}: broken: {failure}\n", report.name)),
    }
    text
}
