//! The conformance runner: loads scenario files, runs each under a strategy and seed on a
//! Subject, and judges the trace with every checker (plus, on the canonical schedule, the
//! scenario's own expectations).

use std::path::{Path, PathBuf};

use crate::check::{self, expect::check_expectations, Timeline, Violation};
use crate::implementation::Implementation;
use crate::net::{NetOptions, NetRun};
use crate::replay::{ReplaySpec, ReplayWorld};
use crate::scenario::{self, locate, LoadedScenario, ScenarioError};
use crate::sim::{make_strategy, simulate_with, BoxedSubject, RunOutcome, StrategyKind, Subject, SubjectFailure};
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
    /// The `--impl` adapter command the case ran on, with its step timeout in milliseconds;
    /// `None` for the in-process reference.
    pub implementation: Option<(String, u64)>,
    /// The mutant of the zoo the case ran on, by name.
    pub mutant: Option<String>,
    /// The fixed choice sequence the case ran on (exhaustive exploration).
    pub choices: Option<Vec<usize>>,
    /// Where the implementation's trace first departs from the reference's (`--impl` runs).
    pub divergence: Option<crate::protocol::diff::Divergence>,
    /// Set when the case ran in the networked world.
    pub net: Option<NetInfo>,
    /// The flags of the rules that judged it, when not every rule did (`restrict`).
    pub judging: Option<String>,
    /// The scenario the adapter process ran just before the case's run, when what it gave
    /// depended on it (a `--check-determinism` difference after another scenario).
    pub after: Option<(PathBuf, u64)>,
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
    /// The store host crashed at this step, with this sync policy (the crash test).
    pub crash: Option<(u64, crate::store::SyncPolicy)>,
}

impl CaseReport {
    /// A report that has not run yet: `Passed` with nothing attached.
    fn new(loaded: &LoadedScenario, strategy: StrategyKind, seed: u64) -> CaseReport {
        CaseReport::unrun(&loaded.name, loaded.path.clone(), strategy, seed)
    }

    /// A report of the scenario `name` (at `path`) that has not run yet: `Passed` with nothing
    /// attached.
    pub(crate) fn unrun(name: &str, path: PathBuf, strategy: StrategyKind, seed: u64) -> CaseReport {
        CaseReport {
            name: name.to_string(),
            path,
            strategy,
            seed,
            verdict: Verdict::Passed,
            violations: Vec::new(),
            outcome: None,
            implementation: None,
            mutant: None,
            choices: None,
            divergence: None,
            net: None,
            judging: None,
            after: None,
        }
    }

    /// The case broke after all, by a breach found once it had been judged (a bad answer to the
    /// `reset` that ended its run, which shows only in the adapter's next line): its trace and
    /// judgement go, as for a case that broke during its run.
    pub fn break_with(&mut self, failure: SubjectFailure) {
        self.verdict = Verdict::Broken(failure);
        self.violations.clear();
        self.outcome = None;
        self.divergence = None;
    }

    /// Names what the case ran on: the mutant and the adapter command its replay carries.
    fn label(&mut self, implementation: &Implementation) {
        self.mutant = implementation.mutant_name().map(str::to_string);
        self.implementation = implementation.adapter_command();
    }

    /// The report judged by `violations` on `outcome`, its root cause first.
    fn judged(
        mut self,
        scenario: &crate::scenario::Scenario,
        violations: Vec<Violation>,
        outcome: RunOutcome,
    ) -> CaseReport {
        self.verdict = if violations.is_empty() {
            Verdict::Passed
        } else {
            Verdict::Failed
        };
        self.violations = check::cause::order_by_cause(scenario, &outcome.trace, &outcome.stored(scenario), violations);
        self.outcome = Some(outcome);
        self
    }

    /// Sets where the implementation's trace first departs from the reference's, and ranks the
    /// violations again with it: the root cause is never one cited only on lines identical to
    /// the reference's (`check::cause`).
    pub fn set_divergence(&mut self, divergence: Option<crate::protocol::diff::Divergence>) {
        check::cause::rank_by_importance(
            &mut self.violations,
            divergence.as_ref().map(|divergence| divergence.line),
        );
        self.divergence = divergence;
    }

    /// For a case of anything but the reference itself (a mutant in process): its divergence
    /// from the reference's run of the same scenario, strategy and seed, and its violations
    /// ranked with it, as an implementation's are (`run --impl`), so that its root cause reads
    /// the same in process and over the wire.
    pub fn against_reference(mut self, loaded: &LoadedScenario) -> CaseReport {
        if self.verdict != Verdict::Failed || self.mutant.is_none() {
            return self;
        }
        let reference = run_case(loaded, self.strategy, self.seed, &Implementation::reference());
        if let (Some(ours), Some(theirs)) = (&self.outcome, &reference.outcome) {
            let divergence = crate::protocol::diff::first_divergence(&theirs.trace, &ours.trace);
            self.set_divergence(divergence);
        }
        self
    }

    /// Keeps only the violations `selection` judges; a failed case with none left passes.
    pub fn restrict(&mut self, selection: &check::Selection) {
        if selection.is_all() {
            return;
        }
        self.judging = selection.flags();
        self.violations.retain(|violation| selection.judges(&violation.rule));
        if self.verdict == Verdict::Failed && self.violations.is_empty() {
            self.verdict = Verdict::Passed;
        }
    }

    /// The verdict's word, as every report format spells it.
    pub fn status(&self) -> &'static str {
        match self.verdict {
            Verdict::Passed => "passed",
            Verdict::Failed => "failed",
            Verdict::BadScenario(_) => "bad-scenario",
            Verdict::Broken(_) => "broken",
            Verdict::NotApplicable { .. } => "not-applicable",
        }
    }

    /// Everything that determines this case's trace.
    pub fn replay_spec(&self) -> ReplaySpec {
        let world = match self.net {
            Some(NetInfo {
                crash: Some((step, sync)),
                ..
            }) => ReplayWorld::NetCrash { step, sync },
            Some(NetInfo {
                seeded_faults: true, ..
            }) => ReplayWorld::NetSeeded,
            Some(_) => ReplayWorld::Net,
            None => ReplayWorld::Sim,
        };
        ReplaySpec {
            path: self.path.clone(),
            strategy: self.strategy,
            seed: self.seed,
            choices: self.choices.clone(),
            mutant: self.mutant.clone(),
            world,
            implementation: self.implementation.clone(),
            judging: self.judging.clone(),
            after: self.after.clone(),
        }
    }

    /// The one command that replays this case.
    pub fn replay_command(&self) -> String {
        self.replay_spec().command()
    }
}

pub use crate::replay::shell_quote;

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

/// Runs one scenario on a new subject of `implementation` and judges it.
pub fn run_case(
    loaded: &LoadedScenario,
    strategy: StrategyKind,
    seed: u64,
    implementation: &Implementation,
) -> CaseReport {
    run_case_owned(loaded, strategy, seed, implementation, &mut implementation.subject())
}

/// Runs one scenario on `subject`, built from `implementation` (which labels the report and
/// its replay command), and judges it; a scenario with a `net` block takes the subject into the
/// networked world for the run and gives it back.
pub fn run_case_owned(
    loaded: &LoadedScenario,
    strategy: StrategyKind,
    seed: u64,
    implementation: &Implementation,
    subject: &mut BoxedSubject,
) -> CaseReport {
    let mut chooser = chooser_for(loaded, strategy, seed);
    run_case_with(
        loaded,
        strategy,
        seed,
        chooser.as_mut(),
        implementation,
        Driven::Owned(subject),
    )
}

/// [`run_case_owned`] on a subject the caller keeps (a probe of the reference's insides, say):
/// the in-process scheduler drives it; a scenario with a `net` block runs in the networked
/// world on a new subject of `implementation`, since that world must own its subject.
pub fn run_case_on(
    loaded: &LoadedScenario,
    strategy: StrategyKind,
    seed: u64,
    implementation: &Implementation,
    subject: &mut dyn Subject,
) -> CaseReport {
    let mut chooser = chooser_for(loaded, strategy, seed);
    run_case_with(
        loaded,
        strategy,
        seed,
        chooser.as_mut(),
        implementation,
        Driven::Borrowed(subject),
    )
}

/// The scenario's canonical schedule (pinned, or scripted), or the strategy's.
fn chooser_for(loaded: &LoadedScenario, strategy: StrategyKind, seed: u64) -> Box<dyn crate::sim::Strategy> {
    match (&loaded.scenario.schedule, strategy) {
        (Some(schedule), StrategyKind::Scripted) => Box::new(crate::sim::Replay::new(schedule.clone())),
        _ => make_strategy(strategy, seed),
    }
}

/// Runs one scenario on a fixed choice sequence (as `explore --strategy exhaustive` found it);
/// judged by the rules alone, like every schedule but the canonical one.
pub fn run_case_on_choices(
    loaded: &LoadedScenario,
    choices: &[usize],
    implementation: &Implementation,
    subject: &mut BoxedSubject,
) -> CaseReport {
    let mut chooser = crate::sim::Replay::new(choices.to_vec());
    let mut report = run_case_with(
        loaded,
        StrategyKind::Exhaustive {
            bound: 1,
            reduced: true,
        },
        0,
        &mut chooser,
        implementation,
        Driven::Owned(subject),
    );
    // The whole sequence the run took, not just its forced prefix.
    report.choices = report
        .outcome
        .as_ref()
        .map(|outcome| outcome.choices.iter().map(|(index, _)| *index).collect())
        .or_else(|| Some(choices.to_vec()));
    report
}

/// The subject a case drives: one the networked world may take for the run, or one the
/// caller keeps.
enum Driven<'a> {
    Owned(&'a mut BoxedSubject),
    Borrowed(&'a mut dyn Subject),
}

/// Runs one scenario with the given chooser; `strategy`, `seed` and `implementation` label the
/// report.
fn run_case_with(
    loaded: &LoadedScenario,
    strategy: StrategyKind,
    seed: u64,
    chooser: &mut dyn crate::sim::Strategy,
    implementation: &Implementation,
    driven: Driven<'_>,
) -> CaseReport {
    let mut report = CaseReport::new(loaded, strategy, seed);
    report.label(implementation);
    if loaded.scenario.net.is_some() {
        let options = NetOptions {
            seed,
            ..NetOptions::default()
        };
        return match driven {
            Driven::Owned(subject) => run_case_net(loaded, strategy, &options, implementation, subject),
            Driven::Borrowed(_) => run_case_net(
                loaded,
                strategy,
                &options,
                implementation,
                &mut implementation.subject(),
            ),
        };
    }
    let subject: &mut dyn Subject = match driven {
        Driven::Owned(subject) => subject,
        Driven::Borrowed(subject) => subject,
    };
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
    let mut violations = outcome.violations(scenario);
    // The scenario's own checks (request checks of the scripted model, `expect`) describe the
    // reference on the canonical schedule; other schedules and other implementations are
    // judged by the rules alone.
    if strategy == StrategyKind::Scripted {
        let scenario_checks = implementation.judged_by_scenario_checks();
        for finding in outcome.findings.iter().filter(|_| scenario_checks) {
            violations.push(Violation {
                rule: finding.rule.clone(),
                clause: None,
                lines: vec![finding.line],
                message: finding.message.clone(),
                evident_at: None,
            });
        }
        if let Some(error) = never_delivered(loaded, &outcome) {
            report.verdict = Verdict::BadScenario(error);
            report.outcome = Some(outcome);
            return report;
        }
        if scenario_checks {
            let stored = outcome.stored(scenario);
            let timeline = Timeline::new(scenario, &outcome.trace, &stored);
            violations.extend(check_expectations(&timeline));
        }
    }
    report.judged(scenario, violations, outcome)
}

/// Runs one scenario in the networked world on `subject` (lent to the world for the run) and
/// judges it: every rule always; the scenario's own expectations too when no fault came from
/// the seed and `strategy` is the canonical one.
pub fn run_case_net(
    loaded: &LoadedScenario,
    strategy: StrategyKind,
    options: &NetOptions,
    implementation: &Implementation,
    subject: &mut BoxedSubject,
) -> CaseReport {
    let mut report = CaseReport {
        net: Some(NetInfo {
            turmoil_seed: crate::net::turmoil_seed(options.seed),
            seeded_faults: options.seeded_faults,
            crash: options.crash_at_step.map(|step| {
                let sync = loaded.scenario.net.as_ref().map(|net| net.sync).unwrap_or_default();
                (step, sync)
            }),
        }),
        ..CaseReport::new(loaded, strategy, options.seed)
    };
    report.label(implementation);
    let run = crate::net::run_net(&loaded.scenario, options, subject);
    let outcome = match run {
        Ok(NetRun {
            failure: Some(SubjectFailure::Unsupported { operation, reason }),
            ..
        }) => {
            report.verdict = Verdict::NotApplicable {
                reason: format!("`{operation}` is unsupported: {reason}"),
            };
            return report;
        }
        Ok(NetRun {
            failure: Some(failure), ..
        }) => {
            report.verdict = Verdict::Broken(failure);
            return report;
        }
        Ok(run) => run.outcome,
        Err(error) => {
            report.verdict = Verdict::Broken(SubjectFailure::Protocol {
                message: error.to_string(),
            });
            return report;
        }
    };
    let scenario = &loaded.scenario;
    let mut violations = outcome.violations(scenario);
    if strategy == StrategyKind::Scripted && !options.seeded_faults && implementation.judged_by_scenario_checks() {
        let stored = outcome.stored(scenario);
        let timeline = Timeline::new(scenario, &outcome.trace, &stored);
        violations.extend(check_expectations(&timeline));
    }
    report.judged(scenario, violations, outcome)
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
