//! A run: everything that makes a trace, as one value.
//!
//! A [`Run`] names the scenario, the schedule (a seeded strategy or a choice sequence), the
//! implementation (the reference, a mutant of the zoo, the fairness test's variant, or an
//! adapter command with its step timeout), the world (the scenario's own, forced in process,
//! the networked world with faults from the seed, or a crash of the store host), the rules that
//! judge, and the scenario the adapter process ran just before it. Every runner (`run`,
//! `explore`, `mutants`, `replay`, `crash-test`, the bench, the tests' drivers) builds `Run`s and
//! calls [`Run::execute`] or [`Run::execute_with`]; a [`CaseReport`] is the run plus its verdict.
//!
//! A run prints the one command that replays it ([`Run::command`]) and reads such a command
//! back ([`Run::parse`]); the flags that cannot go together are typed errors ([`RunError`]).

mod command;
mod execute;
mod report;

use std::path::PathBuf;

use crate::check::Selection;
use crate::implementation::Implementation;
use crate::scenario::LoadedScenario;
use crate::sim::StrategyKind;
use crate::store::SyncPolicy;

pub use command::{
    parse_mutant, render_choices, shell_quote, shell_words, Choices, Judging, ReplayArgs, VariantKind, WorldKind,
};
pub use execute::Driver;
pub use report::{CaseReport, NetInfo, Verdict};

/// Where a run's choices come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// A strategy from a seed; `scripted` is the scenario's canonical schedule.
    Seeded { strategy: StrategyKind, seed: u64 },
    /// A fixed choice sequence (as exhaustive and guided exploration find them); a run that
    /// makes more choices than given takes the first enabled one.
    Choices(Vec<usize>),
}

/// Where a scenario runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum World {
    /// The scenario's own: the in-process scheduler, or, for a scenario with a `net` block,
    /// the networked world with that block's faults (the seed picks turmoil's).
    #[default]
    Own,
    /// The in-process scheduler even for a scenario with a `net` block, as `explore` schedules
    /// it (the block's faults are the networked world's, and not applied).
    InProcess,
    /// The networked world, with faults drawn from the seed added to the scenario's
    /// (`--world net`).
    NetSeeded,
    /// The networked world with the store host crashed at a simulation step, the store syncing
    /// per `sync` (the crash test).
    NetCrash { step: u64, sync: SyncPolicy },
}

impl World {
    /// Whether the world is the networked one whatever the scenario says.
    pub fn forced_net(self) -> bool {
        matches!(self, World::NetSeeded | World::NetCrash { .. })
    }
}

/// Everything that makes a trace. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The scenario file.
    pub scenario: PathBuf,
    pub schedule: Schedule,
    pub implementation: Implementation,
    pub world: World,
    /// The rules that judge; a scenario's own checks judge only when every rule does.
    pub judging: Selection,
    /// The scenario (and its seed) the adapter process ran just before this run, when what it
    /// gave depended on it: a replay runs it first, unjudged, on the same process.
    pub after: Option<(PathBuf, u64)>,
}

/// Flags that cannot describe one run, each with a code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("--in-process replays in the in-process scheduler; drop --world net and --crash-at-step")]
    InProcessNetworked,
    #[error("--world net replays by seed; drop --choices")]
    ChoicesInNet,
    #[error("--crash-at-step replays the in-process reference by seed; drop --impl, --choices and --world")]
    CrashWithOthers,
    #[error("--after runs another scenario first on an adapter process: it needs --impl, in the in-process scheduler")]
    AfterWithoutAdapter,
    #[error("{}: a folder: replay takes one scenario file (`agentsim run {}` runs them all)", crate::scenario::printable(.0), crate::scenario::printable(.0))]
    ScenarioFolder(String),
    #[error("{}: a folder: --after takes one scenario file", crate::scenario::printable(.0))]
    AfterFolder(String),
    #[error(
        "the networked world forced by --world net or --crash-at-step runs the scripted schedule: drop --strategy"
    )]
    StrategyInNet,
    #[error("not a replay command (`agentsim replay FILE ...`): {}", crate::scenario::clip_message(.0))]
    NotACommand(String),
}

impl RunError {
    /// The error's code, as reports name it.
    pub fn code(&self) -> &'static str {
        match self {
            RunError::InProcessNetworked => "run.in-process-networked",
            RunError::ChoicesInNet => "run.choices-in-net",
            RunError::CrashWithOthers => "run.crash-with-others",
            RunError::AfterWithoutAdapter => "run.after-without-adapter",
            RunError::ScenarioFolder(_) => "run.scenario-folder",
            RunError::AfterFolder(_) => "run.after-folder",
            RunError::StrategyInNet => "run.strategy-in-net",
            RunError::NotACommand(_) => "run.not-a-command",
        }
    }
}

impl Run {
    /// The canonical run of `loaded` on the reference, judged by every rule.
    pub fn of(loaded: &LoadedScenario) -> Run {
        Run::at(loaded.path.clone())
    }

    /// The canonical run of the scenario at `path` on the reference, judged by every rule.
    pub fn at(path: PathBuf) -> Run {
        Run {
            scenario: path,
            schedule: Schedule::Seeded {
                strategy: StrategyKind::Scripted,
                seed: 0,
            },
            implementation: Implementation::reference(),
            world: World::Own,
            judging: Selection::all(),
            after: None,
        }
    }

    /// The run under `strategy` from `seed`.
    pub fn seeded(mut self, strategy: StrategyKind, seed: u64) -> Run {
        self.schedule = Schedule::Seeded { strategy, seed };
        self
    }

    /// The run on a fixed choice sequence.
    pub fn choosing(mut self, choices: Vec<usize>) -> Run {
        self.schedule = Schedule::Choices(choices);
        self
    }

    /// The run on `implementation`.
    pub fn on(mut self, implementation: &Implementation) -> Run {
        self.implementation = implementation.clone();
        self
    }

    /// The run in `world`.
    pub fn in_world(mut self, world: World) -> Run {
        self.world = world;
        self
    }

    /// The run judged by `judging`.
    pub fn judged_by(mut self, judging: &Selection) -> Run {
        self.judging = judging.clone();
        self
    }

    /// The run made right after `scenario` under `seed`, on the same adapter process.
    pub fn after(mut self, after: Option<(PathBuf, u64)>) -> Run {
        self.after = after;
        self
    }

    /// The strategy that labels the run: a choice sequence is one schedule of reduced
    /// exhaustive enumeration.
    pub fn strategy(&self) -> StrategyKind {
        match self.schedule {
            Schedule::Seeded { strategy, .. } => strategy,
            Schedule::Choices(_) => StrategyKind::Exhaustive {
                bound: 1,
                reduced: true,
            },
        }
    }

    /// The seed: the strategy's, and the networked world's (0 for a choice sequence).
    pub fn seed(&self) -> u64 {
        match self.schedule {
            Schedule::Seeded { seed, .. } => seed,
            Schedule::Choices(_) => 0,
        }
    }

    /// The choice sequence, when the run has one.
    pub fn choices(&self) -> Option<&[usize]> {
        match &self.schedule {
            Schedule::Choices(choices) => Some(choices),
            Schedule::Seeded { .. } => None,
        }
    }

    /// Whether this is the scenario's canonical schedule: the one its own checks describe.
    pub fn canonical(&self) -> bool {
        self.strategy() == StrategyKind::Scripted
    }

    /// Refuses flags that cannot describe one run.
    pub fn validate(&self) -> Result<(), RunError> {
        let choices = self.choices().is_some();
        let adapter = self.implementation.is_adapter();
        match self.world {
            World::NetSeeded if choices => return Err(RunError::ChoicesInNet),
            World::NetCrash { .. } if adapter || choices => return Err(RunError::CrashWithOthers),
            _ => {}
        }
        if self.world.forced_net() && self.strategy() != StrategyKind::Scripted {
            return Err(RunError::StrategyInNet);
        }
        if self.after.is_some() && (!adapter || self.world.forced_net()) {
            return Err(RunError::AfterWithoutAdapter);
        }
        Ok(())
    }

    /// The one command that replays this run, ready to paste into a shell.
    pub fn command(&self) -> String {
        command::render(self)
    }

    /// A command [`Run::command`] printed, read back.
    pub fn parse(command: &str) -> Result<Run, RunError> {
        command::parse(command)
    }

    /// Executes the run on a new subject of its implementation and judges it.
    pub fn execute(&self, loaded: &LoadedScenario) -> CaseReport {
        execute::execute(self, loaded, Driver::new())
    }

    /// Executes the run as `driver` says and judges it. `loaded` is the run's scenario.
    pub fn execute_with(&self, loaded: &LoadedScenario, driver: Driver<'_>) -> CaseReport {
        execute::execute(self, loaded, driver)
    }
}

#[cfg(test)]
mod tests;
