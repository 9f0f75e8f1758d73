//! The corpus: the scenario files a runner loads, and the order `--check-determinism` runs
//! them in. A run of one of them is a [`crate::run::Run`].

use std::path::{Path, PathBuf};

use crate::check;
use crate::scenario::{self, LoadedScenario, ScenarioError};

/// The corpus indexes before `index` in a corpus of `len` scenarios, nearest first and
/// cyclically (the first is preceded by the last), `index` itself left out: where
/// `--check-determinism` looks for the scenario a run follows.
pub fn before_in_corpus(index: usize, len: usize) -> impl Iterator<Item = usize> {
    (1..len).map(move |back| (index + len - back) % len)
}

/// Loads every scenario file under `paths` (files or folders), sorted by name. A path with no
/// scenario file under it is an error, like a broken file: an empty corpus never passes.
pub fn load_corpus(paths: &[PathBuf]) -> Result<Vec<LoadedScenario>, ScenarioError> {
    let mut loaded = Vec::new();
    for root in paths {
        let files = scenario::discover(root).map_err(|error| match error.kind() {
            // Not a file or a folder: a problem with the path as a whole, at its first line.
            std::io::ErrorKind::InvalidInput => ScenarioError::new(root, 1, "-", error.to_string()),
            _ => ScenarioError {
                file: root.clone(),
                line: 0,
                field: "-".into(),
                message: format!("cannot read: {error}"),
            },
        })?;
        let base = if root.is_file() {
            root.parent().unwrap_or(Path::new(""))
        } else {
            root.as_path()
        };
        // A mistyped path must not pass as an empty, green corpus.
        if files.is_empty() {
            return Err(ScenarioError::new(
                root,
                0,
                "-",
                "no scenario file (`*.json`) here: nothing to run",
            ));
        }
        for file in files {
            let name = scenario::name_of(base, &file);
            loaded.push(scenario::load(&file, &name, check::RULE_IDS)?);
        }
    }
    if paths.is_empty() {
        return Err(ScenarioError::new(Path::new("-"), 0, "-", "no scenario path given"));
    }
    loaded.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(loaded)
}
