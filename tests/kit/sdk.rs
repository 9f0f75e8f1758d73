//! The adapter SDKs' own test suites, run from `cargo test` so that the README's one test
//! command runs every test: `node --test adapters/sdk/js/test/` (Node 20 or later) and
//! `python3 -m unittest discover -s adapters/sdk/python/tests` (Python 3.9 or later), with their
//! integration tests driving this build of the kit (`AGENTSIM_BIN`), never skipped.

use std::process::Command;

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
