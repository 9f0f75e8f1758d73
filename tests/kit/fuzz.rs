//! Fuzz targets for the input formats `hardening.rs`'s fuzz test does not read: expectations
//! files, `hello` lines, the JSON reports `agentsim dashboard` reads, and replay commands
//! (`Run::parse`). Each is a proptest over a seed: the seed picks a real input of the format and
//! mutates it (`hardening::Mutator`: in its bytes or in its values), or builds one (`hello`).
//! Every input ends in a value or a typed, printable error that says where, within a time
//! bound, and never a panic.
//!
//! `AGENTSIM_FUZZ_CASES` sets the cases of each target (200 by default, as `cargo test` runs
//! them; `.ci/run` runs 5,000). A failure prints its seed, which replays it; failing seeds
//! persist in `tests/kit/proptest-regressions/fuzz.txt` and run first. They found that an
//! expectations file's error and a replay command's quoted the input's control characters raw,
//! and that an unknown key `` at an expectations file's top named no field.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use agentsim::html::dashboard::{self, ReportInput};
use agentsim::protocol::wire::{parse_adapter_line, to_line, AdapterMessage, LineError};
use agentsim::run::Run;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use crate::binary::root;
use crate::hardening::{fuzz_cases, Mutator, CASE_TIME_MAX};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: fuzz_cases() as u32,
        // A failing seed is reported, not shrunk at length: the seed is the reproduction.
        max_shrink_iters: 64,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/kit/proptest-regressions/fuzz.txt",
        ))),
        ..ProptestConfig::default()
    }
}

/// No raw control character, and of a length a terminal can show.
fn assert_printable(message: &str, what: &str) {
    assert!(!message.is_empty(), "{what}: an empty message");
    assert!(
        !message.chars().any(char::is_control),
        "{what}: a raw control character: {message:?}"
    );
    assert!(message.len() < 4_000, "{what}: a {}-byte message", message.len());
}

fn lines_of(bytes: &[u8]) -> usize {
    bytes.iter().filter(|byte| **byte == b'\n').count() + 1
}

// ---------------------------------------------------------------------------------------------
// Expectations files
// ---------------------------------------------------------------------------------------------

fn expectation_files() -> &'static [(PathBuf, Vec<u8>)] {
    static FILES: OnceLock<Vec<(PathBuf, Vec<u8>)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("expectations"))
            .expect("expectations/ lists")
            .map(|entry| entry.expect("an entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        files.sort();
        files
            .into_iter()
            .map(|path| {
                let bytes = std::fs::read(&path).expect("reads");
                (path, bytes)
            })
            .collect()
    })
}

fn scratch() -> &'static Path {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER.get_or_init(|| crate::binary::scratch("fuzz", "inputs"))
}

proptest! {
    #![proptest_config(config())]

    /// A mutated expectations file (every one of `expectations/`, read from disk as `--expect`
    /// reads it) is a file of causes or an `ExpectationError` at one of its lines, naming a
    /// field, printable.
    #[test]
    fn fuzz_expectations_files_end_in_causes_or_a_located_error(seed in any::<u64>()) {
        let mut mutator = Mutator(seed);
        let files = expectation_files();
        let (source, bytes) = &files[mutator.below(files.len())];
        let bytes = mutator.mutate_json(bytes, true);
        let file = scratch().join(format!("expectations-{seed:016x}.json"));
        std::fs::write(&file, &bytes).expect("written");
        let what = format!("seed {seed:#x} (from {})", source.display());
        let started = Instant::now();
        let loaded = agentsim::deviations::load(&file);
        let _ = std::fs::remove_file(&file);
        if let Err(error) = loaded {
            let shown = error.to_string();
            assert_eq!(error.file, file, "{what}: {shown}");
            assert!((1..=lines_of(&bytes)).contains(&error.line), "{what}: line {}: {shown}", error.line);
            assert!(!error.field.is_empty(), "{what}: no field: {shown}");
            assert_printable(&shown, &what);
        }
        prop_assert!(started.elapsed() < CASE_TIME_MAX, "{}: took {:?}", what, started.elapsed());
    }
}

// ---------------------------------------------------------------------------------------------
// `hello` lines
// ---------------------------------------------------------------------------------------------

/// A JSON number as an adapter could write one: an integer of up to 40 digits, a fraction, an
/// exponent, a sign.
fn number() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        "(0|[1-9][0-9]{0,39})",
        prop::option::of("[0-9]{1,5}"),
        prop::option::of("[eE][+-]?[0-9]{1,3}"),
    )
        .prop_map(|(negative, integer, fraction, exponent)| {
            let mut text = String::new();
            if negative {
                text.push('-');
            }
            text.push_str(&integer);
            if let Some(fraction) = fraction {
                text.push('.');
                text.push_str(&fraction);
            }
            text.push_str(&exponent.unwrap_or_default());
            text
        })
}

/// What a `hello` may claim as its protocol: 1 or 2, any number, or another JSON value.
fn protocol() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("1".to_string()),
        Just("2".to_string()),
        number(),
        Just("null".to_string()),
        Just("\"2\"".to_string()),
        Just("[2]".to_string()),
        Just("{\"version\":2}".to_string()),
    ]
}

/// A JSON string of any characters, control characters included.
fn text() -> impl Strategy<Value = String> {
    any::<String>().prop_map(|text| serde_json::to_string(&text).expect("strings serialize"))
}

proptest! {
    #![proptest_config(config())]

    /// A `hello` line with any protocol, name, version and features: read (protocol 1 or 2,
    /// and then it reads back the same once printed), or refused by class: a number that is
    /// not out of JSON's range is a `wire.version` quoting it as written, another value too,
    /// and a line serde cannot read at all (a number out of range) is garbage.
    #[test]
    fn fuzz_hello_lines_are_read_or_refused_by_class(
        protocol in protocol(),
        name in text(),
        version in text(),
        features in prop::collection::vec(text(), 0..4),
        missing in 0usize..4,
    ) {
        let implementation = match missing {
            1 => format!("{{\"name\":{name}}}"),
            _ => format!("{{\"name\":{name},\"version\":{version}}}"),
        };
        let features = match missing {
            2 => String::new(),
            _ => format!(",\"features\":[{}]", features.join(",")),
        };
        let line = format!("{{\"type\":\"hello\",\"protocol\":{protocol},\"implementation\":{implementation}{features}}}");
        let what = format!("{line:?}");
        let value = serde_json::from_str::<serde_json::Value>(&line);
        match parse_adapter_line(&line) {
            Ok(message) => {
                prop_assert!(matches!(message, AdapterMessage::Hello { .. }), "{}: {:?}", what, message);
                prop_assert!(protocol == "1" || protocol == "2", "{}: read with protocol {}", what, protocol);
                prop_assert_eq!(parse_adapter_line(&to_line(&message)), Ok(message), "{}", what);
            }
            Err(error) => {
                let shown = error.to_string();
                assert_printable(&shown, &what);
                match (&value, &error) {
                    (Err(_), LineError::Garbage { .. }) => {}
                    (Ok(_), LineError::Version { got }) => {
                        prop_assert!(protocol != "1" && protocol != "2", "{}: {}", what, shown);
                        // A number is quoted as written.
                        if protocol.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
                            prop_assert_eq!(got, &protocol, "{}", what);
                        }
                    }
                    (Ok(_), LineError::Malformed { location, .. }) => {
                        prop_assert!(protocol == "1" || protocol == "2", "{}: {}", what, shown);
                        prop_assert!(location.is_some(), "{}: not located: {}", what, shown);
                    }
                    _ => prop_assert!(false, "{}: {} ({})", what, shown, error.code()),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Dashboard reports
// ---------------------------------------------------------------------------------------------

/// JSON reports of `agentsim run`: a corpus the reference passes, and the same failed by a
/// mutant (violations, root causes, replay commands).
fn reports() -> &'static [Vec<u8>] {
    static REPORTS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    REPORTS.get_or_init(|| {
        [
            vec!["run", "scenarios/poison", "--format", "json"],
            vec![
                "run",
                "scenarios/poison",
                "--mutant",
                "queued-run-after-poison",
                "--format",
                "json",
            ],
        ]
        .iter()
        .map(|args| {
            let outcome = crate::binary::agentsim(args, &[]);
            assert!(outcome.stdout.starts_with('{'), "{args:?}: {}", outcome.stderr);
            outcome.stdout.into_bytes()
        })
        .collect()
    })
}

proptest! {
    #![proptest_config(config())]

    /// A mutated JSON report is a column of the dashboard, which its page and its table then
    /// show, or a `DashboardError` naming the file, printable.
    #[test]
    fn fuzz_dashboard_reports_end_in_a_column_or_an_error(seed in any::<u64>()) {
        let mut mutator = Mutator(seed);
        let reports = reports();
        let source = &reports[mutator.below(reports.len())];
        let bytes = mutator.mutate_json(source, true);
        let text = String::from_utf8_lossy(&bytes);
        let what = format!("seed {seed:#x}");
        let started = Instant::now();
        let input = ReportInput::parse("mutated-report.json");
        match dashboard::parse_report(&input, &text) {
            Ok(column) => {
                let columns = [column];
                prop_assert!(dashboard::html(&columns).ends_with("</html>\n"), "{}", what);
                let _table = dashboard::markdown(&columns);
            }
            Err(error) => {
                prop_assert_eq!(error.file.as_str(), "mutated-report.json", "{}", what);
                assert_printable(&error.to_string(), &what);
            }
        }
        prop_assert!(started.elapsed() < CASE_TIME_MAX, "{}: took {:?}", what, started.elapsed());
    }
}

// ---------------------------------------------------------------------------------------------
// Replay commands
// ---------------------------------------------------------------------------------------------

/// Replay commands as the kit prints them, one per kind of run.
const COMMANDS: &[&str] = &[
    "agentsim replay scenarios/wiring/walkthrough.json",
    "agentsim replay scenarios/wiring/walkthrough.json --strategy pct:3:20 --seed 18446744073709551615",
    "agentsim replay scenarios/wiring/walkthrough.json --choices 0.1.0.2",
    "agentsim replay scenarios/wiring/walkthrough.json --mutant queue-lifo --strategy random --seed 7",
    "agentsim replay scenarios/wiring/walkthrough.json --impl 'node adapters/pi/adapter.mjs --release 0.70.6' --step-timeout-ms 10000 --after scenarios/persist/two-prompts-near-simultaneous.json --after-seed 3",
    "agentsim replay scenarios/durability/crash-after-two-acks.json --world net --seed 4",
    "agentsim replay scenarios/durability/crash-after-two-acks.json --crash-at-step 3 --sync none",
    "agentsim replay 'scenarios/a b/it'\\''s.json' --rules PERSIST --rules POISON-2",
];

/// Words a mutation may put in a command.
const WORDS: &[&str] = &[
    "--seed",
    "--strategy",
    "--choices",
    "--impl",
    "--world",
    "--after",
    "--mutant",
    "--rules",
    "--crash-at-step",
    "--sync",
    "--in-process",
    "0",
    "18446744073709551616",
    "-1",
    "0.99",
    "pct:4294967295",
    "exhaustive:0",
    "net",
    "'",
    "\"",
    "\\",
    "''",
    "$(x)",
    "\u{1b}[2J",
    "",
];

proptest! {
    #![proptest_config(config())]

    /// A mutated replay command (words dropped, repeated, swapped or replaced; bytes changed)
    /// is a run that prints back to a command read as the same run, or a `RunError` with its
    /// code, printable.
    #[test]
    fn fuzz_replay_commands_end_in_a_run_or_a_typed_error(seed in any::<u64>()) {
        let mut mutator = Mutator(seed);
        let source = COMMANDS[mutator.below(COMMANDS.len())];
        let command = if mutator.below(2) == 0 {
            String::from_utf8_lossy(&mutator.mutate(source.as_bytes())).into_owned()
        } else {
            let mut words: Vec<String> = source.split(' ').map(str::to_string).collect();
            for _ in 0..1 + mutator.below(3) {
                let at = 1 + mutator.below(words.len().max(2) - 1);
                let at = at.min(words.len() - 1);
                match mutator.below(4) {
                    0 if words.len() > 2 => {
                        words.remove(at);
                    }
                    1 => words.insert(at, words[at].clone()),
                    2 => {
                        let next = (at + 1).min(words.len() - 1);
                        words.swap(at, next);
                    }
                    _ => words.insert(at, WORDS[mutator.below(WORDS.len())].to_string()),
                }
            }
            words.join(" ")
        };
        let what = format!("seed {seed:#x}: {command:?}");
        match Run::parse(&command) {
            Ok(run) => {
                prop_assert!(run.validate().is_ok(), "{}: read as an invalid run {:?}", what, run);
                let printed = run.command();
                prop_assert_eq!(Run::parse(&printed), Ok(run), "{}: printed {}", what, printed);
            }
            Err(error) => {
                prop_assert!(error.code().starts_with("run."), "{}: {}", what, error.code());
                assert_printable(&error.to_string(), &what);
            }
        }
    }
}
