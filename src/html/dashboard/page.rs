//! The HTML page: the family score, the implementations and the rules table written out, and the
//! causes and the cases as one JSON block of shared strings that the page's script renders.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::{area_of, labels, levels, release_sets, rule_row, set_name, share, status_counts, Column, RuleRow};
use crate::check::{catalogue, Level};
use crate::html::{escape, page_file_name, rule_text, script_json};

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
            escape(&rule_text(rule.id).unwrap_or_default()),
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
}
