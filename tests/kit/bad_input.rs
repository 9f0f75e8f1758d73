//! Broken scenario files: each gives exit code 2 and one message naming file, line and field.

use std::process::Command;

const FIXTURES: &str = "tests/fixtures/bad-scenarios";

/// Runs `agentsim run FILE` from the crate root; returns (exit code, stdout, stderr).
fn run(file: &str) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .args(["run", &format!("{FIXTURES}/{file}")])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn assert_load_error(file: &str, expected: &str) {
    let (code, stdout, stderr) = run(file);
    assert_eq!(code, 2, "{file}: exit code; stdout {stdout:?} stderr {stderr:?}");
    assert_eq!(stderr, format!("agentsim: {FIXTURES}/{file}:{expected}\n"), "{file}");
    assert!(!stderr.contains("panicked"), "{file} panicked");
}

#[test]
fn broken_json_names_the_line() {
    assert_load_error("broken-json.json", "8: -: expected `,` or `}`");
}

#[test]
fn unknown_field_is_rejected_with_its_path() {
    assert_load_error(
        "unknown-field.json",
        "6: operations[0].delay: unknown field `delay`, expected one of `op`, `text`, `mode`, `after`",
    );
}

#[test]
fn wrong_type_names_the_field() {
    assert_load_error(
        "wrong-type.json",
        "4: config.maxSteps: invalid type: string \"eight\", expected u32",
    );
}

#[test]
fn unknown_rule_id_is_rejected() {
    assert_load_error(
        "unknown-rule.json",
        "3: rules[1]: unknown rule ID `PERSIST-99` (see conformance.md)",
    );
}

#[test]
fn a_tool_no_one_defines_is_rejected() {
    assert_load_error(
        "undefined-tool.json",
        "8: model[1].toolCalls[0].name: the model calls tool `read_file`, which no tool defines (name WIRE-7 in `rules` to script an unknown-tool call)",
    );
}

#[test]
fn an_after_condition_that_can_never_hold_is_rejected_before_running() {
    assert_load_error(
        "after-never-holds.json",
        "9: operations[1].after: operation 2 waits for operation 3 to settle, which is delivered only after it: this can never hold",
    );
}

#[test]
fn a_broken_session_entry_names_its_field() {
    assert_load_error("bad-entry.json", "7: session[1].timestamp: must be a string");
}

#[test]
fn an_after_condition_that_never_held_at_run_time_is_bad_input() {
    let (code, stdout, stderr) = run("after-never-holds-at-runtime.json");
    assert_eq!(code, 2, "stdout {stdout:?} stderr {stderr:?}");
    assert_eq!(
        stdout,
        format!(
            "BAD    after-never-holds-at-runtime: {FIXTURES}/after-never-holds-at-runtime.json:10: operations[1].after: this condition never held on the canonical schedule (the run ended with 0 pending effects)\n0 passed, 1 failed\n"
        )
    );
}

#[test]
fn bad_flags_exit_2() {
    let output = Command::new(env!("CARGO_BIN_EXE_agentsim"))
        .args(["run", "--strategy", "sometimes"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown strategy `sometimes`"));
}

/// `explore --seeds` costs nothing until schedules run: the largest value, bounded by
/// `--time-limit`, runs and ends (it used to allocate every seed first and abort), and
/// `--seeds 0`, an exploration that runs nothing, is bad input.
#[test]
fn explore_seeds_do_not_allocate_and_zero_is_bad_input() {
    let explore = |seeds: &str| {
        Command::new(env!("CARGO_BIN_EXE_agentsim"))
            .args([
                "explore",
                "scenarios/wiring/walkthrough.json",
                "--seeds",
                seeds,
                "--time-limit",
                "1",
                "--threads",
                "1",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("agentsim runs")
    };
    let huge = explore("18446744073709551615");
    let stdout = String::from_utf8_lossy(&huge.stdout);
    assert_eq!(
        huge.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&huge.stderr)
    );
    assert!(stdout.contains("stopped at the time limit"), "{stdout}");
    let zero = explore("0");
    assert_eq!(zero.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&zero.stderr).contains("'--seeds <SEEDS>'"));
}

#[test]
fn an_unknown_key_in_a_scripted_tool_call_is_rejected() {
    assert_load_error(
        "tool-call-unknown-key.json",
        "8: model[0].toolCalls[0].thoughtSignature: unknown field `thoughtSignature`, expected one of `id`, `name`, `arguments`",
    );
}

/// Every numeric knob is bounded or capped to the work: a PCT depth no run could reach is bad
/// input naming the bound, and a million worker threads on one scenario start one.
#[test]
fn pct_depth_is_bounded_and_threads_are_capped_to_the_work() {
    let agentsim = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_agentsim"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("agentsim runs")
    };
    for strategy in ["pct:4294967295", "pct:1001", "pct:3:4294967295"] {
        let run = agentsim(&["run", "scenarios/wiring/walkthrough.json", "--strategy", strategy]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{strategy}: {stderr}");
        assert!(stderr.contains("at most"), "{strategy}: {stderr}");
    }
    let at_the_bound = agentsim(&["run", "scenarios/wiring/walkthrough.json", "--strategy", "pct:1000"]);
    assert_eq!(at_the_bound.status.code(), Some(0));
    let started = std::time::Instant::now();
    let many = agentsim(&[
        "explore",
        "scenarios/wiring/walkthrough.json",
        "--seeds",
        "4",
        "--threads",
        "1000000",
    ]);
    assert_eq!(many.status.code(), Some(0), "{}", String::from_utf8_lossy(&many.stderr));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
