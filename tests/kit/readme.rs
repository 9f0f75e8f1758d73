//! README.md stays true: every `agentsim ...` command in its fenced code blocks is run with this
//! build of the kit, in the order printed, and must exit with the code the README gives it (0,
//! unless the line ends in a comment `# exits N`). The commands run through `sh` in a scratch
//! folder that links the repository's corpus, expectations, fixtures and adapters, with the built
//! binary first on `PATH`, so what they write (pages, reports, shrunk files) stays there and a
//! later command reads what an earlier one wrote, as a reader following the README would.
//!
//! A command that drives an installed implementation (real Pi, oh-my-pi, aelix) needs its
//! install folder (`npm ci`, `install.sh`): without it the command is left out with the reason
//! printed, unless `AGENTSIM_README_ADAPTERS=required`, as `.ci/run` sets once it has installed
//! them, where a missing install fails. The two commands of "On a fresh machine" are not run
//! here (one is this test's own `cargo test`): they are checked to be printed as they are, and
//! the main job's last line to be the one the README gives.

use std::path::Path;
use std::process::Command;

use crate::binary::{root, scratch, BIN};

/// One `agentsim` command of the README and the exit code it is said to give.
#[derive(Debug, PartialEq)]
struct Example {
    command: String,
    code: i32,
}

/// The implementations whose adapters need an install, by the path their commands name, and
/// the folder the install creates (relative to the repository's root).
const INSTALLS: &[(&str, &str)] = &[
    (
        "adapters/pi/releases/0.70.6/",
        "adapters/pi/releases/0.70.6/node_modules",
    ),
    (
        "adapters/pi/releases/0.72.1/",
        "adapters/pi/releases/0.72.1/node_modules",
    ),
    ("adapters/pi/", "adapters/pi/node_modules"),
    ("adapters/oh-my-pi/", "adapters/oh-my-pi/node_modules"),
    ("adapters/aelix/", "adapters/aelix/.venv"),
];

/// What the scratch folder links from the repository's root.
const LINKED: &[&str] = &["scenarios", "expectations", "tests", "adapters", "golden"];

/// `command` without its trailing comment (a `#` that starts a word outside quotes), and the
/// comment's text.
fn split_comment(command: &str) -> (&str, Option<&str>) {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (at, character) in command.char_indices() {
        match (quote, character) {
            (Some(open), c) if c == open => quote = None,
            (None, '\'' | '"') => quote = Some(character),
            (None, '#') if previous.is_whitespace() => {
                return (command[..at].trim_end(), Some(command[at + 1..].trim()));
            }
            _ => {}
        }
        previous = character;
    }
    (command.trim_end(), None)
}

/// The `agentsim` commands of the fenced code blocks of `markdown`, continuation lines joined,
/// each with the exit code its comment gives (`# exits N`; 0 without).
fn examples(markdown: &str) -> Vec<Example> {
    crate::binary::fenced_commands(markdown)
        .iter()
        .map(|text| {
            let (command, comment) = split_comment(text);
            let code = match comment.and_then(|comment| comment.strip_prefix("exits ")) {
                Some(code) => code
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("`{text}`: `# exits N` needs a number")),
                None => 0,
            };
            Example {
                command: command.to_string(),
                code,
            }
        })
        .collect()
}

/// The install folder `command` needs and lacks, if any.
fn missing_install(command: &str) -> Option<&'static str> {
    let needed = INSTALLS.iter().find(|(path, _)| command.contains(path))?.1;
    (!root().join(needed).exists()).then_some(needed)
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

#[test]
fn readme_commands_are_found_with_their_exit_codes() {
    let found = examples(
        "text\n```sh\nagentsim run a   # exits 1\nagentsim explore \\\n  b --seeds 2\ncargo test\n```\n\
         agentsim outside\n```\nagentsim replay 'x # y' # a note\n```\n",
    );
    let expected = [
        ("agentsim run a", 1),
        ("agentsim explore b --seeds 2", 0),
        ("agentsim replay 'x # y'", 0),
    ];
    let expected: Vec<Example> = expected
        .iter()
        .map(|(command, code)| Example {
            command: command.to_string(),
            code: *code,
        })
        .collect();
    assert_eq!(found, expected);
    assert_eq!(missing_install("agentsim run --impl \"agentsim serve\" x"), None);
}

#[test]
fn readme_fresh_machine_commands_are_printed_as_they_are() {
    let text = readme();
    let section = text
        .split("## On a fresh machine\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("README.md has its section `On a fresh machine`");
    for command in ["cargo run --release -- run scenarios/", "cargo test"] {
        assert!(
            section.contains(&format!("```sh\n{command}\n```")),
            "README.md, \"On a fresh machine\": no block of its own for `{command}`"
        );
    }
    // What the main job is said to end with is what it ends with.
    let said = section
        .split("ends with `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .expect("the section says what the main job ends with");
    let main_job = crate::binary::agentsim(&["run", "scenarios/"], &[]);
    assert_eq!(main_job.code, 0, "{}{}", main_job.stdout, main_job.stderr);
    assert_eq!(main_job.stdout.lines().last(), Some(said), "the main job's last line");
}

#[test]
fn readme_commands_run_and_exit_as_printed() {
    let found = examples(&readme());
    assert!(found.len() >= 20, "too few agentsim commands found: {found:?}");
    let required = std::env::var("AGENTSIM_README_ADAPTERS").is_ok_and(|value| value == "required");
    let folder = scratch("readme", "commands");
    for linked in LINKED {
        std::os::unix::fs::symlink(root().join(linked), folder.join(linked)).expect("a link");
    }
    let bin_dir = Path::new(BIN).parent().expect("the binary's folder");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut failures = Vec::new();
    for example in &found {
        if let Some(needed) = missing_install(&example.command) {
            assert!(
                !required,
                "`{}` needs {needed}, which is not installed",
                example.command
            );
            eprintln!(
                "left out (no {needed}: the implementation is not installed): {}",
                example.command
            );
            continue;
        }
        let output = Command::new("sh")
            .args(["-c", &example.command])
            .current_dir(&folder)
            .env("PATH", &path)
            .output()
            .expect("sh runs");
        let code = output.status.code().unwrap_or(-1);
        if code != example.code {
            let stdout = String::from_utf8_lossy(&output.stdout);
            let tail: Vec<&str> = stdout.lines().rev().take(15).collect();
            failures.push(format!(
                "`{}` exited {code}, the README says {}:\n{}\n{}",
                example.command,
                example.code,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&folder);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
