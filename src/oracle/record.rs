//! Recorded runs: a run's inputs and outputs kept in one file (`run --record`), re-fed to any
//! implementation (`replay --recorded`), as Temporal's replayer re-feeds a recorded history and
//! a cassette re-plays recorded answers.
//!
//! A recording holds the scenario's text (so it runs without the corpus it came from), who ran
//! it, the command that replays the run, and its whole trace. Replaying it on a subject is
//! [`super::replay`]: the trace's world side re-fed input by input, each answer to the effect of
//! the same identity, and the first output that differs reported as missing, extra or
//! different, with the freedoms set aside.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::scenario::{LoadedScenario, Scenario};
use crate::sim::Subject;
use crate::trace::Trace;

use super::{replay, Freedoms, Replayed};

/// The recordings' format version.
pub const VERSION: u32 = 1;

/// One recorded run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Recording {
    pub version: u32,
    /// The scenario's name in its corpus (`persist/two-prompts`).
    pub scenario: String,
    /// The scenario file's text, as it was run.
    pub scenario_text: String,
    /// Who was run: `reference`, a mutant's name, or the adapter command.
    pub implementation: String,
    /// The command that replays the recorded run itself.
    pub replay: String,
    pub trace: Trace,
}

/// Why a recording cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingError {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for RecordingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

impl Recording {
    /// The recording of a run of `loaded`: its trace, who ran it and its replay command.
    pub fn of(loaded: &LoadedScenario, implementation: &str, replay: String, trace: &Trace) -> Recording {
        Recording {
            version: VERSION,
            scenario: loaded.name.clone(),
            scenario_text: crate::suite::source_text(&loaded.path).unwrap_or_default(),
            implementation: implementation.to_string(),
            replay,
            trace: trace.clone(),
        }
    }

    /// The recording as its file holds it (pretty JSON, one trailing newline).
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("recordings serialize");
        text.push('\n');
        text
    }

    /// Reads a recording; an unreadable or malformed file is an error at its line.
    pub fn read(file: &Path) -> Result<Recording, RecordingError> {
        let error = |line: usize, message: String| RecordingError {
            file: file.to_path_buf(),
            line,
            message,
        };
        let text = std::fs::read_to_string(file).map_err(|problem| error(1, format!("cannot read: {problem}")))?;
        let recording: Recording = serde_json::from_str(&text)
            .map_err(|problem| error(problem.line().max(1), format!("not a recording: {problem}")))?;
        if recording.version != VERSION {
            return Err(error(
                1,
                format!(
                    "recording version {} (this agentsim reads {VERSION})",
                    recording.version
                ),
            ));
        }
        Ok(recording)
    }

    /// The recorded scenario, parsed from the text the recording holds.
    pub fn scenario(&self, file: &Path) -> Result<Scenario, RecordingError> {
        crate::scenario::parse(Path::new(&self.scenario), &self.scenario_text, crate::check::RULE_IDS).map_err(
            |problem| RecordingError {
                file: file.to_path_buf(),
                line: 1,
                message: format!("the recorded scenario does not load: {problem}"),
            },
        )
    }

    /// Re-feeds the recorded run to `subject` and compares every output.
    pub fn replay_on(&self, scenario: &Scenario, subject: &mut dyn Subject) -> Replayed {
        replay(scenario, &self.trace, subject, Freedoms::ALL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::reference::ReferenceSubject;
    use crate::sim::{simulate, Random};

    /// Every trace of the corpus, canonical and random, reads back from its recording as it
    /// was written, and a recording of the reference replays on the reference with no
    /// difference.
    #[test]
    fn recordings_read_back_and_replay_on_the_reference() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let corpus = crate::suite::load_corpus(&[root]).expect("the corpus loads");
        let folder = std::env::temp_dir().join(format!("agentsim-recordings-{}", std::process::id()));
        std::fs::create_dir_all(&folder).expect("a folder");
        for loaded in &corpus {
            for seed in [0, 7] {
                let mut scenario = loaded.scenario.clone();
                scenario.net = None;
                let outcome = simulate(&scenario, &mut ReferenceSubject::new(), &mut Random::new(seed))
                    .expect("the reference runs");
                let recording = Recording::of(loaded, "reference", format!("seed {seed}"), &outcome.trace);
                let file = folder.join("one.json");
                std::fs::write(&file, recording.to_text()).expect("written");
                let read = Recording::read(&file).expect("reads back");
                assert_eq!(read, recording, "{} seed {seed}", loaded.name);
                let replayed = read.replay_on(&scenario, &mut ReferenceSubject::new());
                assert_eq!(replayed.difference, None, "{} seed {seed}", loaded.name);
            }
        }
        std::fs::remove_dir_all(&folder).ok();
    }

    #[test]
    fn a_malformed_recording_is_an_error_at_its_line() {
        let file = std::env::temp_dir().join(format!("agentsim-bad-recording-{}.json", std::process::id()));
        std::fs::write(&file, "{\n  \"version\": 1,\n  \"scenario\": 3\n}\n").expect("written");
        let error = Recording::read(&file).expect_err("malformed");
        assert_eq!(error.line, 3, "{error}");
        std::fs::remove_file(&file).ok();
    }
}
