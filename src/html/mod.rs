//! Seeing a run: one self-contained HTML page per case (inline CSS and JS, no network, works
//! from `file://`; everything but the detail panel reads without JS).
//!
//! A page shows the run as swimlanes ([`lanes`]: operations, model, hooks and tools, store,
//! output; time is the trace step), the session tree ([`tree`]), every violation at its event
//! with the rule's statement from conformance.md ([`rules`]), the trace one event per line, a
//! detail panel with an event's JSON on click, and the case's replay command. For an `--impl`
//! case the page adds the divergence view: the implementation's and the reference's timelines
//! one above the other on the same step axis, their lines side by side, the first divergence
//! highlighted.
//!
//! Stable hooks for tests and tools: `data-side` (`run`, `implementation`, `reference`) on each
//! timeline, `data-lane` on lanes, `data-event` (1-based trace line) on everything that stands
//! for an event, `data-rule` on violation marks, `#first-divergence` with `data-line`, and
//! `#replay-command`. This module renders; it never runs a case itself except in
//! [`write_explore_pages`], which re-runs a failing schedule to get its trace.
//!
//! One file: the case page's renderer and the data it embeds are one format, kept in step by
//! the page's script (`lanes.rs`, `rules.rs`, `tree.rs` and `dashboard.rs` hold the rest;
//! `pages.rs` writes the pages of a run or an exploration, with their index).

pub mod dashboard;
pub mod lanes;
mod pages;
pub mod rules;
mod tree;

use std::collections::BTreeSet;

use crate::check::Violation;
use crate::protocol::diff::{self, Divergence};
use crate::run::{CaseReport, Verdict};
use crate::scenario::Scenario;
use crate::trace::{render_line, Trace};

use lanes::{lane_of, spans, tick_kind, tracks_per_lane, LANES};
pub use pages::{
    page_file_name, page_name, reference_trace, write_explore_pages, write_page, write_run_pages, EXPLORE_PAGES_MAX,
};
pub use rules::rule_text;

/// Width of one trace step in the swimlanes, in CSS pixels: a short trace is spread over
/// [`LANES_WIDTH_PX`], a long one gets at least the minimum and scrolls.
const STEP_PX_MIN: usize = 18;
const STEP_PX_MAX: usize = 60;
const LANES_WIDTH_PX: usize = 1080;
/// Height of one track of a lane.
const TRACK_PX: usize = 18;
/// The height of one row of the rule-badge strip.
const BADGE_ROW_PX: usize = 14;

/// HTML-escapes text for element content and double-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// JSON for a `<script type="application/json">` block that is still JSON and that an HTML
/// parser cannot read as markup: `<`, `>` and `&` (which serialized JSON holds only inside
/// strings) are written as `\u003c`, `\u003e` and `\u0026`, so no `</script>` can close the
/// element and no `<!--` can open a comment in it; U+2028 and U+2029 are escaped too, for a
/// reader that takes the text as JavaScript. (`<\!--`, the escape this replaced, is not JSON:
/// `JSON.parse` refused the whole block and the page's script stopped.)
fn script_json(value: &serde_json::Value) -> String {
    let text = serde_json::to_string(value).expect("values serialize");
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '<' => escaped.push_str("\\u003c"),
            '>' => escaped.push_str("\\u003e"),
            '&' => escaped.push_str("\\u0026"),
            '\u{2028}' => escaped.push_str("\\u2028"),
            '\u{2029}' => escaped.push_str("\\u2029"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// The page of one case. `reference` is the reference's trace of the same scenario, strategy
/// and seed, for an `--impl` case: with it the page has the divergence view.
pub fn render_page(scenario: &Scenario, report: &CaseReport, reference: Option<&Trace>) -> String {
    let empty = Trace::default();
    let trace = report.outcome.as_ref().map(|outcome| &outcome.trace).unwrap_or(&empty);
    let verdict = report.status();
    let mut body = String::new();
    body.push_str(&format!(
        "<header><h1>{}</h1><p class=\"meta\"><span id=\"verdict\" class=\"verdict {verdict}\" data-verdict=\"{verdict}\">{verdict}</span> {} seed {}{}{} &middot; {} events &middot; {} violations</p>\n",
        escape(&report.name),
        escape(&report.run.strategy().spelling()),
        report.run.seed(),
        report
            .run
            .implementation
            .mutant_name()
            .map(|mutant| format!(" &middot; mutant <code>{}</code>", escape(mutant)))
            .unwrap_or_default(),
        report
            .run
            .implementation
            .adapter_command()
            .map(|(command, _)| format!(" &middot; implementation <code>{}</code>", escape(&command)))
            .unwrap_or_default(),
        trace.events.len(),
        report.violations.len(),
    ));
    if !scenario.description.is_empty() {
        body.push_str(&format!(
            "<p class=\"description\">{}</p>\n",
            escape(&scenario.description)
        ));
    }
    body.push_str(&format!(
        "<p>Replay: <code id=\"replay-command\">{}</code></p></header>\n",
        escape(&report.replay_command())
    ));
    body.push_str(&verdict_detail(report));
    let divergence = match (reference, &report.divergence) {
        (Some(reference), Some(divergence)) => Some((reference, divergence)),
        _ => None,
    };
    body.push_str("<main>\n");
    match divergence {
        Some((reference, divergence)) => {
            let step_px = step_px(trace.events.len().max(reference.events.len()));
            body.push_str("<h2>Timelines, aligned by step</h2>\n");
            body.push_str(&timeline(
                "implementation",
                "the implementation",
                trace,
                &report.violations,
                Some(divergence.line),
                step_px,
            ));
            body.push_str(&timeline(
                "reference",
                "the reference",
                reference,
                &[],
                Some(divergence.line),
                step_px,
            ));
            body.push_str(&divergence_section(trace, reference, divergence));
        }
        None => {
            body.push_str("<h2>Timeline</h2>\n");
            body.push_str(&timeline(
                "run",
                "the run",
                trace,
                &report.violations,
                None,
                step_px(trace.events.len()),
            ));
        }
    }
    body.push_str(
        "<aside id=\"detail\"><h2>Event</h2><p id=\"detail-title\">Click an event (a tick, a span, a line) to see its JSON here (needs JavaScript).</p><pre id=\"detail-json\"></pre></aside>\n",
    );
    body.push_str(&format!(
        "<section id=\"session-tree\"><h2>Session tree</h2>\n{}</section>\n",
        tree::render(&scenario.session, trace)
    ));
    body.push_str(&violations_section(&report.violations));
    let side = if divergence.is_some() { "implementation" } else { "run" };
    body.push_str(&trace_section(side, trace, &report.violations));
    body.push_str("</main>\n");
    let mut data = format!(
        "<script type=\"application/json\" id=\"events-{side}\">{}</script>\n",
        script_json(&trace.to_json()["events"])
    );
    if let Some((reference, _)) = divergence {
        data.push_str(&format!(
            "<script type=\"application/json\" id=\"events-reference\">{}</script>\n",
            script_json(&reference.to_json()["events"])
        ));
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{} - agentsim</title>\n<style>\n{STYLE}</style>\n</head>\n<body data-js=\"off\">\n{body}{data}<script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        escape(&report.name)
    )
}

fn verdict_detail(report: &CaseReport) -> String {
    let detail = match &report.verdict {
        Verdict::BadScenario(error) => format!("bad scenario: {error}"),
        Verdict::Broken(failure) => {
            let mut text = format!("broken: {failure} ({})", failure.code());
            for line in failure.stderr_tail() {
                text.push_str(&format!("\nstderr: {line}"));
            }
            text
        }
        Verdict::NotApplicable { reason } => format!("not applicable: {reason}"),
        Verdict::Passed | Verdict::Failed => return String::new(),
    };
    format!("<pre id=\"verdict-detail\">{}</pre>\n", escape(&detail))
}

fn violations_section(violations: &[Violation]) -> String {
    let mut html = format!(
        "<section id=\"violations\"><h2>Violations ({})</h2>\n",
        violations.len()
    );
    if violations.is_empty() {
        html.push_str("<p>None: every rule holds on this trace.</p>\n");
    }
    let item = |violation: &Violation, root: bool| {
        let lines: Vec<String> = violation.lines.iter().map(|line| format!("{line:04}")).collect();
        let first = violation
            .lines
            .first()
            .map(|line| format!(" data-event=\"{line}\""))
            .unwrap_or_default();
        let evident = violation
            .evident_at
            .filter(|at| !violation.lines.contains(at))
            .map(|at| format!("; evident at {at:04}"))
            .unwrap_or_default();
        format!(
            "<li class=\"violation{}\" data-rule=\"{}\"{first}>{}<strong class=\"rule\">{}</strong> <span class=\"lines\">[trace {}{evident}]</span> {}<br><span class=\"rule-text\">{}</span></li>\n",
            if root { " root" } else { "" },
            escape(&violation.rule),
            if root {
                format!(
                    "<span class=\"root-label\">root cause · {}</span> ",
                    crate::check::level_of(&violation.rule).map_or("scenario check", |level| level.word())
                )
            } else {
                String::new()
            },
            escape(violation.id()),
            lines.join(","),
            escape(&violation.message),
            escape(&rule_text(&violation.rule).unwrap_or_default())
        )
    };
    // The root cause first (check::cause), the rest folded under it.
    if let Some((root, later)) = violations.split_first() {
        html.push_str("<ul>\n");
        html.push_str(&item(root, true));
        html.push_str("</ul>\n");
        if !later.is_empty() {
            html.push_str(&format!(
                "<details id=\"consequences\" data-count=\"{}\"><summary>then {} later in the trace, which may follow from it</summary>\n<ul>\n",
                later.len(),
                if later.len() == 1 { "1 violation".to_string() } else { format!("{} violations", later.len()) }
            ));
            for violation in later {
                html.push_str(&item(violation, false));
            }
            html.push_str("</ul></details>\n");
        }
    }
    html.push_str("</section>\n");
    html
}

/// The rows of the badge strip: each (line, rule) mark gets the lowest row where it overlaps
/// no earlier mark, so badges cover neither each other nor any span (they live in a strip of
/// their own above the lanes).
fn badge_rows(marks: &[(usize, &str)], x: &dyn Fn(usize) -> usize) -> Vec<usize> {
    let mut row_ends: Vec<usize> = Vec::new();
    marks
        .iter()
        .map(|(line, rule)| {
            let half = rule.len() * 3 + 6;
            let left = x(*line).saturating_sub(half);
            let row = match row_ends.iter().position(|end| *end < left) {
                Some(row) => row,
                None => {
                    row_ends.push(0);
                    row_ends.len() - 1
                }
            };
            row_ends[row] = x(*line) + half;
            row
        })
        .collect()
}

/// One timeline: the step axis, the five lanes with their spans and ticks, violation marks,
/// abort signals and the divergence as vertical lines across the lanes.
fn timeline(
    side: &str,
    title: &str,
    trace: &Trace,
    violations: &[Violation],
    divergence_line: Option<usize>,
    step_px: usize,
) -> String {
    let x = |step: usize| step * step_px;
    let steps = trace.events.len().max(1);
    let width = (steps + 2) * step_px;
    let spans = spans(trace);
    let tracks = tracks_per_lane(&spans);
    let mut html = format!(
        "<section class=\"timeline\" data-side=\"{side}\"><h3>{}: {} steps</h3>\n<div class=\"scroller\"><div class=\"grid\" style=\"width:{}px\">\n",
        escape(title),
        trace.events.len(),
        width + 140
    );
    // The step axis: a number every five steps.
    html.push_str("<div class=\"axis\"><div class=\"label\">step</div><div class=\"track-area\">");
    for step in (1..=steps).filter(|step| *step == 1 || step % 5 == 0) {
        html.push_str(&format!(
            "<span class=\"tickno\" style=\"left:{}px\">{step}</span>",
            x(step)
        ));
    }
    html.push_str("</div></div>\n");
    let violated: Vec<(usize, &str)> = violations
        .iter()
        .flat_map(|violation| violation.lines.iter().map(move |line| (*line, violation.rule.as_str())))
        .collect();
    // One badge per (line, rule), in a strip of its own above the lanes; the root cause's marked.
    let root_rule = violations.first().map(|violation| violation.rule.as_str());
    let marks: Vec<(usize, &str)> = violated
        .iter()
        .copied()
        .collect::<BTreeSet<(usize, &str)>>()
        .into_iter()
        .collect();
    if !marks.is_empty() {
        let rows = badge_rows(&marks, &x);
        let height = (rows.iter().max().copied().unwrap_or(0) + 1) * BADGE_ROW_PX + 4;
        html.push_str(&format!(
            "<div class=\"lane marks\" data-lane=\"rules\" style=\"height:{height}px\"><div class=\"label\">rules broken</div><div class=\"track-area\">"
        ));
        for ((line, rule), row) in marks.iter().zip(rows) {
            let root = if Some(*rule) == root_rule { " root" } else { "" };
            html.push_str(&format!(
                "<span class=\"vmark{root}\" data-rule=\"{}\" data-event=\"{line}\" style=\"left:{}px;top:{}px\" title=\"{}\">{}</span>",
                escape(rule),
                x(*line),
                2 + row * BADGE_ROW_PX,
                escape(&format!("{rule}: {}", rule_text(rule).unwrap_or_default())),
                escape(rule)
            ));
        }
        html.push_str("</div></div>\n");
    }
    for lane in LANES {
        let lane_tracks = tracks[&lane];
        let height = (lane_tracks + 1) * TRACK_PX + 4;
        html.push_str(&format!(
            "<div class=\"lane\" data-lane=\"{}\" style=\"height:{height}px\"><div class=\"label\">{}</div><div class=\"track-area\">",
            lane.id(),
            lane.title()
        ));
        for span in spans.iter().filter(|span| span.lane == lane) {
            let end = span.to.unwrap_or(steps + 1);
            let open = if span.to.is_none() { " open" } else { "" };
            html.push_str(&format!(
                "<div class=\"span {}{open}\" data-event=\"{}\" data-to=\"{}\" style=\"left:{}px;width:{}px;top:{}px\" title=\"{}\">{}</div>",
                span.outcome,
                span.from,
                span.to.map(|to| to.to_string()).unwrap_or_else(|| "open".into()),
                x(span.from),
                (end - span.from) * step_px + step_px / 2,
                (span.track + 1) * TRACK_PX,
                escape(&format!(
                    "{} (steps {}..{})",
                    span.label,
                    span.from,
                    span.to.map(|to| to.to_string()).unwrap_or_else(|| "never completed".into())
                )),
                escape(&span.label)
            ));
        }
        for (index, event) in trace
            .events
            .iter()
            .enumerate()
            .filter(|(_, event)| lane_of(event) == lane)
        {
            let line = index + 1;
            html.push_str(&format!(
                "<span class=\"ev {}\" data-event=\"{line}\" data-lane=\"{}\" style=\"left:{}px\" title=\"{}\"></span>",
                tick_kind(event),
                lane.id(),
                x(line),
                escape(&render_line(line, event))
            ));
        }
        html.push_str("</div></div>\n");
    }
    // Vertical lines across the lanes: abort signals, violations, the divergence.
    html.push_str("<div class=\"overlay\">");
    for (index, event) in trace.events.iter().enumerate() {
        if tick_kind(event) == "abort" {
            html.push_str(&format!(
                "<div class=\"vline abort\" style=\"left:{}px\"></div>",
                x(index + 1) + 140
            ));
        }
    }
    let violated_lines: BTreeSet<usize> = violated.iter().map(|(line, _)| *line).collect();
    for line in violated_lines {
        html.push_str(&format!(
            "<div class=\"vline violated\" style=\"left:{}px\"></div>",
            x(line) + 140
        ));
    }
    if let Some(line) = divergence_line {
        html.push_str(&format!(
            "<div class=\"vline divergence\" style=\"left:{}px\"></div>",
            x(line) + 140
        ));
    }
    html.push_str("</div></div></div></section>\n");
    html
}

/// The width of one step for a timeline of `steps` steps.
fn step_px(steps: usize) -> usize {
    (LANES_WIDTH_PX / steps.max(1)).clamp(STEP_PX_MIN, STEP_PX_MAX)
}

/// The trace one event per line, violations under the lines they name.
fn trace_section(side: &str, trace: &Trace, violations: &[Violation]) -> String {
    let mut html = format!(
        "<section id=\"trace\" data-side=\"{side}\"><h2>Trace ({} events)</h2>\n<table class=\"trace\">\n",
        trace.events.len()
    );
    for (index, event) in trace.events.iter().enumerate() {
        let line = index + 1;
        let marked: Vec<&Violation> = violations
            .iter()
            .filter(|violation| violation.lines.contains(&line))
            .collect();
        html.push_str(&format!(
            "<tr class=\"event{}\" data-event=\"{line}\" data-lane=\"{}\"><td class=\"mark\">{}</td><td><code>{}</code></td></tr>\n",
            if marked.is_empty() { "" } else { " violated" },
            lane_of(event).id(),
            if marked.is_empty() { "" } else { "!!" },
            escape(&render_line(line, event))
        ));
        for violation in marked {
            html.push_str(&format!(
                "<tr class=\"vrow\" data-rule=\"{}\" data-event=\"{line}\"><td></td><td><strong>{}</strong>: {} <span class=\"rule-text\">({})</span></td></tr>\n",
                escape(&violation.rule),
                escape(&violation.rule),
                escape(&violation.message),
                escape(&rule_text(&violation.rule).unwrap_or_default())
            ));
        }
    }
    html.push_str("</table></section>\n");
    html
}

/// Both traces line by line (ids renumbered as the diff compares them), the first divergence
/// highlighted.
fn divergence_section(implementation: &Trace, reference: &Trace, divergence: &Divergence) -> String {
    let implementation = diff::normalize(implementation);
    let reference = diff::normalize(reference);
    let mut html = format!(
        "<section id=\"divergence\"><h2>Divergence from the reference</h2>\n<p id=\"first-divergence-summary\" data-line=\"{}\">{}</p>\n",
        divergence.line,
        escape(&divergence.describe().join(" "))
    );
    html.push_str("<table class=\"side-by-side\"><tr><th>step</th><th>implementation</th><th>reference</th></tr>\n");
    let length = implementation.events.len().max(reference.events.len());
    for index in 0..length {
        let line = index + 1;
        let left = implementation.events.get(index).map(|event| render_line(line, event));
        let right = reference.events.get(index).map(|event| render_line(line, event));
        let (class, id) = if line == divergence.line {
            ("first-divergence", " id=\"first-divergence\"")
        } else if line > divergence.line {
            ("after", "")
        } else {
            ("same", "")
        };
        let cell = |side: &str, text: Option<String>| match text {
            Some(text) => format!(
                "<td data-side=\"{side}\" data-event=\"{line}\"><code>{}</code></td>",
                escape(&text)
            ),
            None => "<td class=\"ended\">(end of trace)</td>".to_string(),
        };
        html.push_str(&format!(
            "<tr class=\"{class}\"{id} data-line=\"{line}\"><td class=\"step\">{line:04}</td>{}{}</tr>\n",
            cell("implementation", left),
            cell("reference", right)
        ));
    }
    html.push_str("</table></section>\n");
    html
}

const STYLE: &str = r#"body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #1d232a; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 18px 0 6px; } h3 { font-size: 14px; margin: 10px 0 4px; }
code, pre { font: 12px/1.35 ui-monospace, Menlo, Consolas, monospace; }
.meta { margin: 2px 0; color: #445; }
.verdict { padding: 1px 8px; border-radius: 9px; color: #fff; background: #2e7d32; font-weight: 600; }
.verdict.failed, .verdict.broken, .verdict.bad-scenario { background: #c62828; }
.verdict.not-applicable { background: #777; }
#replay-command { background: #f3f4f6; padding: 2px 6px; user-select: all; }
#violations li { margin: 4px 0; cursor: pointer; } .rule { color: #c62828; } .rule-text { color: #555; font-style: italic; }
.scroller { overflow-x: auto; border: 1px solid #d0d7de; border-radius: 6px; margin-bottom: 8px; }
.grid { position: relative; }
.axis, .lane { display: flex; position: relative; border-bottom: 1px solid #eaeef2; }
.axis { height: 20px; background: #f6f8fa; }
.label { flex: 0 0 130px; width: 130px; padding: 2px 6px; font-weight: 600; background: #f6f8fa; border-right: 1px solid #d0d7de; position: sticky; left: 0; z-index: 3; font-size: 12px; }
.track-area { position: relative; flex: 1; }
.lane:nth-of-type(odd) .track-area { background: #fbfcfd; }
.tickno { position: absolute; top: 2px; font-size: 10px; color: #667; transform: translateX(-50%); }
.ev { position: absolute; top: 5px; width: 8px; height: 8px; margin-left: -4px; border-radius: 50%; background: #57606a; cursor: pointer; z-index: 2; }
.ev.issue { background: #0969da; } .ev.complete { background: #1a7f37; } .ev.chunk { background: #8c959f; width: 5px; height: 5px; margin-left: -2px; top: 7px; }
.ev.settled { border-radius: 0; transform: rotate(45deg); width: 9px; height: 9px; }
.ev.settled.resolved { background: #1a7f37; } .ev.settled.rejected { background: #cf222e; }
.ev.abort { border-radius: 0; width: 0; height: 0; background: none; border-left: 6px solid transparent; border-right: 6px solid transparent; border-top: 11px solid #d4380d; margin-left: -6px; }
.ev.selected, .span.selected { outline: 2px solid #fb8500; outline-offset: 1px; }
.span { position: absolute; height: 14px; margin-left: -4px; border-radius: 4px; background: #ddf4ff; border: 1px solid #54aeff; font-size: 10px; line-height: 14px; padding: 0 3px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; box-sizing: border-box; cursor: pointer; z-index: 1; }
.lane[data-lane=operations] .span { background: #fff8c5; border-color: #d4a72c; }
.lane[data-lane=store] .span { background: #dafbe1; border-color: #4ac26b; }
.lane[data-lane=tools] .span { background: #fbefff; border-color: #c297ff; }
.lane[data-lane=output] .span { background: #ffeff7; border-color: #ff80c8; }
.span.failed { background: #ffebe9 !important; border-color: #cf222e !important; }
.span.open { border-style: dashed; border-right: none; }
.vmark.root { background: #7a0000; outline: 2px solid #ffb000; }
.lane.marks .track-area { background: #fff8f8; }
.root-label { background: #7a0000; color: #fff; font-size: 11px; padding: 0 5px; border-radius: 3px; }
#violations li.root { font-weight: 600; }
.vmark { position: absolute; transform: translateX(-50%); background: #cf222e; color: #fff; font-size: 9px; font-weight: 700; padding: 0 3px; border-radius: 3px; z-index: 4; cursor: pointer; white-space: nowrap; }
.overlay { position: absolute; top: 0; bottom: 0; left: 0; right: 0; pointer-events: none; }
.vline { position: absolute; top: 20px; bottom: 0; width: 0; border-left: 2px dashed; }
.vline.abort { border-color: #d4380d; } .vline.violated { border-color: rgba(207, 34, 46, 0.55); } .vline.divergence { border-color: #fb8500; border-left-style: solid; border-left-width: 3px; }
#detail { position: sticky; top: 0; background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: 4px 10px; margin: 8px 0; max-height: 260px; overflow: auto; z-index: 5; }
#detail h2 { margin: 4px 0; } #detail-json { margin: 0; }
.tree, .tree ul { list-style: none; padding-left: 18px; margin: 0; } .tree { padding-left: 0; }
.tree li { margin: 1px 0; } .tree ul { border-left: 1px dotted #8c959f; }
.entry { display: inline-block; padding: 0 6px; border-radius: 4px; border: 1px solid #d0d7de; background: #f6f8fa; font-size: 12px; }
.entry.on-path { background: #ddf4ff; border-color: #54aeff; font-weight: 600; }
.entry.appended.ok { background: #dafbe1; border-color: #4ac26b; } .entry.appended.failed { background: #ffebe9; border-color: #cf222e; } .entry.appended.pending { border-style: dashed; }
.entry.leaf { box-shadow: 0 0 0 2px #fb8500; } .answer { color: #57606a; font-size: 11px; }
.tree-legend .entry { margin-right: 4px; }
table.trace, table.side-by-side { border-collapse: collapse; width: 100%; }
table.trace td, table.side-by-side td, table.side-by-side th { padding: 0 6px; vertical-align: top; text-align: left; }
tr.event { cursor: pointer; } tr.event:hover, tr.event.selected { background: #fff8c5; }
tr.event.violated { background: #ffebe9; } tr.event .mark { color: #cf222e; font-weight: 700; width: 20px; }
tr.vrow td { color: #cf222e; padding-left: 24px; font-size: 12px; }
.step { color: #667; font-family: ui-monospace, monospace; font-size: 12px; }
table.side-by-side tr.first-divergence { background: #ffe8cc; outline: 2px solid #fb8500; }
table.side-by-side tr.after { color: #8c959f; } .ended { color: #8c959f; font-style: italic; }
"#;

const SCRIPT: &str = r#"(function () {
  'use strict';
  var data = {};
  ['run', 'implementation', 'reference'].forEach(function (side) {
    var block = document.getElementById('events-' + side);
    if (block) { data[side] = JSON.parse(block.textContent); }
  });
  var title = document.getElementById('detail-title');
  var json = document.getElementById('detail-json');
  function show(side, line) {
    var events = data[side] || data.run || data.implementation || [];
    var event = events[line - 1];
    if (!event) { return; }
    Array.prototype.forEach.call(document.querySelectorAll('.selected'), function (element) {
      element.classList.remove('selected');
    });
    Array.prototype.forEach.call(document.querySelectorAll('[data-event="' + line + '"]'), function (element) {
      var owner = element.closest('[data-side]');
      if (!owner || owner.getAttribute('data-side') === side) { element.classList.add('selected'); }
    });
    title.textContent = side + ' trace line ' + ('000' + line).slice(-4) + ': ' + event.event;
    json.textContent = JSON.stringify(event, null, 2);
    json.setAttribute('data-event', String(line));
    json.setAttribute('data-side', side);
  }
  document.addEventListener('click', function (click) {
    var target = click.target.closest('[data-event]');
    if (!target || target === json) { return; }
    var owner = target.closest('[data-side]');
    var side = owner ? owner.getAttribute('data-side') : (data.run ? 'run' : 'implementation');
    show(side, parseInt(target.getAttribute('data-event'), 10));
  });
  // Open on the first violation, else the first divergence, else the first event.
  var first = document.querySelector('#violations li[data-event]');
  var divergence = document.getElementById('first-divergence');
  var side = data.run ? 'run' : 'implementation';
  if (first) { show(side, parseInt(first.getAttribute('data-event'), 10)); }
  else if (divergence) { show(side, parseInt(divergence.getAttribute('data-line'), 10)); }
  else { show(side, 1); }
  // Layout self-check, read by the browser test: rule badges must cover no span and no
  // other badge (they sit in a strip of their own, in rows).
  var overlaps = 0;
  var badges = Array.prototype.map.call(document.querySelectorAll('.vmark'), function (badge) { return badge.getBoundingClientRect(); });
  var spans = Array.prototype.map.call(document.querySelectorAll('.span'), function (span) { return span.getBoundingClientRect(); });
  function meet(a, b) { return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; }
  badges.forEach(function (badge, index) {
    spans.forEach(function (span) { if (meet(badge, span)) { overlaps += 1; } });
    badges.slice(index + 1).forEach(function (other) { if (meet(badge, other)) { overlaps += 1; } });
  });
  document.body.setAttribute('data-badge-overlaps', String(overlaps));
  document.body.setAttribute('data-js', 'ready');
})();
"#;
