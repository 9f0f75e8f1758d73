//! docs/track-record.md stays true: it lists every `bug` cause of the three expectations files
//! under its implementation, every command of its tables runs with this build of the kit and
//! exits as the row says, and every imported scenario in tests/fixtures/imported is what
//! `agentsim import` writes for its fixture today.
//!
//! Commands run through `sh` in a scratch folder that links the repository's corpus, fixtures and
//! adapters, with the built binary first on `PATH`, as tests/kit/readme.rs runs the README's. A
//! command that drives an installed implementation is left out, with the reason printed, when its
//! install folder is absent, unless `AGENTSIM_TRACK_RECORD_ADAPTERS=required`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::binary::{agentsim, root, scratch, BIN};

/// The implementations' adapters, the install folder each needs, and its expectations file.
const IMPLEMENTATIONS: &[(&str, &str, &str, &str)] = &[
    (
        "## Pi 0.73.1",
        "node adapters/pi/adapter.mjs",
        "adapters/pi/node_modules",
        "expectations/pi-0.73.1.json",
    ),
    (
        "## oh-my-pi 18.2.3",
        "adapters/oh-my-pi/run",
        "adapters/oh-my-pi/node_modules",
        "expectations/oh-my-pi-18.2.3.json",
    ),
    (
        "## aelix 0.1.0b2",
        "python3 adapters/aelix/adapter.py",
        "adapters/aelix/.venv",
        "expectations/aelix-0.1.0b2.json",
    ),
];

/// One row of a table: its cells, the `agentsim` command in its backticks, its exit code.
struct Row {
    cells: Vec<String>,
    command: String,
    code: i32,
}

fn track_record() -> String {
    std::fs::read_to_string(root().join("docs/track-record.md")).expect("docs/track-record.md")
}

/// The rows of `markdown`'s tables that hold a command: the cell that is one backticked
/// `agentsim ...` text, and the last cell as its exit code.
fn rows(markdown: &str) -> Vec<Row> {
    markdown
        .lines()
        .filter(|line| line.starts_with("| "))
        .filter_map(|line| {
            let cells: Vec<String> = line
                .trim_matches('|')
                .split(" | ")
                .map(|cell| cell.trim().to_string())
                .collect();
            let command = cells
                .iter()
                .find(|cell| cell.starts_with("`agentsim ") && cell.ends_with('`'))?
                .trim_matches('`')
                .to_string();
            let code = cells.last()?.parse().ok()?;
            Some(Row { cells, command, code })
        })
        .collect()
}

/// The section of `markdown` that starts at `heading`, up to the next `## `.
fn section<'t>(markdown: &'t str, heading: &str) -> &'t str {
    let start = markdown
        .find(heading)
        .unwrap_or_else(|| panic!("no section `{heading}`"));
    let rest = &markdown[start + heading.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

#[test]
fn track_record_lists_every_bug_the_expectations_files_hold() {
    let text = track_record();
    for (heading, _, _, expectations) in IMPLEMENTATIONS {
        let file: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root().join(expectations)).expect("readable")).expect("JSON");
        let bugs: BTreeSet<String> = file["causes"]
            .as_array()
            .expect("causes")
            .iter()
            .filter(|cause| cause["verdict"] == "bug")
            .map(|cause| cause["id"].as_str().expect("an id").to_string())
            .collect();
        assert!(!bugs.is_empty(), "{expectations} lists no bug");
        let listed: BTreeSet<String> = rows(section(&text, heading))
            .iter()
            .filter_map(|row| {
                let first = row.cells.first()?;
                Some(first.strip_prefix('`')?.split('`').next()?.to_string())
            })
            .collect();
        assert_eq!(listed, bugs, "{heading}: the rows are not the bugs of {expectations}");
        assert!(
            text.contains(&format!("{heading}: {} bugs", bugs.len())),
            "{heading}: its count is not {}",
            bugs.len()
        );
    }
}

#[test]
fn track_record_imported_scenarios_are_what_import_writes() {
    let folder = root().join("tests/fixtures/imported");
    let mut seen = 0;
    for entry in std::fs::read_dir(&folder).expect("tests/fixtures/imported") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|extension| extension != "json") {
            continue;
        }
        let name = path.file_stem().expect("a name").to_string_lossy().into_owned();
        let session = format!("tests/fixtures/sessions/{name}.jsonl");
        let outcome = agentsim(&["import", &session], &[]);
        assert_eq!(outcome.code, 0, "{session}: {}", outcome.stderr);
        let committed = std::fs::read_to_string(&path).expect("readable");
        assert_eq!(
            outcome.stdout,
            committed,
            "{}: not what `agentsim import {session}` writes today (write it again with `-o`)",
            path.display()
        );
        seen += 1;
    }
    assert!(seen >= 6, "only {seen} imported fixtures");
}

#[test]
fn track_record_commands_run_and_exit_as_listed() {
    let text = track_record();
    let found = rows(&text);
    assert!(found.len() >= 90, "too few commands found: {}", found.len());
    let required = std::env::var("AGENTSIM_TRACK_RECORD_ADAPTERS").is_ok_and(|value| value == "required");
    let folder = scratch("track-record", "commands");
    for linked in ["scenarios", "expectations", "tests", "adapters"] {
        std::os::unix::fs::symlink(root().join(linked), folder.join(linked)).expect("a link");
    }
    let bin_dir = Path::new(BIN).parent().expect("the binary's folder");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let (mut failures, mut ran, mut left_out) = (Vec::new(), 0, 0);
    for row in &found {
        let install = IMPLEMENTATIONS
            .iter()
            .find(|(_, adapter, _, _)| row.command.contains(&format!("\"{adapter}\"")))
            .map(|(_, _, install, _)| *install);
        if let Some(install) = install.filter(|install| !root().join(install).exists()) {
            assert!(!required, "`{}` needs {install}, which is not installed", row.command);
            left_out += 1;
            continue;
        }
        let output = Command::new("sh")
            .args(["-c", &row.command])
            .current_dir(&folder)
            .env("PATH", &path)
            .output()
            .expect("sh runs");
        ran += 1;
        let code = output.status.code().unwrap_or(-1);
        if code != row.code {
            failures.push(format!(
                "`{}` exited {code}, the track record says {}:\n{}{}",
                row.command,
                row.code,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&folder);
    eprintln!("track record: ran {ran} commands, left out {left_out} whose implementation is not installed");
    assert!(ran >= 15, "only {ran} commands ran");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
