//! Replay fidelity: every replay command the kit prints reproduces its failure.
//!
//! The test runs the `agentsim` binary through a matrix of failing runs (each command that
//! prints a replay line, each report format, each strategy, in process and through `--impl
//! "agentsim serve --mutant ..."`, the networked world, the crash test, and a scenario path
//! full of shell metacharacters), collects every printed replay command, executes it with
//! `sh -c` as a user would paste it, and demands the same violations at the same trace lines.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::binary::root;
use std::process::Command;

/// One violation at one trace line: (rule, line, message).
type Mark = (String, usize, String);

/// A violation as a report prints it: (rule, lines, message).
type Printed = (String, Vec<usize>, String);

fn binary() -> &'static str {
    crate::binary::BIN
}

/// Runs `agentsim ARGS` in the repository root; returns (exit code, stdout).
fn agentsim(args: &[&str]) -> (i32, String) {
    let outcome = crate::binary::agentsim(args, &[]);
    (outcome.code, outcome.stdout)
}

/// Executes a printed command line with `sh -c`, `agentsim` resolving to the built binary.
fn execute(command: &str) -> (i32, String) {
    let bin_dir = Path::new(binary()).parent().expect("the binary has a folder");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("PATH", path)
        .current_dir(root())
        .output()
        .expect("sh runs");
    assert!(
        output.stderr.is_empty() || output.status.code() != Some(2),
        "`{command}` was refused: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// The violations `replay` marks: `!! NNNN ...` followed by `   ^^^^ RULE: message` lines.
fn replay_marks(text: &str) -> BTreeSet<Mark> {
    let mut marks = BTreeSet::new();
    let mut line = 0;
    for row in text.lines() {
        if let Some(rest) = row.strip_prefix("!! ").or_else(|| row.strip_prefix("   ")) {
            if let Some(number) = rest.get(..4).and_then(|digits| digits.parse::<usize>().ok()) {
                line = number;
            }
        }
        if let Some(mark) = row.strip_prefix("   ^^^^ ") {
            // The root cause is marked `ROOT` where it shows.
            let mark = mark.strip_prefix("ROOT ").unwrap_or(mark);
            let (rule, message) = mark.split_once(": ").expect("a mark names its rule");
            marks.insert((rule.to_string(), line, message.to_string()));
        }
    }
    marks
}

/// The replay commands a report printed, each with the violations listed above it: `parse`
/// reads one violation line into (rule, lines, message), or returns `None` for other lines.
fn printed_cases(text: &str, parse: fn(&str) -> Option<Printed>) -> Vec<(String, BTreeSet<Mark>)> {
    let mut cases = Vec::new();
    let mut marks = BTreeSet::new();
    for row in text.lines() {
        let row = row.trim_start();
        if let Some(command) = row.strip_prefix("replay: ") {
            cases.push((command.to_string(), std::mem::take(&mut marks)));
        } else if let Some((rule, lines, message)) = parse(row) {
            for line in lines {
                marks.insert((rule.clone(), line, message.clone()));
            }
        } else if row.starts_with("FAIL") || row.starts_with("ok ") {
            marks.clear();
        }
    }
    cases
}

/// `RULE [trace 0005,0007] message` (or `[trace 0005; evident at 0009]`), as `run` prints a
/// violation; the first one of a case is `root cause: RULE ...`.
fn run_violation(row: &str) -> Option<Printed> {
    let row = row.strip_prefix("root cause: ").unwrap_or(row);
    let (rule, rest) = row.split_once(" [trace ")?;
    let (lines, message) = rest.split_once("] ")?;
    let lines = lines.split_once("; evident at ").map_or(lines, |(lines, _)| lines);
    let lines = lines.split(',').filter_map(|line| line.parse().ok()).collect();
    Some((rule.to_string(), lines, message.to_string()))
}

/// `RULE [5, 7] message`, as `explore` prints a violation.
fn explore_violation(row: &str) -> Option<Printed> {
    let row = row.strip_prefix("root cause: ").unwrap_or(row);
    let (rule, rest) = row.split_once(" [")?;
    if rule.contains(' ') {
        return None;
    }
    let (lines, message) = rest.split_once("] ")?;
    let lines = lines.split(", ").filter_map(|line| line.parse().ok()).collect();
    Some((rule.to_string(), lines, message.to_string()))
}

fn run_human_cases(text: &str) -> Vec<(String, BTreeSet<Mark>)> {
    printed_cases(text, run_violation)
}

fn explore_cases(text: &str) -> Vec<(String, BTreeSet<Mark>)> {
    printed_cases(text, explore_violation)
}

/// The failing cases of a JSON `run` report: replay command and every violation.
fn run_json_cases(text: &str) -> Vec<(String, BTreeSet<Mark>)> {
    let report: serde_json::Value = serde_json::from_str(text).expect("a JSON report");
    report["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|result| result["status"] == "failed")
        .map(|result| {
            let mut marks = BTreeSet::new();
            for violation in result["violations"].as_array().expect("violations") {
                for line in violation["lines"].as_array().expect("lines") {
                    // The text reports name the clause; a scenario's own check has none.
                    let id = violation["clause"]
                        .as_str()
                        .or(violation["rule"].as_str())
                        .expect("rule");
                    marks.insert((
                        id.to_string(),
                        line.as_u64().expect("a line") as usize,
                        violation["message"].as_str().expect("message").to_string(),
                    ));
                }
            }
            (result["replay"].as_str().expect("replay").to_string(), marks)
        })
        .collect()
}

/// Executes each case's replay and checks it shows at least the run's marks (exactly them
/// when `exact`); returns how many were checked.
fn check_cases(origin: &str, cases: &[(String, BTreeSet<Mark>)], exact: bool) -> usize {
    assert!(!cases.is_empty(), "{origin}: printed no replay command");
    for (command, expected) in cases {
        assert!(!expected.is_empty(), "{origin}: `{command}` came with no violation");
        let (code, output) = execute(command);
        assert_eq!(
            code, 1,
            "{origin}: `{command}` exited {code}, expected 1 (violations)\n{output}"
        );
        let got = replay_marks(&output);
        if exact {
            assert_eq!(&got, expected, "{origin}: `{command}` shows other violations");
        } else {
            let missing: Vec<&Mark> = expected.difference(&got).collect();
            assert!(missing.is_empty(), "{origin}: `{command}` lacks {missing:?}");
        }
    }
    cases.len()
}

const POISON: &str = "scenarios/poison/applied-then-fail-at-first-append.json";

#[test]
fn run_replays_carry_the_mutant_in_every_format() {
    let (code, human) = agentsim(&["run", POISON, "--mutant", "poison-not-stored"]);
    assert_eq!(code, 1);
    let cases = run_human_cases(&human);
    assert!(cases
        .iter()
        .all(|(command, _)| command.contains("--mutant poison-not-stored")));
    check_cases("run (human)", &cases, true);
    let (_, json) = agentsim(&["run", POISON, "--mutant", "poison-not-stored", "--format", "json"]);
    check_cases("run (json)", &run_json_cases(&json), true);
    for format in ["junit", "markdown"] {
        let (_, text) = agentsim(&["run", POISON, "--mutant", "poison-not-stored", "--format", format]);
        let command = format!("agentsim replay {POISON} --mutant poison-not-stored");
        assert!(text.contains(&command), "{format}: no `{command}` in\n{text}");
        check_cases(
            &format!("run ({format})"),
            &[(command, run_json_cases(&json)[0].1.clone())],
            true,
        );
    }
}

#[test]
fn explore_and_mutants_replays_reproduce_each_strategy() {
    for strategy in ["random", "pct", "exhaustive:40", "guided"] {
        let (code, text) = agentsim(&[
            "explore",
            POISON,
            "--strategy",
            strategy,
            "--seeds",
            "4",
            "--mutant",
            "poison-not-stored",
        ]);
        assert_eq!(code, 1, "{strategy}\n{text}");
        let cases = explore_cases(&text);
        check_cases(&format!("explore {strategy}"), &cases, false);
    }
    let (code, text) = agentsim(&[
        "mutants",
        POISON,
        "--only",
        "abort-ignored",
        "--only",
        "poison-not-stored",
    ]);
    assert_ne!(code, 2, "{text}");
    let commands: Vec<&str> = text
        .lines()
        .filter_map(|row| row.trim().strip_prefix("replay: "))
        .collect();
    assert!(!commands.is_empty(), "mutants printed no replay\n{text}");
    for command in commands {
        assert!(command.contains("--mutant"), "`{command}` lost its mutant");
        let (code, output) = execute(command);
        assert_eq!(code, 1, "`{command}`\n{output}");
        assert!(!replay_marks(&output).is_empty());
    }
}

/// Explore schedules a scenario with a `net` block in the in-process scheduler, where `run` and
/// a plain replay take it to the networked world: its replays say `--in-process`, by seed and
/// by choices, and reproduce the explored schedule's violations.
#[test]
fn explore_replays_of_a_networked_scenario_run_in_process() {
    for strategy in ["random", "pct", "exhaustive:40", "guided"] {
        let (code, text) = agentsim(&[
            "explore",
            "scenarios/durability/partition-before-append.json",
            "--strategy",
            strategy,
            "--seeds",
            "2",
            "--mutant",
            "projection-slices-messages",
        ]);
        assert_eq!(code, 1, "{strategy}\n{text}");
        let cases = explore_cases(&text);
        assert!(
            cases.iter().all(|(command, _)| command.contains("--in-process")),
            "{strategy}: {cases:?}"
        );
        check_cases(&format!("explore {strategy} of a networked scenario"), &cases, false);
    }
    let (code, text) = agentsim(&[
        "replay",
        "scenarios/durability/partition-before-append.json",
        "--in-process",
        "--world",
        "net",
    ]);
    assert_eq!(code, 2, "--in-process with --world net must be refused\n{text}");
    // Its shrunk regression leaves the net block out, so `run` replays it in process too and
    // it fails the same rule.
    let folder = tempfile_folder("networked-shrunk");
    let folder_text = folder.display().to_string();
    let (code, text) = agentsim(&[
        "explore",
        "scenarios/durability/partition-before-append.json",
        "--strategy",
        "random",
        "--seeds",
        "1",
        "--mutant",
        "projection-slices-messages",
        "--shrink-to",
        &folder_text,
    ]);
    assert_eq!(code, 1, "{text}");
    let shrunk = folder.join("partition-before-append.PROJECT-1.json");
    let written = std::fs::read_to_string(&shrunk).unwrap_or_else(|error| panic!("{error}\n{text}"));
    assert!(!written.contains("\"net\""), "{written}");
    let shrunk_text = shrunk.display().to_string();
    let (code, text) = agentsim(&["run", &shrunk_text, "--mutant", "projection-slices-messages"]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("PROJECT-1"), "{text}");
}

#[test]
fn impl_replays_keep_the_command_and_its_timeout() {
    let implementation = format!("{} serve --mutant poison-not-stored", binary());
    let (code, text) = agentsim(&["run", POISON, "--impl", &implementation, "--step-timeout-ms", "7000"]);
    assert_eq!(code, 1, "{text}");
    let cases = run_human_cases(&text);
    assert!(
        cases
            .iter()
            .all(|(command, _)| command.contains("--step-timeout-ms 7000")),
        "{cases:?}"
    );
    check_cases("run --impl", &cases, true);
    let (code, text) = agentsim(&[
        "explore",
        POISON,
        "--strategy",
        "random",
        "--seeds",
        "2",
        "--impl",
        &implementation,
        "--step-timeout-ms",
        "6000",
    ]);
    assert_eq!(code, 1, "{text}");
    let cases = explore_cases(&text);
    assert!(cases
        .iter()
        .all(|(command, _)| command.contains("--step-timeout-ms 6000")));
    check_cases("explore --impl", &cases, false);
}

#[test]
fn networked_and_crash_test_replays_reproduce() {
    let (code, text) = agentsim(&[
        "explore",
        "--world",
        "net",
        "scenarios/durability/ack-lost-after-apply.json",
        "--seeds",
        "2",
        "--mutant",
        "retry-after-failed-append",
    ]);
    assert_eq!(code, 1, "{text}");
    let cases = explore_cases(&text);
    assert!(cases.iter().all(|(command, _)| command.contains("--world net")));
    check_cases("explore --world net", &cases, false);
    let (code, text) = agentsim(&[
        "crash-test",
        "scenarios/wiring/walkthrough.json",
        "--sync",
        "none",
        "--points",
        "30",
    ]);
    assert_eq!(code, 1, "crash-test with sync none must lose entries\n{text}");
    let command = text
        .lines()
        .find_map(|row| row.trim().strip_prefix("replay: "))
        .expect("the crash test prints a replay for its first losing point");
    let step: String = command
        .split("--crash-at-step ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("the replay names the crash step")
        .to_string();
    assert!(
        text.contains(&format!("first losing crash point: step {step}")),
        "{text}"
    );
    let (_, first) = execute(command);
    let (_, second) = execute(command);
    assert!(first.contains("crash store"), "the replay shows no crash:\n{first}");
    assert_eq!(first, second, "the crash replay is not deterministic");
}

#[test]
fn paths_with_shell_metacharacters_replay_as_printed() {
    let folder = tempfile_folder("dir with space $HOME 'q' ;echo");
    let path = folder.join("a b$(echo x).json");
    std::fs::copy(root().join(POISON), &path).expect("the scenario copies");
    let path_text = path.display().to_string();
    let (code, text) = agentsim(&["run", &path_text, "--mutant", "poison-not-stored"]);
    assert_eq!(code, 1, "{text}");
    check_cases("run on a hostile path", &run_human_cases(&text), true);
    std::fs::remove_dir_all(&folder).expect("the folder is removed");
}

/// A fresh folder under the target directory, named `name`.
fn tempfile_folder(name: &str) -> PathBuf {
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("the folder is created");
    folder
}
