//! Running the built `agentsim` binary from the crate root, for the tests that drive it as a
//! user would (hostile adapters, hostile input, replay fidelity).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_agentsim");

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// How one run of the binary ended.
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Runs the binary from the crate root with `envs`.
pub fn agentsim(args: &[&str], envs: &[(&str, &str)]) -> Outcome {
    agentsim_in(root(), args, envs)
}

/// Runs the binary in `folder` with `envs`.
pub fn agentsim_in(folder: &Path, args: &[&str], envs: &[(&str, &str)]) -> Outcome {
    let started = Instant::now();
    let output = Command::new(BIN)
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(folder)
        .output()
        .expect("the binary runs");
    Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// A fresh scratch folder for one test of `suite`.
pub fn scratch(suite: &str, name: &str) -> PathBuf {
    let folder = std::env::temp_dir().join(format!("agentsim-{suite}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).expect("a scratch folder");
    folder
}

/// Whether a process is still running (a zombie waiting for its reaper does not count).
pub fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z' | 'X'))
        }
    }
}

/// Asserts every pid stops running within two seconds (SIGKILL is asynchronous).
pub fn assert_all_gone(pids: &[u32], what: &str) {
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let alive: Vec<u32> = pids.iter().copied().filter(|pid| running(*pid)).collect();
        if alive.is_empty() {
            return;
        }
        assert!(Instant::now() < until, "{what}: processes left behind: {alive:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn read_pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// The (scenario, rule) failures of a JSON report.
pub fn failing_pairs(report: &serde_json::Value) -> std::collections::BTreeSet<(String, String)> {
    let mut pairs = std::collections::BTreeSet::new();
    for result in report["results"].as_array().expect("results") {
        for violation in result["violations"].as_array().expect("violations") {
            pairs.insert((
                result["name"].as_str().expect("a name").to_string(),
                violation["rule"].as_str().expect("a rule").to_string(),
            ));
        }
    }
    pairs
}

/// The `agentsim` commands of the fenced code blocks of `markdown`, each with its continuation
/// lines (a trailing `\`) joined; a line may lead with a YAML list's `- ` or a step's `run: `.
pub fn fenced_commands(markdown: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_block = false;
    let mut pending: Option<String> = None;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            assert!(pending.is_none(), "a command's continuation runs past its block");
            continue;
        }
        if !in_block {
            continue;
        }
        let text = line.trim();
        let text = match pending.take() {
            Some(start) => format!("{start} {text}"),
            None => {
                let text = text.trim_start_matches("- ").trim_start_matches("run: ").trim();
                if !text.starts_with("agentsim ") {
                    continue;
                }
                text.to_string()
            }
        };
        match text.strip_suffix('\\') {
            Some(start) => pending = Some(start.trim_end().to_string()),
            None => commands.push(text),
        }
    }
    commands
}
