//! Recorded runs on the command line: `run --record DIR` writes them, `replay --recorded FILE`
//! re-feeds one to an implementation, and `agentsim recordings DIR --on NAME=CMD ...` replays a
//! folder of them on several implementations and prints which pairs agree (`oracle::record`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::implementation::Implementation;
use crate::oracle::record::Recording;
use crate::oracle::Difference;
use crate::run::CaseReport;
use crate::scenario::LoadedScenario;

use super::{EXIT_BAD_INPUT, EXIT_OUTPUT, EXIT_PASSED, EXIT_VIOLATION};

/// Who ran a run, as a recording names it: `reference`, `reference --mutant NAME`, or the
/// adapter command.
pub(super) fn label(implementation: &Implementation) -> String {
    let base = match implementation.adapter_command() {
        Some((command, _)) => command,
        None => "reference".to_string(),
    };
    match implementation.mutant {
        Some(mutant) => format!("{base} --mutant {}", mutant.name()),
        None => base,
    }
}

/// Writes one recording per case that has a trace, as `DIR/<name>.json`.
pub(super) fn write_recordings(dir: &Path, corpus: &[LoadedScenario], reports: &[CaseReport]) -> Result<usize, u8> {
    let mut written = 0;
    for report in reports {
        let (Some(outcome), Some(loaded)) = (&report.outcome, corpus.iter().find(|loaded| loaded.name == report.name))
        else {
            continue;
        };
        let recording = Recording::of(
            loaded,
            &label(&report.run.implementation),
            report.run.command(),
            &outcome.trace,
        );
        let file = dir.join(format!("{}.json", report.name));
        let written_whole = file
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| crate::whole_file::write(&file, recording.to_text()));
        if let Err(error) = written_whole {
            eprintln!("agentsim: {}: {error}", file.display());
            return Err(EXIT_OUTPUT);
        }
        written += 1;
    }
    Ok(written)
}

/// `replay --recorded FILE`: the recorded run re-fed to `implementation`; exit 0 when every
/// output is the recorded one (freedoms set aside), 1 at the first difference.
pub(super) fn replay_recorded(file: &Path, implementation: &Implementation) -> u8 {
    let (recording, scenario) = match read(file) {
        Ok(read) => read,
        Err(code) => return code,
    };
    let mut subject = implementation.subject();
    let replayed = recording.replay_on(&scenario, subject.as_mut());
    println!(
        "{}: {} recorded on `{}` ({} trace lines), re-fed to `{}`",
        file.display(),
        recording.scenario,
        recording.implementation,
        recording.trace.events.len(),
        label(implementation)
    );
    match replayed.difference {
        None => {
            println!("agree: every output is the recorded one (freedoms set aside)");
            EXIT_PASSED
        }
        Some(difference) => {
            for line in described(&difference) {
                println!("{line}");
            }
            println!("recorded run: {}", recording.replay);
            EXIT_VIOLATION
        }
    }
}

/// A difference of a replayed recording, told from the replayed implementation's side (the
/// oracle's "reference" is the replayed implementation, its "implementation" the recording).
fn described(difference: &Difference) -> Vec<String> {
    let side = |line: &Option<String>| line.clone().unwrap_or_else(|| "(nothing in this step)".to_string());
    vec![
        format!(
            "first difference at recorded line {:04}: {} is {} after {}",
            difference.implementation_line.unwrap_or(0),
            difference.identity,
            replayed_kind(difference),
            difference.step
        ),
        format!("  recorded: {}", side(&difference.implementation)),
        format!("  replayed: {}", side(&difference.reference)),
    ]
}

/// The kind of a difference as the replayed implementation shows it: an output the recording
/// has and the replay lacks is missing there.
fn replayed_kind(difference: &Difference) -> &'static str {
    use crate::oracle::DifferenceKind;
    match (difference.kind, difference.refused) {
        (DifferenceKind::Extra, true) => "refused by the replayed implementation",
        (DifferenceKind::Extra, false) => "missing from the replay",
        (DifferenceKind::Missing, _) => "extra in the replay",
        (DifferenceKind::Different, _) => "different in the replay",
    }
}

fn read(file: &Path) -> Result<(Recording, crate::scenario::Scenario), u8> {
    let recording = Recording::read(file).map_err(|error| {
        eprintln!("agentsim: {error}");
        EXIT_BAD_INPUT
    })?;
    let scenario = recording.scenario(file).map_err(|error| {
        eprintln!("agentsim: {error}");
        EXIT_BAD_INPUT
    })?;
    Ok((recording, scenario))
}

/// One implementation of the matrix: `NAME=CMD`, or `reference`.
#[derive(Debug, Clone)]
pub struct On {
    pub name: String,
    pub implementation: Implementation,
}

/// Parses `--on NAME=CMD` (an adapter command) or `--on reference`.
pub fn parse_on(text: &str) -> Result<On, String> {
    if text == "reference" {
        return Ok(On {
            name: "reference".into(),
            implementation: Implementation::reference(),
        });
    }
    match text.split_once('=') {
        Some((name, command)) if !name.trim().is_empty() && !command.trim().is_empty() => Ok(On {
            name: name.trim().to_string(),
            implementation: Implementation::adapter(command.trim(), Duration::from_millis(10_000)),
        }),
        _ => Err(format!("`{text}` is neither `reference` nor NAME=CMD")),
    }
}

/// One recorder's recordings replayed on one implementation.
#[derive(Default)]
struct Cell {
    agreeing: usize,
    replayed: usize,
    /// The scenario and first difference of one recording that does not agree.
    example: Option<(String, Difference)>,
}

/// `agentsim recordings DIR... --on NAME=CMD ...`: every recording replayed on every named
/// implementation; prints, per recorder and implementation, how many recordings agree, and the
/// first difference of one that does not.
pub(super) fn matrix(paths: &[PathBuf], on: &[On]) -> u8 {
    let mut files = Vec::new();
    for path in paths {
        if let Err(error) = collect(path, &mut files) {
            eprintln!("agentsim: {}: {error}", path.display());
            return EXIT_BAD_INPUT;
        }
    }
    files.sort();
    if files.is_empty() || on.is_empty() {
        eprintln!("agentsim: name recordings (files or folders of `*.json`) and at least one `--on`");
        return EXIT_BAD_INPUT;
    }
    let mut cells: BTreeMap<(String, String), Cell> = BTreeMap::new();
    // One subject per implementation, reused from recording to recording (an adapter of
    // protocol 2 serves scenario after scenario), as `run --impl`'s workers do.
    let mut subjects: Vec<_> = on.iter().map(|target| target.implementation.subject()).collect();
    for file in &files {
        let (recording, scenario) = match read(file) {
            Ok(read) => read,
            Err(code) => return code,
        };
        for (target, subject) in on.iter().zip(subjects.iter_mut()) {
            let replayed = recording.replay_on(&scenario, subject.as_mut());
            // A recorder named by `--on` reads as its name.
            let recorder = on
                .iter()
                .find(|named| label(&named.implementation) == recording.implementation)
                .map_or_else(|| format!("`{}`", recording.implementation), |named| named.name.clone());
            let cell = cells.entry((recorder, target.name.clone())).or_default();
            cell.replayed += 1;
            match replayed.difference {
                None => cell.agreeing += 1,
                Some(difference) => {
                    cell.example.get_or_insert((recording.scenario.clone(), difference));
                }
            }
        }
    }
    println!("| recorded on | replayed on | agree | first difference (one example) |");
    println!("|---|---|---:|---|");
    for ((recorder, target), cell) in &cells {
        let (agree, total) = (cell.agreeing, cell.replayed);
        let example = cell.example.as_ref().map_or("-".to_string(), |(scenario, difference)| {
            format!("{scenario}: {}", described(difference)[0].replace('|', "\\|"))
        });
        println!("| {recorder} | {target} | {agree} of {total} | {example} |");
    }
    EXIT_PASSED
}

fn collect(path: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if path.is_file() {
        files.push(path.to_path_buf());
        return Ok(());
    }
    for entry in std::fs::read_dir(path)? {
        let entry = entry?.path();
        if entry.is_dir() {
            collect(&entry, files)?;
        } else if entry.extension().is_some_and(|extension| extension == "json") {
            files.push(entry);
        }
    }
    Ok(())
}
