//! The corpus: the scenario files a runner loads, and the order `--check-determinism` runs
//! them in. A run of one of them is a [`crate::run::Run`].
//!
//! The kit carries its own corpus: every file of the repository's `scenarios/` is embedded at
//! build time ([`BUILT_IN`], made by `build.rs`), so an installed binary runs it with no
//! checkout. A built-in scenario's path is its test name (`persist/resolves-only-after-last-append`),
//! and a path that names no file or folder on disk but names built-in scenarios (a test name, with
//! or without `.json`, or a folder of them such as `persist`) loads those: so every replay command
//! printed for a built-in scenario works anywhere. A file on disk always wins over a built-in name.

use std::path::{Path, PathBuf};

use crate::check;
use crate::scenario::{self, LoadedScenario, ScenarioError};

include!(concat!(env!("OUT_DIR"), "/built_in_scenarios.rs"));

/// The corpus indexes before `index` in a corpus of `len` scenarios, nearest first and
/// cyclically (the first is preceded by the last), `index` itself left out: where
/// `--check-determinism` looks for the scenario a run follows.
pub fn before_in_corpus(index: usize, len: usize) -> impl Iterator<Item = usize> {
    (1..len).map(move |back| (index + len - back) % len)
}

/// The built-in scenarios a path spells, by name: the one named `persist/x` (or `persist/x.json`),
/// or every one below a folder name (`persist`, `persist/`); a leading `scenarios/` is the
/// repository's folder, so `scenarios/persist` and `scenarios` (all of them) spell them too.
/// Empty when it names none.
pub fn built_in_matching(spelling: &str) -> Vec<(&'static str, &'static str)> {
    built_in_spelled(spelling).map(|(_, found)| found).unwrap_or_default()
}

/// The built-in scenarios a path spells, with the folder their test names are relative to, as
/// the same path on disk would name them: a file by its own name, a folder's files below it,
/// the whole corpus by its full names.
fn built_in_spelled(spelling: &str) -> Option<(String, Vec<(&'static str, &'static str)>)> {
    let spelling = spelling.strip_prefix("./").unwrap_or(spelling);
    let trimmed = spelling.trim_end_matches('/');
    if trimmed == "scenarios" {
        return Some((String::new(), BUILT_IN.to_vec()));
    }
    if let Some(found) = built_in_named(trimmed) {
        let folder = found.0.rsplit_once('/').map_or("", |(folder, _)| folder);
        return Some((folder.to_string(), vec![found]));
    }
    let trimmed = trimmed.strip_prefix("scenarios/").unwrap_or(trimmed);
    if trimmed.is_empty() {
        return None;
    }
    let below = format!("{trimmed}/");
    let found: Vec<_> = BUILT_IN
        .iter()
        .filter(|(built_in, _)| built_in.starts_with(&below))
        .copied()
        .collect();
    (!found.is_empty()).then(|| (trimmed.to_string(), found))
}

/// Whether `path` is a folder: on disk, or, naming nothing on disk, a folder of built-in scenarios
/// (`replay` and `--after` take one scenario).
pub fn is_folder(path: &Path) -> bool {
    if std::fs::symlink_metadata(path).is_ok() {
        return path.is_dir();
    }
    let spelling = path.to_string_lossy();
    built_in_spelled(&spelling).is_some() && built_in_named(&spelling).is_none()
}

/// The built-in scenario `spelling` names as one file (`persist/x`, `persist/x.json`,
/// `scenarios/persist/x.json`), if any.
fn built_in_named(spelling: &str) -> Option<(&'static str, &'static str)> {
    let spelling = spelling.strip_prefix("./").unwrap_or(spelling);
    let trimmed = spelling.trim_end_matches('/');
    let trimmed = trimmed.strip_prefix("scenarios/").unwrap_or(trimmed);
    let name = trimmed.strip_suffix(".json").unwrap_or(trimmed);
    BUILT_IN.iter().find(|(built_in, _)| *built_in == name).copied()
}

/// The whole built-in corpus, loaded and sorted by name: what `run` and `explore` run when
/// given no path.
pub fn load_built_in() -> Result<Vec<LoadedScenario>, ScenarioError> {
    BUILT_IN
        .iter()
        .map(|(name, text)| load_built_in_one(name, text, ""))
        .collect()
}

/// A built-in scenario loaded: its path is its full name, which resolves to it anywhere; its
/// test name is relative to `folder`, as a file below that folder on disk is named.
fn load_built_in_one(name: &str, text: &str, folder: &str) -> Result<LoadedScenario, ScenarioError> {
    let path = PathBuf::from(name);
    let scenario = scenario::parse(&path, text, check::RULE_IDS)?;
    let relative = name
        .strip_prefix(folder)
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(name);
    Ok(LoadedScenario {
        path,
        name: relative.to_string(),
        scenario,
    })
}

/// The scenarios under `paths`, or the built-in corpus when there are none: what `run`,
/// `explore` and `mutants` run.
pub fn load_or_built_in(paths: &[PathBuf]) -> Result<Vec<LoadedScenario>, ScenarioError> {
    if paths.is_empty() {
        load_built_in()
    } else {
        load_corpus(paths)
    }
}

/// The text of the scenario a loaded scenario's path names: the file on disk, else the
/// built-in scenario of that name (as [`load_corpus`] resolves it).
pub fn source_text(path: &Path) -> std::io::Result<String> {
    match std::fs::read_to_string(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            match built_in_matching(&path.to_string_lossy()).as_slice() {
                [(_, text)] => Ok(text.to_string()),
                _ => Err(error),
            }
        }
        read => read,
    }
}

/// Loads every scenario file under `paths` (files or folders), sorted by name; a path that
/// names nothing on disk but built-in scenarios loads those. A path with no scenario file under
/// it is an error, like a broken file: an empty corpus never passes.
pub fn load_corpus(paths: &[PathBuf]) -> Result<Vec<LoadedScenario>, ScenarioError> {
    let mut loaded = Vec::new();
    for root in paths {
        let missing =
            matches!(std::fs::symlink_metadata(root), Err(error) if error.kind() == std::io::ErrorKind::NotFound);
        if let Some((folder, built_in)) = missing.then(|| built_in_spelled(&root.to_string_lossy())).flatten() {
            for (name, text) in built_in {
                loaded.push(load_built_in_one(name, text, &folder)?);
            }
            continue;
        }
        let files = scenario::discover(root).map_err(|error| match error.kind() {
            // Not a file or a folder: a problem with the path as a whole, at its first line.
            std::io::ErrorKind::InvalidInput => ScenarioError::new(root, 1, "-", error.to_string()),
            std::io::ErrorKind::NotFound => ScenarioError {
                file: root.clone(),
                line: 0,
                field: "-".into(),
                message: format!(
                    "cannot read: {error}; nor is it a built-in scenario or a folder of them (`agentsim scenarios list` names them)"
                ),
            },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_corpus_is_the_repository_s_scenarios() {
        let on_disk =
            load_corpus(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")]).expect("the corpus loads");
        let built_in = load_built_in().expect("the built-in corpus loads");
        let names = |corpus: &[LoadedScenario]| corpus.iter().map(|loaded| loaded.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&built_in), names(&on_disk));
        for (disk, embedded) in on_disk.iter().zip(&built_in) {
            assert_eq!(disk.scenario, embedded.scenario, "{}", disk.name);
            assert_eq!(embedded.path, PathBuf::from(&embedded.name));
        }
    }

    #[test]
    fn a_path_names_built_in_scenarios_only_when_nothing_is_on_disk_there() {
        let one = built_in_matching("wiring/walkthrough");
        assert_eq!(one.len(), 1);
        assert_eq!(built_in_matching("wiring/walkthrough.json"), one);
        let folder = built_in_matching("wiring/");
        assert!(folder.len() > 1 && folder.iter().all(|(name, _)| name.starts_with("wiring/")));
        assert_eq!(built_in_matching("wiring"), folder);
        // `wiring/walk` is neither a name nor a folder: a prefix of a name is not a match.
        assert!(built_in_matching("wiring/walk").is_empty());
        assert!(built_in_matching("").is_empty() && built_in_matching("/").is_empty());
        // The repository's own spelling names the same scenarios.
        assert_eq!(built_in_matching("scenarios/wiring/walkthrough.json"), one);
        assert_eq!(built_in_matching("./scenarios/wiring"), folder);
        assert_eq!(built_in_matching("scenarios/").len(), BUILT_IN.len());
        let loaded = load_corpus(&[PathBuf::from("wiring/walkthrough")]).expect("a built-in name loads");
        assert_eq!(loaded[0].path, PathBuf::from("wiring/walkthrough"));
        // Named as the same path on disk names its files: a file by its own name, a folder's
        // files below it; the path is the full name, which resolves anywhere.
        assert_eq!(loaded[0].name, "walkthrough");
        let below = load_corpus(&[PathBuf::from("wiring")]).expect("a built-in folder loads");
        assert!(
            below
                .iter()
                .all(|loaded| !loaded.name.starts_with("wiring/")
                    && loaded.path == Path::new("wiring").join(&loaded.name))
        );
        assert_eq!(source_text(&loaded[0].path).expect("its text"), one[0].1);
        assert!(!is_folder(Path::new("wiring/walkthrough")) && is_folder(Path::new("wiring")));
        assert!(is_folder(Path::new("src")) && !is_folder(Path::new("Cargo.toml")) && !is_folder(Path::new("no-such")));
        // On disk, the same spelling is a file: `src` is a folder of this crate with no scenario.
        let error = load_corpus(&[PathBuf::from("src")]).expect_err("src holds no scenario");
        assert!(error.message.contains("nothing to run"), "{error}");
        let error = load_corpus(&[PathBuf::from("no-such/thing")]).expect_err("nothing by that name");
        assert!(error.message.contains("agentsim scenarios list"), "{error}");
    }
}
