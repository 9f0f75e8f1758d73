//! The adapter protocol end to end: `agentsim serve` through `ExternalSubject` gives the
//! in-process reference's traces byte for byte; hostile adapters (tests/fixtures/adapters/) each
//! give exit code 3 within the step timeout, with a verdict naming the failure and no process
//! left behind; `--expect`, not-applicable verdicts and the markdown matrix behave as documented.
//! `UPDATE_CONFORMANCE=1 cargo test --test kit tidy` rewrites the report of docs/implementations/reference.md.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentsim::implementation::Implementation;
use agentsim::protocol::{AdapterFailure, ExternalSubject, SharedExternal};
use agentsim::run::{Driver, Run, World};
use agentsim::sim::{BoxedSubject, StrategyKind, Subject};
use agentsim::suite;

use crate::binary::{agentsim, assert_all_gone, read_pids, root, Outcome, BIN};

const ONE_PROMPT: &str = "tests/fixtures/protocol/one-prompt.json";

fn serve_command() -> String {
    format!("{BIN} serve")
}

fn scratch(name: &str) -> PathBuf {
    crate::binary::scratch("protocol", name)
}

// ---------------------------------------------------------------------------------------------
// The reference through the wire
// ---------------------------------------------------------------------------------------------

#[test]
fn serve_traces_equal_in_process_traces_for_every_scenario() {
    let corpus = suite::load_corpus(&[root().join("scenarios")]).expect("the corpus loads");
    assert!(!corpus.is_empty());
    let strategies = [
        (StrategyKind::Scripted, 0),
        (StrategyKind::Random, 1),
        (StrategyKind::Random, 2),
    ];
    // One adapter process for every run (protocol 2): each `reset` must leave nothing behind.
    // `net` scenarios run in the networked world, the adapter answering through its store server.
    let over_wire_impl = Implementation::adapter(serve_command(), Duration::from_secs(20));
    let shared = SharedExternal::new(ExternalSubject::new(serve_command(), Duration::from_secs(20)));
    let mut external: BoxedSubject = Box::new(shared.clone());
    for loaded in &corpus {
        for (strategy, seed) in strategies {
            let in_process = Run::of(loaded)
                .seeded(strategy, seed)
                .on(&Implementation::reference())
                .execute(loaded);
            let over_wire = Run::of(loaded)
                .seeded(strategy, seed)
                .on(&over_wire_impl)
                .execute_with(loaded, Driver::on(&mut external));
            let what = format!("{} under {} seed {seed}", loaded.name, strategy.spelling());
            let (Some(expected), Some(actual)) = (&in_process.outcome, &over_wire.outcome) else {
                panic!("{what}: no trace: {:?} / {:?}", in_process.verdict, over_wire.verdict);
            };
            assert_eq!(
                actual.trace.render(),
                expected.trace.render(),
                "{what}: rendered traces"
            );
            assert_eq!(actual.trace.to_json(), expected.trace.to_json(), "{what}: JSON traces");
            assert_eq!(over_wire.verdict, in_process.verdict, "{what}: verdicts");
            assert_eq!(over_wire.violations, in_process.violations, "{what}: violations");
        }
    }
    assert_eq!(
        shared.lock().processes_spawned(),
        1,
        "protocol 2 reuses its one process"
    );
}

/// Runs the corpus on the counted reference adapter; the report and how many processes ran.
fn counted_run(jobs: &str, serve_args: &str, extra: &[&str]) -> (Outcome, usize) {
    let folder = scratch(&format!("counted-{jobs}-{}", serve_args.replace(' ', "_")));
    let pids = folder.join("pids");
    let adapter = format!("tests/fixtures/adapters/counted.sh {BIN} {serve_args}");
    let mut args = vec!["run", "--impl", &adapter, "--jobs", jobs, "scenarios/"];
    args.extend_from_slice(extra);
    let run = agentsim(&args, &[("AGENTSIM_FIXTURE_PIDS", pids.to_str().expect("utf-8 path"))]);
    let count = read_pids(&pids).len();
    let _ = std::fs::remove_dir_all(folder);
    (run, count)
}

#[test]
fn jobs_give_the_same_report_whatever_their_number() {
    let (one, processes_one) = counted_run("1", "", &["--format", "json"]);
    let (two, processes_two) = counted_run("2", "", &["--format", "json"]);
    let (three, _) = counted_run("3", "", &["--format", "json", "--strategy", "random", "--seed", "7"]);
    let (one_random, _) = counted_run("1", "", &["--format", "json", "--strategy", "random", "--seed", "7"]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert!(one.stdout == two.stdout, "--jobs 1 and --jobs 2 reports differ");
    assert!(
        three.stdout == one_random.stdout,
        "--jobs 3 and --jobs 1 reports differ under random"
    );
    assert!(one.stdout.contains("\"status\": \"passed\""), "{}", one.stdout);
    assert_eq!(processes_one, 1, "protocol 2 with one job: one process");
    assert!((1..=2).contains(&processes_two), "two jobs: {processes_two} processes");
}

#[test]
fn protocol_1_gets_one_process_per_scenario() {
    let corpus = suite::load_corpus(&[root().join("scenarios")]).expect("the corpus loads");
    let applicable = corpus
        .iter()
        .filter(|loaded| loaded.scenario.observers.is_empty())
        .count();
    let (v1, processes) = counted_run("2", "--protocol 1", &["--format", "json"]);
    let (v2, _) = counted_run("2", "--protocol 2", &["--format", "json"]);
    assert_eq!(v1.code, 0, "{}", v1.stderr);
    // Observer scenarios need protocol 2; every other case is the same (the replay commands
    // name the adapter command, which differs in its last word).
    let cases = |report: &str| -> Vec<serde_json::Value> {
        let value: serde_json::Value = serde_json::from_str(report).expect("a JSON report");
        value["results"].as_array().expect("results").clone()
    };
    let (v1_cases, v2_cases) = (
        cases(&v1.stdout.replace("--protocol 1", "--protocol 2")),
        cases(&v2.stdout),
    );
    assert_eq!(v1_cases.len(), v2_cases.len());
    let with_observers: std::collections::BTreeSet<String> = corpus
        .iter()
        .filter(|loaded| !loaded.scenario.observers.is_empty())
        .map(|loaded| loaded.name.clone())
        .collect();
    for (one, two) in v1_cases.iter().zip(&v2_cases) {
        if one["name"].as_str().is_some_and(|name| with_observers.contains(name)) {
            assert_eq!(one["status"], "not-applicable", "{one}");
            assert_eq!(two["status"], "passed", "{two}");
        } else {
            // The state probe is protocol 2's: PERSIST-10 is exercised only there.
            let mut two = two.clone();
            if let Some(exercised) = two["exercised"].as_array_mut() {
                exercised.retain(|rule| rule != "PERSIST-10");
            }
            assert_eq!(one, &two, "protocol 1 and 2 differ");
        }
    }
    // One process per scenario: a not-applicable one too, since only its `hello` says so.
    assert_eq!(processes, corpus.len(), "one process per scenario");
    assert!(applicable < corpus.len());
}

#[test]
fn check_determinism_passes_on_the_reference_adapter() {
    let command = serve_command();
    let run = agentsim(&["run", "--impl", &command, "--check-determinism", "scenarios/"], &[]);
    assert_eq!(run.code, 0, "stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert!(run.stdout.ends_with(" passed, 0 failed\n"), "{}", run.stdout);
}

#[test]
fn check_determinism_catches_a_wall_clock_leak() {
    let adapter = format!("tests/fixtures/adapters/leaky-clock.sh {BIN}");
    let walkthrough = "scenarios/wiring/walkthrough.json";
    let run = agentsim(&["run", "--impl", &adapter, "--check-determinism", walkthrough], &[]);
    let report = format!("stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert_eq!(run.code, 3, "{report}");
    assert!(
        run.stdout
            .starts_with("BROKEN walkthrough: the implementation is not deterministic"),
        "{report}"
    );
    assert!(run.stdout.contains("(subject.nondeterministic)"), "{report}");
    // The first differing line, from both runs, and the field.
    assert!(
        run.stdout
            .contains("differ at trace line 0003: fresh process `0003 fx#1"),
        "{report}"
    );
    // A corpus of one scenario: the second run is in a new process, the third after itself.
    assert!(run.stdout.contains("/ second fresh process `0003 fx#1"), "{report}");
    assert!(
        run.stdout.contains("field system_prompt: \"[process started at "),
        "{report}"
    );
    // Without the check, the same adapter is judged by the rules only.
    let plain = agentsim(&["run", "--impl", &adapter, walkthrough], &[]);
    assert!(!plain.stdout.contains("subject.nondeterministic"), "{}", plain.stdout);
    let json = agentsim(
        &[
            "run",
            "--impl",
            &adapter,
            "--check-determinism",
            walkthrough,
            "--format",
            "json",
        ],
        &[],
    );
    assert!(
        json.stdout.contains("\"code\": \"subject.nondeterministic\""),
        "{}",
        json.stdout
    );
}

/// State one scenario leaves for the next is judged after a fixed other scenario (the one before
/// it in the corpus), never after whichever a worker happened to run: every `--jobs` gives the
/// same report, each case names the scenario it ran after, and its replay runs it there.
#[test]
fn check_determinism_judges_a_leak_from_the_scenario_before_alike_for_every_jobs() {
    let adapter = format!("tests/fixtures/adapters/leaky-state.py {BIN}");
    let files = [
        "scenarios/wiring/walkthrough.json",
        "scenarios/wiring/no-system-prompt-at-all.json",
        "scenarios/persist/two-prompts-near-simultaneous.json",
    ];
    let run = |jobs: &str, format: &str| {
        let mut args = vec![
            "run",
            "--impl",
            &adapter,
            "--check-determinism",
            "--jobs",
            jobs,
            "--format",
            format,
        ];
        args.extend(files);
        agentsim(&args, &[])
    };
    let one = run("1", "json");
    assert_eq!(one.code, 3, "stdout:\n{}\nstderr:\n{}", one.stdout, one.stderr);
    for jobs in ["2", "3"] {
        let other = run(jobs, "json");
        assert_eq!(one.stdout, other.stdout, "--jobs 1 and --jobs {jobs} differ");
    }
    let human = run("2", "human");
    // Sorted by name: no-system-prompt-at-all, two-prompts-near-simultaneous, walkthrough;
    // the first runs after the last.
    for (case, before) in [
        ("no-system-prompt-at-all", "walkthrough"),
        ("two-prompts-near-simultaneous", "no-system-prompt-at-all"),
        ("walkthrough", "two-prompts-near-simultaneous"),
    ] {
        let line = human
            .stdout
            .lines()
            .find(|line| line.starts_with(&format!("BROKEN {case}:")))
            .unwrap_or_else(|| panic!("no verdict for {case}:\n{}", human.stdout));
        assert!(line.contains("(subject.nondeterministic)"), "{line}");
        assert!(line.contains(&format!("/ reused process after `{before}` `")), "{line}");
        assert!(line.contains("field system_prompt:"), "{line}");
    }
    // The printed replay runs the case after the scenario it differed after, where the leak
    // shows in the trace; without `--after`, it does not.
    let replay = human
        .stdout
        .lines()
        .find(|line| line.contains("replay: agentsim replay scenarios/wiring/no-system-prompt-at-all.json"))
        .expect("a replay line");
    assert!(
        replay.ends_with("--after scenarios/wiring/walkthrough.json"),
        "{replay}"
    );
    let after = agentsim(
        &[
            "replay",
            "scenarios/wiring/no-system-prompt-at-all.json",
            "--impl",
            &adapter,
            "--after",
            "scenarios/wiring/walkthrough.json",
        ],
        &[],
    );
    assert_eq!(after.code, 1, "{}", after.stdout);
    assert!(
        after.stdout.contains("system=\"[after another scenario] "),
        "{}",
        after.stdout
    );
    let alone = agentsim(
        &[
            "replay",
            "scenarios/wiring/no-system-prompt-at-all.json",
            "--impl",
            &adapter,
        ],
        &[],
    );
    assert_eq!(alone.code, 0, "{}", alone.stdout);
    // Without the check, the rules judge each run as it came.
    let mut plain = vec!["run", "--impl", &adapter, "--jobs", "1"];
    plain.extend(files);
    assert!(!agentsim(&plain, &[]).stdout.contains("subject.nondeterministic"));
}

/// Under exploration too: each schedule's first run follows a run fixed by the corpus and the
/// seeds (a scenario's first seed, the last seed of the scenario before it), so one thread and
/// two find the same failures, and the message names what the first run followed.
#[test]
fn explore_check_determinism_fixes_what_each_first_run_follows() {
    let adapter = format!("tests/fixtures/adapters/leaky-state.py {BIN}");
    let explore = |threads: &str| {
        let args = [
            "explore",
            "scenarios/wiring/walkthrough.json",
            "scenarios/wiring/no-system-prompt-at-all.json",
            "scenarios/persist/two-prompts-near-simultaneous.json",
            "--strategy",
            "random",
            "--seeds",
            "2",
            "--impl",
            &adapter,
            "--check-determinism",
            "--threads",
            threads,
        ];
        let run = agentsim(&args, &[]);
        assert_eq!(run.code, 1, "stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
        // The timing line aside.
        let text: Vec<String> = run
            .stdout
            .lines()
            .filter(|line| !line.contains(" per second)"))
            .map(str::to_string)
            .collect();
        text
    };
    let one = explore("1");
    assert_eq!(one, explore("2"), "one thread and two differ");
    let text = one.join("\n");
    for (case, before) in [
        ("no-system-prompt-at-all", "walkthrough"),
        ("two-prompts-near-simultaneous", "no-system-prompt-at-all"),
        ("walkthrough", "two-prompts-near-simultaneous"),
    ] {
        assert!(text.contains(&format!("FAIL   {case} (random seed 0)")), "{text}");
        assert!(
            text.contains(&format!(
                "the same schedule, replayed, gave a different trace (the first right after `{before}` random seed 1, the replay right after it)"
            )),
            "{text}"
        );
        // A later seed follows its own scenario's seed before it: no leak.
        assert!(!text.contains(&format!("FAIL   {case} (random seed 1)")), "{text}");
    }
    // The replay runs the case after the run it followed, where the leak shows again.
    let replay = one
        .iter()
        .find(|line| line.contains("replay: agentsim replay scenarios/wiring/no-system-prompt-at-all.json"))
        .expect("a replay line");
    assert!(
        replay.ends_with("--after scenarios/wiring/walkthrough.json --after-seed 1"),
        "{replay}"
    );
    let words: Vec<&str> = replay
        .trim_start()
        .trim_start_matches("replay: agentsim ")
        .split(' ')
        .collect();
    let command = words.join(" ").replace(&format!("'{adapter}'"), "ADAPTER");
    let args: Vec<&str> = command
        .split(' ')
        .map(|word| if word == "ADAPTER" { adapter.as_str() } else { word })
        .collect();
    let again = agentsim(&args, &[]);
    assert_eq!(again.code, 1, "{}", again.stdout);
    assert!(
        again.stdout.contains("system=\"[after another scenario]"),
        "{}",
        again.stdout
    );
}

#[test]
fn check_determinism_needs_an_implementation() {
    let run = agentsim(&["run", "--check-determinism", "scenarios/wiring"], &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--check-determinism judges an implementation"),
        "{}",
        run.stderr
    );
}

#[test]
fn run_impl_serve_passes_the_corpus() {
    let corpus = suite::load_corpus(&[root().join("scenarios")]).expect("the corpus loads");
    let command = serve_command();
    let run = agentsim(&["run", "--impl", &command, "scenarios/"], &[]);
    assert_eq!(run.code, 0, "stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.lines().last(),
        Some(format!("{} passed, 0 failed", corpus.len()).as_str())
    );
}

#[test]
fn network_faults_reach_an_adapter_with_the_in_process_traces() {
    let corpus = suite::load_corpus(&[root().join("scenarios/durability")]).expect("the corpus loads");
    assert!(corpus.len() >= 6);
    let over_wire_impl = Implementation::adapter(serve_command(), Duration::from_secs(20));
    let shared = SharedExternal::new(ExternalSubject::new(serve_command(), Duration::from_secs(20)));
    let mut external: BoxedSubject = Box::new(shared.clone());
    // Runs in which a partition, hold or crash happened.
    let mut faulted = 0;
    for loaded in &corpus {
        assert!(loaded.scenario.net.is_some(), "{}", loaded.name);
        // The scenario's own faults, then faults drawn from the seed.
        for (seed, seeded_faults) in [(0, false), (1, true), (2, true), (3, true), (11, true)] {
            let world = if seeded_faults { World::NetSeeded } else { World::Own };
            let run = Run::of(loaded).seeded(StrategyKind::Scripted, seed).in_world(world);
            let in_process = run.execute(loaded);
            let over_wire = run.on(&over_wire_impl).execute_with(loaded, Driver::on(&mut external));
            let what = format!("{} seed {seed} seeded faults {seeded_faults}", loaded.name);
            let (Some(expected), Some(actual)) = (&in_process.outcome, &over_wire.outcome) else {
                panic!("{what}: no trace: {:?} / {:?}", in_process.verdict, over_wire.verdict);
            };
            if expected
                .trace
                .events
                .iter()
                .any(|event| matches!(event, agentsim::trace::Event::Net { .. }))
            {
                faulted += 1;
            }
            assert_eq!(
                actual.trace.render(),
                expected.trace.render(),
                "{what}: rendered traces"
            );
            assert_eq!(actual.trace.to_json(), expected.trace.to_json(), "{what}: JSON traces");
            assert_eq!(actual.store, expected.store, "{what}: the stored entries");
            assert_eq!(over_wire.violations, in_process.violations, "{what}: violations");
        }
    }
    assert!(faulted >= corpus.len() * 3, "only {faulted} runs had a network fault");
    assert_eq!(
        shared.lock().processes_spawned(),
        1,
        "one adapter process served every networked run"
    );
    // A broken reference behind the wire fails the networked scenarios as it does in process.
    let mutant = format!("{BIN} serve --mutant resolve-before-last-append");
    let through_wire = agentsim(&["run", "--impl", &mutant, "scenarios/durability/"], &[]);
    let in_process = agentsim(
        &["run", "--mutant", "resolve-before-last-append", "scenarios/durability/"],
        &[],
    );
    assert_eq!(through_wire.code, 1, "{}", through_wire.stdout);
    assert!(through_wire.stdout.contains("PERSIST-6"), "{}", through_wire.stdout);
    assert_eq!(through_wire.stdout.lines().last(), in_process.stdout.lines().last());
    // Its replay command replays it in the networked world on the adapter.
    let replay = agentsim(
        &[
            "replay",
            "scenarios/durability/crash-after-two-acks.json",
            "--world",
            "net",
            "--seed",
            "3",
            "--impl",
            &mutant,
        ],
        &[],
    );
    let local = agentsim(
        &[
            "replay",
            "scenarios/durability/crash-after-two-acks.json",
            "--world",
            "net",
            "--seed",
            "3",
            "--mutant",
            "resolve-before-last-append",
        ],
        &[],
    );
    assert_eq!(replay.stdout, local.stdout);
    assert!(
        replay.stdout.starts_with("networked world: kit seed 3"),
        "{}",
        replay.stdout
    );
}

#[test]
fn replay_impl_prints_the_trace_of_the_implementation() {
    let command = serve_command();
    let replay = agentsim(&["replay", ONE_PROMPT, "--impl", &command], &[]);
    assert_eq!(replay.code, 0, "{}{}", replay.stdout, replay.stderr);
    assert!(replay.stdout.contains("op#1   prompt"), "{}", replay.stdout);
    assert!(replay.stdout.ends_with("one-prompt: passed\n"), "{}", replay.stdout);
}

#[test]
fn a_broken_implementation_shows_its_first_divergence_and_replay() {
    let command = format!("{BIN} serve --mutant poison-not-stored");
    let run = agentsim(&["run", "--impl", &command, "scenarios/poison"], &[]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("first difference from the reference fed the same inputs, at trace line"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  reference:      "), "{}", run.stdout);
    assert!(run.stdout.contains("  implementation: "), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!("--impl '{command}'")),
        "the replay command names the adapter: {}",
        run.stdout
    );
}

// ---------------------------------------------------------------------------------------------
// Hostile adapters
// ---------------------------------------------------------------------------------------------

/// Runs one hostile fixture on the one-prompt scenario with a 500 ms step timeout and checks the
/// verdict: exit 3, the failure's code and `expected` in the report, well within the timeout's
/// reach, and every process the fixture started gone.
fn assert_broken(fixture: &str, code: &str, expected: &[&str]) {
    assert_broken_with(fixture, &[], code, expected);
}

/// `assert_broken` with more environment for the fixture.
fn assert_broken_with(fixture: &str, envs: &[(&str, &str)], code: &str, expected: &[&str]) {
    assert_broken_within(fixture, envs, "500", code, expected);
}

/// `assert_broken_with` with another step timeout, for a fixture whose breach takes time to
/// show (writing and reading megabytes on a loaded machine) and must not be taken for silence.
fn assert_broken_within(fixture: &str, envs: &[(&str, &str)], step_timeout_ms: &str, code: &str, expected: &[&str]) {
    // Tests run in parallel, some on the same fixture: each call gets a folder of its own.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let label: String = fixture
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let folder = scratch(&format!("{label}-{call}"));
    let pids = folder.join("pids");
    let adapter = format!("tests/fixtures/adapters/{fixture}");
    let mut envs = envs.to_vec();
    envs.push(("AGENTSIM_FIXTURE_PIDS", pids.to_str().expect("utf-8 path")));
    let run = agentsim(
        &[
            "run",
            "--step-timeout-ms",
            step_timeout_ms,
            "--impl",
            &adapter,
            ONE_PROMPT,
        ],
        &envs,
    );
    let report = format!("{fixture}: stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert_eq!(run.code, 3, "{report}");
    assert!(run.stdout.starts_with("BROKEN one-prompt: "), "{report}");
    assert!(run.stdout.contains(&format!("({code})")), "{report}");
    for text in expected {
        assert!(run.stdout.contains(text), "{report}\nmissing: {text}");
    }
    assert!(!run.stderr.contains("thread 'main' panicked"), "{report}");
    assert!(run.stdout.ends_with("0 passed, 1 failed\n"), "{report}");
    assert!(
        run.elapsed < Duration::from_secs(5),
        "{fixture}: took {:?}",
        run.elapsed
    );
    let pids = read_pids(&pids);
    assert!(!pids.is_empty(), "{fixture} recorded no pid");
    assert_all_gone(&pids, fixture);
    let _ = std::fs::remove_dir_all(folder);
}

#[test]
fn hostile_crash_at_start() {
    assert_broken(
        "crash-at-start.sh",
        "subject.crashed",
        &[
            "crashed (exit status 1) while the kit waited for `hello`",
            "stderr: hostile: cannot load the runtime",
        ],
    );
}

#[test]
fn hostile_crash_mid_run() {
    assert_broken(
        "crash-mid-run.sh",
        "subject.crashed",
        &[
            "while the kit waited for `idle` after operation op#1 (prompt)",
            "stderr: hostile: panicked at src/parser.rs:12",
        ],
    );
}

#[test]
fn hostile_garbage() {
    assert_broken(
        "garbage.sh",
        "subject.garbage",
        &["not a JSON object", "\"Loading runtime... done\""],
    );
}

#[test]
fn hostile_flood() {
    assert_broken_within(
        "flood.sh",
        &[],
        "10000",
        "subject.oversize",
        &["longer than 4194304 bytes"],
    );
}

#[test]
fn hostile_silence() {
    assert_broken(
        "silent.sh",
        "subject.timeout",
        &[
            "did not answer within 500 ms",
            "stderr: hostile: waiting for a model that never comes",
        ],
    );
}

#[test]
fn hostile_duplicate_effect_id() {
    assert_broken(
        "duplicate-effect-id.sh",
        "subject.unknown_effect",
        &["effect id 7 was already used"],
    );
}

#[test]
fn hostile_unknown_effect_kind() {
    assert_broken(
        "unknown-effect.sh",
        "subject.unknown_effect",
        &["unknown effect kind `teleport`"],
    );
}

#[test]
fn hostile_unknown_message() {
    assert_broken("unknown-message.sh", "subject.unknown_message", &["`telemetry`"]);
}

#[test]
fn hostile_early_exit() {
    assert_broken(
        "early-exit.sh",
        "subject.early_exit",
        &["exited (status 0) while the kit waited for `idle` after operation op#1"],
    );
}

#[test]
fn hostile_wrong_version() {
    assert_broken("wrong-version.sh", "subject.version", &["speaks protocol 3"]);
}

#[test]
fn hostile_settled_for_an_operation_never_delivered() {
    for op in ["99", "0"] {
        assert_broken(
            &format!("settled-never-delivered.sh {op}"),
            "subject.malformed",
            &[&format!("`settled` for op#{op}, an operation the kit never delivered")],
        );
    }
}

/// Two settlements of one operation are a breach of the protocol (exit 3) that names the
/// operation and both lines, not a rule's violation that no rule names.
#[test]
fn hostile_settled_twice() {
    assert_broken(
        "settled-twice.sh",
        "subject.settled_twice",
        &["op#1 was settled a second time at trace line 0004 (first at line 0003): an operation settles once"],
    );
}

#[test]
fn hostile_unsolicited_idle_flood() {
    // Which unsolicited line the kit reads first depends on what the pipe holds when it looks:
    // the `idle` itself, or the flood behind it ("more output"); the verdict is the same.
    assert_broken(
        "idle-flood.sh",
        "subject.malformed",
        &["an unsolicited line after `idle`, before the kit sent anything"],
    );
}

/// An adapter that answers `reset` with two `idle`s breaks that reset, and the verdict goes to the
/// case whose run the reset ended, naming its scenario, the same in every run and with one job
/// or two (before, each breach went to whichever case came next on that process, as "an
/// unsolicited line after `idle`" or "`idle` before `started`" as the timing fell: three runs
/// gave three reports). The replay command of such a case reproduces it.
#[test]
fn hostile_second_idle_after_reset_is_that_resets_breach_the_same_every_run() {
    let folder = scratch("reset-twice");
    let pids = folder.join("pids");
    let adapter = format!("tests/fixtures/adapters/reset-twice.sh {BIN}");
    let envs = [("AGENTSIM_FIXTURE_PIDS", pids.to_str().expect("utf-8 path"))];
    let mut reports = Vec::new();
    for jobs in ["1", "2", "1", "2", "1", "2"] {
        let run = agentsim(&["run", "--impl", &adapter, "--jobs", jobs, "scenarios/wiring"], &envs);
        assert_eq!(run.code, 3, "--jobs {jobs}: {}{}", run.stdout, run.stderr);
        reports.push((jobs, run.stdout));
    }
    let (_, first) = &reports[0];
    for (jobs, report) in &reports {
        assert!(
            report == first,
            "--jobs {jobs} gave another report:\n{report}\nthan the first:\n{first}"
        );
    }
    let names: Vec<String> = suite::load_corpus(&[root().join("scenarios/wiring")])
        .expect("the corpus loads")
        .into_iter()
        .map(|loaded| loaded.name)
        .collect();
    for name in &names {
        let verdict = format!(
            "BROKEN {name}: the adapter broke the protocol: after the `idle` that answered the `reset` sent after scenario `{name}`, it wrote \"{{\\\"type\\\":\\\"idle\\\"}}\"; `reset` is answered by exactly one `idle`, and the next line must answer the next `start` (subject.malformed)\n"
        );
        assert!(first.contains(&verdict), "missing: {verdict}in:\n{first}");
    }
    assert!(
        first.ends_with(&format!("0 passed, {} failed\n", names.len())),
        "{first}"
    );
    let replay = agentsim(
        &["replay", "scenarios/wiring/walkthrough.json", "--impl", &adapter],
        &envs,
    );
    assert_eq!(replay.code, 3, "{}{}", replay.stdout, replay.stderr);
    assert!(
        replay.stdout.contains("walkthrough: broken: the adapter broke the protocol: after the `idle` that answered the `reset` sent after scenario `walkthrough`"),
        "{}",
        replay.stdout
    );
    assert_all_gone(&read_pids(&pids), "reset-twice.sh");
    let _ = std::fs::remove_dir_all(folder);
}

/// Runs `scenarios/wiring` through `breaks-run.sh` (breaking the run of the one scenario with an
/// empty session at `where`) with `jobs`: the report and how many adapter processes ran.
fn breaks_run(place: &str, jobs: &str) -> (Outcome, usize) {
    let folder = scratch(&format!("breaks-run-{place}-{jobs}"));
    let pids = folder.join("pids");
    let adapter = format!("tests/fixtures/adapters/breaks-run.sh {BIN} {place}");
    let run = agentsim(
        &["run", "--impl", &adapter, "--jobs", jobs, "scenarios/wiring"],
        &[("AGENTSIM_FIXTURE_PIDS", pids.to_str().expect("utf-8 path"))],
    );
    let pids = read_pids(&pids);
    assert_all_gone(&pids, "breaks-run.sh");
    let _ = std::fs::remove_dir_all(folder);
    (run, pids.len())
}

#[test]
fn a_recoverable_error_breaks_its_run_and_the_process_serves_the_next() {
    let broken = "BROKEN system-prompt-configured-then-resources: the adapter broke the protocol at trace line";
    for (place, when) in [
        ("start", "0001: the adapter reported an error after `start`"),
        (
            "operation",
            "0003: the adapter reported an error while the kit waited for `idle` after operation op#1 (prompt)",
        ),
    ] {
        let (one, processes) = breaks_run(place, "1");
        let (two, _) = breaks_run(place, "2");
        let report = format!("{place}: {}{}", one.stdout, one.stderr);
        assert_eq!(one.code, 3, "{report}");
        assert!(
            one.stdout.contains(&format!(
                "{broken} {when}: fixture.hang: the runtime did not return (subject.malformed)\n"
            )),
            "{report}"
        );
        assert!(one.stdout.ends_with("21 passed, 1 failed\n"), "{report}");
        // The run after the broken one, on the same process, passes: the reset was honoured.
        assert_eq!(processes, 1, "{place}: the broken run cost a new process\n{report}");
        assert!(
            one.stdout == two.stdout,
            "{place}: --jobs 1 and 2 differ:\n{}\n{}",
            one.stdout,
            two.stdout
        );
    }
    // Marked recoverable, then not `idle`: the protocol is broken, the process is not trusted.
    let (garbage, processes) = breaks_run("garbage", "1");
    assert!(
        garbage.stdout.contains(
            "(marked recoverable; then it wrote \"{\\\"type\\\":\\\"idle\\\",\\\"late\\\":true}\" instead of `idle`) (subject.malformed)"
        ),
        "{}",
        garbage.stdout
    );
    assert!(garbage.stdout.ends_with("21 passed, 1 failed\n"), "{}", garbage.stdout);
    assert_eq!(processes, 2, "a process that breached the protocol serves no other run");
    // Marked recoverable, then a wrong answer to the kit's `reset`: the breach joins the verdict.
    let (bad_reset, processes) = breaks_run("bad-reset", "1");
    assert!(
        bad_reset.stdout.contains(
            "fixture.hang: the runtime did not return (marked recoverable; then it answered `reset` with `error`) (subject.malformed)"
        ),
        "{}",
        bad_reset.stdout
    );
    assert!(
        bad_reset.stdout.ends_with("21 passed, 1 failed\n"),
        "{}",
        bad_reset.stdout
    );
    assert_eq!(
        processes, 2,
        "a process that answered `reset` wrongly serves no other run"
    );
}

#[test]
fn hostile_escape_with_setsid_leaves_no_process() {
    // The escaped processes are in sessions of their own: only the kit's subreaper and
    // descendant kill reach them; `assert_broken` checks all three pids are gone.
    assert_broken(
        "escape-setsid.sh",
        "subject.crashed",
        &["stderr: hostile: escaped, now crashing"],
    );
}

#[test]
fn a_wrong_but_well_formed_adapter_gets_violations_not_a_crash() {
    let folder = scratch("wrong");
    let pids = folder.join("pids");
    for strategy in ["scripted", "random", "pct"] {
        let run = agentsim(
            &[
                "run",
                "--strategy",
                strategy,
                "--seed",
                "3",
                "--step-timeout-ms",
                "2000",
                "--impl",
                "tests/fixtures/adapters/wrong-but-well-formed.sh",
                "scenarios/",
            ],
            &[("AGENTSIM_FIXTURE_PIDS", pids.to_str().expect("utf-8 path"))],
        );
        let report = format!("{strategy}: stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
        assert_eq!(run.code, 1, "{report}");
        assert!(!run.stderr.contains("panicked"), "{report}");
        assert!(
            !run.stdout
                .lines()
                .any(|line| line.starts_with("BROKEN") || line.starts_with("BAD")),
            "{report}"
        );
        assert!(run.stdout.starts_with("FAIL   "), "{report}");
    }
    assert_all_gone(&read_pids(&pids), "wrong-but-well-formed.sh");
    let _ = std::fs::remove_dir_all(folder);
}

#[test]
fn a_command_that_does_not_exist_is_bad_input() {
    let run = agentsim(&["run", "--impl", "./no-such-adapter-here", ONE_PROMPT], &[]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("(subject.bad_command)"), "{}", run.stdout);
}

#[test]
fn dropping_the_subject_kills_the_adapter_group() {
    let folder = scratch("drop");
    let pids = folder.join("pids");
    let loaded = suite::load_corpus(&[root().join(ONE_PROMPT)]).expect("the fixture loads");
    let scenario = &loaded[0].scenario;
    // `sh -c` runs the command, so an assignment in front of it sets the fixture's environment.
    let command = format!(
        "AGENTSIM_FIXTURE_PIDS={} {}",
        pids.display(),
        root().join("tests/fixtures/adapters/silent.sh").display()
    );
    let mut subject = ExternalSubject::new(command, Duration::from_millis(300));
    let started = Instant::now();
    let failure = subject.start(scenario).expect_err("a silent adapter cannot start");
    assert!(
        matches!(
            AdapterFailure::of(&failure),
            Some(AdapterFailure::Timeout { waited_ms: 300, .. })
        ),
        "{failure:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    let shell = subject.pid().expect("the adapter ran");
    drop(subject);
    let mut all = read_pids(&pids);
    all.push(shell);
    assert_all_gone(&all, "silent.sh");

    // A healthy adapter is asked to shut down and is gone after the drop as well.
    let mut subject = ExternalSubject::new(serve_command(), Duration::from_secs(10));
    let restored = subject.start(scenario).expect("serve starts");
    assert!(restored.is_ok());
    let shell = subject.pid().expect("serve runs");
    drop(subject);
    assert_all_gone(&[shell], "agentsim serve");
    let _ = std::fs::remove_dir_all(folder);
}

// ---------------------------------------------------------------------------------------------
// Not applicable, expectations, markdown
// ---------------------------------------------------------------------------------------------

#[test]
fn an_unsupported_operation_is_not_applicable() {
    let run = agentsim(
        &[
            "run",
            "--impl",
            "tests/fixtures/adapters/no-library.sh",
            "tests/fixtures/protocol/library.json",
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout,
        "n/a    library: `library` is unsupported: this runtime has no library adapter\n\
         1 not applicable\n\
         0 passed, 0 failed\n"
    );
    let junit = agentsim(
        &[
            "run",
            "--impl",
            "tests/fixtures/adapters/no-library.sh",
            "--format",
            "junit",
            "tests/fixtures/protocol/library.json",
        ],
        &[],
    );
    assert!(junit.stdout.contains("<skipped message="), "{}", junit.stdout);
}

/// The (scenario, rule) failures of a JSON report.
fn failures(json: &str) -> Vec<(String, String)> {
    let report: serde_json::Value = serde_json::from_str(json).expect("a JSON report");
    let mut pairs = Vec::new();
    for result in report["results"].as_array().expect("results") {
        for violation in result["violations"].as_array().expect("violations") {
            let pair = (
                result["name"].as_str().expect("name").to_string(),
                violation["rule"].as_str().expect("rule").to_string(),
            );
            if !pairs.contains(&pair) {
                pairs.push(pair);
            }
        }
    }
    pairs
}

/// An expectations file with one cause, labelled bug, that lists `pairs`.
fn expectation_file(pairs: &[(String, String)]) -> String {
    let mut by_rule: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (scenario, rule) in pairs {
        by_rule.entry(rule).or_default().push(scenario);
    }
    serde_json::json!({"implementation": "agentsim-reference+poison-not-stored-0.1.0", "causes": [{
        "id": "poison-not-stored", "verdict": "bug", "reason": "the mutant keeps no poison",
        "source": {"file": "src/zoo/poison.rs", "function": "poison_not_stored", "line": 1},
        "pairs": by_rule}]})
    .to_string()
}

#[test]
fn expect_passes_only_on_exactly_the_listed_failures() {
    let folder = scratch("expect");
    let command = format!("{BIN} serve --mutant poison-not-stored");
    let observed = agentsim(
        &["run", "--impl", &command, "--format", "json", "scenarios/poison"],
        &[],
    );
    assert_eq!(observed.code, 1, "{}", observed.stderr);
    let pairs = failures(&observed.stdout);
    assert!(pairs.len() >= 2, "the mutant fails several rules: {pairs:?}");
    let file = folder.join("mutant.json");
    let run_with = |pairs: &[(String, String)]| {
        std::fs::write(&file, expectation_file(pairs)).expect("write the expectation file");
        agentsim(
            &[
                "run",
                "--impl",
                &command,
                "--expect",
                file.to_str().expect("utf-8 path"),
                "scenarios/poison",
            ],
            &[],
        )
    };

    let exact = run_with(&pairs);
    assert_eq!(exact.code, 0, "{}", exact.stdout);
    assert!(exact.stdout.contains("0 unexpected, 0 stale"), "{}", exact.stdout);
    assert!(exact
        .stdout
        .lines()
        .last()
        .is_some_and(|line| line.ends_with(" failed")));

    let missing = run_with(&pairs[1..]);
    assert_eq!(missing.code, 1, "{}", missing.stdout);
    assert!(
        missing
            .stdout
            .contains(&format!("UNEXPECTED {} {}", pairs[0].0, pairs[0].1)),
        "{}",
        missing.stdout
    );

    // A scenario that passes on this mutant, listed as failing: stale.
    let passing = agentsim(
        &["run", "--impl", &command, "--format", "json", "scenarios/poison"],
        &[],
    );
    let report: serde_json::Value = serde_json::from_str(&passing.stdout).expect("JSON");
    let passed = report["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|result| result["status"] == "passed")
        .map(|result| result["name"].as_str().expect("name").to_string());
    if let Some(passed) = passed {
        let mut with_stale = pairs.clone();
        with_stale.push((passed.clone(), "POISON-1".to_string()));
        let stale = run_with(&with_stale);
        assert_eq!(stale.code, 1, "{}", stale.stdout);
        // Told per cause: one line, the pairs that no longer fail by rule.
        let line = stale
            .stdout
            .lines()
            .find(|line| line.starts_with("STALE cause poison-not-stored (bug): 1 of "))
            .unwrap_or_else(|| panic!("no STALE line for the cause:\n{}", stale.stdout));
        assert!(
            line.ends_with(&format!("pairs no longer fail: POISON-1 on {passed}")),
            "{line}"
        );
    }

    std::fs::write(
        &file,
        "{\"implementation\": \"x\", \"causes\": [{\"id\": \"c\", \"verdict\": \"bug\", \"reason\": \"r\",\n \
         \"source\": {\"file\": \"dist/a.js\", \"function\": \"f\", \"line\": 1},\n \"pairs\": {\"NOPE-1\": [\"a\"]}}]}",
    )
    .expect("write");
    let bad = agentsim(
        &["run", "--expect", file.to_str().expect("utf-8 path"), ONE_PROMPT],
        &[],
    );
    assert_eq!(bad.code, 2, "{}{}", bad.stdout, bad.stderr);
    assert!(
        bad.stderr
            .contains(":3: causes[0].pairs.NOPE-1: unknown rule ID `NOPE-1`"),
        "{}",
        bad.stderr
    );
    let _ = std::fs::remove_dir_all(folder);
}

fn conformance_reference_path() -> PathBuf {
    root().join("docs/implementations/reference.md")
}

/// The doc's command, run with the built binary first on PATH (so no absolute path shows).
fn markdown_report() -> Outcome {
    let bin_dir = Path::new(BIN).parent().expect("the binary has a folder");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    agentsim(
        &["run", "--impl", "agentsim serve", "scenarios/", "--format", "markdown"],
        &[("PATH", &path)],
    )
}

#[test]
fn tidy_conformance_reference_is_current() {
    let first = markdown_report();
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let second = markdown_report();
    assert_eq!(first.stdout, second.stdout, "the markdown report is not deterministic");
    assert!(
        !first.stdout.contains(env!("CARGO_MANIFEST_DIR")),
        "an absolute path in the report"
    );
    // The page is prose, then the report from this marker on: only the report is generated.
    let intro = "<!-- Generated by `agentsim run --impl \"agentsim serve\" scenarios/ --format markdown`; \
                 `UPDATE_CONFORMANCE=1 cargo test --test kit tidy` rewrites the page from here on. -->\n\n";
    let path = conformance_reference_path();
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    let prose = current.split("<!-- Generated by ").next().unwrap_or_default();
    let expected = format!("{prose}{intro}{}", first.stdout);
    if std::env::var_os("UPDATE_CONFORMANCE").is_some() {
        std::fs::write(&path, &expected).expect("write docs/implementations/reference.md");
        return;
    }
    assert!(
        current == expected,
        "docs/implementations/reference.md is out of date: UPDATE_CONFORMANCE=1 cargo test --test kit tidy"
    );
}

#[test]
fn the_markdown_matrix_has_a_row_per_rule() {
    let report = markdown_report();
    for rule in agentsim::check::RULE_IDS {
        assert!(
            report.stdout.contains(&format!("\n| {rule} | ")),
            "no row for {rule}:\n{}",
            report.stdout
        );
    }
    assert!(
        report.stdout.contains("## Failing scenarios\n\nNone.\n"),
        "{}",
        report.stdout
    );
}

/// `explore --impl` drives an adapter under many schedules: the served reference passes, a
/// served mutant is caught with a replay command that names the adapter.
#[test]
fn explore_drives_an_adapter_under_random_schedules() {
    let agentsim = env!("CARGO_BIN_EXE_agentsim");
    let explore = |serve: &str| {
        std::process::Command::new(agentsim)
            .args([
                "explore",
                "scenarios/poison",
                "--strategy",
                "random",
                "--seeds",
                "3",
                "--impl",
            ])
            .arg(format!("{agentsim} {serve}"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("the binary runs")
    };
    let clean = explore("serve");
    let stdout = String::from_utf8_lossy(&clean.stdout);
    assert_eq!(clean.status.code(), Some(0), "{stdout}");
    assert!(stdout.ends_with(" passed, 0 failed\n"), "{stdout}");
    let mutant = explore("serve --mutant poison-not-stored");
    let stdout = String::from_utf8_lossy(&mutant.stdout);
    assert_eq!(mutant.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("--impl '"), "{stdout}");
}

/// The (scenario, rule) pairs an exploration reports as unexpected.
fn unexpected_pairs(report: &str) -> std::collections::BTreeSet<(String, String)> {
    report
        .lines()
        .filter_map(|line| line.strip_prefix("UNEXPECTED "))
        .filter_map(|rest| {
            let (pair, _) = rest.split_once(':')?;
            let (scenario, rule) = pair.split_once(' ')?;
            Some((scenario.to_string(), rule.to_string()))
        })
        .collect()
}

#[test]
fn explore_expect_lists_schedule_dependent_deviations_once() {
    let mutant = format!("{BIN} serve --mutant poison-not-stored");
    let folder = scratch("explore-expect");
    let explore = |file: &Path| {
        agentsim(
            &[
                "explore",
                "scenarios/poison",
                "--strategy",
                "random",
                "--seeds",
                "3",
                "--impl",
                &mutant,
                "--expect",
                file.to_str().expect("utf-8"),
            ],
            &[],
        )
    };
    // A file that lists nothing this exploration finds: every failure is unexpected.
    let none = folder.join("none.json");
    std::fs::write(
        &none,
        r#"{"implementation":"agentsim-reference","causes":[{"id":"unrelated","verdict":"bug","reason":"unrelated",
            "source":{"file":"src/runtime/mod.rs","function":"Runtime::restore","line":1},"pairs":{"RESTORE-1":["nowhere"]}}]}"#,
    )
    .expect("writable");
    let unlisted = explore(&none);
    assert_eq!(unlisted.code, 1, "{}", unlisted.stdout);
    let pairs = unexpected_pairs(&unlisted.stdout);
    assert!(pairs.len() >= 10, "{}", unlisted.stdout);
    // One cause: per rule its first scenario canonical, the others under `explored`.
    let file = |pairs: &std::collections::BTreeSet<(String, String)>| {
        let mut by_rule: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for (scenario, rule) in pairs {
            by_rule.entry(rule).or_default().push(scenario);
        }
        let canonical: serde_json::Map<String, serde_json::Value> = by_rule
            .iter()
            .map(|(rule, scenarios)| (rule.to_string(), serde_json::json!([scenarios[0]])))
            .collect();
        let explored: serde_json::Map<String, serde_json::Value> = by_rule
            .iter()
            .filter(|(_, scenarios)| scenarios.len() > 1)
            .map(|(rule, scenarios)| (rule.to_string(), serde_json::json!(scenarios[1..])))
            .collect();
        serde_json::json!({"implementation": "agentsim-reference", "causes": [{
            "id": "poison-not-stored", "verdict": "bug", "reason": "poison is not stored",
            "source": {"file": "src/zoo/poison.rs", "function": "poison_not_stored", "line": 1},
            "pairs": canonical, "explored": explored}]})
        .to_string()
    };
    let all = folder.join("all.json");
    std::fs::write(&all, file(&pairs)).expect("writable");
    let listed = explore(&all);
    assert_eq!(listed.code, 0, "{}\n{}", listed.stdout, listed.stderr);
    assert!(
        listed.stdout.contains("all listed but 0 unexpected"),
        "{}",
        listed.stdout
    );
    let mut fewer = pairs.clone();
    let dropped = fewer.iter().next_back().cloned().expect("a pair");
    fewer.remove(&dropped);
    let some = folder.join("some.json");
    std::fs::write(&some, file(&fewer)).expect("writable");
    let one_missing = explore(&some);
    assert_eq!(one_missing.code, 1, "{}", one_missing.stdout);
    assert_eq!(unexpected_pairs(&one_missing.stdout), [dropped].into_iter().collect());
    let _ = std::fs::remove_dir_all(folder);
}

/// Every row of the matrix counts every scenario once (pass + fail + n.a. = scenarios), on a
/// run with failures and not-applicable cases; and the root column adds up to the failures.
#[test]
fn the_markdown_matrix_counts_every_scenario_once_per_rule() {
    // A mutant of the reference served by an adapter that declares `library` unsupported:
    // cases pass, fail and are not applicable.
    let adapter = format!("tests/fixtures/adapters/no-library-serve.sh {BIN} --mutant poison-not-stored");
    let run = agentsim(&["run", "--impl", &adapter, "scenarios/", "--format", "markdown"], &[]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let result = run
        .stdout
        .lines()
        .find(|line| line.starts_with("| Result | "))
        .expect("a result row");
    let numbers: Vec<usize> = result
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|part| part.parse().ok())
        .collect();
    let (cases, failed, not_applicable) = (numbers[0], numbers[2], numbers[3]);
    assert!(failed > 0 && not_applicable > 0, "{result}");
    let mut roots = 0;
    for rule in agentsim::check::RULE_IDS {
        let row = run
            .stdout
            .lines()
            .find(|line| line.starts_with(&format!("| {rule} | ")))
            .unwrap_or_else(|| panic!("no row for {rule}"));
        let cells: Vec<usize> = row.split('|').filter_map(|cell| cell.trim().parse().ok()).collect();
        let (pass, fail, na, _named, root) = (cells[0], cells[1], cells[2], cells[3], cells[4]);
        assert_eq!(pass + fail + na, cases, "{row}");
        assert_eq!(na, not_applicable, "{row}");
        assert!(root <= fail, "{row}");
        roots += root;
    }
    assert_eq!(roots, failed, "every failing case has exactly one root rule");
}

// ---------------------------------------------------------------------------------------------
// Adapter lines: the shared fixtures (tests/fixtures/protocol/lines.json), read by the SDKs too
// ---------------------------------------------------------------------------------------------

const LINES: &str = "tests/fixtures/protocol/lines.json";

/// The shared fixture file: `(name, line)` of its valid lines and its invalid entries as JSON.
pub fn line_fixtures() -> (Vec<(String, serde_json::Value)>, Vec<serde_json::Value>) {
    let text = std::fs::read_to_string(root().join(LINES)).expect("the line fixtures exist");
    let document: serde_json::Value = serde_json::from_str(&text).expect("the line fixtures are JSON");
    let valid = document["valid"]
        .as_array()
        .expect("`valid` is an array")
        .iter()
        .map(|entry| {
            let name = entry["name"].as_str().expect("a name").to_string();
            (name, entry["line"].clone())
        })
        .collect();
    let invalid = document["invalid"].as_array().expect("`invalid` is an array").clone();
    (valid, invalid)
}

#[test]
fn shared_line_fixtures_read_as_they_say() {
    use agentsim::protocol::shape::check_adapter_message;
    use agentsim::protocol::wire::{parse_adapter_line, to_line, ADAPTER_MESSAGE_TYPES, EFFECT_KINDS};
    let (valid, invalid) = line_fixtures();
    let mut types_seen = std::collections::BTreeSet::new();
    let mut kinds_seen = std::collections::BTreeSet::new();
    for (name, line) in &valid {
        let text = line.to_string();
        let message = parse_adapter_line(&text).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(
            check_adapter_message(line),
            None,
            "{name}: the shape tables refuse a line serde reads"
        );
        // What the kit reads, it writes back the same way (`agentsim serve` speaks these lines).
        assert_eq!(parse_adapter_line(&to_line(&message)).as_ref(), Ok(&message), "{name}");
        types_seen.insert(line["type"].as_str().expect("a type").to_string());
        if let Some(kind) = line["effect"]["kind"].as_str() {
            kinds_seen.insert(kind.to_string());
        }
    }
    let every_type: std::collections::BTreeSet<String> = ADAPTER_MESSAGE_TYPES.iter().map(|t| t.to_string()).collect();
    let every_kind: std::collections::BTreeSet<String> = EFFECT_KINDS.iter().map(|k| k.to_string()).collect();
    assert_eq!(types_seen, every_type, "a valid line of every message type");
    assert_eq!(kinds_seen, every_kind, "a valid line of every effect kind");
    assert!(invalid.len() >= 60, "{} invalid lines", invalid.len());
    for entry in &invalid {
        let name = entry["name"].as_str().expect("a name");
        let code = entry["code"].as_str().expect("a code");
        let path = entry["path"].as_str().expect("a path");
        let text = match entry.get("line") {
            Some(line) => line.to_string(),
            None => entry["text"].as_str().expect("a line or a text").to_string(),
        };
        let error = parse_adapter_line(&text).expect_err(name);
        assert_eq!(error.code(), code, "{name}: {error}");
        let Some(line) = entry.get("line") else {
            continue;
        };
        let shape = check_adapter_message(line).unwrap_or_else(|| panic!("{name}: the shape tables find nothing"));
        assert_eq!(
            (shape.code, shape.path.as_str(), shape.expected.as_str()),
            (code, path, entry["expected"].as_str().expect("an expected")),
            "{name}"
        );
        if code == "wire.malformed" {
            // The kit's own message names the path and what was expected there.
            let message = error.to_string();
            assert!(
                message.contains(&format!("`{path}`: expected {}", shape.expected)),
                "{name}: {message}"
            );
        }
    }
}

/// Every value of `line` replaced by values of other kinds, every field removed, an unknown
/// field added to every object: one fault each.
pub fn mutations(line: &serde_json::Value) -> Vec<serde_json::Value> {
    use serde_json::json;
    let replacements = [
        json!(null),
        json!(true),
        json!(7),
        json!(-1),
        json!(1.5),
        json!("x"),
        json!([]),
        json!({}),
    ];
    let mut paths: Vec<Vec<PathStep>> = Vec::new();
    collect_paths(line, &mut Vec::new(), &mut paths);
    let mut out = Vec::new();
    for path in &paths {
        for replacement in &replacements {
            let mut copy = line.clone();
            *node_mut(&mut copy, path) = replacement.clone();
            out.push(copy);
        }
        if let Some((PathStep::Key(key), parent)) = path.split_last() {
            let mut copy = line.clone();
            node_mut(&mut copy, parent)
                .as_object_mut()
                .expect("a key's parent is an object")
                .shift_remove(key);
            out.push(copy);
        }
    }
    for path in paths.iter().chain(std::iter::once(&Vec::new())) {
        let mut copy = line.clone();
        if let Some(object) = node_mut(&mut copy, path).as_object_mut() {
            object.insert("zzUnknown".into(), json!(1));
            out.push(copy);
        }
    }
    out
}

#[derive(Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn collect_paths(value: &serde_json::Value, at: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    let children: Vec<(PathStep, &serde_json::Value)> = match value {
        serde_json::Value::Object(object) => object
            .iter()
            .map(|(key, child)| (PathStep::Key(key.clone()), child))
            .collect(),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, child)| (PathStep::Index(index), child))
            .collect(),
        _ => Vec::new(),
    };
    for (step, child) in children {
        at.push(step);
        out.push(at.clone());
        collect_paths(child, at, out);
        at.pop();
    }
}

fn node_mut<'a>(value: &'a mut serde_json::Value, path: &[PathStep]) -> &'a mut serde_json::Value {
    path.iter().fold(value, |node, step| match step {
        PathStep::Key(key) => &mut node[key.as_str()],
        PathStep::Index(index) => &mut node[*index],
    })
}

#[test]
fn shape_tables_and_serde_agree_on_every_one_fault_mutation() {
    use agentsim::protocol::shape::check_adapter_message;
    use agentsim::protocol::wire::parse_adapter_line;
    let (valid, _) = line_fixtures();
    let mut checked = 0;
    let mut refused = 0;
    for (name, line) in &valid {
        for mutant in mutations(line) {
            let text = mutant.to_string();
            let serde = parse_adapter_line(&text).err().map(|error| error.code());
            let shape = check_adapter_message(&mutant);
            assert_eq!(
                serde,
                shape.as_ref().map(|error| error.code),
                "{name}: serde and the shape tables disagree on {text}: {shape:?}"
            );
            checked += 1;
            refused += usize::from(serde.is_some());
        }
    }
    println!("{refused} of {checked} one-fault mutations refused by both");
    // Most one-fault mutations must be refused, or the mutator tests nothing.
    assert!(
        checked > 5_000 && refused * 2 > checked,
        "{refused} of {checked} refused"
    );
}

/// The invalid line of the shared fixtures named `name`, as a line.
fn invalid_fixture_line(name: &str) -> String {
    let (_, invalid) = line_fixtures();
    let entry = invalid
        .iter()
        .find(|entry| entry["name"] == name)
        .unwrap_or_else(|| panic!("no invalid line `{name}` in {LINES}"));
    entry["line"].to_string()
}

#[test]
fn hostile_malformed_effect_names_kind_id_path_expectation_and_trace_line() {
    // A valid model request first (trace line 0003), so the bad append would have been 0004.
    let request = r#"{"type":"effect","effect":{"kind":"model_request","id":1,"signal":1,"request":{"systemPrompt":null,"messages":[],"tools":[]}}}"#;
    let lines = format!(
        "{request}\n{}",
        invalid_fixture_line("append: the message without role")
    );
    assert_broken_with(
        "lines.sh",
        &[("AGENTSIM_FIXTURE_LINES", &lines)],
        "subject.malformed",
        &[concat!(
            "the adapter broke the protocol at trace line 0004: bad effect append fx#6: ",
            "`effect.entry.message.role`: expected one of \"user\", \"assistant\", \"toolResult\", ",
            "got nothing (the field is missing)"
        )],
    );
    assert_broken_with(
        "lines.sh",
        &[(
            "AGENTSIM_FIXTURE_LINES",
            &invalid_fixture_line("model_request: a tool result block nobody knows"),
        )],
        "subject.malformed",
        &[concat!(
            "at trace line 0003: bad effect model_request fx#1: ",
            "`effect.request.messages[3].content[0].type`: expected one of \"text\", \"image\", got \"txt\""
        )],
    );
}

#[test]
fn hostile_malformed_settlement_names_the_operation_path_and_trace_line() {
    assert_broken_with(
        "lines.sh",
        &[(
            "AGENTSIM_FIXTURE_LINES",
            &invalid_fixture_line("settled: a run's tool result with string content"),
        )],
        "subject.malformed",
        &[concat!(
            "at trace line 0003: bad settlement of op#1: ",
            "`settlement.value.messages[2].content`: expected an array, got \"noted\""
        )],
    );
}

/// `explore` counts the schedules of a scenario the adapter cannot run and names the scenario
/// and the reason; they change no exit code.
#[test]
fn explore_counts_not_applicable_schedules_with_their_reason() {
    let explore = agentsim(
        &[
            "explore",
            "--impl",
            "tests/fixtures/adapters/no-library.sh",
            "--strategy",
            "random",
            "--seeds",
            "3",
            "--threads",
            "1",
            "tests/fixtures/protocol/library.json",
        ],
        &[],
    );
    assert_eq!(explore.code, 0, "{}{}", explore.stdout, explore.stderr);
    assert!(
        explore.stdout.contains(
            "3 schedules not applicable, of 1 scenario:\nn/a    library: `library` is unsupported: this runtime has no library adapter\n"
        ),
        "{}",
        explore.stdout
    );
    assert!(explore.stdout.ends_with("0 passed, 0 failed\n"), "{}", explore.stdout);
}

/// The networked world refuses a second settlement of one operation as the in-process
/// scheduler does (it had passed, exit 0, with no verdict).
#[test]
fn hostile_settled_twice_in_the_networked_world() {
    let run = agentsim(
        &[
            "replay",
            ONE_PROMPT,
            "--world",
            "net",
            "--impl",
            "tests/fixtures/adapters/settled-twice.sh",
            "--step-timeout-ms",
            "500",
        ],
        &[],
    );
    let report = format!("stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert_eq!(run.code, 3, "{report}");
    assert!(run.stdout.contains("(subject.settled_twice)"), "{report}");
    assert!(run.stdout.contains("op#1 was settled a second time"), "{report}");
}
