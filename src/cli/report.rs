//! Output formats for a set of cases: human lines, a JSON report, JUnit XML (the markdown
//! conformance matrix is `matrix`). None of them contains a time or an address, so two runs
//! print the same bytes. Text that comes from input (a violation's message quoting a scenario,
//! a verdict quoting an adapter's line, its stderr) is printed with its control characters
//! escaped ([`shown`]): on a terminal it stays on its line and repaints nothing, and JUnit's XML
//! stays XML.

use serde_json::json;

use crate::run::{CaseReport, Verdict};
use crate::sim::StrategyKind;
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
                text.push_str(&format!(
                    "FAIL   {}   {}\n",
                    report.name,
                    level_verdict(&report.violations)
                ));
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

/// What a failed case breaks, level first: `MUST broken (POISON-2); SHOULD broken (PROJECT-2)`,
/// `MUST held, SHOULD broken (PROJECT-2, WIRE-1)`, or `MUST held, SHOULD held, scenario checks
/// broken (expect)` when only the scenario's own checks fail. Rules in catalogue order, each once.
pub(crate) fn level_verdict(violations: &[crate::check::Violation]) -> String {
    use crate::check::{level_of, Level};
    let mut must: Vec<&str> = Vec::new();
    let mut should: Vec<&str> = Vec::new();
    let mut checks: Vec<&str> = Vec::new();
    for violation in violations {
        let list = match level_of(&violation.rule) {
            Some(Level::Must) => &mut must,
            Some(Level::Should) => &mut should,
            None => &mut checks,
        };
        if !list.contains(&violation.rule.as_str()) {
            list.push(&violation.rule);
        }
    }
    for list in [&mut must, &mut should, &mut checks] {
        list.sort_by_key(|rule| crate::deviations::rule_order(rule));
    }
    let broken = |level: &str, rules: &[&str]| format!("{level} broken ({})", rules.join(", "));
    let mut parts = Vec::new();
    if must.is_empty() {
        parts.push("MUST held".to_string());
    } else {
        parts.push(broken("MUST", &must));
    }
    if !should.is_empty() {
        parts.push(broken("SHOULD", &should));
    } else if must.is_empty() {
        parts.push("SHOULD held".to_string());
    }
    if !checks.is_empty() {
        parts.push(broken("scenario checks", &checks));
    }
    if must.is_empty() {
        parts.join(", ")
    } else {
        parts.join("; ")
    }
}

/// `held` or `broken`: whether a case broke a MUST rule (a case with no trace, the MUST rules
/// its scenario names); `None` for a case not applicable.
fn must_word(report: &CaseReport, named: &[String]) -> Option<&'static str> {
    use crate::check::{level_of, Level};
    let must = |rule: &str| level_of(rule) == Some(Level::Must);
    let broken = match &report.verdict {
        Verdict::NotApplicable { .. } => return None,
        Verdict::Passed => false,
        Verdict::Failed => report.violations.iter().any(|violation| must(&violation.rule)),
        Verdict::Broken(_) | Verdict::BadScenario(_) => named.iter().any(|rule| must(rule)),
    };
    Some(if broken { "broken" } else { "held" })
}

/// The rules whose situations a case's trace reached (`check::situations`), with the rules it
/// broke, in catalogue order: the cases that exercise a rule are the dashboard's denominator.
fn exercised(report: &CaseReport, loaded: Option<&crate::scenario::LoadedScenario>) -> Vec<&'static str> {
    let (Some(outcome), Some(loaded)) = (&report.outcome, loaded) else {
        return Vec::new();
    };
    let scenario = &loaded.scenario;
    let stored = outcome.stored(scenario);
    let timeline = crate::check::Timeline::new(scenario, &outcome.trace, &stored);
    let situations = crate::check::situations::situations();
    let reached: std::collections::BTreeSet<&str> = crate::check::situations::reached(&timeline)
        .into_iter()
        .map(|index| situations[index].rule)
        .chain(report.violations.iter().map(|violation| violation.rule.as_str()))
        .collect();
    crate::check::RULE_IDS
        .iter()
        .copied()
        .filter(|rule| reached.contains(rule))
        .collect()
}

/// The summary's first line: `levels: MUST: 52 of 58 rules held in every case (broken: A, B);
/// SHOULD: 13 of 13 rules held in every case`.
pub(crate) fn level_summary(tally: &crate::findings::Tally, selection: &crate::check::Selection, unit: &str) -> String {
    let mut parts = Vec::new();
    for level in [crate::check::Level::Must, crate::check::Level::Should] {
        let rules: Vec<&str> = selection
            .rules()
            .filter(|rule| rule.level == level && tally.judged(rule.id))
            .map(|rule| rule.id)
            .collect();
        if rules.is_empty() {
            continue;
        }
        let broken: Vec<&str> = rules
            .iter()
            .copied()
            .filter(|rule| tally.broken_rules.contains(*rule))
            .collect();
        let mut part = format!(
            "{}: {} of {} rules held in every {unit}",
            level.word(),
            rules.len() - broken.len(),
            rules.len()
        );
        if !broken.is_empty() {
            part.push_str(&format!(" (broken: {})", broken.join(", ")));
        }
        parts.push(part);
    }
    format!("levels: {}\n", parts.join("; "))
}

/// What the failing cases come to (root causes, findings), the level reached and, for an
/// implementation, the features it declared and fails: printed after the cases.
pub(crate) fn corpus_summary(
    reports: &[CaseReport],
    selection: &crate::check::Selection,
    hello: Option<&crate::protocol::wire::Hello>,
    corpus: &[crate::scenario::LoadedScenario],
) -> String {
    let tally = tally(reports, &named_rules(corpus));
    let mut text = String::new();
    // The level first. With no case judged, every rule would "hold": say nothing rather than
    // something vacuous.
    if reports
        .iter()
        .any(|report| matches!(report.verdict, Verdict::Passed | Verdict::Failed))
    {
        text.push_str(&level_summary(&tally, selection, "case"));
        text.push_str(&tally.differences_line("case"));
    }
    text.push_str(&tally.text("case"));
    if !selection.is_all() {
        text.push_str(&format!("judged by {}\n", selection.describe()));
    }
    let unjudged: Vec<&str> = selection
        .rules()
        .map(|rule| rule.id)
        .filter(|rule| !tally.judged(rule))
        .collect();
    if !unjudged.is_empty() {
        text.push_str(&format!(
            "not judged: {} (the subject reports no state probe: `hello.probes`)\n",
            unjudged.join(", ")
        ));
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
        if let (Verdict::Passed | Verdict::Failed, Some(outcome)) = (&report.verdict, &report.outcome) {
            tally.saw_trace(&outcome.trace);
        }
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
) -> serde_json::Value {
    let mut value = json_value(reports, strategy, seed);
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
    // Each case's named rules (a case with no trace fails those), the rules its trace exercised
    // and whether it held every MUST rule: the dashboard's counts.
    if let Some(results) = value["results"].as_array_mut() {
        let rules_of = named_rules(corpus);
        for (result, report) in results.iter_mut().zip(reports) {
            let named = rules_of(&report.name);
            let loaded = corpus.iter().find(|loaded| loaded.name == report.name);
            result["must"] = json!(must_word(report, &named));
            result["exercised"] = json!(exercised(report, loaded));
            result["rules"] = json!(named);
        }
    }
    value["levels"] = super::findings::level_json(&level_counts(reports, selection, corpus));
    value["judged"] = json!(selection.describe());
    if let Some(hello) = hello {
        value["declaredAndFailing"] = json!(super::findings::declared_and_failing(reports, hello, corpus));
    }
    value
}

/// `value` as every JSON report prints it.
pub(crate) fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("reports serialize");
    text.push('\n');
    text
}

/// Each case's result and the counts.
fn json_value(reports: &[CaseReport], strategy: StrategyKind, seed: u64) -> serde_json::Value {
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
                "path": report.run.scenario.display().to_string(),
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
                    "kind": divergence.oracle.as_ref().map(|(kind, _, _)| kind.word()),
                    "output": divergence.oracle.as_ref().map(|(_, identity, _)| identity),
                    "step": divergence.oracle.as_ref().map(|(_, _, step)| step),
                    "reference": divergence.reference,
                    "implementation": divergence.implementation,
                    "field": divergence.field.as_ref().map(|field| field.path.clone()),
                });
            }
            result
        })
        .collect();
    let (passed, failed, not_applicable) = counts(reports);
    let differences = tally(reports, &|_: &str| Vec::new());
    json!({
        "strategy": strategy.spelling(),
        "seed": seed,
        "passed": passed,
        "failed": failed,
        "notApplicable": not_applicable,
        "differences": {
            "explainedByARule": differences.differences_explained,
            "judgedByRef1Alone": differences.differences_unexplained,
        },
        "results": results,
    })
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
                // The root cause (the first violation, check::cause) is marked where it shows.
                let root = report
                    .violations
                    .first()
                    .is_some_and(|first| std::ptr::eq(first, violation));
                let mark = if root { "^^^^ ROOT " } else { "^^^^ " };
                text.push_str(&format!("   {mark}{}: {}\n", violation.id(), shown(&violation.message)));
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
            if let Some(root) = report.violations.first() {
                let level = crate::check::level_of(&root.rule).map_or("a scenario check", |level| level.word());
                text.push_str(&format!("root cause: {} ({level}), marked ROOT above\n", root.id()));
            }
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

/// The human lines of an expectation comparison (`run --expect`): the counts, each unexpected
/// pair with its first message, one `STALE cause` line per cause with pairs that no longer fail,
/// and the pairs not judged.
pub(crate) fn expectation_lines(
    path: &std::path::Path,
    file: &crate::deviations::ExpectationFile,
    comparison: &crate::deviations::Comparison,
    implementation: &str,
) -> Vec<String> {
    let stale_causes = comparison.causes.iter().filter(|cause| !cause.stale.is_empty()).count();
    let in_causes = match stale_causes {
        0 => String::new(),
        1 => " (of 1 cause)".to_string(),
        many => format!(" (of {many} causes)"),
    };
    let mut lines = vec![format!(
        "expectations {} ({}): {} expected failures seen, {} unexpected, {} stale{in_causes}, {} not judged",
        path.display(),
        file.implementation,
        comparison.confirmed.len(),
        comparison.unexpected.len(),
        comparison.stale.len(),
        comparison.unjudged.len()
    )];
    let spoken = implementation.replace(' ', "-");
    if !spoken.starts_with(&file.implementation) {
        lines.push(format!(
            "note: the file describes `{}`, the implementation says `{implementation}`",
            file.implementation
        ));
    }
    for (pair, message) in &comparison.unexpected {
        lines.push(format!(
            "UNEXPECTED {} {}: fails but is not listed: {}",
            pair.scenario,
            pair.rule,
            shown(message)
        ));
    }
    for cause in &comparison.causes {
        if !cause.stale.is_empty() {
            lines.push(crate::deviations::stale_line(cause));
        }
    }
    for pair in &comparison.unjudged {
        lines.push(format!(
            "not judged {} {}: not run, not applicable or broken",
            pair.scenario, pair.rule
        ));
    }
    lines
}

/// The JSON report's `expectations`: the pairs confirmed, unexpected, stale and not judged, and
/// per cause its label, reason, source and pairs (`agentsim dashboard` reads these, never the
/// file itself).
pub(crate) fn expectation_json(
    path: &std::path::Path,
    file: &crate::deviations::ExpectationFile,
    comparison: &crate::deviations::Comparison,
) -> serde_json::Value {
    use crate::deviations::Pair;
    let pairs = |pairs: &[Pair]| -> Vec<serde_json::Value> {
        pairs
            .iter()
            .map(|pair| json!({"scenario": pair.scenario, "rule": pair.rule}))
            .collect()
    };
    let reason_of = |id: &str| file.cause(id).map(|cause| cause.reason.clone()).unwrap_or_default();
    let causes: Vec<serde_json::Value> = file
        .causes
        .iter()
        .zip(&comparison.causes)
        .map(|(cause, compared)| {
            let mut value = json!({
                "id": cause.id,
                "verdict": cause.verdict.word(),
                "reason": cause.reason,
                "source": {"file": cause.source.file, "function": cause.source.function, "line": cause.source.line},
                "listed": compared.listed,
                "confirmed": pairs(&compared.confirmed),
                "stale": pairs(&compared.stale),
                "unjudged": pairs(&compared.unjudged),
                "explored": pairs(&cause.explored_pairs()),
            });
            if let Some(divergence) = &cause.first_divergence {
                value["firstDivergence"] = json!(divergence);
            }
            value
        })
        .collect();
    json!({
        "file": path.display().to_string(),
        "implementation": file.implementation,
        "holds": comparison.holds(),
        "confirmed": pairs(&comparison.confirmed),
        "unexpected": comparison
            .unexpected
            .iter()
            .map(|(pair, message)| json!({"scenario": pair.scenario, "rule": pair.rule, "message": message}))
            .collect::<Vec<_>>(),
        "stale": comparison
            .stale
            .iter()
            .map(|(pair, cause)| json!({"scenario": pair.scenario, "rule": pair.rule, "cause": cause, "reason": reason_of(cause)}))
            .collect::<Vec<_>>(),
        "unjudged": pairs(&comparison.unjudged),
        "causes": causes,
    })
}
