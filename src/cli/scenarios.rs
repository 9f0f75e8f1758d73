//! `agentsim scenarios`: the built-in corpus (`suite::BUILT_IN`) read without a checkout. `list`
//! names the scenarios, `show` prints one file as it was embedded, `export DIR` writes them as
//! files that `agentsim run DIR` runs under the same names. It never runs a scenario.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use crate::scenario::printable;
use crate::suite;

use super::{EXIT_BAD_INPUT, EXIT_OUTPUT, EXIT_PASSED};

#[derive(Subcommand)]
pub enum ScenariosCommand {
    /// Print the names of the built-in scenarios, one a line (those under the given folders or
    /// names only, e.g. `persist`).
    List {
        #[arg(value_name = "NAME|FOLDER")]
        names: Vec<String>,
    },
    /// Print one built-in scenario file as it is embedded (`agentsim scenarios show
    /// wiring/walkthrough`).
    Show {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Write the built-in scenarios (or those under the given folders or names) to DIR as
    /// `DIR/<name>.json`; `agentsim run DIR` then runs them under the same names. A file already
    /// there with other contents is refused (nothing is written) unless `--force`.
    Export {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        #[arg(value_name = "NAME|FOLDER")]
        names: Vec<String>,
        /// Replace files in DIR whose contents differ from the built-in scenario's.
        #[arg(long)]
        force: bool,
    },
}

pub(super) fn run_scenarios(command: ScenariosCommand) -> u8 {
    let result = match command {
        ScenariosCommand::List { names } => selected(&names).map(|scenarios| {
            let mut text = String::new();
            for (name, _) in scenarios {
                text.push_str(name);
                text.push('\n');
            }
            print!("{text}");
            EXIT_PASSED
        }),
        ScenariosCommand::Show { name } => show(&name),
        ScenariosCommand::Export { dir, names, force } => {
            selected(&names).and_then(|scenarios| export(&dir, &scenarios, force))
        }
    };
    result.unwrap_or_else(|(code, message)| {
        eprintln!("agentsim scenarios: {message}");
        code
    })
}

type Failure = (u8, String);

/// The built-in scenarios under `names` (all of them for none), each once, sorted by name.
fn selected(names: &[String]) -> Result<Vec<(&'static str, &'static str)>, Failure> {
    if names.is_empty() {
        return Ok(suite::BUILT_IN.to_vec());
    }
    let mut chosen = Vec::new();
    for name in names {
        let found = suite::built_in_matching(name);
        if found.is_empty() {
            return Err(unknown(name));
        }
        chosen.extend(found);
    }
    chosen.sort_unstable();
    chosen.dedup();
    Ok(chosen)
}

fn unknown(name: &str) -> Failure {
    (
        EXIT_BAD_INPUT,
        format!(
            "`{}`: no built-in scenario or folder of them has this name (`agentsim scenarios list` names them)",
            printable(name)
        ),
    )
}

fn show(name: &str) -> Result<u8, Failure> {
    match suite::built_in_matching(name).as_slice() {
        [] => Err(unknown(name)),
        [(_, text)] => {
            print!("{text}");
            Ok(EXIT_PASSED)
        }
        many => Err((
            EXIT_BAD_INPUT,
            format!(
                "`{}` is a folder of {} built-in scenarios: show prints one (`agentsim scenarios list {}` names them)",
                printable(name),
                many.len(),
                printable(name)
            ),
        )),
    }
}

/// Writes `scenarios` below `dir`. Every target is checked before the first is written, so a
/// refused export writes nothing.
fn export(dir: &Path, scenarios: &[(&'static str, &'static str)], force: bool) -> Result<u8, Failure> {
    let failed = |path: &Path, error: &dyn std::fmt::Display| (EXIT_OUTPUT, format!("{}: {error}", path.display()));
    let mut to_write = Vec::new();
    for (name, text) in scenarios {
        let path = dir.join(format!("{name}.json"));
        match std::fs::symlink_metadata(&path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => to_write.push((path, *text)),
            Err(error) => return Err(failed(&path, &error)),
            Ok(metadata) if !metadata.is_file() => {
                return Err((
                    EXIT_BAD_INPUT,
                    format!(
                        "{}: exists and is {}, not a scenario file: nothing was written",
                        path.display(),
                        crate::scenario::kind_of(&metadata.file_type())
                    ),
                ))
            }
            Ok(_) => {
                let same = std::fs::read(&path).map_err(|error| failed(&path, &error))? == text.as_bytes();
                if same {
                    continue;
                }
                if !force {
                    return Err((
                        EXIT_BAD_INPUT,
                        format!(
                            "{}: exists with other contents than the built-in scenario `{name}`: nothing was written (--force replaces it)",
                            path.display()
                        ),
                    ));
                }
                to_write.push((path, *text));
            }
        }
    }
    for (path, text) in &to_write {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|error| failed(parent, &error))?;
        }
        crate::whole_file::write(path, text).map_err(|error| failed(path, &error))?;
    }
    eprintln!(
        "agentsim scenarios: wrote {} of {} scenarios to {} ({} already there); `agentsim run {}` runs them",
        to_write.len(),
        scenarios.len(),
        dir.display(),
        scenarios.len() - to_write.len(),
        crate::run::shell_quote(&dir.display().to_string())
    );
    Ok(EXIT_PASSED)
}
