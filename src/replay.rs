//! The one place a replay command is built.
//!
//! Every failure the kit reports prints one command that reproduces it: `run`, `explore`,
//! `mutants`, `--impl` runs, the networked world and the crash test all describe their run as a
//! [`ReplaySpec`] (everything that changes the trace: scenario, strategy and seed or choices,
//! mutant, world and its faults, the implementation and its timeout) and print
//! [`ReplaySpec::command`]. Paths and commands are shell-quoted, so a scenario path or an impl
//! command with spaces or shell metacharacters replays as printed.

use std::path::PathBuf;

use crate::sim::StrategyKind;
use crate::store::SyncPolicy;

/// Which world a replay runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayWorld {
    /// The in-process scheduler.
    Sim,
    /// The in-process scheduler for a scenario with a `net` block, which `run` and a plain
    /// `replay` take to the networked world: explore's schedules (`--in-process`).
    InProcess,
    /// The networked world of a scenario with a `net` block, with its own faults only: the
    /// trace depends on the seed.
    Net,
    /// The networked world forced, with faults drawn from the seed (`--world net`).
    NetSeeded,
    /// The networked world with the store host crashed at a simulation step (the crash test),
    /// and the store's sync policy overridden.
    NetCrash { step: u64, sync: SyncPolicy },
}

/// Everything that determines a run's trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplaySpec {
    pub path: PathBuf,
    pub strategy: StrategyKind,
    pub seed: u64,
    /// An explicit choice sequence (exhaustive exploration), instead of strategy and seed.
    pub choices: Option<Vec<usize>>,
    /// A mutant of the zoo, by name.
    pub mutant: Option<String>,
    pub world: ReplayWorld,
    /// The adapter command and its step timeout in milliseconds.
    pub implementation: Option<(String, u64)>,
    /// The rules that judged (`--rules ... --level ...`), when not every rule did: the
    /// replay judges the same ones, so it shows the same root cause.
    pub judging: Option<String>,
    /// Another scenario the adapter process runs first (`--after`), under a seed of its own
    /// (`--after-seed`, when not the case's): a nondeterministic verdict found after it
    /// replays only after it.
    pub after: Option<(PathBuf, u64)>,
}

impl ReplaySpec {
    /// A canonical replay of `path` on the reference.
    pub fn new(path: PathBuf, strategy: StrategyKind, seed: u64) -> ReplaySpec {
        ReplaySpec {
            path,
            strategy,
            seed,
            choices: None,
            mutant: None,
            world: ReplayWorld::Sim,
            implementation: None,
            judging: None,
            after: None,
        }
    }

    /// The command, ready to paste into a shell.
    pub fn command(&self) -> String {
        let mut words = vec![
            "agentsim".to_string(),
            "replay".to_string(),
            shell_quote(&self.path.display().to_string()),
        ];
        match &self.world {
            ReplayWorld::Sim | ReplayWorld::Net => {}
            ReplayWorld::InProcess => words.push("--in-process".into()),
            ReplayWorld::NetSeeded => words.extend(["--world".into(), "net".into()]),
            ReplayWorld::NetCrash { step, sync } => {
                words.extend(["--crash-at-step".into(), step.to_string()]);
                words.extend(["--sync".into(), sync_name(*sync).into()]);
            }
        }
        match &self.choices {
            Some(choices) => {
                let choices: Vec<String> = choices.iter().map(ToString::to_string).collect();
                words.extend(["--choices".into(), choices.join(".")]);
            }
            None => {
                let networked = !matches!(self.world, ReplayWorld::Sim | ReplayWorld::InProcess);
                if !networked && self.strategy != StrategyKind::Scripted {
                    words.extend(["--strategy".into(), self.strategy.spelling()]);
                }
                if networked || self.strategy.uses_seed() {
                    words.extend(["--seed".into(), self.seed.to_string()]);
                }
            }
        }
        if let Some(mutant) = &self.mutant {
            words.extend(["--mutant".into(), shell_quote(mutant)]);
        }
        if let Some((command, step_timeout_ms)) = &self.implementation {
            words.extend(["--impl".into(), shell_quote(command)]);
            words.extend(["--step-timeout-ms".into(), step_timeout_ms.to_string()]);
        }
        if let Some((after, after_seed)) = &self.after {
            words.extend(["--after".into(), shell_quote(&after.display().to_string())]);
            if *after_seed != self.seed {
                words.extend(["--after-seed".into(), after_seed.to_string()]);
            }
        }
        if let Some(judging) = &self.judging {
            words.push(judging.clone());
        }
        words.join(" ")
    }
}

fn sync_name(sync: SyncPolicy) -> &'static str {
    match sync {
        SyncPolicy::EveryAppend => "every-append",
        SyncPolicy::None => "none",
    }
}

/// `text` as one shell word: unchanged when it is plain, else in single quotes.
pub fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&byte));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_replay_names_only_the_file() {
        let spec = ReplaySpec::new("scenarios/a.json".into(), StrategyKind::Scripted, 7);
        assert_eq!(spec.command(), "agentsim replay scenarios/a.json");
    }

    #[test]
    fn every_part_that_changes_the_trace_is_in_the_command() {
        let spec = ReplaySpec {
            mutant: Some("poison-not-stored".into()),
            implementation: Some(("node my adapter.mjs".into(), 2500)),
            ..ReplaySpec::new("dir with space/it's.json".into(), StrategyKind::Pct { depth: 3 }, 41)
        };
        assert_eq!(
            spec.command(),
            "agentsim replay 'dir with space/it'\\''s.json' --strategy pct:3 --seed 41 --mutant poison-not-stored --impl 'node my adapter.mjs' --step-timeout-ms 2500"
        );
        let crash = ReplaySpec {
            world: ReplayWorld::NetCrash {
                step: 12,
                sync: SyncPolicy::None,
            },
            ..ReplaySpec::new("s.json".into(), StrategyKind::Scripted, 0)
        };
        assert_eq!(
            crash.command(),
            "agentsim replay s.json --crash-at-step 12 --sync none --seed 0"
        );
        let choices = ReplaySpec {
            choices: Some(vec![0, 2, 1]),
            ..ReplaySpec::new(
                "s.json".into(),
                StrategyKind::Exhaustive {
                    bound: 10,
                    reduced: true,
                },
                0,
            )
        };
        assert_eq!(choices.command(), "agentsim replay s.json --choices 0.2.1");
    }
}
