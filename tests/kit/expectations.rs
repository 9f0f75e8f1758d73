//! Expectations by cause, end to end: a run's reports lead with the level (each FAIL line says
//! whether a MUST rule is broken, the summary starts with the levels), the JSON report says per
//! case which rules its trace exercised and whether it held every MUST rule, `--expect` tells
//! stale pairs per cause (human and JSON), the Pi-family generator writes one entry per cause and
//! leaves out what the file may not hold (a MUST pair under a cause labelled choice), and
//! `agentsim dashboard` gives the same bytes from any folder.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use agentsim::check::{level_of, Level};

use crate::binary::{agentsim, failing_pairs, root, scratch, BIN};

/// A mutant that breaks POISON-2, POISON-3 and POISON-5 (MUST) and MODE-1 (SHOULD) on some of
/// scenarios/poison and passes the others.
const MUTANT: &str = "queued-run-after-poison";

fn json_report(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["run", "scenarios/poison", "--mutant", MUTANT, "--format", "json"];
    args.extend_from_slice(extra);
    let run = agentsim(&args, &[]);
    assert!(run.code == 0 || run.code == 1, "{}{}", run.stdout, run.stderr);
    serde_json::from_str(&run.stdout).expect("a JSON report")
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|item| item.as_str().expect("a string").to_string())
        .collect()
}

/// Each case says whether it held every MUST rule and which rules its trace exercised: every
/// rule it broke, and on a passing case the rules whose situations it reached.
#[test]
fn the_json_report_says_what_each_case_exercised_and_whether_it_held_must() {
    let report = json_report(&[]);
    let results = report["results"].as_array().expect("results");
    let mut passing_exercise = 0;
    for result in results {
        let broken: BTreeSet<String> = result["violations"]
            .as_array()
            .expect("violations")
            .iter()
            .map(|violation| violation["rule"].as_str().expect("a rule").to_string())
            .collect();
        let exercised = strings(&result["exercised"]);
        for rule in &broken {
            assert!(
                exercised.contains(rule),
                "{}: broke {rule} but did not exercise it",
                result["name"]
            );
        }
        let ordered: Vec<&str> = agentsim::check::RULE_IDS
            .iter()
            .copied()
            .filter(|rule| exercised.iter().any(|exercised| exercised == rule))
            .collect();
        assert_eq!(exercised, ordered, "catalogue order, catalogue rules only");
        let must_broken = broken.iter().any(|rule| level_of(rule) == Some(Level::Must));
        assert_eq!(
            result["must"],
            if must_broken { "broken" } else { "held" },
            "{}",
            result["name"]
        );
        if result["status"] == "passed" {
            passing_exercise += exercised.len();
        }
    }
    assert!(passing_exercise > 0, "passing cases reach situations too");
    assert!(
        results.iter().any(|result| result["must"] == "broken"),
        "the mutant breaks a MUST rule somewhere"
    );
}

/// The human report leads with the level: a FAIL line says which MUST (and SHOULD) rules the case
/// broke, and the summary's first line is the levels, MUST first, with the broken rules named.
#[test]
fn the_human_report_leads_with_the_level() {
    let run = agentsim(&["run", "scenarios/poison", "--mutant", MUTANT], &[]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let fails: Vec<&str> = run.stdout.lines().filter(|line| line.starts_with("FAIL   ")).collect();
    assert!(!fails.is_empty(), "{}", run.stdout);
    for line in &fails {
        let verdict = line
            .strip_prefix("FAIL   ")
            .and_then(|rest| rest.split_once("   "))
            .map(|(_, verdict)| verdict);
        let verdict = verdict.unwrap_or_else(|| panic!("no level on {line:?}"));
        assert!(
            verdict.starts_with("MUST broken (") || verdict.starts_with("MUST held, "),
            "{line}"
        );
    }
    assert!(
        fails.iter().any(|line| line.contains("MUST broken (POISON-2")),
        "{}",
        run.stdout
    );
    // The summary block starts after the last case's replay line, with the levels.
    let summary = run
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("levels: "))
        .collect::<Vec<_>>();
    assert!(!summary.is_empty(), "{}", run.stdout);
    let before = run.stdout.split("levels: ").next().expect("text before");
    assert!(
        !before.contains("root causes"),
        "the levels come first:\n{}",
        run.stdout
    );
    let broken: BTreeSet<String> = failing_pairs(&json_report(&[]))
        .into_iter()
        .map(|(_, rule)| rule)
        .collect();
    let level_part = |level: Level| {
        let rules: Vec<&str> = agentsim::check::catalogue()
            .iter()
            .filter(|rule| rule.level == level)
            .map(|rule| rule.id)
            .collect();
        let failing: Vec<&str> = rules.iter().copied().filter(|rule| broken.contains(*rule)).collect();
        let mut part = format!(
            "{}: {} of {} rules held in every case",
            level.word(),
            rules.len() - failing.len(),
            rules.len()
        );
        if !failing.is_empty() {
            part.push_str(&format!(" (broken: {})", failing.join(", ")));
        }
        part
    };
    assert_eq!(
        summary[0],
        format!("levels: {}; {}", level_part(Level::Must), level_part(Level::Should))
    );
    assert!(summary[0].contains("(broken: POISON-2, "), "{}", summary[0]);
}

/// One cause, its pairs as the run gives them plus one that passes: the run fails, and the stale
/// pair is told once, by its cause, in the human report and in the JSON report's `causes`.
#[test]
fn stale_pairs_are_told_per_cause() {
    let observed = json_report(&[]);
    let pairs = failing_pairs(&observed);
    let passed = observed["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|result| result["status"] == "passed")
        .and_then(|result| result["name"].as_str())
        .expect("the mutant passes some scenario")
        .to_string();
    let folder = scratch("expectations", "stale");
    let file = folder.join("mutant.json");
    let write = |extra: Option<&str>| {
        let mut bug: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut choice: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (scenario, rule) in &pairs {
            let by_rule = if level_of(rule) == Some(Level::Must) {
                &mut bug
            } else {
                &mut choice
            };
            by_rule.entry(rule.clone()).or_default().push(scenario.clone());
        }
        if let Some(scenario) = extra {
            bug.entry("POISON-1".into()).or_default().push(scenario.to_string());
        }
        let source = serde_json::json!({"file": "src/zoo/poison.rs", "function": "queued_run_after_poison", "line": 1});
        let mut causes = vec![
            serde_json::json!({"id": "queued-run", "verdict": "bug", "reason": "a queued prompt runs after the poison",
                                                  "source": source, "pairs": bug}),
        ];
        if !choice.is_empty() {
            causes.push(serde_json::json!({"id": "mode-line", "verdict": "choice", "reason": "r", "source": source, "pairs": choice}));
        }
        std::fs::write(
            &file,
            serde_json::json!({"implementation": "agentsim-reference+queued-run-after-poison-0.1.0", "causes": causes})
                .to_string(),
        )
        .expect("written");
    };
    let run = |format: &str| {
        agentsim(
            &[
                "run",
                "scenarios/poison",
                "--mutant",
                MUTANT,
                "--format",
                format,
                "--expect",
                file.to_str().expect("utf-8"),
            ],
            &[],
        )
    };
    write(None);
    let exact = run("human");
    assert_eq!(exact.code, 0, "{}{}", exact.stdout, exact.stderr);
    assert!(!exact.stdout.contains("STALE"), "{}", exact.stdout);

    write(Some(&passed));
    let stale = run("human");
    assert_eq!(stale.code, 1, "{}", stale.stdout);
    let lines: Vec<&str> = stale.stdout.lines().filter(|line| line.starts_with("STALE")).collect();
    let total = pairs
        .iter()
        .filter(|(_, rule)| level_of(rule) == Some(Level::Must))
        .count()
        + 1;
    assert_eq!(
        lines,
        [format!(
            "STALE cause queued-run (bug): 1 of {total} pairs no longer fail: POISON-1 on {passed}"
        )],
        "{}",
        stale.stdout
    );
    let json = run("json");
    assert_eq!(json.code, 1, "{}", json.stderr);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    let causes = report["expectations"]["causes"].as_array().expect("causes");
    assert_eq!(causes[0]["id"], "queued-run");
    assert_eq!(causes[0]["verdict"], "bug");
    assert_eq!(causes[0]["source"]["file"], "src/zoo/poison.rs");
    assert_eq!(causes[0]["listed"], total);
    assert_eq!(
        causes[0]["stale"],
        serde_json::json!([{"scenario": passed, "rule": "POISON-1"}])
    );
    assert_eq!(causes[0]["confirmed"].as_array().expect("confirmed").len(), total - 1);
    assert_eq!(
        report["expectations"]["stale"],
        serde_json::json!([{"scenario": passed, "rule": "POISON-1", "cause": "queued-run", "reason": "a queued prompt runs after the poison"}])
    );
    let _ = std::fs::remove_dir_all(folder);
}

/// A file that labels choice a cause that explains a MUST rule is refused at load, naming the
/// file, line and field.
#[test]
fn run_refuses_a_choice_that_breaks_a_must_rule() {
    let folder = scratch("expectations", "must-choice");
    let file = folder.join("x.json");
    std::fs::write(
        &file,
        "{\"implementation\": \"x\", \"causes\": [{\"id\": \"c\",\n \"verdict\": \"choice\", \"reason\": \"r\",\n \
         \"source\": {\"file\": \"dist/a.js\", \"function\": \"f\", \"line\": 1}, \"pairs\": {\"POISON-2\": [\"a\"]}}]}",
    )
    .expect("written");
    let run = agentsim(
        &["run", "scenarios/poison", "--expect", file.to_str().expect("utf-8")],
        &[],
    );
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains(":2: causes[0].verdict: a broken MUST rule is a bug, never a choice"),
        "{}",
        run.stderr
    );
    let _ = std::fs::remove_dir_all(folder);
}

/// The Pi-family generator writes one entry per cause with its pairs by rule, the same bytes
/// twice, a file the kit reads; it leaves out, names and exits 1 on a MUST pair under a cause
/// labelled choice and on a pair no cause explains.
#[test]
fn the_pi_family_generator_writes_one_entry_per_cause() {
    let folder = scratch("expectations", "generator");
    let report = json_report(&[]);
    let report_file = folder.join("report.json");
    std::fs::write(&report_file, report.to_string()).expect("written");
    let adapter = folder.join("adapter");
    std::fs::create_dir_all(adapter.join("node_modules/fake/dist")).expect("a folder");
    std::fs::write(
        adapter.join("node_modules/fake/dist/session.js"),
        "class Session {\n  persist(entry) {\n    this.queue.push(entry);\n    return this.store.append(entry);\n  }\n}\n",
    )
    .expect("written");
    let source = |anchor: &str| serde_json::json!({"file": "node_modules/fake/dist/session.js", "function": "Session.persist", "anchor": anchor});
    let causes = serde_json::json!([
        {"id": "queued-run", "verdict": "bug", "reason": "a queued prompt runs after the poison", "source": source("store.append"),
         "match": [{"rule": "POISON-2"}, {"rule": "POISON-5"}]},
        {"id": "queue-kept", "verdict": "choice", "reason": "the queue is kept", "source": source("queue.push"),
         "match": [{"rule": "POISON-3"}, {"rule": "MODE-1"}]}
    ]);
    let causes_file = folder.join("causes.json");
    std::fs::write(&causes_file, causes.to_string()).expect("written");
    let generate = || {
        Command::new("python3")
            .arg(root().join("adapters/pi-family/expectations.py"))
            .arg(&causes_file)
            .arg(&report_file)
            .args(["--implementation", "mutant-0.1.0", "--adapter"])
            .arg(&adapter)
            .current_dir(&folder)
            .output()
            .expect("python3 runs")
    };
    let first = generate();
    let second = generate();
    assert_eq!(first.stdout, second.stdout, "the same report gives the same bytes");
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cause `queue-kept` is labelled choice but explains MUST rule POISON-3: left out POISON-3 on "),
        "{stderr}"
    );
    assert!(
        stderr.contains("a broken MUST rule is a bug, never a choice"),
        "{stderr}"
    );
    let written = folder.join("mutant.json");
    std::fs::write(&written, &first.stdout).expect("written");
    let file = agentsim::deviations::load(&written).unwrap_or_else(|error| panic!("{error}"));
    let ids: Vec<&str> = file.causes.iter().map(|cause| cause.id.as_str()).collect();
    assert_eq!(ids, ["queued-run", "queue-kept"]);
    assert_eq!(file.causes[0].source.line, 4, "the anchor's line after the definition");
    assert_eq!(file.causes[1].source.line, 3);
    let pairs = failing_pairs(&report);
    let of = |rule: &str| -> Vec<String> {
        pairs
            .iter()
            .filter(|(_, broken)| broken == rule)
            .map(|(scenario, _)| scenario.clone())
            .collect()
    };
    assert_eq!(file.causes[0].pairs["POISON-2"], of("POISON-2"));
    assert_eq!(file.causes[1].pairs.keys().collect::<Vec<_>>(), ["MODE-1"]);
    let _ = std::fs::remove_dir_all(folder);
}

/// `agentsim dashboard` reads everything from its reports: run from another folder with
/// relative paths it writes the same bytes as from the repository with absolute ones.
#[test]
fn the_dashboard_is_the_same_from_any_folder() {
    let folder = scratch("expectations", "dashboard-cwd");
    let report = json_report(&[]);
    std::fs::create_dir_all(folder.join("reports")).expect("a folder");
    std::fs::write(folder.join("reports/mutant.json"), report.to_string()).expect("written");
    let build = |cwd: &Path, report: &str, out: &str| {
        let output = Command::new(BIN)
            .args(["dashboard", report, "--html", out, "--markdown"])
            .arg(format!("{out}.md"))
            .current_dir(cwd)
            .output()
            .expect("the binary runs");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let absolute = folder.join("reports/mutant.json");
    build(
        root(),
        absolute.to_str().expect("utf-8"),
        folder.join("from-root.html").to_str().expect("utf-8"),
    );
    build(&folder, "reports/mutant.json", "from-here.html");
    let read = |name: &str| std::fs::read(folder.join(name)).expect("written");
    assert_eq!(read("from-root.html"), read("from-here.html"));
    assert_eq!(read("from-root.html.md"), read("from-here.html.md"));
    let _ = std::fs::remove_dir_all(folder);
}
