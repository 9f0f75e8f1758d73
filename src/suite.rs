//! The conformance runner: loads scenario files, runs each under a strategy and seed on a
//! Subject, and judges the trace with every checker (plus, on the canonical schedule, the
//! scenario's own expectations).

use std::path::{Path, PathBuf};

use crate::check::{self, expect::check_expectations, Timeline, Violation};
use crate::net::NetOptions;
use crate::scenario::{self, locate, LoadedScenario, ScenarioError};
use crate::sim::{make_strategy, simulate_with, RunOutcome, StrategyKind, Subject, SubjectFailure};
use crate::trace::Event;

/// How one case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed,
    /// The subject could not be driven (exit code 3).
    Broken(SubjectFailure),
    /// The scenario cannot run as written (exit code 2).
    BadScenario(ScenarioError),
    /// The implementation declared an operation the scenario uses unsupported (`hello`); the
    /// case neither passes nor fails, and does not change the exit code.
    NotApplicable {
        reason: String,
    },
}

/// One scenario run under one (strategy, seed).
#[derive(Debug, Clone)]
pub struct CaseReport {
    pub name: String,
    pub path: PathBuf,
    pub strategy: StrategyKind,
    pub seed: u64,
    pub verdict: Verdict,
    pub violations: Vec<Violation>,
    pub outcome: Option<RunOutcome>,
    /// The `--impl` adapter command the case ran on; `None` for the in-process reference.
    pub implementation: Option<String>,
    /// Where the implementation's trace first departs from the reference's (`--impl` runs).
    pub divergence: Option<crate::protocol::diff::Divergence>,
    /// Set when the case ran in the networked world.
    pub net: Option<NetInfo>,
}

/// Where a scenario runs: the in-process scheduler (a scenario with a `net` block runs in the
/// networked world anyway), or the networked world with faults drawn from the seed as well.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum WorldKind {
    #[default]
    Sim,
    Net,
}

/// How a case ran in the networked world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetInfo {
    /// The seed turmoil's RNG got (derived from the kit's seed).
    pub turmoil_seed: u64,
    /// Faults drawn from the seed were added to the scenario's (`--world net`).
    pub seeded_faults: bool,
}

impl CaseReport {
    /// A report that has not run yet: `Passed` with nothing attached.
    fn new(loaded: &LoadedScenario, strategy: StrategyKind, seed: u64) -> CaseReport {
        CaseReport {
            name: loaded.name.clone(),
            path: loaded.path.clone(),
            strategy,
            seed,
            verdict: Verdict::Passed,
            violations: Vec::new(),
            outcome: None,
            implementation: None,
            divergence: None,
            net: None,
        }
    }

    /// The report judged by `violations` on `outcome`.
    fn judged(mut self, violations: Vec<Violation>, outcome: RunOutcome) -> CaseReport {
        self.verdict = if violations.is_empty() {
            Verdict::Passed
        } else {
            Verdict::Failed
        };
        self.violations = violations;
        self.outcome = Some(outcome);
        self
    }

    /// The one command that replays this case.
    pub fn replay_command(&self) -> String {
        if let Some(net) = self.net {
            let world = if net.seeded_faults { " --world net" } else { "" };
            return format!("agentsim replay {}{world} --seed {}", self.path.display(), self.seed);
        }
        let mut command = replay_command(&self.path, self.strategy, self.seed);
        if let Some(implementation) = &self.implementation {
            command.push_str(&format!(" --impl {}", shell_quote(implementation)));
        }
        command
    }
}

pub fn replay_command(path: &Path, strategy: StrategyKind, seed: u64) -> String {
    let mut command = format!("agentsim replay {}", path.display());
    if strategy != StrategyKind::Scripted {
        command.push_str(&format!(" --strategy {}", strategy.spelling()));
    }
    if strategy.uses_seed() {
        command.push_str(&format!(" --seed {seed}"));
    }
    command
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

/// Loads every scenario file under `paths` (files or folders), sorted by name.
pub fn load_corpus(paths: &[PathBuf]) -> Result<Vec<LoadedScenario>, ScenarioError> {
    let mut loaded = Vec::new();
    for root in paths {
        let files = scenario::discover(root).map_err(|error| ScenarioError {
            file: root.clone(),
            line: 0,
            field: "-".into(),
            message: format!("cannot read: {error}"),
        })?;
        let base = if root.is_file() {
            root.parent().unwrap_or(Path::new(""))
        } else {
            root.as_path()
        };
        for file in files {
            let name = scenario::name_of(base, &file);
            loaded.push(scenario::load(&file, &name, check::RULE_IDS)?);
        }
    }
    loaded.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(loaded)
}

/// Runs one scenario and judges it.
pub fn run_case(loaded: &LoadedScenario, strategy: StrategyKind, seed: u64, subject: &mut dyn Subject) -> CaseReport {
    let mut chooser = make_strategy(strategy, seed);
    run_case_with(loaded, strategy, seed, chooser.as_mut(), subject)
}

/// Runs one scenario on a fixed choice sequence (as `explore --strategy exhaustive` found it);
/// judged by the rules alone, like every schedule but the canonical one.
pub fn run_case_on_choices(loaded: &LoadedScenario, choices: &[usize], subject: &mut dyn Subject) -> CaseReport {
    let mut chooser = crate::sim::Replay::new(choices.to_vec());
    run_case_with(loaded, StrategyKind::Exhaustive { bound: 1 }, 0, &mut chooser, subject)
}

/// Runs one scenario with the given chooser; `strategy` and `seed` label the report.
pub fn run_case_with(
    loaded: &LoadedScenario,
    strategy: StrategyKind,
    seed: u64,
    chooser: &mut dyn crate::sim::Strategy,
    subject: &mut dyn Subject,
) -> CaseReport {
    let mut report = CaseReport::new(loaded, strategy, seed);
    if loaded.scenario.net.is_some() {
        let Some(mutations) = subject.reference_mutations() else {
            report.verdict = Verdict::NotApplicable {
                reason: "the networked world (`net`) runs the in-process reference only".into(),
            };
            return report;
        };
        let options = NetOptions {
            seed,
            mutations,
            ..NetOptions::default()
        };
        return run_case_net(loaded, strategy, &options);
    }
    let canonical = strategy == StrategyKind::Scripted;
    let outcome = match simulate_with(&loaded.scenario, subject, chooser, canonical) {
        Ok(outcome) => outcome,
        Err(SubjectFailure::Unsupported { operation, reason }) => {
            report.verdict = Verdict::NotApplicable {
                reason: format!("`{operation}` is unsupported: {reason}"),
            };
            return report;
        }
        Err(failure) => {
            report.verdict = Verdict::Broken(failure);
            return report;
        }
    };
    let scenario = &loaded.scenario;
    let mut violations = check::check_all(scenario, &outcome.trace, &outcome.store);
    // The scenario's own checks (request checks of the scripted model, `expect`) describe the
    // canonical schedule; other schedules are judged by the rules alone.
    if strategy == StrategyKind::Scripted {
        for finding in &outcome.findings {
            violations.push(Violation {
                rule: finding.rule.clone(),
                lines: vec![finding.line],
                message: finding.message.clone(),
            });
        }
        if let Some(error) = never_delivered(loaded, &outcome) {
            report.verdict = Verdict::BadScenario(error);
            report.outcome = Some(outcome);
            return report;
        }
        let timeline = Timeline::new(scenario, &outcome.trace, &outcome.store);
        violations.extend(check_expectations(&timeline));
    }
    report.judged(violations, outcome)
}

/// Runs one scenario in the networked world and judges it: every rule always; the scenario's
/// own expectations too when no fault came from the seed and `strategy` is the canonical one.
pub fn run_case_net(loaded: &LoadedScenario, strategy: StrategyKind, options: &NetOptions) -> CaseReport {
    let mut report = CaseReport {
        net: Some(NetInfo {
            turmoil_seed: crate::net::turmoil_seed(options.seed),
            seeded_faults: options.seeded_faults,
        }),
        ..CaseReport::new(loaded, strategy, options.seed)
    };
    let outcome = match crate::net::run_net(&loaded.scenario, options) {
        Ok(run) => run.outcome,
        Err(error) => {
            report.verdict = Verdict::Broken(SubjectFailure::Protocol {
                message: error.to_string(),
            });
            return report;
        }
    };
    let scenario = &loaded.scenario;
    let mut violations = check::check_all(scenario, &outcome.trace, &outcome.store);
    if strategy == StrategyKind::Scripted && !options.seeded_faults {
        let timeline = Timeline::new(scenario, &outcome.trace, &outcome.store);
        violations.extend(check_expectations(&timeline));
    }
    report.judged(violations, outcome)
}

/// On the canonical schedule, an operation whose `after` never held is a scenario error.
fn never_delivered(loaded: &LoadedScenario, outcome: &RunOutcome) -> Option<ScenarioError> {
    let Some(Event::End { pending, undelivered }) = outcome.trace.events.last() else {
        return None;
    };
    let op = undelivered.first()?;
    let index = op.0 as usize - 1;
    let text = std::fs::read_to_string(&loaded.path).unwrap_or_default();
    let field = format!("operations[{index}].after");
    Some(ScenarioError {
        file: loaded.path.clone(),
        line: locate::line_of(&text, &locate::parse_path(&field)),
        field,
        message: format!(
            "this condition never held on the canonical schedule (the run ended with {} pending effects)",
            pending.len()
        ),
    })
}
