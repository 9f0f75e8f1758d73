//! The adapter SDKs' own test suites, run from `cargo test` so that the README's one test
//! command runs every test: `node --test adapters/sdk/js/test/` (Node 20 or later) and
//! `python3 -m unittest discover -s adapters/sdk/python/tests` (Python 3.9 or later), with their
//! integration tests driving this build of the kit (`AGENTSIM_BIN`), never skipped. And the
//! SDKs' checks of the lines they write against the kit's own: the shared fixtures hold them to
//! the same answers on their lines; here every one-fault mutation of the valid ones too.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::binary::{root, BIN};

/// Runs one SDK's suite; its combined output, or a failure with all of it.
fn suite(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .env("AGENTSIM_BIN", BIN)
        .current_dir(root())
        .output()
        .unwrap_or_else(|error| {
            panic!("`{program}` could not start ({error}): the SDK tests need Node 20+ and Python 3.9+")
        });
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "`{program} {}` failed:\n{text}",
        args.join(" ")
    );
    text
}

#[test]
fn javascript_sdk_suite_passes() {
    let output = suite("node", &["--test", "adapters/sdk/js/test/"]);
    assert!(output.contains("# fail 0"), "{output}");
    assert!(output.contains("# skipped 0"), "a test was skipped:\n{output}");
}

#[test]
fn python_sdk_suite_passes() {
    let output = suite(
        "python3",
        &["-m", "unittest", "discover", "-s", "adapters/sdk/python/tests"],
    );
    assert!(output.contains("\nOK"), "{output}");
    assert!(!output.contains("skipped="), "a test was skipped:\n{output}");
}

/// What an SDK's line check says of each line of `lines` (one JSON line each): `null` when the
/// line fits, else `{code, path, expected}`; `program` reads the lines on stdin and writes one
/// answer per line.
fn sdk_verdicts(program: &str, args: &[&str], lines: &str) -> Vec<serde_json::Value> {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("`{program}` could not start: {error}"));
    let mut stdin = child.stdin.take().expect("a stdin");
    let input = lines.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("the checker runs");
    writer.join().expect("the writer ends").expect("the lines are written");
    assert!(
        output.status.success(),
        "`{program}` failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("UTF-8 answers")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON answer"))
        .collect()
}

// Importing the SDK hands process.stdout to the protocol: the answers go through the stream's
// own write, kept before the import (a synchronous write to a full pipe would fail with EAGAIN).
const JS_CHECK: &str = r#"
import fs from "node:fs";
const write = process.stdout.write.bind(process.stdout);
const { checkAdapterMessage } = await import("./adapters/sdk/js/agentsim-adapter.mjs");
const answers = fs.readFileSync(0, "utf8").split("\n").filter((line) => line !== "").map((line) => {
    const problem = checkAdapterMessage(JSON.parse(line));
    return JSON.stringify(problem && { code: problem.code, path: problem.path, expected: problem.expected });
});
write(answers.join("\n") + "\n");
"#;

const PYTHON_CHECK: &str = r#"
import json, sys
sys.path.insert(0, "adapters/sdk/python")
import agentsim_adapter as sdk
for line in sys.stdin.read().splitlines():
    if line:
        problem = sdk.check_adapter_message(json.loads(line))
        answer = None if problem is None else {"code": problem.code, "path": problem.path, "expected": problem.expected}
        print(json.dumps(answer))
"#;

#[test]
fn both_sdks_check_every_one_fault_mutation_as_the_kit_does() {
    use agentsim::protocol::shape::check_adapter_message;
    let (valid, _) = crate::protocol::line_fixtures();
    let lines: Vec<serde_json::Value> = valid
        .iter()
        .flat_map(|(_, line)| crate::protocol::mutations(line))
        .collect();
    let kit: Vec<serde_json::Value> = lines
        .iter()
        .map(|line| match check_adapter_message(line) {
            None => serde_json::Value::Null,
            Some(problem) => {
                serde_json::json!({"code": problem.code, "path": problem.path, "expected": problem.expected})
            }
        })
        .collect();
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let refused = kit.iter().filter(|answer| !answer.is_null()).count();
    assert!(
        lines.len() > 5_000 && refused * 2 > lines.len(),
        "{refused} of {}",
        lines.len()
    );
    for (name, program, args) in [
        ("JavaScript", "node", vec!["--input-type=module", "-e", JS_CHECK]),
        ("Python", "python3", vec!["-c", PYTHON_CHECK]),
    ] {
        let answers = sdk_verdicts(program, &args, &text);
        assert_eq!(answers.len(), lines.len(), "{name}: one answer per line");
        for ((line, kit), sdk) in lines.iter().zip(&kit).zip(&answers) {
            assert_eq!(sdk, kit, "{name} and the kit disagree on {line}");
        }
    }
}
