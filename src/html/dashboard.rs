//! `agentsim dashboard`: the conformance of several implementations side by side, from their
//! JSON reports (`agentsim run --impl CMD --format json --expect FILE`).
//!
//! One self-contained HTML page and one markdown table: at the top, per implementation, its
//! cases and the fraction of rules it holds per level; then the rules grouped by area as rows and
//! the implementations as columns, each cell its pass / fail / n.a. counts (a link to the
//! implementation's case pages when a pages folder is given); below, every deviation of its
//! expectations file with its reason, its source in the implementation and its verdict. The
//! output holds no time, no absolute path and no command line, so the same reports give the same
//! bytes (CI compares the committed `docs/dashboard.*` with what its runs produce).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::escape;
use crate::check::{catalogue, Level};
use crate::deviations::{self, Deviation, DeviationVerdict};

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

/// One implementation's column.
#[derive(Debug, Clone)]
pub struct Column {
    pub implementation: String,
    /// Case name -> status (`passed`, `failed`, `broken`, `not-applicable`, `bad-scenario`).
    pub cases: BTreeMap<String, String>,
    /// Case name -> the rules its violations name.
    pub broken_rules: BTreeMap<String, BTreeSet<String>>,
    /// Case name -> the rules its scenario names (a case with no trace fails those only).
    pub named_rules: BTreeMap<String, BTreeSet<String>>,
    pub deviations: Vec<Deviation>,
    pub pages: Option<PathBuf>,
}

/// Why a report could not be read: names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct DashboardError {
    pub file: String,
    pub message: String,
}

/// Reads one JSON report (and the expectations file it names).
pub fn load(input: &ReportInput) -> Result<Column, DashboardError> {
    let file = input.report.display().to_string();
    let fail = |message: String| DashboardError {
        file: file.clone(),
        message,
    };
    let text = std::fs::read_to_string(&input.report).map_err(|error| fail(format!("cannot read: {error}")))?;
    let value: Value = serde_json::from_str(&text).map_err(|error| fail(format!("not a JSON report: {error}")))?;
    let implementation = value["implementation"]
        .as_str()
        .ok_or_else(|| fail("no `implementation`: write it with `agentsim run --format json`".into()))?
        .to_string();
    let results = value["results"]
        .as_array()
        .ok_or_else(|| fail("no `results` array".into()))?;
    let mut cases = BTreeMap::new();
    let mut broken_rules = BTreeMap::new();
    let mut named_rules = BTreeMap::new();
    for (index, result) in results.iter().enumerate() {
        let name = result["name"]
            .as_str()
            .ok_or_else(|| fail(format!("results[{index}].name is missing")))?;
        let status = result["status"]
            .as_str()
            .ok_or_else(|| fail(format!("results[{index}].status is missing")))?;
        let rules: BTreeSet<String> = result["violations"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|violation| violation["rule"].as_str().map(str::to_string))
            .collect();
        let named: BTreeSet<String> = result["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|rule| rule.as_str().map(str::to_string))
            .collect();
        cases.insert(name.to_string(), status.to_string());
        broken_rules.insert(name.to_string(), rules);
        named_rules.insert(name.to_string(), named);
    }
    let deviations = match value["expectations"]["file"].as_str() {
        Some(path) => {
            deviations::load(Path::new(path))
                .map_err(|error| fail(format!("its expectations file: {error}")))?
                .deviations
        }
        None => Vec::new(),
    };
    Ok(Column {
        implementation,
        cases,
        broken_rules,
        named_rules,
        deviations,
        pages: input.pages.clone(),
    })
}

/// A rule's cell: (pass, fail, n.a.) over the cases judged for the rule (as the matrix counts:
/// a case with no trace fails the rules it names and judges no other), and the failing cases.
fn cell<'c>(column: &'c Column, rule: &str) -> (usize, Vec<&'c str>, usize) {
    let mut pass = 0;
    let mut failing = Vec::new();
    let mut not_applicable = 0;
    for (name, status) in &column.cases {
        match status.as_str() {
            "not-applicable" => not_applicable += 1,
            "broken" | "bad-scenario" => {
                if column.named_rules.get(name).is_some_and(|rules| rules.contains(rule)) {
                    failing.push(name.as_str());
                }
            }
            _ if column.broken_rules.get(name).is_some_and(|rules| rules.contains(rule)) => failing.push(name.as_str()),
            _ => pass += 1,
        }
    }
    (pass, failing, not_applicable)
}

/// `(held, judged)` rules per level: a rule holds when no judged case fails it.
fn levels(column: &Column) -> BTreeMap<Level, (usize, usize)> {
    let mut counts: BTreeMap<Level, (usize, usize)> = BTreeMap::new();
    for rule in catalogue() {
        let (_, failing, _) = cell(column, rule.id);
        let slot = counts.entry(rule.level).or_default();
        slot.1 += 1;
        if failing.is_empty() {
            slot.0 += 1;
        }
    }
    counts
}

fn status_counts(column: &Column) -> (usize, usize, usize) {
    let passed = column.cases.values().filter(|status| *status == "passed").count();
    let not_applicable = column
        .cases
        .values()
        .filter(|status| *status == "not-applicable")
        .count();
    (passed, column.cases.len() - passed - not_applicable, not_applicable)
}

fn area_of(rule: &str) -> &str {
    rule.rsplit_once('-').map_or(rule, |(area, _)| area)
}

fn verdict_word(verdict: Option<DeviationVerdict>) -> &'static str {
    match verdict {
        Some(DeviationVerdict::Bug) => "bug",
        Some(DeviationVerdict::Choice) => "choice",
        None => "-",
    }
}

fn source_text(deviation: &Deviation) -> String {
    deviation
        .source
        .as_ref()
        .map(|source| format!("{}:{} `{}`", source.file, source.line, source.function))
        .unwrap_or_else(|| "-".to_string())
}

fn md(text: &str) -> String {
    text.replace('\n', " ").replace('|', "\\|")
}

/// The markdown table.
pub fn markdown(columns: &[Column]) -> String {
    let mut text = String::from(
        "# Conformance dashboard\n\nGenerated by `agentsim dashboard` from each implementation's JSON report \
         (`agentsim run --impl CMD scenarios/ --format json --expect expectations/IMPL.json`); `.ci/run` \
         regenerates it, and the HTML page beside it (`dashboard.html`), and fails when they differ.\n\n",
    );
    text.push_str("| implementation | cases | passed | failed | n.a. | MUST rules held | SHOULD rules held |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for column in columns {
        let (passed, failed, not_applicable) = status_counts(column);
        let levels = levels(column);
        let level = |level: Level| {
            levels
                .get(&level)
                .map_or("-".to_string(), |(held, judged)| format!("{held} of {judged}"))
        };
        text.push_str(&format!(
            "| `{}` | {} | {passed} | {failed} | {not_applicable} | {} | {} |\n",
            md(&column.implementation),
            column.cases.len(),
            level(Level::Must),
            level(Level::Should)
        ));
    }
    text.push_str("\n## Rules\n\nEach cell: scenarios passed / failed / not applicable.\n\n| rule | level |");
    for column in columns {
        text.push_str(&format!(" `{}` |", md(&column.implementation)));
    }
    text.push_str("\n|---|---|");
    for _ in columns {
        text.push_str("---|");
    }
    text.push('\n');
    for rule in catalogue() {
        text.push_str(&format!("| {} | {} |", rule.id, rule.level.word()));
        for column in columns {
            let (pass, failing, not_applicable) = cell(column, rule.id);
            text.push_str(&format!(" {pass} / {} / {not_applicable} |", failing.len()));
        }
        text.push('\n');
    }
    text.push_str("\n## Deviations\n");
    for column in columns {
        text.push_str(&format!("\n### `{}`\n\n", md(&column.implementation)));
        if column.deviations.is_empty() {
            text.push_str("No expectations file: none listed.\n");
            continue;
        }
        text.push_str("| rule | scenarios | verdict | source | reason |\n|---|---:|---|---|---|\n");
        for deviation in &column.deviations {
            text.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                deviation.rule,
                deviation.scenarios.len() + deviation.explored.len(),
                verdict_word(deviation.verdict),
                md(&source_text(deviation)),
                md(&deviation.reason)
            ));
        }
    }
    text
}

/// The HTML page: self-contained, nothing from the network.
pub fn html(columns: &[Column]) -> String {
    let mut body = String::from("<h1>Conformance dashboard</h1>\n<table id=\"implementations\"><thead><tr><th>implementation</th><th>cases</th><th>passed</th><th>failed</th><th>n.a.</th><th>MUST rules held</th><th>SHOULD rules held</th></tr></thead><tbody>\n");
    for column in columns {
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
        body.push_str(&format!(
            "<tr class=\"implementation\" data-implementation=\"{}\"><td><code>{}</code></td><td>{}</td><td>{passed}</td><td>{failed}</td><td>{not_applicable}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&column.implementation),
            escape(&column.implementation),
            column.cases.len(),
            fraction(Level::Must),
            fraction(Level::Should)
        ));
    }
    body.push_str("</tbody></table>\n<h2>Rules</h2>\n<p>Each cell: scenarios passed / failed / not applicable; a failing count links to a failing case's page when the implementation's pages are given.</p>\n<table id=\"rules\"><thead><tr><th>rule</th><th>level</th>");
    for column in columns {
        body.push_str(&format!("<th><code>{}</code></th>", escape(&column.implementation)));
    }
    body.push_str("</tr></thead>\n");
    let mut area = "";
    for rule in catalogue() {
        if area_of(rule.id) != area {
            area = area_of(rule.id);
            body.push_str(&format!(
                "<tbody class=\"area\" data-area=\"{area}\"><tr><th colspan=\"{}\">{area}</th></tr>\n",
                columns.len() + 2
            ));
        }
        body.push_str(&format!(
            "<tr class=\"rule\" data-rule=\"{}\"><td title=\"{}\">{}</td><td>{}</td>",
            rule.id,
            escape(&super::rule_text(rule.id).unwrap_or_default()),
            rule.id,
            rule.level.word()
        ));
        for column in columns {
            let (pass, failing, not_applicable) = cell(column, rule.id);
            let class = if failing.is_empty() { "holds" } else { "fails" };
            let fail = match (&column.pages, failing.first()) {
                (Some(pages), Some(first)) => format!(
                    "<a href=\"{}/{}\">{}</a>",
                    escape(&pages.display().to_string()),
                    escape(&super::page_file_name(first, "")),
                    failing.len()
                ),
                _ => failing.len().to_string(),
            };
            body.push_str(&format!(
                "<td class=\"cell {class}\" data-implementation=\"{}\" data-pass=\"{pass}\" data-fail=\"{}\" data-na=\"{not_applicable}\">{pass} / {fail} / {not_applicable}</td>",
                escape(&column.implementation),
                failing.len()
            ));
        }
        body.push_str("</tr>\n");
    }
    body.push_str("</table>\n<h2>Deviations</h2>\n");
    for column in columns {
        body.push_str(&format!(
            "<section class=\"deviations\" data-implementation=\"{}\"><h3><code>{}</code></h3>\n",
            escape(&column.implementation),
            escape(&column.implementation)
        ));
        if column.deviations.is_empty() {
            body.push_str("<p>No expectations file: none listed.</p></section>\n");
            continue;
        }
        body.push_str("<table><thead><tr><th>rule</th><th>scenarios</th><th>verdict</th><th>source</th><th>reason</th></tr></thead><tbody>\n");
        for deviation in &column.deviations {
            let verdict = verdict_word(deviation.verdict);
            body.push_str(&format!(
                "<tr class=\"deviation {verdict}\" data-rule=\"{}\"><td>{}</td><td>{}</td><td>{verdict}</td><td><code>{}</code></td><td>{}</td></tr>\n",
                escape(&deviation.rule),
                escape(&deviation.rule),
                deviation.scenarios.len() + deviation.explored.len(),
                escape(&source_text(deviation)),
                escape(&deviation.reason)
            ));
        }
        body.push_str("</tbody></table></section>\n");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>agentsim: conformance dashboard</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
}

const STYLE: &str = r#"body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #1d232a; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 20px; } h3 { font-size: 14px; }
table { border-collapse: collapse; margin: 6px 0 12px; } th, td { border: 1px solid #d0d7de; padding: 2px 8px; text-align: left; vertical-align: top; }
td.cell { text-align: center; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.holds { background: #dafbe1; } td.fails { background: #ffebe9; }
tbody.area th { background: #f6f8fa; text-align: left; }
.bar { display: inline-block; width: 80px; height: 8px; background: linear-gradient(90deg, #2da44e var(--share), #eaeef2 var(--share)); border-radius: 4px; vertical-align: middle; }
tr.deviation.bug td:nth-child(3) { color: #cf222e; font-weight: 600; }
code { font: 12px ui-monospace, Menlo, Consolas, monospace; }
"#;
