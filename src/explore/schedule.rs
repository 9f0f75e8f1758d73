//! One schedule of exploration, run and recorded: by seed, in the networked world, as the next
//! run of an exhaustive enumeration, or as a guided search's; and the enumeration itself, with
//! its counted or estimated space.

use std::collections::BTreeSet;

use super::{Enumeration, ExploreSummary, SpaceSize, ESTIMATE_PROBES};
use crate::check::Violation;
use crate::implementation::Implementation;
use crate::run::{Driver, Run, Verdict, World};
use crate::scenario::LoadedScenario;
use crate::sim::guided::{CorpusSearch, GuidedRun};
use crate::sim::reduction::{EnumeratedRun, Enumerator, Probe};
use crate::sim::{simulate_with, RunOutcome, StrategyKind};

/// One seed in the networked world: the scenario's faults plus those drawn from the seed.
pub(super) fn run_net_one(
    loaded: &LoadedScenario,
    seed: u64,
    check_determinism: bool,
    implementation: &Implementation,
    summary: &mut ExploreSummary,
) {
    let run = Run::of(loaded)
        .on(implementation)
        .in_world(World::NetSeeded)
        .seeded(StrategyKind::Scripted, seed)
        .judged_by(&summary.selection);
    let mut reached = None;
    let mut subject = run.implementation.subject();
    let report = run.execute_with(loaded, Driver::on(&mut subject).alone().reaching(&mut reached));
    let outcome = match &report.verdict {
        Verdict::NotApplicable { reason } => {
            // Not applicable to this implementation: nothing to judge, but counted.
            summary.not_applicable(loaded, reason);
            return;
        }
        Verdict::Broken(failure) => {
            summary.record(loaded, || run.clone(), Vec::new(), Some(failure.clone()), None, None);
            return;
        }
        _ => match &report.outcome {
            Some(outcome) => outcome,
            None => return,
        },
    };
    if let Some(reached) = &reached {
        summary.count_reached(reached);
    }
    let mut violations = report.violations.clone();
    if check_determinism {
        let again = run.execute_with(loaded, Driver::on(&mut subject).alone());
        let same = again
            .outcome
            .is_some_and(|again| again.trace.render() == outcome.trace.render());
        if !same {
            violations.push(nondeterministic(
                "the same seed, run again in the networked world, gave a different trace",
            ));
        }
    }
    summary.record(
        loaded,
        || run.clone(),
        violations,
        None,
        Some(outcome),
        report.divergence.as_ref(),
    );
}

/// The violation a run that did not repeat its trace gets.
fn nondeterministic(message: &str) -> Violation {
    Violation::of_check("determinism", Vec::new(), message)
}

/// Where one schedule's choices come from.
pub(super) enum Schedule<'s> {
    /// The template's strategy from `seed` (random, pct); `after`: the schedule (scenario and
    /// seed) its first run follows on the adapter's process, when the kit fixed it.
    Seed {
        seed: u64,
        after: Option<(&'s LoadedScenario, u64)>,
    },
    /// The next run of an exhaustive enumeration.
    Enumerated(&'s mut EnumeratedRun),
    /// A guided search's schedule number `number`, of scenario `index`; the search gets its
    /// coverage back.
    Guided {
        search: &'s mut CorpusSearch,
        index: usize,
        number: u64,
        run: Box<GuidedRun>,
    },
}

/// One schedule of `loaded`, as `template` (implementation, judging) runs it, recorded in
/// `summary`; the outcome, when the run was driven.
pub(super) fn run_one(
    loaded: &LoadedScenario,
    strategy: StrategyKind,
    schedule: Schedule<'_>,
    check_determinism: bool,
    implementation: &Implementation,
    summary: &mut ExploreSummary,
) -> Option<RunOutcome> {
    // Explore schedules a scenario with a `net` block in the in-process scheduler, where `run`
    // and a plain replay take it to the networked world.
    let world = if loaded.scenario.net.is_some() {
        World::InProcess
    } else {
        World::Own
    };
    let run = Run::of(loaded)
        .on(implementation)
        .in_world(world)
        .judged_by(&summary.selection);
    let mut reached = None;
    let guided = matches!(schedule, Schedule::Guided { .. });
    let mut subject = run.implementation.subject();
    let mut driver = Driver::on(&mut subject).alone();
    if guided || summary.coverage.is_some() {
        driver = driver.reaching(&mut reached);
    }
    let (run, after, origin, report, feedback) = match schedule {
        Schedule::Seed { seed, after } => {
            let run = run.seeded(strategy, seed);
            let origin = format!("{} ({} seed {seed})", loaded.name, strategy.spelling());
            let report = run.execute_with(loaded, driver);
            (run, after, origin, report, None)
        }
        Schedule::Enumerated(enumerated) => {
            let run = run.choosing(enumerated.prefix());
            let report = run.execute_with(loaded, driver.choosing(&mut *enumerated));
            if enumerated.is_abandoned() {
                // Equivalent to a schedule already run: not judged, not counted.
                return report.outcome;
            }
            (run, None, format!("{} (exhaustive)", loaded.name), report, None)
        }
        Schedule::Guided {
            search,
            index,
            number,
            run: mut guided_run,
        } => {
            let run = run.choosing(Vec::new());
            let report = run.execute_with(loaded, driver.choosing(guided_run.as_mut()));
            let origin = format!("{} (guided schedule {number})", loaded.name);
            (run, None, origin, report, Some((search, index)))
        }
    };
    // The adapter's process goes back to this thread's pool before anything else runs on it.
    drop(subject);
    let outcome = match &report.verdict {
        Verdict::NotApplicable { reason } => {
            // The implementation declared something this scenario uses unsupported: not
            // applicable, so neither passed nor failed, but counted.
            summary.not_applicable(loaded, reason);
            return None;
        }
        Verdict::Broken(failure) => {
            summary.record(loaded, || run.clone(), Vec::new(), Some(failure.clone()), None, None);
            return None;
        }
        _ => report.outcome.as_ref()?,
    };
    if let (Some((search, index)), Some(reached)) = (feedback, &reached) {
        let coverage = crate::sim::guided::coverage_of(&loaded.scenario, outcome, reached);
        search.feedback_coverage(index, &loaded.scenario, outcome, &coverage);
    }
    if let Some(reached) = &reached {
        summary.count_reached(reached);
    }
    let mut violations = report.violations.clone();
    // What the run replays with: the whole choice sequence it took, or its seed; after the
    // run it followed when its replay differed.
    let mut replay = report.run.clone();
    if check_determinism {
        let again = replay.clone().choosing(taken(outcome));
        let mut subject = run.implementation.subject();
        let again = again.execute_with(loaded, Driver::on(&mut subject).alone());
        let same = again
            .outcome
            .is_some_and(|again| again.trace.render() == outcome.trace.render());
        if !same {
            // What the first run followed on its process, when the kit fixed it.
            let first = match after {
                Some((before, before_seed)) => format!(
                    " (the first right after `{}` {} seed {before_seed}, the replay right after it)",
                    before.name,
                    strategy.spelling()
                ),
                None => String::new(),
            };
            violations.push(nondeterministic(&format!(
                "the same schedule, replayed, gave a different trace{first}"
            )));
            replay.after = after.map(|(before, before_seed)| (before.path.clone(), before_seed));
        }
    }
    if let Some(failure) = summary.record(
        loaded,
        || replay,
        violations,
        None,
        Some(outcome),
        report.divergence.as_ref(),
    ) {
        failure.choices = Some(taken(outcome));
        failure.origin = origin;
    }
    report.outcome
}

/// The choice sequence a run took.
fn taken(outcome: &RunOutcome) -> Vec<usize> {
    outcome.choices.iter().map(|(index, _)| *index).collect()
}

/// Depth-first enumeration of the schedules, with or without reduction, up to `bound` runs;
/// then how much plain enumeration would run, and when the bound cut, what is left.
#[allow(clippy::too_many_arguments)]
pub(super) fn enumerate(
    loaded: &LoadedScenario,
    bound: u32,
    reduced: bool,
    check_determinism: bool,
    implementation: &Implementation,
    summary: &mut ExploreSummary,
    timed_out: &dyn Fn() -> bool,
) -> Enumeration {
    let mut enumeration = Enumeration {
        scenario: loaded.name.clone(),
        reduced,
        schedules: 0,
        abandoned: 0,
        distinct_traces: 0,
        covered: false,
        plain: None,
        remaining: None,
    };
    if check_determinism {
        // The scenario's first schedule runs on a new process, whichever worker takes it: what
        // it follows is fixed (nothing), and so is the verdict.
        implementation.retire_pooled();
    }
    let mut traces: BTreeSet<String> = BTreeSet::new();
    let mut enumerator = Enumerator::new(reduced);
    let mut stopped = false;
    while enumeration.schedules + enumeration.abandoned < u64::from(bound) {
        if timed_out() {
            stopped = true;
            break;
        }
        let Some(mut run) = enumerator.next_run() else { break };
        let Some(outcome) = run_one(
            loaded,
            StrategyKind::Scripted,
            Schedule::Enumerated(&mut run),
            check_determinism,
            implementation,
            summary,
        ) else {
            stopped = true;
            break;
        };
        if run.is_abandoned() {
            enumeration.abandoned += 1;
        } else {
            enumeration.schedules += 1;
            traces.insert(outcome.trace.render());
        }
        enumerator.finish_run(run);
    }
    enumeration.covered = enumerator.covered();
    enumeration.distinct_traces = traces.len();
    if stopped && !enumeration.covered {
        return enumeration;
    }
    // An adapter's space is the reference's, counted or estimated in process: a probe is a
    // whole run, cheap in process and not over the wire.
    let in_process = if implementation.is_adapter() {
        Implementation::reference()
    } else {
        implementation.clone()
    };
    let space = |reduced: bool| SpaceSize::Estimated(estimate_space(loaded, &in_process, reduced));
    if !enumeration.covered {
        // Negative when the estimate fell below the runs already made (the estimator's
        // variance is high on lopsided trees): shown as such.
        enumeration.remaining = Some(space(reduced).value() - (enumeration.schedules + enumeration.abandoned) as f64);
    }
    enumeration.plain = Some(match (reduced, enumeration.covered) {
        (false, true) => SpaceSize::Counted(enumeration.schedules),
        // Nothing was asleep: the reduced tree is the plain one.
        (true, true) if enumerator.skipped == 0 && enumeration.abandoned == 0 => {
            SpaceSize::Counted(enumeration.schedules)
        }
        // Counted when the estimate says it fits the bound (counting a space that does not
        // would cost the bound's runs for nothing).
        (true, true) => {
            let estimate = space(false);
            match estimate.value() <= f64::from(bound) {
                true => count_plain(loaded, &in_process, u64::from(bound)).unwrap_or(estimate),
                false => estimate,
            }
        }
        (_, false) => space(false),
    });
    enumeration
}

/// Runs `strategy` on `loaded`, trace only (no rule judges).
fn run_unjudged(
    loaded: &LoadedScenario,
    implementation: &Implementation,
    strategy: &mut dyn crate::sim::Strategy,
) -> Option<RunOutcome> {
    let mut subject = implementation.subject();
    simulate_with(&loaded.scenario, subject.as_mut(), strategy, false).ok()
}

/// The schedules of plain enumeration, counted when there are at most `bound`.
fn count_plain(loaded: &LoadedScenario, implementation: &Implementation, bound: u64) -> Option<SpaceSize> {
    let mut enumerator = Enumerator::new(false);
    let mut runs = 0;
    while let Some(mut run) = enumerator.next_run() {
        if runs == bound {
            return None;
        }
        run_unjudged(loaded, implementation, &mut run)?;
        runs += 1;
        enumerator.finish_run(run);
    }
    Some(SpaceSize::Counted(runs))
}

/// Knuth's estimate of the runs an enumeration of `loaded` makes: the mean of
/// [`ESTIMATE_PROBES`] probes seeded `0..`, so the same scenario gives the same estimate.
pub fn estimate_space(loaded: &LoadedScenario, implementation: &Implementation, reduced: bool) -> f64 {
    let mut sum = 0.0;
    for seed in 0..ESTIMATE_PROBES {
        let mut probe = Probe::new(reduced, seed);
        if run_unjudged(loaded, implementation, &mut probe).is_some() {
            sum += probe.estimate;
        }
    }
    sum / ESTIMATE_PROBES as f64
}
