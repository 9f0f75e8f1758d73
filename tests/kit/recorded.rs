//! Recorded runs: `run --record` writes one file per case, `replay --recorded` re-feeds one to
//! another implementation and reports the first output that differs, `agentsim recordings`
//! replays a folder on several implementations.

use crate::binary::{agentsim, BIN};

fn folder(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::remove_dir_all(&dir).ok();
    dir
}

#[test]
fn a_recorded_run_replays_the_same_on_itself_and_over_the_wire_and_not_on_a_mutant() {
    let dir = folder("recorded-wiring");
    let record = agentsim(
        &["run", "scenarios/wiring", "--record", dir.to_str().expect("utf-8")],
        &[],
    );
    assert_eq!(record.code, 0, "{}{}", record.stdout, record.stderr);
    assert!(record.stderr.contains("22 recordings written"), "{}", record.stderr);
    let file = dir.join("walkthrough.json");
    let file = file.to_str().expect("utf-8");
    let same = agentsim(&["replay", "--recorded", file], &[]);
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);
    assert!(
        same.stdout.contains("agree: every output is the recorded one"),
        "{}",
        same.stdout
    );
    let serve = format!("{BIN} serve");
    let wire = agentsim(&["replay", "--recorded", file, "--impl", &serve], &[]);
    assert_eq!(wire.code, 0, "{}{}", wire.stdout, wire.stderr);
    let mutant = agentsim(
        &["replay", "--recorded", file, "--mutant", "resolve-before-last-append"],
        &[],
    );
    assert_eq!(mutant.code, 1, "{}{}", mutant.stdout, mutant.stderr);
    assert!(
        mutant
            .stdout
            .contains("the settlement of op#1 is extra in the replay after the answer to append 3"),
        "{}",
        mutant.stdout
    );
    assert!(
        mutant.stdout.contains("  recorded: (nothing in this step)"),
        "{}",
        mutant.stdout
    );
    assert!(
        mutant.stdout.contains("  replayed: 0023 op#1   settled"),
        "{}",
        mutant.stdout
    );
}

#[test]
fn the_recordings_matrix_counts_agreeing_pairs() {
    let dir = folder("recorded-matrix");
    let dir_text = dir.to_str().expect("utf-8");
    let reference = agentsim(
        &["run", "scenarios/poison", "--record", &format!("{dir_text}/reference")],
        &[],
    );
    assert_eq!(reference.code, 0, "{}", reference.stderr);
    let mutant = agentsim(
        &[
            "run",
            "scenarios/poison",
            "--mutant",
            "poison-not-stored",
            "--record",
            &format!("{dir_text}/mutant"),
        ],
        &[],
    );
    assert_eq!(mutant.code, 1, "{}", mutant.stderr);
    let serve = format!("serve={BIN} serve");
    let matrix = agentsim(&["recordings", dir_text, "--on", "reference", "--on", &serve], &[]);
    assert_eq!(matrix.code, 0, "{}{}", matrix.stdout, matrix.stderr);
    let cases = std::fs::read_dir(dir.join("reference")).expect("recordings").count();
    // The reference's recordings agree with the reference in process and over the wire.
    for target in ["reference", "serve"] {
        let row = format!("| reference | {target} | {cases} of {cases} | - |");
        assert!(matrix.stdout.contains(&row), "no row {row}:\n{}", matrix.stdout);
    }
    // The mutant's do not, where its bug shows: fewer agree, with an example.
    let mutant_row = matrix
        .stdout
        .lines()
        .find(|line| line.starts_with("| `reference --mutant poison-not-stored` | reference |"))
        .unwrap_or_else(|| panic!("no row of the mutant's recordings:\n{}", matrix.stdout));
    assert!(!mutant_row.contains(&format!("{cases} of {cases}")), "{mutant_row}");
    assert!(mutant_row.contains("first difference at recorded line"), "{mutant_row}");
    let bad = agentsim(&["recordings", dir_text, "--on", "nonsense"], &[]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

#[test]
fn a_malformed_recording_is_a_located_error() {
    let dir = folder("recorded-bad");
    std::fs::create_dir_all(&dir).expect("a folder");
    let file = dir.join("bad.json");
    std::fs::write(&file, "{\n  \"version\": 1,\n  \"trace\": 7\n}\n").expect("written");
    let replay = agentsim(&["replay", "--recorded", file.to_str().expect("utf-8")], &[]);
    assert_eq!(replay.code, 2, "{}", replay.stderr);
    assert!(
        replay.stderr.contains("bad.json:3: not a recording"),
        "{}",
        replay.stderr
    );
}
