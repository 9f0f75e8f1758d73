//! A run as the command that replays it, and back: [`render`] prints `agentsim replay ...`,
//! [`parse`] reads it through the same flags `agentsim replay` takes ([`ReplayArgs`]). Paths and
//! commands are shell-quoted, so a scenario path or an adapter command with spaces or shell
//! metacharacters replays as printed.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use super::{Run, RunError, Schedule, World};
use crate::implementation::{Base, Implementation};
use crate::sim::StrategyKind;
use crate::store::SyncPolicy;
use crate::zoo::Mutant;

/// Where a scenario runs, as `--world` spells it: the scenario's own world (a scenario with a
/// `net` block runs in the networked world anyway), or the networked world with faults drawn
/// from the seed as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WorldKind {
    #[default]
    Sim,
    Net,
}

/// The fairness test's variant of the reference (`sim::variant`), as `--variant` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VariantKind {
    Plain,
    SerialObservers,
}

/// A choice sequence: the index taken at each step of a run (`0.2.1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choices(pub Vec<usize>);

/// Which rules judge (`run`, `explore`, `replay`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Judging {
    /// Judge only these rules: comma-separated rule IDs or areas (`POISON,PERSIST-6`).
    #[arg(long, value_name = "AREA|ID,...", value_parser = crate::check::Selection::parse_rules)]
    rules: Option<crate::check::Selection>,
    /// Judge only the rules of this level (`must`: the commit contract; `should`: the course's
    /// encodings). A scenario's own `expect` block is judged only when every rule is.
    #[arg(long, value_parser = parse_level)]
    level: Option<crate::check::Level>,
}

impl Judging {
    pub fn selection(&self) -> crate::check::Selection {
        self.rules.clone().unwrap_or_default().with_level(self.level)
    }
}

/// Everything `agentsim replay` is told about the run it replays: the flags a printed replay
/// command carries.
#[derive(clap::Args, Debug, Clone)]
pub struct ReplayArgs {
    pub file: PathBuf,
    #[arg(long, default_value = "scripted", value_parser = StrategyKind::parse)]
    pub strategy: StrategyKind,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Replay on a deliberately broken reference (a mutant of the zoo, `agentsim mutants`).
    #[arg(long, value_parser = parse_mutant)]
    pub mutant: Option<Mutant>,
    /// Replay on the fairness test's variant of the reference.
    #[arg(long, value_enum, hide = true)]
    pub variant: Option<VariantKind>,
    /// Replay on an implementation behind the adapter protocol.
    #[arg(long = "impl", value_name = "CMD")]
    pub implementation: Option<String>,
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub step_timeout_ms: u64,
    /// Replay an explicit choice sequence (`0.2.1`), as exhaustive exploration prints it.
    #[arg(long, value_parser = parse_choices)]
    pub choices: Option<Choices>,
    /// With `--impl`: the adapter process runs this scenario first (unjudged, same strategy
    /// and seed), as `run --check-determinism` ran the case when its run depended on the
    /// run before.
    #[arg(long, value_name = "FILE")]
    pub after: Option<PathBuf>,
    /// With `--after`: the seed of that scenario's run (default: `--seed`), as an
    /// exploration's replay names it.
    #[arg(long, value_name = "N", requires = "after")]
    pub after_seed: Option<u64>,
    /// `net`: replay in the networked world with the faults drawn from `--seed`.
    #[arg(long, value_enum, default_value_t = WorldKind::Sim)]
    pub world: WorldKind,
    /// Replay a scenario with a `net` block in the in-process scheduler, as `explore`
    /// schedules it, instead of in the networked world (`run`'s and replay's default).
    #[arg(long)]
    pub in_process: bool,
    /// Replay one crash point of `crash-test`: the networked world, the store host crashed
    /// at this simulation step.
    #[arg(long, value_name = "STEP")]
    pub crash_at_step: Option<u64>,
    /// With `--crash-at-step`: the store's sync policy.
    #[arg(long, value_enum, default_value_t = SyncPolicy::EveryAppend)]
    pub sync: SyncPolicy,
    #[command(flatten)]
    pub judging: Judging,
}

impl ReplayArgs {
    /// The run these flags describe; flags that cannot go together are refused in the order a
    /// reader checks them.
    pub fn into_run(self) -> Result<Run, RunError> {
        let net = self.world == WorldKind::Net;
        let choices = self.choices.is_some();
        let adapter = self.implementation.is_some();
        let crash = self.crash_at_step.is_some();
        if self.in_process && (net || crash) {
            return Err(RunError::InProcessNetworked);
        }
        if net && choices {
            return Err(RunError::ChoicesInNet);
        }
        if crash && (adapter || choices || net) {
            return Err(RunError::CrashWithOthers);
        }
        if self.after.is_some() && (!adapter || net || crash) {
            return Err(RunError::AfterWithoutAdapter);
        }
        let world = match (self.crash_at_step, net, self.in_process) {
            (Some(step), _, _) => World::NetCrash { step, sync: self.sync },
            (None, true, _) => World::NetSeeded,
            (None, false, true) => World::InProcess,
            (None, false, false) => World::Own,
        };
        let schedule = match self.choices {
            Some(Choices(choices)) => Schedule::Choices(choices),
            // The networked worlds forced by a flag run their own schedule.
            None if world.forced_net() => Schedule::Seeded {
                strategy: StrategyKind::Scripted,
                seed: self.seed,
            },
            None => Schedule::Seeded {
                strategy: self.strategy,
                seed: self.seed,
            },
        };
        let base = match (self.implementation, self.variant) {
            (Some(command), _) => Implementation::adapter(command, Duration::from_millis(self.step_timeout_ms)),
            (None, Some(VariantKind::Plain)) => Implementation::conforming_variant(),
            (None, Some(VariantKind::SerialObservers)) => Implementation::conforming_variant_with_serial_observers(),
            (None, None) => Implementation::reference(),
        };
        let run = Run {
            scenario: self.file,
            after: self.after.map(|path| (path, self.after_seed.unwrap_or(self.seed))),
            schedule,
            implementation: base.with_mutant(self.mutant),
            world,
            judging: self.judging.selection(),
        };
        run.validate()?;
        Ok(run)
    }
}

/// The command that replays `run`.
pub(super) fn render(run: &Run) -> String {
    let mut words = vec![
        "agentsim".to_string(),
        "replay".to_string(),
        shell_quote(&run.scenario.display().to_string()),
    ];
    match run.world {
        World::Own => {}
        World::InProcess => words.push("--in-process".into()),
        World::NetSeeded => words.extend(["--world".into(), "net".into()]),
        World::NetCrash { step, sync } => {
            words.extend(["--crash-at-step".into(), step.to_string()]);
            words.extend(["--sync".into(), sync_name(sync).into()]);
        }
    }
    match &run.schedule {
        Schedule::Choices(choices) => words.extend(["--choices".into(), shell_quote(&render_choices(choices))]),
        Schedule::Seeded { strategy, seed } => {
            if *strategy != StrategyKind::Scripted && !run.world.forced_net() {
                words.extend(["--strategy".into(), strategy.spelling()]);
            }
            if *seed != 0 || strategy.uses_seed() || run.world.forced_net() {
                words.extend(["--seed".into(), seed.to_string()]);
            }
        }
    }
    if let Some(mutant) = run.implementation.mutant_name() {
        words.extend(["--mutant".into(), shell_quote(mutant)]);
    }
    match &run.implementation.base {
        Base::Reference => {}
        Base::ConformingVariant { serial_observers } => {
            let variant = if *serial_observers { "serial-observers" } else { "plain" };
            words.extend(["--variant".into(), variant.into()]);
        }
        Base::Adapter { command, step_timeout } => {
            words.extend(["--impl".into(), shell_quote(command)]);
            words.extend(["--step-timeout-ms".into(), step_timeout.as_millis().to_string()]);
        }
    }
    if let Some((after, after_seed)) = &run.after {
        words.extend(["--after".into(), shell_quote(&after.display().to_string())]);
        if *after_seed != run.seed() {
            words.extend(["--after-seed".into(), after_seed.to_string()]);
        }
    }
    if let Some(flags) = run.judging.flags() {
        words.push(flags);
    }
    words.join(" ")
}

/// `agentsim replay` as a command of its own, for reading a printed command back.
#[derive(Parser)]
#[command(name = "agentsim replay")]
struct ReplayCommand {
    #[command(flatten)]
    args: ReplayArgs,
}

/// Reads back a command [`render`] printed.
pub(super) fn parse(command: &str) -> Result<Run, RunError> {
    let words = shell_words(command).map_err(RunError::NotACommand)?;
    let rest = match words.as_slice() {
        [program, verb, rest @ ..] if program == "agentsim" && verb == "replay" => rest,
        _ => return Err(RunError::NotACommand(format!("`{command}`"))),
    };
    let args = std::iter::once("agentsim replay".to_string()).chain(rest.iter().cloned());
    let parsed = ReplayCommand::try_parse_from(args).map_err(|error| {
        let text = error.to_string();
        RunError::NotACommand(text.lines().next().unwrap_or_default().to_string())
    })?;
    parsed.args.into_run()
}

fn sync_name(sync: SyncPolicy) -> &'static str {
    match sync {
        SyncPolicy::EveryAppend => "every-append",
        SyncPolicy::None => "none",
    }
}

/// `0.2.1`.
pub fn render_choices(choices: &[usize]) -> String {
    choices.iter().map(ToString::to_string).collect::<Vec<_>>().join(".")
}

fn parse_choices(text: &str) -> Result<Choices, String> {
    text.split('.')
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.parse()
                .map_err(|_| format!("`{text}`: expected choice indexes like 0.2.1"))
        })
        .collect::<Result<Vec<usize>, String>>()
        .map(Choices)
}

fn parse_level(text: &str) -> Result<crate::check::Level, String> {
    crate::check::Level::parse(text).ok_or_else(|| format!("`{text}`: expected must or should"))
}

/// A mutant of the zoo by name, or the names there are.
pub fn parse_mutant(text: &str) -> Result<Mutant, String> {
    Mutant::from_name(text).ok_or_else(|| {
        format!(
            "unknown mutant `{text}`: expected one of {}",
            crate::zoo::names().join(", ")
        )
    })
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

/// A command line split into words as a POSIX shell splits it: blanks separate words; single
/// quotes keep everything; double quotes keep everything but `\"`, `\\`, `\$` and `` \` ``; a
/// backslash outside quotes keeps the next character.
pub fn shell_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if let Some(done) = word.take() {
                    words.push(done);
                }
            }
            '\'' => {
                let word = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("an unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                let word = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("an unterminated double quote".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("an unterminated double quote".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("a backslash at the end".into()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}
