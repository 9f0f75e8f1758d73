//! Hostile input, one test per finding of the hardening issue (each failed before its fix),
//! and a bounded, seeded fuzz test over scenario files, session files and protocol lines. Of the
//! second round, the kit stopped by a signal is here; the page's data holding markup is in
//! `html.rs`, a bad answer to `reset` in `protocol.rs`.
//!
//! The fuzz test runs `AGENTSIM_FUZZ_CASES` mutated inputs of each kind (200 by default; CI runs
//! 20,000 from .ci/run), mutated in their bytes or in their JSON values, and judges every one. A
//! scenario file is a `ScenarioError` printed as `file:line: field: message` on one printable
//! line, or it loads and the reference's verdict on it is exit 0 (passed, nothing against it),
//! 1 (failed, each violation naming a rule and lines of the trace) or 2 (a bad scenario, located
//! like a load error), never 3, with the human and JUnit reports free of raw control
//! characters; every one of 0, 1 and 2 must occur. A session file parses (every finding on one
//! of its lines) or is a `SessionFileError` with a stable code. A protocol line is a message
//! that reads back the same once printed, or the `LineError` of the class its JSON puts it in
//! (not JSON or not an object, no known `type`, ...), printable, and located when a known
//! message is refused. Nothing panics and each input is judged within a time bound.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentsim::check;
use agentsim::implementation::Implementation;
use agentsim::run::{CaseReport, Run, Verdict};
use agentsim::scenario::{self, LoadedScenario};
use agentsim::sim::StrategyKind;
use agentsim::store::{check_session, parse_session, FindingCode, Limits};

use crate::binary::{assert_all_gone, read_pids, root, Outcome};

const ONE_PROMPT: &str = "tests/fixtures/protocol/one-prompt.json";

fn agentsim(args: &[&str]) -> Outcome {
    crate::binary::agentsim(args, &[])
}

fn scratch(name: &str) -> PathBuf {
    crate::binary::scratch("hardening", name)
}

fn one_prompt() -> serde_json::Value {
    let text = std::fs::read_to_string(root().join(ONE_PROMPT)).expect("the fixture reads");
    serde_json::from_str(&text).expect("the fixture is JSON")
}

/// Writes `bytes` as a scenario file and runs `agentsim run` on it.
fn run_bytes(folder: &Path, name: &str, bytes: &[u8]) -> Outcome {
    let file = folder.join(name);
    std::fs::write(&file, bytes).expect("the scenario writes");
    agentsim(&["run", file.to_str().expect("utf-8 path")])
}

/// Asserts a bad-input verdict: exit 2, one stderr line, naming the file and `line: field:`,
/// containing `expected`, no panic.
fn assert_bad(outcome: &Outcome, file_name: &str, line_and_field: &str, expected: &str) {
    let report = format!("stdout {:?} stderr {:?}", outcome.stdout, outcome.stderr);
    assert_eq!(outcome.code, 2, "{report}");
    assert!(!outcome.stderr.contains("panicked"), "{report}");
    assert_eq!(outcome.stderr.lines().count(), 1, "{report}");
    assert!(
        outcome.stderr.contains(&format!("{file_name}:{line_and_field}: ")),
        "{report}\nmissing {file_name}:{line_and_field}"
    );
    assert!(outcome.stderr.contains(expected), "{report}\nmissing {expected}");
}

// ---------------------------------------------------------------------------------------------
// 1. Every count, size and time has a limit checked at load time
// ---------------------------------------------------------------------------------------------

/// A change to the one-prompt scenario.
type Mutation = Box<dyn Fn(&mut serde_json::Value)>;

#[test]
fn huge_numbers_are_bad_input_naming_the_field_before_anything_is_allocated() {
    let folder = scratch("limits");
    let cases: Vec<(&str, Mutation, &str)> = vec![
        (
            "model[0].chunks",
            Box::new(|s| s["model"][0]["chunks"] = 4_294_967_295u32.into()),
            "4294967295 is over the limit of 1000",
        ),
        (
            "model[0].chunks",
            Box::new(|s| s["model"][0]["chunks"] = 100_000_000u32.into()),
            "100000000 is over the limit of 1000",
        ),
        (
            "config.maxSteps",
            Box::new(|s| s["config"]["maxSteps"] = 4_294_967_295u32.into()),
            "over the limit of 1000",
        ),
        (
            "config.ids.start",
            Box::new(|s| s["config"]["ids"] = serde_json::json!({"prefix": "e-", "start": u64::MAX})),
            "over the limit",
        ),
        (
            "config.clock.stepMs",
            Box::new(|s| s["config"]["clock"] = serde_json::json!({"startMs": 0, "stepMs": u64::MAX})),
            "over the limit of 86400000",
        ),
        (
            "faults.appends[0].at",
            Box::new(|s| s["faults"] = serde_json::json!({"appends": [{"at": 4_294_967_295u32, "fault": "reject"}]})),
            "over the limit of 1000000",
        ),
        (
            "net.faults[0].atMs",
            Box::new(|s| {
                s["net"] = serde_json::json!({"faults": [{"kind": "crash-store", "atMs": u64::MAX, "forMs": 5}]})
            }),
            "over the limit of 3600000",
        ),
        (
            "net.faults[0].forMs",
            Box::new(|s| {
                s["net"] = serde_json::json!({"faults": [{"kind": "crash-store", "atMs": 5, "forMs": u64::MAX}]})
            }),
            "over the limit of 3600000",
        ),
    ];
    for (index, (field, mutate, expected)) in cases.iter().enumerate() {
        let mut value = one_prompt();
        mutate(&mut value);
        let name = format!("limit-{index}.json");
        let text = serde_json::to_string_pretty(&value).expect("serializes");
        let outcome = run_bytes(&folder, &name, text.as_bytes());
        let report = format!("{field}: {}", outcome.stderr);
        assert_eq!(outcome.code, 2, "{report}");
        assert!(outcome.stderr.contains(&format!(": {field}: ")), "{report}");
        assert!(outcome.stderr.contains(expected), "{report}");
        assert!(
            outcome.elapsed < Duration::from_secs(5),
            "{report}: took {:?}",
            outcome.elapsed
        );
    }
    let huge = vec![b' '; scenario::limits::FILE_BYTES_MAX as usize + 10];
    let outcome = run_bytes(&folder, "huge.json", &huge);
    assert_bad(&outcome, "huge.json", "1: -", "over the limit of 4194304 bytes");
    let _ = std::fs::remove_dir_all(folder);
}

// ---------------------------------------------------------------------------------------------
// 2. check-session is linear and flags every second result for one call
// ---------------------------------------------------------------------------------------------

/// A session: header, a user message, an assistant calling `call-1`, then `results` tool results
/// chained one below the other, all answering `call-1`.
fn chain_of_results(results: usize) -> String {
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    );
    let entry = |id: &str, parent: Option<&str>, message: &str| {
        let parent = parent.map_or("null".to_string(), |parent| format!("\"{parent}\""));
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{message}}}\n"
        )
    };
    text.push_str(&entry(
        "u",
        None,
        "{\"role\":\"user\",\"content\":\"go\",\"timestamp\":1}",
    ));
    text.push_str(&entry(
        "a",
        Some("u"),
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"call-1\",\"name\":\"t\",\"arguments\":{}}],\"stopReason\":\"toolUse\",\"timestamp\":2}",
    ));
    let result = "{\"role\":\"toolResult\",\"toolCallId\":\"call-1\",\"toolName\":\"t\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":false,\"timestamp\":3}";
    let mut parent = "a".to_string();
    for index in 0..results {
        let id = format!("r{index}");
        text.push_str(&entry(&id, Some(&parent), result));
        parent = id;
    }
    text
}

#[test]
fn check_session_is_linear_on_a_chain_of_results_answering_one_call() {
    // 40,000 results: quadratic, this took minutes (8,000 took 13.9 s in a release build).
    let results = 40_000;
    let text = chain_of_results(results);
    let started = Instant::now();
    let parsed = parse_session(text.as_bytes(), Limits::default()).expect("a session file");
    let findings = check_session(&parsed);
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    let duplicates = findings
        .iter()
        .filter(|finding| finding.code == FindingCode::ToolDuplicateResult)
        .count();
    assert_eq!(duplicates, results - 1, "every result after the first is flagged");
    assert_eq!(findings.len(), results - 1, "{:?}", &findings[..3.min(findings.len())]);
    assert_eq!(findings[0].line, 5);
    assert!(
        findings[0].message.contains("line 4 answered it first"),
        "{}",
        findings[0].message
    );
}

#[test]
fn one_result_per_call_on_each_branch_is_clean() {
    // Two branches below the call, each answering it once: each path is a valid context.
    let mut text = chain_of_results(1);
    text.push_str(
        "{\"type\":\"message\",\"id\":\"r-other\",\"parentId\":\"a\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"toolResult\",\"toolCallId\":\"call-1\",\"toolName\":\"t\",\"content\":[],\"isError\":false,\"timestamp\":3}}\n",
    );
    let parsed = parse_session(text.as_bytes(), Limits::default()).expect("a session file");
    assert_eq!(check_session(&parsed), Vec::new());
}

// ---------------------------------------------------------------------------------------------
// 5. An empty corpus and out-of-range flags are bad input
// ---------------------------------------------------------------------------------------------

#[test]
fn an_empty_corpus_and_out_of_range_flags_are_bad_input() {
    let folder = scratch("empty");
    let empty = folder.to_str().expect("utf-8 path");
    for args in [
        vec!["run", empty],
        vec!["explore", empty, "--strategy", "random", "--seeds", "2"],
        vec!["crash-test", empty],
        vec!["mutants", empty, "--seeds", "1"],
    ] {
        let outcome = agentsim(&args);
        assert_eq!(outcome.code, 2, "{args:?}: {} {}", outcome.stdout, outcome.stderr);
        assert!(
            outcome.stderr.contains("no scenario file"),
            "{args:?}: {}",
            outcome.stderr
        );
        assert!(!outcome.stdout.contains("0 passed"), "{args:?}: {}", outcome.stdout);
    }
    for (args, expected) in [
        (vec!["crash-test", ONE_PROMPT, "--points", "0"], "crash points from 1"),
        (vec!["explore", ONE_PROMPT, "--threads", "0"], "at least 1"),
        (vec!["replay", ONE_PROMPT, "--choices", "0.99"], "out of range"),
        (
            vec![
                "replay",
                ONE_PROMPT,
                "--choices",
                "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0",
            ],
            "the run made only",
        ),
        (
            vec!["replay", "tests/fixtures/protocol"],
            "replay takes one scenario file",
        ),
    ] {
        let outcome = agentsim(&args);
        assert_eq!(outcome.code, 2, "{args:?}: {} {}", outcome.stdout, outcome.stderr);
        assert!(outcome.stderr.contains(expected), "{args:?}: {}", outcome.stderr);
    }
    let _ = std::fs::remove_dir_all(folder);
}

// ---------------------------------------------------------------------------------------------
// 6. Messages say where, and carry no raw control characters or huge input
// ---------------------------------------------------------------------------------------------

#[test]
fn invalid_utf8_is_reported_at_its_line_column_and_field() {
    let folder = scratch("utf8");
    let mut bytes = b"{\n  \"version\": 1,\n  \"description\": \"ab".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(b"\",\n  \"rules\": []\n}\n");
    let outcome = run_bytes(&folder, "utf8.json", &bytes);
    assert_bad(&outcome, "utf8.json", "3: description", "not valid UTF-8 at column 21");
    let _ = std::fs::remove_dir_all(folder);
}

#[test]
fn duplicate_missing_and_empty_keys_name_their_field() {
    let folder = scratch("keys");
    let text = serde_json::to_string_pretty(&one_prompt()).expect("serializes");
    let duplicate = text.replacen("\"version\": 1,", "\"version\": 1,\n  \"version\": 1,", 1);
    assert_bad(
        &run_bytes(&folder, "duplicate.json", duplicate.as_bytes()),
        "duplicate.json",
        "3: version",
        "duplicate key `version`",
    );
    let missing = text.replacen("\"rules\"", "\"rulez\"", 1);
    let outcome = run_bytes(&folder, "missing.json", missing.as_bytes());
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(outcome.stderr.contains(": rulez: unknown field"), "{}", outcome.stderr);
    let no_rules = {
        let mut value = one_prompt();
        value.as_object_mut().expect("an object").remove("rules");
        serde_json::to_string_pretty(&value).expect("serializes")
    };
    assert_bad(
        &run_bytes(&folder, "no-rules.json", no_rules.as_bytes()),
        "no-rules.json",
        "1: rules",
        "missing field `rules`",
    );
    let empty_key = text.replacen("\"version\": 1,", "\"version\": 1,\n  \"\": 1,", 1);
    assert_bad(
        &run_bytes(&folder, "empty-key.json", empty_key.as_bytes()),
        "empty-key.json",
        "3: [\"\"]",
        "unknown field ``",
    );
    let long_key = text.replacen(
        "\"version\": 1,",
        &format!("\"version\": 1,\n  \"{}\": 1,", "k".repeat(1_000_000)),
        1,
    );
    let outcome = run_bytes(&folder, "long-key.json", long_key.as_bytes());
    assert_eq!(outcome.code, 2, "{}", &outcome.stderr[..outcome.stderr.len().min(500)]);
    assert!(outcome.stderr.len() < 2_000, "a {}-byte message", outcome.stderr.len());
    assert!(outcome.stderr.contains("…"), "{}", outcome.stderr);
    // A duplicate inside a free-form value (a tool's parameters) is refused too.
    let mut value = one_prompt();
    value["tools"] = serde_json::json!([{"name": "t", "parameters": {"type": "object"}}]);
    let nested = serde_json::to_string_pretty(&value).expect("serializes").replacen(
        "\"type\": \"object\"",
        "\"type\": \"object\", \"type\": \"string\"",
        1,
    );
    let outcome = run_bytes(&folder, "nested.json", nested.as_bytes());
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(
        outcome
            .stderr
            .contains(": tools[0].parameters.type: duplicate key `type`"),
        "{}",
        outcome.stderr
    );
    let _ = std::fs::remove_dir_all(folder);
}

#[test]
fn control_characters_in_input_never_reach_the_terminal_raw() {
    let folder = scratch("controls");
    let mut value = one_prompt();
    value["rules"] = serde_json::json!(["RESTORE-1\nagentsim: forged line\u{1b}[2J"]);
    let text = serde_json::to_string_pretty(&value).expect("serializes");
    let outcome = run_bytes(&folder, "controls.json", text.as_bytes());
    assert_bad(
        &outcome,
        "controls.json",
        "5: rules[0]",
        "unknown rule ID `RESTORE-1\\nagentsim: forged line\\u{1b}[2J`",
    );
    assert!(!outcome.stderr.contains('\u{1b}'));
    // check-session's human output: an id with an escape sequence and a newline.
    let session = folder.join("controls.jsonl");
    let mut lines = chain_of_results(0);
    lines.push_str(
        "{\"type\":\"label\",\"id\":\"x\\u001b[31m\\nforged\",\"parentId\":\"nowhere\",\"timestamp\":\"t\"}\n",
    );
    std::fs::write(&session, lines).expect("writes");
    let outcome = agentsim(&["check-session", session.to_str().expect("utf-8 path")]);
    assert_eq!(outcome.code, 1, "{}", outcome.stdout);
    assert!(!outcome.stdout.contains('\u{1b}'), "{:?}", outcome.stdout);
    assert!(outcome.stdout.contains("x\\u{1b}[31m\\nforged"), "{:?}", outcome.stdout);
    assert_eq!(outcome.stdout.lines().count(), 3, "{:?}", outcome.stdout);
    let _ = std::fs::remove_dir_all(folder);
}

// ---------------------------------------------------------------------------------------------
// 7. Strictness: fault errors, session entries
// ---------------------------------------------------------------------------------------------

#[test]
fn unknown_keys_in_a_fault_error_and_duplicates_in_session_entries_are_refused() {
    let folder = scratch("strict");
    let mut value = one_prompt();
    value["faults"] = serde_json::json!({"appends": [{"at": 1, "fault": "reject", "error": {"code": "x", "message": "y", "retry": true}}]});
    let text = serde_json::to_string_pretty(&value).expect("serializes");
    let outcome = run_bytes(&folder, "fault.json", text.as_bytes());
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(
        outcome
            .stderr
            .contains(": faults.appends[0].error.retry: unknown field `retry`"),
        "{}",
        outcome.stderr
    );
    let mut value = one_prompt();
    value["session"] = serde_json::json!([{"type": "message", "id": "u", "parentId": null, "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1}}]);
    value["config"]["activeLeafId"] = "u".into();
    let text = serde_json::to_string_pretty(&value).expect("serializes").replacen(
        "\"role\": \"user\",",
        "\"role\": \"user\",\n        \"role\": \"assistant\",",
        1,
    );
    let outcome = run_bytes(&folder, "entry-duplicate.json", text.as_bytes());
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(
        outcome
            .stderr
            .contains(": session[0].message.role: duplicate key `role`"),
        "{}",
        outcome.stderr
    );
    let _ = std::fs::remove_dir_all(folder);
}

#[test]
fn unknown_keys_in_session_entries_are_kept_where_the_kit_keeps_them_and_refused_where_it_would_drop_them() {
    let known: Vec<&str> = check::RULE_IDS.to_vec();
    let mut value = one_prompt();
    value["session"] = serde_json::json!([
        {"type": "message", "id": "u", "parentId": null, "timestamp": "2026-01-01T00:00:00.000Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1}},
        {"type": "custom", "customType": "x", "data": {"a": 1}, "id": "c", "parentId": "u",
         "timestamp": "2026-01-01T00:00:00.000Z", "piAddsThisLater": [1, 2]}
    ]);
    value["config"]["activeLeafId"] = "c".into();
    let text = serde_json::to_string_pretty(&value).expect("serializes");
    let parsed = scenario::parse(Path::new("kept.json"), &text, &known).expect("a metadata entry keeps new keys");
    let written = serde_json::to_value(&parsed.session[1]).expect("serializes");
    assert_eq!(
        written["piAddsThisLater"],
        serde_json::json!([1, 2]),
        "kept value for value"
    );

    value["session"][0]["piAddsThisLater"] = true.into();
    let text = serde_json::to_string_pretty(&value).expect("serializes");
    let error = scenario::parse(Path::new("dropped.json"), &text, &known).expect_err("a message entry would drop it");
    assert_eq!(error.field, "session[0].piAddsThisLater");
    assert!(error.message.contains("the kit would drop it"), "{}", error.message);
}

// ---------------------------------------------------------------------------------------------
// 8. Real Pi files: a lone surrogate escape
// ---------------------------------------------------------------------------------------------

#[test]
fn a_lone_surrogate_escape_is_read_and_judged() {
    let folder = scratch("surrogate");
    let file = folder.join("split-emoji.jsonl");
    let mut text = chain_of_results(1);
    text = text.replacen("\"content\":\"go\"", "\"content\":\"half an emoji: \\ud83d\"", 1);
    assert!(text.contains("\\ud83d\""));
    std::fs::write(&file, &text).expect("writes");
    let outcome = agentsim(&["check-session", file.to_str().expect("utf-8 path")]);
    assert_eq!(outcome.code, 0, "{} {}", outcome.stdout, outcome.stderr);
    assert!(outcome.stdout.ends_with("4 records: clean\n"), "{}", outcome.stdout);
    // A valid pair stays valid; a lone trailing surrogate is read too.
    let paired = parse_session(b"{\"type\":\"custom\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"t\",\"data\":\"\\ud83d\\ude00 \\udc00\"}\n", Limits::default())
        .expect("reads");
    assert_eq!(paired.records[0].value["data"], "\u{1f600} \u{fffd}");
    let _ = std::fs::remove_dir_all(folder);
}

// ---------------------------------------------------------------------------------------------
// Second round, 1. A kit stopped by a signal leaves no adapter behind
// ---------------------------------------------------------------------------------------------

/// Waits for `child` up to `limit`; kills it and fails past that.
fn wait_with_limit(child: &mut std::process::Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let until = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait works") {
            return status;
        }
        if Instant::now() >= until {
            let _killed = child.kill();
            let _reaped = child.wait();
            panic!("{what}: did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The process group of `pid`, from `/proc`.
fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// SIGINT (Ctrl-C), SIGTERM or SIGHUP to `agentsim run --impl ... --jobs 2` while both adapters
/// run: the kit exits with 128 + the signal's number, and no process of the run outlives it,
/// though the adapter ignores those signals and the end of its stdin and has a child of its
/// own (before, the kit died at once, and both adapters and their children ran on under pid 1).
/// No page is left half-written in its `--html-dir` (here none was due yet: the folder holds
/// whole pages or nothing, and no temporary file).
#[test]
fn a_signal_stops_the_kit_and_every_adapter_process_it_started() {
    let signals = [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ];
    for (signal, name) in signals {
        let folder = scratch(&format!("signal-{name}"));
        let pids = folder.join("pids");
        let pages = folder.join("pages");
        let output = |name: &str| std::fs::File::create(folder.join(name)).expect("an output file");
        let mut kit = std::process::Command::new(crate::binary::BIN)
            .args([
                "run",
                "--impl",
                "tests/fixtures/adapters/deaf.sh",
                "--jobs",
                "2",
                "--step-timeout-ms",
                "60000",
                "scenarios/wiring",
                "--html-dir",
            ])
            .arg(&pages)
            .env("AGENTSIM_FIXTURE_PIDS", &pids)
            .current_dir(root())
            .stdin(std::process::Stdio::null())
            .stdout(output("stdout"))
            .stderr(output("stderr"))
            .spawn()
            .expect("the kit starts");
        // Both adapters said `hello` and started their child: two pids each.
        let until = Instant::now() + Duration::from_secs(30);
        while read_pids(&pids).len() < 4 {
            if Instant::now() >= until {
                let _killed = kit.kill();
                panic!("{name}: the adapters did not start: {:?}", read_pids(&pids));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The adapters' pids, their children's, and their process groups' leaders (the `sh -c`).
        let mut recorded = read_pids(&pids);
        let leaders: Vec<u32> = recorded.iter().filter_map(|pid| process_group(*pid)).collect();
        recorded.extend(leaders);
        recorded.sort_unstable();
        recorded.dedup();
        // SAFETY: kill has no memory effects.
        let sent = unsafe { libc::kill(kit.id() as i32, signal) };
        assert_eq!(sent, 0, "{name}: the signal was sent");
        let status = wait_with_limit(&mut kit, Duration::from_secs(10), name);
        let stderr = std::fs::read_to_string(folder.join("stderr")).expect("stderr");
        // Whatever else fails, nothing of the run is left to outlive the test.
        let left = std::panic::catch_unwind(|| assert_all_gone(&recorded, name));
        for pid in recorded.iter().filter(|pid| crate::binary::running(**pid)) {
            // SAFETY: kill has no memory effects; these are this test's processes.
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
        assert_eq!(status.code(), Some(128 + signal), "{name}: {status}; stderr: {stderr}");
        assert!(stderr.contains(&format!("stopped by {name}")), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        if let Err(left) = left {
            std::panic::resume_unwind(left);
        }
        for entry in std::fs::read_dir(&pages).into_iter().flatten() {
            let path = entry.expect("an entry").path();
            let text = std::fs::read_to_string(&path).expect("readable");
            assert!(
                path.extension().is_some_and(|ext| ext == "html") && text.ends_with("</html>\n"),
                "{name}: {} is not a whole page",
                path.display()
            );
        }
        let _ = std::fs::remove_dir_all(folder);
    }
}

// ---------------------------------------------------------------------------------------------
// The fuzz test
// ---------------------------------------------------------------------------------------------

/// A small portable PRNG (splitmix64): the fuzz test is reproducible from its seed.
pub(crate) struct Mutator(pub(crate) u64);

impl Mutator {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    /// A JSON document (a scenario file, `pretty`; a protocol line) mutated in its bytes or, as
    /// often, in its values ([`Self::mutate_values`]): byte mutations mostly give input that is
    /// refused at once, value mutations input that goes deeper (scenarios that load and run to
    /// every verdict, lines refused for one field, or read).
    pub(crate) fn mutate_json(&mut self, input: &[u8], pretty: bool) -> Vec<u8> {
        if self.below(2) == 0 {
            return self.mutate(input);
        }
        let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(input) else {
            return self.mutate(input);
        };
        self.mutate_values(&mut value);
        let written = if pretty {
            serde_json::to_vec_pretty(&value)
        } else {
            serde_json::to_vec(&value)
        };
        written.expect("values serialize")
    }

    /// One to three changes to the values of a JSON document, which stays JSON: a number, string
    /// or boolean replaced by another of its kind (or by null), an element of an array removed,
    /// repeated or swapped with its neighbour, a key of an object removed.
    fn mutate_values(&mut self, value: &mut serde_json::Value) {
        use serde_json::Value;
        const TEXTS: &[&str] = &[
            "",
            "x",
            "old-assistant",
            "entry-1",
            "review_note",
            "<!-- \u{1b}[2J",
            "never",
        ];
        const NUMBERS: &[i64] = &[0, 1, 2, 3, -1, 7, 1_000, 4_294_967_295];
        for _ in 0..1 + self.below(3) {
            // Down a random path to a node.
            let mut node = &mut *value;
            loop {
                let children = match &*node {
                    Value::Array(items) => items.len(),
                    Value::Object(map) => map.len(),
                    _ => 0,
                };
                if children == 0 || self.below(4) == 0 {
                    break;
                }
                let index = self.below(children);
                node = match node {
                    Value::Array(items) => &mut items[index],
                    Value::Object(map) => map.values_mut().nth(index).expect("in range"),
                    _ => unreachable!("only arrays and objects have children"),
                };
            }
            match node {
                Value::Number(_) => *node = Value::from(NUMBERS[self.below(NUMBERS.len())]),
                Value::String(_) => *node = Value::from(TEXTS[self.below(TEXTS.len())]),
                Value::Bool(flag) => *flag = !*flag,
                Value::Array(items) if !items.is_empty() => {
                    let (at, len) = (self.below(items.len()), items.len());
                    match self.below(3) {
                        0 => {
                            items.remove(at);
                        }
                        1 => items.insert(at, items[at].clone()),
                        _ => items.swap(at, (at + 1) % len),
                    }
                }
                Value::Object(map) if !map.is_empty() => {
                    let key = map.keys().nth(self.below(map.len())).cloned().expect("in range");
                    map.remove(&key);
                }
                other => *other = Value::Null,
            }
        }
    }

    /// One to four mutations: byte flips, deletions, duplications, and insertions of hostile
    /// tokens (huge numbers, control characters, invalid UTF-8, lone surrogates, duplicate keys).
    pub(crate) fn mutate(&mut self, input: &[u8]) -> Vec<u8> {
        const TOKENS: &[&[u8]] = &[
            b"4294967295",
            b"18446744073709551615",
            b"-1",
            b"1e999",
            b"null",
            b"\"\"",
            b"{}",
            b"[]",
            b"\"\\ud800\"",
            b"\"\\u001b[2J\\n\"",
            b"\n",
            b"\x1b[31m",
            b"\xff\xfe",
            b"\"a\": 1, \"a\": 2, ",
            b"\"chunks\": 4294967295, ",
            b"{\"type\":\"idle\"}",
            b"\"\": 0, ",
            b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        ];
        let mut bytes = input.to_vec();
        for _ in 0..1 + self.below(4) {
            let at = self.below(bytes.len() + 1);
            match self.below(5) {
                0 if !bytes.is_empty() => {
                    let at = at.min(bytes.len() - 1);
                    bytes[at] ^= 1 << self.below(8);
                }
                1 => {
                    let end = (at + 1 + self.below(40)).min(bytes.len());
                    bytes.drain(at.min(end)..end);
                }
                2 => {
                    let end = (at + 1 + self.below(200)).min(bytes.len());
                    let copy = bytes[at.min(end)..end].to_vec();
                    let to = self.below(bytes.len() + 1);
                    bytes.splice(to..to, copy);
                }
                _ => {
                    let token = TOKENS[self.below(TOKENS.len())];
                    bytes.splice(at..at, token.iter().copied());
                }
            }
        }
        bytes
    }
}

pub(crate) fn fuzz_cases() -> usize {
    std::env::var("AGENTSIM_FUZZ_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(200)
}

fn files_under(folder: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![folder.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("the folder reads").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == extension) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A scenario that does not load is a `ScenarioError` naming its file, a line of it and a field,
/// on one printable line of bounded length.
fn assert_located(error: &scenario::ScenarioError, file: &Path, bytes: &[u8], what: &str) {
    let shown = error.to_string();
    assert_eq!(error.file, file, "{what}: {shown}");
    assert!(!error.field.is_empty(), "{what}: no field: {shown}");
    assert!(error.line >= 1, "{what}: no line: {shown}");
    let lines = bytes.iter().filter(|byte| **byte == b'\n').count() + 1;
    assert!(error.line <= lines, "{what}: line {} of {lines}: {shown}", error.line);
    assert!(
        shown.starts_with(&format!("{}:{}: {}: ", file.display(), error.line, error.field)),
        "{what}: not `file:line: field: message`: {shown}"
    );
    assert!(!shown.chars().any(char::is_control), "{what}: raw control: {shown:?}");
    assert!(shown.len() < 4_000, "{what}: a {}-byte message", shown.len());
}

/// A scenario that loads comes to a verdict of the reference on its canonical schedule: passed
/// with nothing against it, failed by named violations at lines of its trace, or a bad scenario
/// located like a load error. Never broken, never not applicable: the in-process reference
/// cannot crash, hang or refuse a scenario.
fn assert_judged(report: &CaseReport, file: &Path, bytes: &[u8], what: &str) {
    let trace_lines = report.outcome.as_ref().map(|outcome| outcome.trace.events.len());
    match &report.verdict {
        Verdict::Passed => {
            assert!(trace_lines.is_some(), "{what}: passed without a trace");
            assert!(
                report.violations.is_empty(),
                "{what}: passed with {:?}",
                report.violations
            );
        }
        Verdict::Failed => {
            let trace_lines = trace_lines.unwrap_or_else(|| panic!("{what}: failed without a trace"));
            assert!(!report.violations.is_empty(), "{what}: failed with no violation");
            for violation in &report.violations {
                let rule = violation.rule.as_str();
                let named = check::RULE_IDS.contains(&rule)
                    || rule == "expect"
                    || (rule.starts_with("model[") && rule.ends_with("].expect"));
                assert!(named, "{what}: a violation of no rule: {violation:?}");
                assert!(
                    !violation.lines.is_empty() && violation.lines.iter().all(|line| (1..=trace_lines).contains(line)),
                    "{what}: {rule} at lines {:?} of a {trace_lines}-line trace",
                    violation.lines
                );
                assert!(!violation.message.is_empty(), "{what}: {rule} says nothing");
            }
        }
        Verdict::BadScenario(error) => assert_located(error, file, bytes, what),
        other => panic!("{what}: the reference came to {other:?}"),
    }
    // What reaches a terminal or a CI's XML reader: the scenario's text, quoted in messages,
    // with its control characters escaped.
    let reports = std::slice::from_ref(report);
    for (format, text) in [
        ("human", agentsim::cli::human_report(reports)),
        ("junit", agentsim::cli::junit_report(reports)),
    ] {
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{what}: a raw control character in the {format} report: {text:?}"
        );
    }
}

/// What the kit must answer to an adapter line, worked out from the JSON alone (the order of
/// `parse_adapter_line`'s documented checks), and checks the answer is that: a message that
/// reads back the same once printed, or the typed error of its class, one printable line. A
/// refused known message names where it departs from its shape. Returns the answer's code
/// (`ok` for a message).
fn assert_line_answer(text: &str, what: &str) -> &'static str {
    use agentsim::protocol::wire::{parse_adapter_line, to_line, LineError, ADAPTER_MESSAGE_TYPES};
    let expected = match serde_json::from_str::<serde_json::Value>(text) {
        Err(_) => Some("wire.garbage"),
        Ok(value) => match value.as_object() {
            None => Some("wire.garbage"),
            Some(object) => match object.get("type").and_then(serde_json::Value::as_str) {
                Some(name) if ADAPTER_MESSAGE_TYPES.contains(&name) => None,
                _ => Some("wire.unknown_type"),
            },
        },
    };
    match parse_adapter_line(text) {
        Ok(message) => {
            assert_eq!(expected, None, "{what}: read as {message:?}");
            let again = parse_adapter_line(&to_line(&message));
            assert_eq!(again.as_ref(), Ok(&message), "{what}: does not read back once printed");
            "ok"
        }
        Err(error) => {
            if let Some(code) = expected {
                assert_eq!(error.code(), code, "{what}: {error}");
            }
            if let LineError::Malformed { location, .. } = &error {
                assert!(location.is_some(), "{what}: refused, but not located: {error}");
            }
            let shown = error.to_string();
            assert!(
                !shown.is_empty() && !shown.chars().any(char::is_control),
                "{what}: message {shown:?}"
            );
            error.code()
        }
    }
}

/// How long one mutated input may take to be judged (loaded and run, or parsed and checked).
pub(crate) const CASE_TIME_MAX: Duration = Duration::from_secs(10);

#[test]
fn fuzz_mutated_inputs_end_in_a_verdict_or_a_located_error() {
    let cases = fuzz_cases();
    let mut mutator = Mutator(0x5eed_0014);
    let known: Vec<&str> = check::RULE_IDS.to_vec();
    let folder = scratch("fuzz");

    // Scenario files: load from disk (the CLI's path), then run what loads.
    let scenarios = files_under(&root().join("scenarios"), "json");
    // Exit code -> inputs that came to it (a scenario that does not load is 2).
    let mut verdicts: std::collections::BTreeMap<u8, usize> = std::collections::BTreeMap::new();
    for case in 0..cases {
        let source = &scenarios[mutator.below(scenarios.len())];
        let bytes = mutator.mutate_json(&std::fs::read(source).expect("reads"), true);
        let file = folder.join(format!("case-{case}.json"));
        std::fs::write(&file, &bytes).expect("writes");
        let what = format!("case {case} (from {})", source.display());
        let started = Instant::now();
        match scenario::load(&file, "fuzz", &known) {
            Ok(loaded) => {
                let loaded: LoadedScenario = loaded;
                let report = Run::of(&loaded)
                    .seeded(StrategyKind::Scripted, 0)
                    .on(&Implementation::reference())
                    .execute(&loaded);
                let code = agentsim::cli::exit_code(std::slice::from_ref(&report));
                *verdicts.entry(code).or_default() += 1;
                assert_judged(&report, &file, &bytes, &what);
            }
            Err(error) => {
                *verdicts.entry(2).or_default() += 1;
                assert_located(&error, &file, &bytes, &what);
            }
        }
        assert!(
            started.elapsed() < CASE_TIME_MAX,
            "{what}: took {:?}",
            started.elapsed()
        );
    }
    // Every kind of verdict a mutated scenario can come to on the reference, so that none of
    // the judgements above is vacuous (with the default 200 cases too).
    assert!(
        [0, 1, 2]
            .iter()
            .all(|code| verdicts.get(code).is_some_and(|count| *count > 0)),
        "mutated scenarios by exit code: {verdicts:?}"
    );

    // Session files: parse and check.
    let sessions = files_under(&root().join("tests/fixtures/sessions"), "jsonl");
    let stable = [
        "session.empty",
        "session.not_utf8",
        "session.not_jsonl",
        "session.line_too_long",
        "session.not_pi",
        "session.read",
    ];
    for case in 0..cases {
        let source = &sessions[mutator.below(sessions.len())];
        let bytes = mutator.mutate(&std::fs::read(source).expect("reads"));
        let what = format!("session case {case} (from {})", source.display());
        let started = Instant::now();
        let lines = bytes.iter().filter(|byte| **byte == b'\n').count() + 1;
        match parse_session(&bytes, Limits::default()) {
            Ok(parsed) => {
                for finding in check_session(&parsed) {
                    assert!((1..=lines).contains(&finding.line), "{what}: {finding:?}");
                }
            }
            Err(error) => {
                assert!(stable.contains(&error.code()), "{what}: {error}");
                if let Some(line) = error.line() {
                    assert!((1..=lines).contains(&line), "{what}: {error}");
                }
            }
        }
        assert!(
            started.elapsed() < CASE_TIME_MAX,
            "{what}: took {:?}",
            started.elapsed()
        );
    }

    // Protocol lines: what adapters send, mutated.
    let lines = [
        r#"{"type":"hello","protocol":1,"implementation":{"name":"x","version":"0"},"features":["chunks"]}"#,
        r#"{"type":"started","leaf":null,"messages":0}"#,
        r#"{"type":"idle"}"#,
        r#"{"type":"settled","op":1,"settlement":{"status":"resolved","value":{"kind":"unit"}}}"#,
        r#"{"type":"effect","effect":{"kind":"append","id":4,"entry":{"type":"message","id":"x","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}}}"#,
        r#"{"type":"effect","effect":{"kind":"tool_call","id":5,"signal":9,"call":{"id":"c","name":"n","arguments":{}}}}"#,
        r#"{"type":"abort_signal","signal":42}"#,
        r#"{"type":"error","code":"x","message":"y"}"#,
    ];
    let mut answers: std::collections::BTreeMap<&'static str, usize> = std::collections::BTreeMap::new();
    for case in 0..cases {
        let source = lines[mutator.below(lines.len())];
        let bytes = mutator.mutate_json(source.as_bytes(), false);
        let text = String::from_utf8_lossy(&bytes);
        let what = format!("protocol case {case}: {text:?}");
        let answer = assert_line_answer(&text, &what);
        *answers.entry(answer).or_default() += 1;
    }
    assert!(
        [
            "ok",
            "wire.garbage",
            "wire.unknown_type",
            "wire.malformed",
            "wire.version"
        ]
        .iter()
        .all(|answer| answers.contains_key(answer)),
        "mutated protocol lines by answer: {answers:?}"
    );
    let _ = std::fs::remove_dir_all(folder);
}

/// A standard output that cannot be written (full, or a pipe whose reader is gone) ends every
/// command with exit code 4 and one line on stderr, never a panic (exit 101).
#[test]
fn a_full_or_closed_standard_output_is_a_clean_exit_4() {
    use std::process::{Command, Stdio};
    let commands: [&[&str]; 4] = [
        &["run", "scenarios/wiring/walkthrough.json"],
        &["replay", "scenarios/wiring/walkthrough.json"],
        &["run", "scenarios/wiring", "--format", "json"],
        &["explore", "scenarios/wiring/walkthrough.json", "--seeds", "2"],
    ];
    for args in commands {
        // Full: every write fails with ENOSPC.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let output = Command::new(crate::binary::BIN)
            .args(args)
            .current_dir(root())
            .stdout(full)
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(4), "{args:?} > /dev/full: {stderr}");
        assert!(stderr.contains("cannot write to standard output"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
        // Closed: the pipe's reader is gone before the kit starts.
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let output = Command::new(crate::binary::BIN)
            .args(args)
            .current_dir(root())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(4), "{args:?} | (closed): {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    }
}
