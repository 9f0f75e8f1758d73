//! `--format markdown`: the conformance matrix of a run, one row per rule of conformance.md.
//!
//! Per rule, every scenario judged for it counts once: it **fails** the rule when its trace has
//! a violation of it, or, when it produced no trace at all (broken, a bad scenario), when it
//! names the rule (nothing about it could be confirmed; it judges no rule it does not name); it
//! is **n.a.** when the implementation declared an operation it uses unsupported; otherwise it
//! **passes** (every rule is checked on every trace, so a scenario that does not name a rule
//! still judges it). So pass + fail + n.a. is the number of scenarios judged for the rule. **Names** counts the scenarios written to exercise the rule (they name it), and
//! **Root** the failing cases whose first violation (the root cause) is this rule's. The report
//! holds no time and no absolute path of its own, so the same run prints the same bytes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::run::{CaseReport, Verdict};
use crate::sim::StrategyKind;

/// What the matrix says about the run itself.
pub(super) struct Header {
    /// `name version`, from the adapter's hello.
    pub implementation: String,
    /// The `--impl` command, if any.
    pub command: Option<String>,
    pub paths: Vec<PathBuf>,
    pub strategy: StrategyKind,
    pub seed: u64,
    /// Scenario name -> the rule IDs the scenario names.
    pub rules: BTreeMap<String, Vec<String>>,
}

#[derive(Default, Clone, Copy)]
struct Tally {
    pass: usize,
    fail: usize,
    not_applicable: usize,
    /// Scenarios that name the rule.
    named: usize,
    /// Failing cases whose root cause is the rule.
    root: usize,
}

/// A scenario-expectation violation rather than a rule's (`expect`, `model[N].expect`).
fn is_expectation(rule: &str) -> bool {
    rule == "expect" || (rule.starts_with("model[") && rule.ends_with("].expect"))
}

fn judged(report: &CaseReport) -> bool {
    matches!(report.verdict, Verdict::Passed | Verdict::Failed)
}

fn rule_tally(rule: &str, reports: &[CaseReport], rules: &BTreeMap<String, Vec<String>>) -> Tally {
    let mut tally = Tally::default();
    for report in reports {
        let names = rules
            .get(&report.name)
            .is_some_and(|named| named.iter().any(|named| named == rule));
        let violated = report.violations.iter().any(|violation| violation.rule == rule);
        if names {
            tally.named += 1;
        }
        if report.violations.first().is_some_and(|root| root.rule == rule) {
            tally.root += 1;
        }
        match &report.verdict {
            Verdict::NotApplicable { .. } => tally.not_applicable += 1,
            Verdict::Passed | Verdict::Failed if violated => tally.fail += 1,
            Verdict::Passed | Verdict::Failed => tally.pass += 1,
            // A case with no trace confirms nothing: it fails the rules it was written for and
            // judges no other.
            Verdict::Broken(_) | Verdict::BadScenario(_) if names => tally.fail += 1,
            Verdict::Broken(_) | Verdict::BadScenario(_) => {}
        }
    }
    tally
}

fn expectation_tally(reports: &[CaseReport]) -> Tally {
    let mut tally = Tally::default();
    for report in reports {
        if matches!(report.verdict, Verdict::NotApplicable { .. }) {
            tally.not_applicable += 1;
        } else if !judged(report)
            || report
                .violations
                .iter()
                .any(|violation| is_expectation(&violation.rule))
        {
            tally.fail += 1;
        } else {
            tally.pass += 1;
        }
    }
    tally
}

/// A table cell: no newlines, pipes escaped.
fn cell(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

/// A code span that survives backticks inside.
fn code(text: &str) -> String {
    let text = cell(text);
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

/// The markdown report. `expectation` holds the `--expect` lines, if any.
pub(super) fn markdown(reports: &[CaseReport], header: &Header, expectation: Option<&[String]>) -> String {
    let (passed, failed, not_applicable) = super::report::counts(reports);
    let mut text = String::from("# Conformance report\n\n");
    text.push_str("| | |\n|---|---|\n");
    text.push_str(&format!("| Implementation | {} |\n", code(&header.implementation)));
    if let Some(command) = &header.command {
        text.push_str(&format!("| Adapter command | {} |\n", code(command)));
    }
    let paths: Vec<String> = header
        .paths
        .iter()
        .map(|path| code(&path.display().to_string()))
        .collect();
    let paths = if paths.is_empty() {
        "the built-in corpus".to_string()
    } else {
        paths.join(", ")
    };
    text.push_str(&format!("| Scenarios | {paths} |\n"));
    let mut strategy = header.strategy.spelling();
    if header.strategy.uses_seed() {
        strategy.push_str(&format!(", seed {}", header.seed));
    }
    text.push_str(&format!("| Strategy | {} |\n", code(&strategy)));
    text.push_str(&format!(
        "| Result | {} cases: {passed} passed, {failed} failed, {not_applicable} not applicable |\n\n",
        reports.len()
    ));

    text.push_str("## Rules\n\n");
    let untraced = reports
        .iter()
        .filter(|report| matches!(report.verdict, Verdict::Broken(_) | Verdict::BadScenario(_)))
        .count();
    text.push_str(&format!(
        "Every row counts once each scenario judged for the rule: all {} but the {untraced} broken \
         or bad ones that do not name it (a case with no trace fails the rules it names and judges no \
         other). A scenario fails a rule when its trace violates it, is n.a. when the \
         implementation does not support an operation it uses, and passes otherwise (every rule is \
         checked on every trace). Names: the scenarios written to exercise the rule; Root: the \
         failing scenarios whose first violation, the root cause, is the rule's. The last row \
         counts the scenarios' own `expect` blocks and model request checks.\n\n",
        reports.len()
    ));
    text.push_str("| Rule | Level | Pass | Fail | n.a. | Names | Root |\n|---|---|---:|---:|---:|---:|---:|\n");
    for rule in crate::check::catalogue() {
        let tally = rule_tally(rule.id, reports, &header.rules);
        text.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            rule.id,
            rule.level.word(),
            tally.pass,
            tally.fail,
            tally.not_applicable,
            tally.named,
            tally.root
        ));
    }
    let tally = expectation_tally(reports);
    text.push_str(&format!(
        "| *scenario expectations* | - | {} | {} | {} | - | - |\n\n",
        tally.pass, tally.fail, tally.not_applicable
    ));
    let rules_of = |name: &str| header.rules.get(name).cloned().unwrap_or_default();
    let counts = super::report::tally(reports, &rules_of).level_counts(&crate::check::Selection::all());
    text.push_str(&super::findings::level_line(&counts, "scenario"));
    text.push('\n');

    text.push_str("## Failing scenarios\n\n");
    let failing: Vec<&CaseReport> = reports
        .iter()
        .filter(|report| {
            matches!(
                report.verdict,
                Verdict::Failed | Verdict::Broken(_) | Verdict::BadScenario(_)
            )
        })
        .collect();
    if failing.is_empty() {
        text.push_str("None.\n\n");
    } else {
        text.push_str("| Scenario | Root cause (first violation) | First divergence from the reference | Replay |\n");
        text.push_str("|---|---|---|---|\n");
        for report in failing {
            let first = match &report.verdict {
                Verdict::Broken(failure) => format!("broken: {failure} ({})", failure.code()),
                Verdict::BadScenario(error) => format!("bad scenario: {error}"),
                _ => report
                    .violations
                    .first()
                    .map(|violation| {
                        let lines: Vec<String> = violation.lines.iter().map(|line| format!("{line:04}")).collect();
                        format!("{} [trace {}] {}", violation.id(), lines.join(","), violation.message)
                    })
                    .unwrap_or_default(),
            };
            let divergence = report
                .divergence
                .as_ref()
                .map(|divergence| {
                    let side = |line: &Option<String>| match line {
                        Some(line) => code(line),
                        None => "(end of trace)".to_string(),
                    };
                    format!(
                        "line {:04}: reference {} / implementation {}",
                        divergence.line,
                        side(&divergence.reference),
                        side(&divergence.implementation)
                    )
                })
                .unwrap_or_else(|| "-".to_string());
            text.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                code(&report.name),
                cell(&first),
                divergence,
                code(&report.replay_command())
            ));
        }
        text.push('\n');
    }

    let not_applicable: Vec<&CaseReport> = reports
        .iter()
        .filter(|report| matches!(report.verdict, Verdict::NotApplicable { .. }))
        .collect();
    if !not_applicable.is_empty() {
        text.push_str("## Not applicable\n\n| Scenario | Reason |\n|---|---|\n");
        for report in not_applicable {
            if let Verdict::NotApplicable { reason } = &report.verdict {
                text.push_str(&format!("| {} | {} |\n", code(&report.name), cell(reason)));
            }
        }
        text.push('\n');
    }

    if let Some(lines) = expectation {
        text.push_str("## Expected deviations\n\n```text\n");
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str("```\n");
    }
    text
}
