//! Executing a [`Run`]: the trace, then the judgement.
//!
//! One path for every runner. The trace comes from the in-process scheduler or the networked
//! world (the run's [`World`] and the scenario's `net` block decide), on a subject the caller
//! lends (a worker's adapter process, a probe) or a new one of the run's implementation. The
//! rules judge every trace; on the canonical schedule the scenario's own checks judge the
//! in-process reference too. A run of anything but the reference is then compared with the
//! reference's run of the same inputs (adapters always, mutants when they fail), and the
//! run's rule selection is applied last.

use std::time::Duration;

use crate::check::{self, expect::check_expectations, Reached, Timeline, Violation};
use crate::implementation::Implementation;
use crate::net::{NetOptions, NetRun};
use crate::oracle::{self, Difference, Freedoms};
use crate::protocol::{ExternalSubject, SharedExternal};
use crate::scenario::{locate, LoadedScenario, Scenario, ScenarioError};
use crate::sim::reference::ReferenceSubject;
use crate::sim::{make_strategy, simulate_with, BoxedSubject, RunOutcome, Strategy, Subject, SubjectFailure};
use crate::trace::Event;

use super::{CaseReport, NetInfo, Run, Schedule, Verdict, World};

/// How a run is driven, beyond what makes its trace: the subject (lent by the caller, or a new
/// one of the run's implementation), a chooser that replaces the run's schedule (a guided
/// search's, an enumeration's: the report then carries the choices taken), and what the caller
/// wants back besides the report.
#[derive(Default)]
pub struct Driver<'a> {
    subject: Lent<'a>,
    chooser: Option<&'a mut dyn Strategy>,
    raw_divergence: bool,
    reached: Option<&'a mut Option<Reached>>,
    /// Leaves out the comparison with the reference's run of the same inputs.
    alone: bool,
}

/// The subject a run drives.
#[derive(Default)]
enum Lent<'a> {
    /// A new subject of the run's implementation; an adapter gets a process of its own, which
    /// runs the run's `after` scenario first and is shut down after it (its last reset
    /// judged).
    #[default]
    New,
    /// A subject the networked world may take for the run (it is given back).
    Owned(&'a mut BoxedSubject),
    /// A subject the caller keeps (a probe of the reference's insides): a scenario with a `net`
    /// block then runs on a new subject, since the networked world must own its subject.
    Borrowed(&'a mut dyn Subject),
}

impl<'a> Driver<'a> {
    /// A new subject of the run's implementation.
    pub fn new() -> Driver<'a> {
        Driver::default()
    }

    /// On `subject` (a worker's adapter process, say), which the networked world may take for
    /// the run and gives back.
    pub fn on(subject: &'a mut BoxedSubject) -> Driver<'a> {
        Driver {
            subject: Lent::Owned(subject),
            ..Driver::default()
        }
    }

    /// On `subject`, which the caller keeps.
    pub fn borrowing(subject: &'a mut dyn Subject) -> Driver<'a> {
        Driver {
            subject: Lent::Borrowed(subject),
            ..Driver::default()
        }
    }

    /// Choices from `chooser` instead of the run's schedule; an abandoned run (a reduced
    /// enumeration's) is not judged.
    pub fn choosing(mut self, chooser: &'a mut dyn Strategy) -> Driver<'a> {
        self.chooser = Some(chooser);
        self
    }

    /// The raw first divergence from the reference (timestamps and appended ids included).
    pub fn raw_divergence(mut self, raw: bool) -> Driver<'a> {
        self.raw_divergence = raw;
        self
    }

    /// Without the reference's run of the same inputs: no divergence, and the violations
    /// ranked without it (exploration, which reports pairs, not divergences).
    pub fn alone(mut self) -> Driver<'a> {
        self.alone = true;
        self
    }

    /// Also gives back the situations and interleaving pairs the trace reached.
    pub fn reaching(mut self, reached: &'a mut Option<Reached>) -> Driver<'a> {
        self.reached = Some(reached);
        self
    }
}

/// Executes `run` as `driver` says and judges it (`Run::execute_with`).
pub(super) fn execute(run: &Run, loaded: &LoadedScenario, driver: Driver<'_>) -> CaseReport {
    let Driver {
        subject,
        chooser,
        raw_divergence,
        reached,
        alone,
    } = driver;
    let mut report = match subject {
        Lent::New if run.implementation.is_adapter() => on_a_process_of_its_own(run, loaded, chooser, reached),
        subject => trace_and_judge(run, loaded, subject, chooser, reached),
    };
    if !alone {
        compare_with_reference(run, loaded, &mut report, raw_divergence);
    }
    report.restrict();
    report
}

/// An adapter run on a process of its own: the `after` scenario first (unjudged), then the
/// run; the process is then shut down, and a bad answer to the reset that ended the run is
/// the case's verdict.
fn on_a_process_of_its_own(
    run: &Run,
    loaded: &LoadedScenario,
    chooser: Option<&mut dyn Strategy>,
    reached: Option<&mut Option<Reached>>,
) -> CaseReport {
    let (command, step_timeout) = run.implementation.adapter_command().expect("an adapter run");
    let process = SharedExternal::new(ExternalSubject::new(command, Duration::from_millis(step_timeout)));
    if let Some((path, seed)) = &run.after {
        let before = match crate::suite::load_corpus(std::slice::from_ref(path)) {
            Ok(mut before) => before.swap_remove(0),
            Err(error) => {
                let mut report = CaseReport::unrun(&loaded.name, run.clone());
                report.verdict = Verdict::BadScenario(error);
                return report;
            }
        };
        process.lock().name_run(&before.name);
        let mut subject = run.implementation.wrap(Box::new(process.clone()));
        let first = Run {
            scenario: path.clone(),
            schedule: Schedule::Seeded {
                strategy: run.strategy(),
                seed: *seed,
            },
            after: None,
            ..run.clone()
        };
        let _ = trace_and_judge(&first, &before, Lent::Owned(&mut subject), None, None);
    }
    process.lock().name_run(&loaded.name);
    let mut subject = run.implementation.wrap(Box::new(process.clone()));
    let mut case = trace_and_judge(run, loaded, Lent::Owned(&mut subject), chooser, reached);
    let shut_down = process.lock().shut_down();
    if let (Err(failure), false) = (shut_down, matches!(case.verdict, Verdict::Broken(_))) {
        case.break_with(failure);
    }
    case
}

/// The trace, judged by the rules (and on the canonical schedule of the in-process
/// reference, by the scenario's own checks).
fn trace_and_judge(
    run: &Run,
    loaded: &LoadedScenario,
    subject: Lent<'_>,
    chooser: Option<&mut dyn Strategy>,
    reached: Option<&mut Option<Reached>>,
) -> CaseReport {
    let report = CaseReport::unrun(&loaded.name, run.clone());
    let has_net = loaded.scenario.net.is_some();
    if run.world.forced_net() || (run.world == World::Own && has_net) {
        return in_the_networked_world(run, loaded, subject, report, reached);
    }
    // The in-process scheduler never reads the `net` block (its faults are the networked
    // world's); without it the DURABLE rules, which judge a reopened store, judge alike
    // wherever the run is replayed.
    let without_net;
    let scenario = if has_net {
        let mut copy = loaded.scenario.clone();
        copy.net = None;
        without_net = copy;
        &without_net
    } else {
        &loaded.scenario
    };
    let mut new_subject;
    let subject: &mut dyn Subject = match subject {
        Lent::Owned(subject) => subject.as_mut(),
        Lent::Borrowed(subject) => subject,
        Lent::New => {
            new_subject = run.implementation.subject();
            new_subject.as_mut()
        }
    };
    let given = chooser.is_some();
    let mut own;
    let chooser: &mut dyn Strategy = match chooser {
        Some(chooser) => chooser,
        None => {
            own = chooser_of(run, scenario);
            own.as_mut()
        }
    };
    let canonical = run.canonical() && !given;
    let outcome = simulate_with(scenario, subject, chooser, canonical);
    in_process_judged(
        report,
        loaded,
        scenario,
        outcome,
        canonical,
        chooser.abandoned(),
        given,
        reached,
    )
}

/// The scenario's canonical schedule (pinned, or scripted), the strategy's, or the fixed
/// choices.
fn chooser_of(run: &Run, scenario: &Scenario) -> Box<dyn Strategy> {
    match (&run.schedule, &scenario.schedule) {
        (Schedule::Choices(choices), _) => Box::new(crate::sim::Replay::new(choices.clone())),
        (
            Schedule::Seeded {
                strategy: crate::sim::StrategyKind::Scripted,
                ..
            },
            Some(schedule),
        ) => Box::new(crate::sim::Replay::new(schedule.clone())),
        (Schedule::Seeded { strategy, seed }, _) => make_strategy(*strategy, *seed),
    }
}

/// The run in the networked world, on `subject` (lent to the world for the run) or a new
/// one: every rule judges; the scenario's own expectations too on the canonical schedule
/// without faults from the seed.
fn in_the_networked_world(
    run: &Run,
    loaded: &LoadedScenario,
    subject: Lent<'_>,
    mut report: CaseReport,
    reached: Option<&mut Option<Reached>>,
) -> CaseReport {
    let crashed;
    let scenario = match run.world {
        World::NetCrash { sync, .. } => {
            let mut copy = loaded.scenario.clone();
            copy.net.get_or_insert_with(Default::default).sync = sync;
            crashed = copy;
            &crashed
        }
        _ => &loaded.scenario,
    };
    let options = NetOptions {
        seed: run.seed(),
        seeded_faults: run.world == World::NetSeeded,
        crash_at_step: match run.world {
            World::NetCrash { step, .. } => Some(step),
            _ => None,
        },
    };
    report.net = Some(NetInfo {
        turmoil_seed: crate::net::turmoil_seed(options.seed),
        seeded_faults: options.seeded_faults,
        crash: options.crash_at_step.map(|step| {
            let sync = scenario.net.as_ref().map(|net| net.sync).unwrap_or_default();
            (step, sync)
        }),
    });
    let mut new_subject;
    let subject: &mut BoxedSubject = match subject {
        Lent::Owned(subject) => subject,
        Lent::Borrowed(_) | Lent::New => {
            new_subject = run.implementation.subject();
            &mut new_subject
        }
    };
    let outcome = match crate::net::run_net(scenario, &options, subject) {
        Ok(NetRun {
            failure: Some(failure), ..
        }) => return not_run(report, failure),
        Ok(run) => run.outcome,
        Err(error) => {
            let failure = SubjectFailure::Protocol {
                message: error.to_string(),
            };
            return not_run(report, failure);
        }
    };
    let stored = outcome.stored(scenario);
    let difference = reference_difference(scenario, &outcome.trace);
    let timeline =
        Timeline::new(scenario, &outcome.trace, &stored).with_reference(difference.as_ref().map(Difference::for_rule));
    let mut violations = check::check_timeline(&timeline);
    if let Some(reached) = reached {
        *reached = Some(Reached::of(&timeline));
    }
    if run.canonical() && !options.seeded_faults && run.implementation.judged_by_scenario_checks() {
        violations.extend(check_expectations(&timeline));
    }
    drop(timeline);
    let mut report = report.judged(scenario, violations, outcome);
    report.set_divergence(difference.as_ref().map(Difference::divergence));
    report
}

/// The first difference of `trace` from the reference fed its inputs ([`crate::oracle`], REF-1).
fn reference_difference(scenario: &Scenario, trace: &crate::trace::Trace) -> Option<Difference> {
    oracle::replay(scenario, trace, &mut ReferenceSubject::new(), Freedoms::ALL).difference
}

/// For an adapter: on the canonical schedule, an operation it never got to deliver is its
/// failure when the reference's run of the same schedule delivers it; and with
/// `--raw-divergence`, the divergence is the raw one (no open choice set aside).
fn compare_with_reference(run: &Run, loaded: &LoadedScenario, report: &mut CaseReport, raw: bool) {
    if !run.implementation.is_adapter() {
        return;
    }
    let reference = trace_and_judge(
        &Run {
            implementation: Implementation::reference(),
            after: None,
            ..report.run.clone()
        },
        loaded,
        Lent::New,
        None,
        None,
    );
    let undelivered_here = matches!(report.verdict, Verdict::BadScenario(_));
    if undelivered_here && !matches!(reference.verdict, Verdict::BadScenario(_)) {
        judge_undelivered(loaded, report);
    }
    if let (Some(ours), true) = (&report.outcome, raw) {
        let scenario = &loaded.scenario;
        let replayed = oracle::replay(scenario, &ours.trace, &mut ReferenceSubject::new(), Freedoms::RAW);
        report.set_divergence(replayed.difference.as_ref().map(Difference::divergence));
    }
}

/// A run that could not be driven: not applicable when the implementation declared what the
/// scenario uses unsupported, else broken.
fn not_run(mut report: CaseReport, failure: SubjectFailure) -> CaseReport {
    report.verdict = match failure {
        SubjectFailure::Unsupported { operation, reason } => Verdict::NotApplicable {
            reason: format!("`{operation}` is unsupported: {reason}"),
        },
        failure => Verdict::Broken(failure),
    };
    report
}

/// An in-process run's report: every rule on its timeline; on the canonical schedule, the
/// scripted model's request checks and the `expect` block too when they judge the
/// implementation, and an operation never delivered makes the scenario bad.
#[allow(clippy::too_many_arguments)]
fn in_process_judged(
    mut report: CaseReport,
    loaded: &LoadedScenario,
    scenario: &Scenario,
    outcome: Result<RunOutcome, SubjectFailure>,
    canonical: bool,
    abandoned: bool,
    chosen: bool,
    reached: Option<&mut Option<Reached>>,
) -> CaseReport {
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(failure) => return not_run(report, failure),
    };
    if chosen || report.run.choices().is_some() {
        // The whole sequence the run took, not just its forced prefix.
        report.run.schedule = Schedule::Choices(outcome.choices.iter().map(|(index, _)| *index).collect());
    }
    if abandoned {
        // Equivalent to a schedule already run: not judged.
        report.outcome = Some(outcome);
        return report;
    }
    let stored = outcome.stored(scenario);
    let difference = reference_difference(scenario, &outcome.trace);
    let timeline =
        Timeline::new(scenario, &outcome.trace, &stored).with_reference(difference.as_ref().map(Difference::for_rule));
    let mut violations = check::check_timeline(&timeline);
    if let Some(reached) = reached {
        *reached = Some(Reached::of(&timeline));
    }
    let scenario_checks = report.run.implementation.judged_by_scenario_checks();
    if canonical {
        if scenario_checks {
            violations.extend(outcome.findings.iter().map(Violation::from));
        }
        // An operation never delivered is the scenario's error only where the reference, fed
        // the same inputs, does what this run did: else the run never got there, which is the
        // implementation's failure, judged by the rules (REF-1's difference included).
        if let (Some(error), None) = (never_delivered(loaded, &outcome), &difference) {
            drop(timeline);
            report.verdict = Verdict::BadScenario(error);
            report.outcome = Some(outcome);
            return report;
        }
        if scenario_checks {
            violations.extend(check_expectations(&timeline));
        }
    }
    drop(timeline);
    let mut report = report.judged(scenario, violations, outcome);
    report.set_divergence(difference.as_ref().map(Difference::divergence));
    report
}

/// On the canonical schedule, an operation whose `after` never held is a scenario error.
fn never_delivered(loaded: &LoadedScenario, outcome: &RunOutcome) -> Option<ScenarioError> {
    let Some(Event::End { pending, undelivered }) = outcome.trace.events.last() else {
        return None;
    };
    let op = undelivered.first()?;
    let index = op.0 as usize - 1;
    let text = crate::suite::source_text(&loaded.path).unwrap_or_default();
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

/// On the canonical schedule an operation whose `after` never held is a bad scenario, unless
/// the condition holds on the reference: then the implementation never got there, which is a
/// failure of the implementation. The case is judged like any other, plus that failure.
fn judge_undelivered(loaded: &LoadedScenario, case: &mut CaseReport) {
    let Some(outcome) = &case.outcome else {
        return;
    };
    let scenario = &loaded.scenario;
    // The rules judge it; the scenario's own checks describe the reference only.
    let mut violations = outcome.violations(scenario);
    if let Some(Event::End { undelivered, .. }) = outcome.trace.events.last() {
        if let Some(op) = undelivered.first() {
            violations.push(Violation::of_check(
                "expect",
                vec![outcome.trace.events.len()],
                format!(
                    "{op} was never delivered: its `after` condition never held on this implementation (it holds on the reference)"
                ),
            ));
        }
    }
    case.violations = check::cause::order_by_cause(scenario, &outcome.trace, &outcome.stored(scenario), violations);
    case.verdict = Verdict::Failed;
}
