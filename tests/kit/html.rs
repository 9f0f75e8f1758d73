//! The HTML pages in a real browser: pages generated with the library (and by the CLI's
//! `--html` and `--html-dir`) are loaded from `file://` by headless Chromium (Debian's
//! `chromium`, which .ci/run installs); the DOM after the page's script ran is checked (lanes,
//! events, violation marks and their rule IDs, the divergence line), and a screenshot must not
//! be blank. Without Chromium these tests fail: they never pass without a browser.
//!
//! `UPDATE_SCREENSHOTS=1 cargo test --test kit html` also writes the walk-through's and the
//! mutant's screenshots to docs/timeline-walkthrough.png and docs/timeline-mutant.png.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentsim::html::{lanes::LANES, render_page};
use agentsim::implementation::Implementation;
use agentsim::run::{CaseReport, Run, Verdict};
use agentsim::sim::StrategyKind;
use agentsim::suite::{self};
use agentsim::zoo::Mutant;

const WALKTHROUGH: &str = "scenarios/wiring/walkthrough.json";
const POISON: &str = "scenarios/poison/applied-then-fail-at-first-append.json";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_agentsim")
}

/// A fresh folder under target/ for this test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = root().join("target/html-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("target/ is writable");
    dir
}

/// Debian's Chromium (or `AGENTSIM_CHROMIUM`). When none is installed and the tests run as
/// root on Debian (the project's machines: README's `cargo test` needs nothing else), it is
/// installed once with apt, as .ci/run does; otherwise a clear failure.
fn chromium() -> PathBuf {
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    if let Some(path) = std::env::var_os("AGENTSIM_CHROMIUM") {
        return PathBuf::from(path);
    }
    let find = || {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .into_iter()
            .map(PathBuf::from)
            .find(|candidate| candidate.exists())
    };
    let _one_install_at_a_time = INSTALL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(path) = find() {
        return path;
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0");
    if root && Path::new("/usr/bin/apt-get").exists() {
        let apt = |args: &[&str]| {
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|status| status.success())
        };
        if apt(&["update", "-qq"]) && apt(&["install", "-y", "-qq", "chromium", "fonts-noto-cjk"]) {
            if let Some(path) = find() {
                return path;
            }
        }
    }
    panic!(
        "the HTML browser tests need headless Chromium and none could be installed: \
         run `apt-get update && apt-get install -y chromium fonts-noto-cjk` (as .ci/run does), \
         or point AGENTSIM_CHROMIUM at a Chromium binary"
    );
}

/// Runs Chromium headless on `page` with `extra` flags and a fresh profile; returns stdout.
fn browser(page: &Path, extra: &[String]) -> String {
    static PROFILES: AtomicUsize = AtomicUsize::new(0);
    let profile = std::env::temp_dir().join(format!(
        "agentsim-chromium-{}-{}",
        std::process::id(),
        PROFILES.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&profile);
    let url = format!("file://{}", page.canonicalize().expect("the page exists").display());
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    // Read stdout on a thread so a large DOM cannot block the browser on a full pipe.
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).expect("chromium's output is text");
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait works") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish {url} within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = reader.join().expect("the reader ends");
    let _ = std::fs::remove_dir_all(&profile);
    assert!(status.success(), "chromium failed on {url}: {status}");
    text
}

/// The DOM after the page's script ran.
fn dump_dom(page: &Path) -> String {
    let dom = browser(page, &["--dump-dom".to_string()]);
    assert!(dom.contains("</html>"), "no DOM from chromium for {}", page.display());
    dom
}

/// A 1400x900 screenshot, checked not blank: many colours, and a good share of pixels that are
/// not the background.
fn screenshot(page: &Path, out: &Path) {
    let _ = std::fs::remove_file(out);
    browser(
        page,
        &[
            format!("--screenshot={}", out.display()),
            "--window-size=1400,900".to_string(),
        ],
    );
    let decoder = png::Decoder::new(std::fs::File::open(out).expect("the screenshot was written"));
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buffer = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buffer).expect("a frame");
    assert_eq!((info.width, info.height), (1400, 900), "the window size");
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buffer[..info.buffer_size()].chunks(channels).collect();
    let mut counts: std::collections::BTreeMap<&[u8], usize> = std::collections::BTreeMap::new();
    for pixel in &pixels {
        *counts.entry(pixel).or_default() += 1;
    }
    let background = counts.values().copied().max().unwrap_or(0);
    let foreground = pixels.len() - background;
    assert!(
        counts.len() >= 50 && foreground * 100 >= pixels.len() * 3,
        "{} looks blank: {} colours, {foreground} of {} pixels not the background",
        out.display(),
        counts.len(),
        pixels.len()
    );
    if std::env::var_os("UPDATE_SCREENSHOTS").is_some() {
        let name = out.file_name().expect("a file name");
        std::fs::copy(out, root().join("docs").join(name)).expect("docs/ is writable");
    }
}

fn load(path: &str) -> agentsim::scenario::LoadedScenario {
    // Relative to the repository root (the tests' working folder), as a user types it, so
    // the pages' replay commands read as they would for a user.
    suite::load_corpus(&[PathBuf::from(path)])
        .expect("the scenario loads")
        .remove(0)
}

/// How often `needle` occurs in `text`.
fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

/// The part of the DOM inside the timeline of `side` (`run`, `implementation`, `reference`).
fn timeline<'a>(dom: &'a str, side: &str) -> &'a str {
    let start = dom
        .find(&format!("<section class=\"timeline\" data-side=\"{side}\""))
        .unwrap_or_else(|| panic!("no {side} timeline"));
    let rest = &dom[start..];
    &rest[..rest.find("</section>").expect("the section ends")]
}

/// The values of `attribute` on the elements whose opening tag starts with `prefix`.
fn attribute_values(dom: &str, prefix: &str, attribute: &str) -> Vec<String> {
    dom.match_indices(prefix)
        .map(|(index, _)| {
            let tag = &dom[index..index + dom[index..].find('>').expect("the tag ends")];
            let start = tag
                .find(&format!("{attribute}=\""))
                .unwrap_or_else(|| panic!("no {attribute} in {tag}"))
                + attribute.len()
                + 2;
            tag[start..start + tag[start..].find('"').expect("the value ends")].to_string()
        })
        .collect()
}

/// The common checks of a page's one timeline: five lanes, one tick per event, and the
/// script ran (the detail panel shows an event's JSON).
fn assert_timeline(dom: &str, side: &str, events: usize) {
    let lanes = timeline(dom, side);
    let lane_ids = attribute_values(lanes, "<div class=\"lane\"", "data-lane");
    let expected: Vec<String> = LANES.iter().map(|lane| lane.id().to_string()).collect();
    assert_eq!(lane_ids, expected, "the {side} timeline's lanes");
    assert_eq!(
        count(lanes, "<span class=\"ev "),
        events,
        "one tick per event in {side}"
    );
    let mut ticks: Vec<usize> = attribute_values(lanes, "<span class=\"ev ", "data-event")
        .iter()
        .map(|line| line.parse().expect("a line number"))
        .collect();
    ticks.sort_unstable();
    assert_eq!(
        ticks,
        (1..=events).collect::<Vec<_>>(),
        "every step has its tick in {side}"
    );
}

fn assert_script_ran(dom: &str) {
    assert!(dom.contains("data-js=\"ready\""), "the page's script did not run");
    let panel = &dom[dom.find("<pre id=\"detail-json\"").expect("the detail panel")..];
    let panel = &panel[..panel.find("</pre>").expect("the panel ends")];
    assert!(
        panel.contains("\"event\":"),
        "the detail panel shows no event JSON: {panel}"
    );
}

fn mutant_case() -> (agentsim::scenario::LoadedScenario, CaseReport) {
    let loaded = load(POISON);
    let mutant = Mutant::from_name("poison-not-stored").expect("a mutant of the zoo");
    let report = Run::of(&loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(&Implementation::mutant(mutant))
        .execute(&loaded);
    assert_eq!(report.verdict, Verdict::Failed, "the mutant fails the poison scenario");
    (loaded, report)
}

#[test]
fn html_walkthrough_page_shows_five_lanes_every_event_and_the_tree_in_chromium() {
    let dir = scratch("walkthrough");
    let loaded = load(WALKTHROUGH);
    let report = Run::of(&loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(&Implementation::reference())
        .execute(&loaded);
    assert_eq!(report.verdict, Verdict::Passed);
    let events = report.outcome.as_ref().expect("a trace").trace.events.len();
    let page = dir.join("walkthrough.html");
    std::fs::write(&page, render_page(&loaded.scenario, &report, None)).expect("written");
    let static_html = std::fs::read_to_string(&page).expect("read back");
    assert!(
        !static_html.contains("http://") && !static_html.contains("https://"),
        "no network"
    );

    let dom = dump_dom(&page);
    assert_script_ran(&dom);
    assert_timeline(&dom, "run", events);
    assert_eq!(count(&dom, "<tr class=\"event"), events, "one trace row per event");
    assert_eq!(count(&dom, "class=\"vmark\""), 0, "the reference breaks no rule here");
    assert!(dom.contains("data-verdict=\"passed\""));
    // The chapter's walk-through: restored at old-assistant, four appends, leaf entry-4.
    assert!(dom.contains("<code id=\"restored-leaf\">old-assistant</code>"));
    assert!(dom.contains("<code id=\"final-leaf\">entry-4</code>"));
    let classes = attribute_values(&dom, "<span class=\"entry", "class");
    let entries = attribute_values(&dom, "<span class=\"entry", "data-entry");
    for entry in ["entry-1", "entry-2", "entry-3", "entry-4"] {
        let index = entries
            .iter()
            .position(|id| id == entry)
            .expect("the entry is in the tree");
        assert!(classes[index].contains("appended ok"), "{entry}: {}", classes[index]);
    }
    assert!(classes[entries.iter().position(|id| id == "entry-4").expect("entry-4")].contains("leaf"));
    // The leaf's moves (the restore, then four acknowledged appends) and the two requests.
    assert_eq!(count(&dom, "<li data-event="), 5 + 2);
    assert!(dom.contains(&format!(
        "<code id=\"replay-command\">{}</code>",
        report.replay_command()
    )));

    screenshot(&page, &dir.join("timeline-walkthrough.png"));
}

#[test]
fn html_mutant_page_marks_each_violation_at_its_event_with_the_rule_in_chromium() {
    let dir = scratch("mutant");
    let (loaded, report) = mutant_case();
    let events = report.outcome.as_ref().expect("a trace").trace.events.len();
    let page = dir.join("mutant.html");
    std::fs::write(&page, render_page(&loaded.scenario, &report, None)).expect("written");

    let dom = dump_dom(&page);
    assert_script_ran(&dom);
    assert_timeline(&dom, "run", events);
    assert!(dom.contains("data-verdict=\"failed\""));
    // Every placed violation has a mark (the script may have added `selected` to its class) at each of its lines, labelled with its rule.
    let marks: BTreeSet<(String, String)> = attribute_values(&dom, "<span class=\"vmark", "data-rule")
        .into_iter()
        .zip(attribute_values(&dom, "<span class=\"vmark", "data-event"))
        .collect();
    let expected: BTreeSet<(String, String)> = report
        .violations
        .iter()
        .flat_map(|violation| {
            violation
                .lines
                .iter()
                .map(|line| (violation.rule.clone(), line.to_string()))
        })
        .collect();
    assert_eq!(marks, expected, "violation marks (rule, line)");
    let rules: BTreeSet<&str> = marks.iter().map(|(rule, _)| rule.as_str()).collect();
    assert!(
        rules.contains("POISON-2"),
        "the poison mutant breaks POISON-2: {rules:?}"
    );
    // The rule's statement from conformance.md is on the page.
    let statement = agentsim::html::rule_text("POISON-2").expect("a statement");
    assert!(dom.contains(&statement), "POISON-2's statement is shown");
    assert_eq!(
        count(&dom, "<li class=\"violation"),
        report.violations.len(),
        "every violation listed"
    );
    // The script opened the first violation's event in the detail panel.
    let first = report.violations[0].lines[0];
    assert!(dom.contains(&format!("<pre id=\"detail-json\" data-event=\"{first}\"")));
    assert!(dom.contains(&format!(
        "<code id=\"replay-command\">{}</code>",
        report.replay_command()
    )));
    assert!(report.replay_command().contains("--mutant poison-not-stored"));

    screenshot(&page, &dir.join("timeline-mutant.png"));
}

#[test]
fn html_divergence_page_of_a_failing_impl_shows_both_timelines_and_the_first_divergence() {
    let dir = scratch("divergence");
    let adapter = format!("{} serve --mutant poison-not-stored", binary());
    let output = Command::new(binary())
        .args(["run", "--impl", &adapter, POISON, "--format", "json", "--html-dir"])
        .arg(&dir)
        .current_dir(root())
        .output()
        .expect("agentsim runs");
    assert_eq!(output.status.code(), Some(1), "the mutant adapter fails");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    let result = &report["results"][0];
    let line = result["firstDivergence"]["line"].as_u64().expect("a divergence");
    let page = dir.join("applied-then-fail-at-first-append.html");
    assert!(dir.join("index.html").exists(), "an index of the pages");

    let dom = dump_dom(&page);
    assert_script_ran(&dom);
    let implementation_events = count(timeline(&dom, "implementation"), "<span class=\"ev ");
    let reference_events = count(timeline(&dom, "reference"), "<span class=\"ev ");
    assert_timeline(&dom, "implementation", implementation_events);
    assert_timeline(&dom, "reference", reference_events);
    assert_ne!(
        implementation_events, reference_events,
        "the mutant runs longer than the reference"
    );
    // The divergence row: one, at the reported line, with both lines as the report has them.
    assert_eq!(count(&dom, "id=\"first-divergence\""), 1);
    let row_start = dom.find("id=\"first-divergence\"").expect("the row");
    let row = &dom[row_start..row_start + dom[row_start..].find("</tr>").expect("the row ends")];
    assert!(row.contains(&format!("data-line=\"{line}\"")), "{row}");
    let summary = result["firstDivergence"]["implementation"].as_str().expect("a line");
    let escaped = summary
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    // The report's line names the implementation's own effect and signal ids; the page
    // renumbers them by first appearance: the lines agree but for the numbers after `#`.
    let without_ids = |text: &str| {
        let mut out = String::new();
        let mut after_hash = false;
        for character in text.chars() {
            if after_hash && character.is_ascii_digit() {
                continue;
            }
            after_hash = character == '#';
            out.push(character);
        }
        out
    };
    assert!(
        without_ids(row).contains(&without_ids(&escaped)) || without_ids(row).contains(&without_ids(summary)),
        "{row} lacks {summary}"
    );
    assert_eq!(
        count(&dom, "class=\"vline divergence\""),
        2,
        "the divergence crosses both timelines"
    );
    assert!(dom.contains(&format!(
        "<code id=\"replay-command\">{}</code>",
        result["replay"]
            .as_str()
            .expect("a replay")
            // A browser serializes text with `&`, `<` and `>` escaped and quotes as they are.
            .replace('&', "&amp;")
    )));
    screenshot(&page, &dir.join("timeline-divergence.png"));
}

#[test]
fn html_replay_flag_and_explore_html_dir_write_pages() {
    let dir = scratch("cli");
    let page = dir.join("walk.html");
    let status = Command::new(binary())
        .args(["replay", WALKTHROUGH, "--html"])
        .arg(&page)
        .current_dir(root())
        .stdout(Stdio::null())
        .status()
        .expect("agentsim runs");
    assert_eq!(status.code(), Some(0));
    let html = std::fs::read_to_string(&page).expect("the page was written");
    assert!(html.contains("<code id=\"replay-command\">agentsim replay scenarios/wiring/walkthrough.json</code>"));

    let pages = dir.join("explore");
    let output = Command::new(binary())
        .args([
            "explore",
            POISON,
            "--strategy",
            "random",
            "--seeds",
            "3",
            "--mutant",
            "poison-not-stored",
            "--html-dir",
        ])
        .arg(&pages)
        .current_dir(root())
        .output()
        .expect("agentsim runs");
    assert_eq!(output.status.code(), Some(1), "the mutant fails under exploration");
    let written: Vec<PathBuf> = std::fs::read_dir(&pages)
        .expect("the folder was made")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.file_name().is_some_and(|name| name != "index.html"))
        .collect();
    assert_eq!(written.len(), 3, "one page per failing schedule: {written:?}");
    for path in &written {
        let html = std::fs::read_to_string(path).expect("readable");
        assert!(
            html.contains("class=\"vmark\""),
            "{} marks its violations",
            path.display()
        );
        assert!(
            html.contains("--mutant poison-not-stored"),
            "{} has its replay",
            path.display()
        );
    }
}

/// A busy page (a queue released too early: eight violations on close steps) marks the root
/// cause, folds the rest under it, and its rule badges, in their own strip, cover no span's
/// label and no other badge (the page's script measures the laid-out boxes).
#[test]
fn html_page_marks_the_root_cause_and_its_badges_cover_nothing_in_chromium() {
    let dir = scratch("root-cause");
    let loaded = load("scenarios/lab13/lab13-2-3b-tools-and-signal-across-two-runs.json");
    let mutant = Mutant::from_name("settled-after-next-run-starts").expect("a mutant of the zoo");
    let report = Run::of(&loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(&Implementation::mutant(mutant))
        .execute(&loaded);
    assert!(report.violations.len() >= 5, "a busy case: {:?}", report.violations);
    let root = report.violations[0].rule.clone();
    assert_eq!(root, "QUEUE-1", "the queue released too early is the root cause");
    let page = dir.join("root-cause.html");
    std::fs::write(&page, render_page(&loaded.scenario, &report, None)).expect("written");
    let dom = dump_dom(&page);
    assert_script_ran(&dom);
    assert!(
        dom.contains("data-badge-overlaps=\"0\""),
        "a rule badge covers a span or another badge"
    );
    // The script may have added `selected` to the class of the item it opened on.
    let item = &dom[dom.find("<li class=\"violation root").expect("a root item")..];
    assert!(
        item[..item.find('>').expect("the tag ends")].contains(&format!("data-rule=\"{root}\"")),
        "the root cause leads the list"
    );
    assert!(
        dom.contains(&format!("data-count=\"{}\"", report.violations.len() - 1)),
        "the consequences are folded under the root, counted"
    );
    assert!(
        dom.contains(&format!("<span class=\"vmark root\" data-rule=\"{root}\""))
            || dom.contains(&format!("<span class=\"vmark root selected\" data-rule=\"{root}\"")),
        "the root's badge is marked"
    );
    screenshot(&page, &dir.join("root-cause.png"));
}

/// An expectations file of `pairs`: the MUST ones under a cause labelled bug, the others under
/// one labelled choice.
fn expectations_of(implementation: &str, pairs: &BTreeSet<(String, String)>) -> String {
    let mut bug: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    let mut choice: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (scenario, rule) in pairs {
        let must = agentsim::check::level_of(rule) == Some(agentsim::check::Level::Must);
        let by_rule = if must { &mut bug } else { &mut choice };
        by_rule.entry(rule).or_default().push(scenario);
    }
    let source = serde_json::json!({"file": "src/zoo/poison.rs", "function": "Mutant::append_answered", "line": 1});
    let mut causes = vec![
        serde_json::json!({"id": "the-bug", "verdict": "bug", "reason": "the <mutant>'s bug", "source": source, "pairs": bug}),
    ];
    if !choice.is_empty() {
        causes.push(serde_json::json!({"id": "a-choice", "verdict": "choice", "reason": "a choice", "source": source, "pairs": choice}));
    }
    serde_json::json!({"implementation": implementation, "causes": causes}).to_string()
}

/// What the probe script appended to a copy of the dashboard found, as JSON.
fn probe(page: &Path) -> serde_json::Value {
    const PROBE: &str = r#"<script>
(function () {
  const shown = () => [...document.querySelectorAll('#rule-table tr.rule')].filter(row => getComputedStyle(row).display !== 'none').map(row => row.dataset.rule);
  const result = { all: shown() };
  for (const id of ['only-must', 'only-bugs', 'only-differences']) {
    const box = document.getElementById(id);
    box.checked = true; box.dispatchEvent(new Event('change'));
    result[id] = shown();
    if (id === 'only-bugs') result.choicesShown = [...document.querySelectorAll('.cause.choice')].filter(c => getComputedStyle(c).display !== 'none').length;
    box.checked = false; box.dispatchEvent(new Event('change'));
  }
  result.afterwards = shown().length;
  result.choices = document.querySelectorAll('.cause.choice').length;
  result.stickyHeader = getComputedStyle(document.querySelector('#rule-table thead th')).position;
  result.stickyColumn = getComputedStyle(document.querySelector('#rule-table tr.rule th')).position;
  const links = [...document.querySelectorAll('#cause-view a.pair')];
  result.pairLinks = links.map(a => a.getAttribute('href'));
  result.unresolved = links.filter(a => { const t = document.getElementById(a.getAttribute('href').slice(1)); return !t || !t.classList.contains('case'); }).map(a => a.getAttribute('href'));
  result.pages = [...document.querySelectorAll('#case-view a.page')].map(a => a.getAttribute('href'));
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(result);
  document.body.appendChild(pre);
})();
</script>
</body>"#;
    let html = std::fs::read_to_string(page).expect("the page");
    let probed = page.with_file_name("probe.html");
    std::fs::write(&probed, html.replace("</body>", PROBE)).expect("written");
    let dom = dump_dom(&probed);
    let text = dom
        .split("<pre id=\"probe\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .expect("the probe ran");
    let text = text
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).expect("the probe's JSON")
}

/// `agentsim dashboard` turns the JSON reports of several implementations into one page, run
/// from a folder of its own: every rule a row with a sticky header row and first column, each
/// implementation a column whose cells count the scenarios that exercise the rule; the filters
/// show the MUST rules, the rules a bug cause explains and the rules whose verdicts differ
/// between the implementations; the family score of the one release set; each cause with its
/// pairs, each a link to its case's entry, and the case entries link their pages relative to
/// the page. In Chromium, with a screenshot that is not blank.
#[test]
fn html_dashboard_puts_implementations_side_by_side_in_chromium() {
    let dir = scratch("dashboard");
    let run = |args: &[&str], out: &Path| {
        let output = Command::new(binary())
            .args(args)
            .current_dir(root())
            .output()
            .expect("agentsim runs");
        std::fs::write(out, &output.stdout).expect("written");
        output.status.code()
    };
    let read = |path: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(path).expect("the report")).expect("JSON")
    };
    let reference = dir.join("reference-report.json");
    assert_eq!(
        run(&["run", "scenarios/poison", "--format", "json"], &reference),
        Some(0)
    );
    // Two mutants, each with an expectations file of exactly its failures, one with its pages.
    let pages = dir.join("pages");
    let mut reports = Vec::new();
    let mut failures = Vec::new();
    for (mutant, with_pages) in [("queued-run-after-poison", true), ("resolve-before-last-append", false)] {
        let plain = dir.join(format!("{mutant}-plain.json"));
        assert_eq!(
            run(
                &["run", "scenarios/poison", "--mutant", mutant, "--format", "json"],
                &plain
            ),
            Some(1)
        );
        let pairs = crate::binary::failing_pairs(&read(&plain));
        let expectations = dir.join(format!("{mutant}.expectations.json"));
        std::fs::write(&expectations, expectations_of(mutant, &pairs)).expect("written");
        let report = dir.join(format!("{mutant}.json"));
        let mut args = vec![
            "run",
            "scenarios/poison",
            "--mutant",
            mutant,
            "--format",
            "json",
            "--expect",
            expectations.to_str().expect("utf-8"),
        ];
        if with_pages {
            args.extend(["--html-dir", pages.to_str().expect("utf-8")]);
        }
        assert_eq!(run(&args, &report), Some(0), "the failures are exactly the listed ones");
        reports.push(report);
        failures.push(pairs);
    }
    // Run from a folder of its own, the page in a folder beside the pages.
    let elsewhere = std::env::temp_dir().join(format!("agentsim-dashboard-cwd-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&elsewhere);
    std::fs::create_dir_all(&elsewhere).expect("a folder");
    std::fs::create_dir_all(dir.join("out")).expect("a folder");
    let page = dir.join("out/dashboard.html");
    let markdown = dir.join("out/dashboard.md");
    let output = Command::new(binary())
        .arg("dashboard")
        .arg(&reference)
        .arg(format!("{}={}", reports[0].display(), pages.display()))
        .arg(&reports[1])
        .arg("--html")
        .arg(&page)
        .arg("--markdown")
        .arg(&markdown)
        .current_dir(&elsewhere)
        .output()
        .expect("agentsim runs");
    let _ = std::fs::remove_dir_all(&elsewhere);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = std::fs::read_to_string(&page).expect("the page");
    assert!(html.len() < 200_000, "{} bytes", html.len());
    assert!(!html.contains("<mutant>"), "the reason is escaped");

    let dom = dump_dom(&page);
    assert!(dom.contains("data-js=\"ready\""), "the page's script did not run");
    for rule in agentsim::check::RULE_IDS {
        assert!(dom.contains(&format!("data-rule=\"{rule}\"")), "no row for {rule}");
    }
    assert_eq!(count(&dom, "class=\"implementation\""), 3, "three columns");
    let must: Vec<&str> = agentsim::check::catalogue()
        .iter()
        .filter(|rule| rule.level == agentsim::check::Level::Must)
        .map(|rule| rule.id)
        .collect();
    assert!(
        dom.contains(&format!(
            "data-level=\"MUST\" data-held=\"{0}\" data-judged=\"{0}\"",
            must.len()
        )),
        "the reference holds every MUST rule"
    );
    // The family score: the two mutants are the one release set; the reference is not counted.
    let set = dom.split("<tr class=\"release-set\">").nth(1).expect("a release set");
    let set = &set[..set.find("</tr>").expect("the row ends")];
    assert_eq!(count(&dom, "<tr class=\"release-set\">"), 1);
    assert!(
        set.contains("queued-run-after-poison")
            && set.contains("resolve-before-last-append")
            && !set.contains("agentsim-reference (in process)"),
        "{set}"
    );
    let results = |index: usize| read(&reports[index])["results"].as_array().expect("results").clone();
    let (first, second) = (results(0), results(1));
    let passed_by_both = first
        .iter()
        .zip(&second)
        .filter(|(a, b)| a["status"] == "passed" && b["status"] == "passed")
        .count();
    assert!(
        set.contains(&format!(
            "data-score=\"passed\" data-count=\"{passed_by_both}\" data-scenarios=\"{}\"",
            first.len()
        )),
        "{set}"
    );
    // The POISON-2 cell of the first mutant fails and links to its first failing case's entry.
    let row = dom.split("data-rule=\"POISON-2\">").nth(1).expect("the POISON-2 row");
    let row = &row[..row.find("</tr>").expect("the row ends")];
    let cell = row
        .split("<td class=\"fails bug\">")
        .nth(1)
        .expect("a failing cell with a bug");
    let anchor = cell.split("href=\"#").nth(1).expect("a link to a case");
    let anchor = &anchor[..anchor.find('"').expect("the link ends")];
    assert!(
        dom.contains(&format!("id=\"{anchor}\"")),
        "the case entry {anchor} exists"
    );

    // In the browser: the filters, the sticky header, the cause links, the pages.
    let probe = probe(&page);
    let list = |key: &str| -> BTreeSet<String> {
        probe[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in {probe}"))
            .iter()
            .map(|rule| rule.as_str().expect("a rule").to_string())
            .collect()
    };
    let every: BTreeSet<String> = agentsim::check::RULE_IDS.iter().map(|rule| rule.to_string()).collect();
    assert_eq!(list("all"), every, "every row shows without a filter");
    assert_eq!(probe["afterwards"], every.len(), "unchecking shows them again");
    assert_eq!(
        list("only-must"),
        must.iter().map(|rule| rule.to_string()).collect::<BTreeSet<_>>(),
        "MUST only"
    );
    let failed_by = |index: usize| -> BTreeSet<String> {
        failures[index]
            .iter()
            .filter(|(_, rule)| every.contains(rule))
            .map(|(_, rule)| rule.clone())
            .collect()
    };
    let bugs: BTreeSet<String> = failed_by(0)
        .union(&failed_by(1))
        .filter(|rule| must.contains(&rule.as_str()))
        .cloned()
        .collect();
    assert_eq!(list("only-bugs"), bugs, "the rules a bug cause explains");
    let differences: BTreeSet<String> = failed_by(0).symmetric_difference(&failed_by(1)).cloned().collect();
    assert!(!differences.is_empty());
    assert_eq!(list("only-differences"), differences, "the rules only one mutant fails");
    assert!(
        probe["choices"].as_u64().expect("a count") >= 1,
        "a cause labelled choice: {probe}"
    );
    assert_eq!(probe["choicesShown"], 0, "bugs only hides the choices");
    assert_eq!(probe["stickyHeader"], "sticky");
    assert_eq!(probe["stickyColumn"], "sticky");
    let links = probe["pairLinks"].as_array().expect("links");
    let listed: usize = failures.iter().map(BTreeSet::len).sum();
    assert_eq!(links.len(), listed, "every listed pair is a link");
    assert_eq!(
        probe["unresolved"],
        serde_json::json!([]),
        "every pair link reaches a case entry"
    );
    let page_links = probe["pages"].as_array().expect("pages");
    assert!(!page_links.is_empty());
    for link in page_links {
        let link = link.as_str().expect("a link");
        assert!(link.starts_with("../pages/"), "{link}: relative to the page");
        assert!(page.parent().expect("a folder").join(link).exists(), "{link} resolves");
    }
    let table = std::fs::read_to_string(&markdown).expect("the markdown");
    assert!(table.contains("| POISON-2 | MUST | "), "{table}");
    assert!(
        table.contains("## Family score") && table.contains("| the-bug | **bug** |"),
        "{table}"
    );
    screenshot(&page, &dir.join("dashboard.png"));
}

/// The JSON blocks of a page (`<script type="application/json" id="events-SIDE">`), by side.
fn json_blocks(html: &str) -> Vec<(String, String)> {
    let opening = "<script type=\"application/json\" id=\"events-";
    html.match_indices(opening)
        .map(|(index, _)| {
            let rest = &html[index + opening.len()..];
            let side = &rest[..rest.find('"').expect("the id ends")];
            let body = &rest[rest.find('>').expect("the tag ends") + 1..];
            let body = &body[..body.find("</script>").expect("the block ends")];
            (side.to_string(), body.to_string())
        })
        .collect()
}

/// Markup in a scenario's text (`<!--`, `</script>`, `&`, U+2028, here in the prompt and the
/// model's reply) reaches the page's JSON data as escapes that are JSON still: the blocks parse
/// to the trace's events, nothing in them ends the element, and in Chromium the page's script
/// parses them and runs (before, `<!--` was written as `<\!--`, which `JSON.parse` refuses: the
/// script stopped and the page stayed `data-js="off"`).
#[test]
fn html_page_data_holding_markup_is_json_and_the_script_runs_in_chromium() {
    let dir = scratch("markup-in-data");
    let markup = "<!-- </script><script>document.body.setAttribute('data-injected', 'yes')</script> & \u{2028} -->";
    let text = std::fs::read_to_string(root().join(WALKTHROUGH)).expect("the walk-through reads");
    let mut scenario: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    scenario["operations"][0]["text"] = serde_json::json!(format!("check the parser {markup}"));
    scenario["model"][1]["text"] = serde_json::json!(format!("done {markup}"));
    let file = dir.join("markup.json");
    std::fs::write(&file, serde_json::to_string_pretty(&scenario).expect("serializes")).expect("written");
    let loaded = suite::load_corpus(&[file]).expect("the scenario loads").remove(0);
    let report = Run::of(&loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(&Implementation::reference())
        .execute(&loaded);
    assert_eq!(report.verdict, Verdict::Passed, "{:?}", report.violations);
    let trace = &report.outcome.as_ref().expect("a trace").trace;
    let page = dir.join("markup.html");
    let html = render_page(&loaded.scenario, &report, None);
    std::fs::write(&page, &html).expect("written");

    let blocks = json_blocks(&html);
    assert_eq!(blocks.len(), 1, "one block of events");
    let (side, body) = &blocks[0];
    assert_eq!(side, "run");
    assert!(
        !body.contains('<') && !body.contains('>') && !body.contains('&'),
        "markup characters in the data block"
    );
    let parsed: serde_json::Value = serde_json::from_str(body).expect("the data block is JSON");
    assert_eq!(
        parsed,
        trace.to_json()["events"],
        "the data block holds the trace's events"
    );
    assert!(
        serde_json::to_string(&parsed).expect("serializes").contains(markup),
        "the markup is in the data, as text"
    );

    let dom = dump_dom(&page);
    assert_script_ran(&dom);
    // The markup is shown as text (the trace rows, the detail panel), never run.
    assert!(dom.contains("data-injected"), "the text is on the page");
    assert!(!dom.contains("data-injected=\"yes\""), "the data ran as a script");
}
