//! Exploration: each scenario under many schedules, every rule checked on every trace.
//!
//! `random` and `pct` run one schedule per seed; seeds are numbered `0..seeds` and a shard
//! `K/N` takes the seeds with `seed % N == K - 1`, so N CI jobs divide the work exactly and
//! any failure replays with `agentsim replay FILE --strategy S --seed SEED`. `exhaustive`
//! enumerates a scenario's schedules depth first, by replaying prefixes, up to a bound of runs,
//! one per class of schedules that differ only in the order of independent choices
//! (`sim::reduction`), and says how many plain enumeration (`exhaustive-plain`, every distinct
//! choice sequence) has and, when the bound cut, how many runs are left, counted or estimated;
//! a failure there replays with `--choices`.
//!
//! The scenario's own expectations describe the canonical schedule only; here the rules alone
//! judge (outcomes that depend on the schedule are invariants, not one exact trace).
//!
//! Here: the workers over the corpus and the summary they fill, coverage counts included; one
//! schedule run and recorded, and the exhaustive enumeration, in `schedule.rs`; the hunt of one
//! mutant of the zoo in `hunt.rs`. Shrinking lives in `shrink.rs`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::check::{self, Violation};
use crate::implementation::Implementation;
use crate::run::{Driver, Run, Verdict};
use crate::scenario::LoadedScenario;
use crate::sim::guided::CorpusSearch;
use crate::sim::{RunOutcome, StrategyKind, SubjectFailure};

mod hunt;
mod schedule;

pub use hunt::{hunt_mutant, Hunt, Kill};
pub use schedule::estimate_space;
use schedule::{enumerate, run_net_one, run_one, Schedule};

/// Which schedules to run.
#[derive(Debug, Clone)]
pub struct ExploreConfig {
    pub strategy: StrategyKind,
    pub seeds: u64,
    /// `(K, N)`: this job runs the seeds with `seed % N == K - 1`.
    pub shard: (u64, u64),
    pub time_limit: Option<Duration>,
    pub check_determinism: bool,
    /// `Net`: every seed runs in the networked world, with faults drawn from it.
    pub world: crate::run::WorldKind,
    /// Count, per rule situation (`check::situations`), the traces that reach it.
    pub coverage: bool,
    /// The rules that judge (`--rules`, `--level`).
    pub selection: check::Selection,
    /// Stop starting schedules once this many failed (`--max-failures`).
    pub max_failures: Option<u64>,
}

impl ExploreConfig {
    /// `seeds` schedules of `strategy` per scenario, every rule judging, in process, with no
    /// shard, limit, self-check or coverage count.
    pub fn new(strategy: StrategyKind, seeds: u64) -> ExploreConfig {
        ExploreConfig {
            strategy,
            seeds,
            shard: (1, 1),
            time_limit: None,
            check_determinism: false,
            world: crate::run::WorldKind::Sim,
            coverage: false,
            selection: check::Selection::all(),
            max_failures: None,
        }
    }
}

/// One schedule that broke a rule (or was not deterministic, or broke the subject).
#[derive(Debug, Clone)]
pub struct ExploreFailure {
    pub scenario: String,
    /// The run that replays it.
    pub run: Run,
    pub violations: Vec<Violation>,
    pub broken: Option<SubjectFailure>,
    /// The choice sequence the failing run took (in-process schedules), for shrinking.
    pub choices: Option<Vec<usize>>,
    /// A description of the run, e.g. `random seed 7`.
    pub origin: String,
}

impl ExploreFailure {
    /// The one command that replays it.
    pub fn replay(&self) -> String {
        self.run.command()
    }

    /// `scenario (strategy seed N)` when the run's origin is known, else the scenario.
    pub fn origin_or_scenario(&self) -> &str {
        if self.origin.is_empty() {
            &self.scenario
        } else {
            &self.origin
        }
    }
}

/// The exhaustive enumeration of one scenario.
#[derive(Debug, Clone)]
pub struct Enumeration {
    pub scenario: String,
    /// With partial-order reduction (sleep sets), or plain.
    pub reduced: bool,
    /// Schedules run to their end and judged.
    pub schedules: u64,
    /// Runs the sleep sets stopped unfinished, unjudged: every continuation was equivalent to a
    /// schedule already run. They count against the bound.
    pub abandoned: u64,
    pub distinct_traces: usize,
    /// Every schedule was run (the bound was not reached).
    pub covered: bool,
    /// The schedules plain enumeration has for the scenario: counted when it fits the bound,
    /// else estimated.
    pub plain: Option<SpaceSize>,
    /// When the bound cut the enumeration: the runs it would still make, estimated (negative
    /// when the estimate of the whole fell below the runs made).
    pub remaining: Option<f64>,
}

/// A number of schedules, counted or estimated (Knuth's estimator, `sim::reduction::Probe`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SpaceSize {
    Counted(u64),
    Estimated(f64),
}

impl SpaceSize {
    pub fn value(self) -> f64 {
        match self {
            SpaceSize::Counted(count) => count as f64,
            SpaceSize::Estimated(estimate) => estimate,
        }
    }
}

impl Enumeration {
    /// Plain enumeration's schedules over this one's (runs, abandoned ones included, when this
    /// one was cut: then it is an estimate's share).
    pub fn reduction_factor(&self) -> Option<f64> {
        let plain = self.plain?.value();
        let reduced = match self.remaining {
            Some(remaining) => (self.schedules + self.abandoned) as f64 + remaining.max(0.0),
            None => self.schedules as f64,
        };
        Some(plain / reduced.max(1.0))
    }
}

#[derive(Debug, Clone, Default)]
pub struct ExploreSummary {
    pub passed: u64,
    pub failed: u64,
    /// The first [`FAILURES_KEPT`] failing schedules, whole (for the report, shrinking and
    /// pages); every failing schedule is counted in `tally`, `pairs` and `broken`.
    pub failures: Vec<ExploreFailure>,
    /// Root causes and findings of every failing schedule.
    pub tally: crate::findings::Tally,
    /// Every failing (scenario, rule) pair (`broken:<code>` for a schedule that broke the
    /// subject), with the first message and replay command seen for it (for `--expect`).
    pub pairs: std::collections::BTreeMap<(String, String), String>,
    /// Schedules on which the subject broke.
    pub broken: u64,
    pub enumerations: Vec<Enumeration>,
    pub stopped_by_time: bool,
    /// The exploration stopped at `--max-failures`.
    pub stopped_by_failures: bool,
    /// Schedules not run because the implementation declared something the scenario uses
    /// unsupported, and the scenarios that were, with the reason.
    pub not_applicable: u64,
    pub not_applicable_scenarios: std::collections::BTreeMap<String, String>,
    /// Traces that reached each situation of `check::situations::situations()`, then each pair
    /// of `check::pairs::pairs()`, when counted.
    pub coverage: Option<Vec<u64>>,
    /// The rules that judged (copied from the configuration for the summary).
    pub selection: check::Selection,
    /// Failing schedules over every worker, for `--max-failures`.
    failure_counter: Option<std::sync::Arc<AtomicU64>>,
}

/// How many failing schedules an exploration keeps whole; the rest are counted only, so memory
/// does not grow with the schedules run.
pub const FAILURES_KEPT: usize = 1_000;

/// Reports progress: `(runs done, runs planned)`.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// Random probes of Knuth's estimator per estimate of a space the bound cut.
pub const ESTIMATE_PROBES: u64 = 200;

/// The seeds of `0..seeds` that belong to `shard`, generated one at a time: memory and the
/// time to the first schedule do not grow with `seeds`.
pub fn shard_seeds(seeds: u64, shard: (u64, u64)) -> impl Iterator<Item = u64> + Clone {
    let (index, count) = shard;
    let first = index - 1;
    (0..shard_seed_count(seeds, shard)).map(move |k| first + k * count)
}

/// How many seeds of `0..seeds` belong to `shard` (`seed % N == K - 1`).
pub fn shard_seed_count(seeds: u64, shard: (u64, u64)) -> u64 {
    let (index, count) = shard;
    let first = index - 1;
    if seeds <= first {
        0
    } else {
        (seeds - first).div_ceil(count)
    }
}

/// Runs the exploration over `corpus` on `threads` worker threads.
pub fn explore(
    corpus: &[LoadedScenario],
    config: ExploreConfig,
    implementation: &Implementation,
    threads: usize,
    progress: Progress<'_>,
) -> ExploreSummary {
    let started = Instant::now();
    if config.strategy == StrategyKind::Guided {
        return explore_guided(corpus, &config, implementation, progress, started);
    }
    let seeds = shard_seeds(config.seeds, config.shard);
    let planned = match config.strategy {
        StrategyKind::Exhaustive { bound, .. } => (corpus.len() as u64).saturating_mul(u64::from(bound)),
        _ => (corpus.len() as u64).saturating_mul(shard_seed_count(config.seeds, config.shard)),
    };
    let done = AtomicU64::new(0);
    let out_of_time = AtomicBool::new(false);
    let failures_seen = std::sync::Arc::new(AtomicU64::new(0));
    let out_of_failures = AtomicBool::new(false);
    let next_scenario = AtomicU64::new(0);
    let results: Mutex<Vec<(usize, ExploreSummary)>> = Mutex::new(Vec::new());
    // Whether to start no more schedules: the time limit passed, or enough schedules failed.
    let timed_out = || {
        let over = config.time_limit.is_some_and(|limit| started.elapsed() >= limit);
        if over {
            out_of_time.store(true, Ordering::Relaxed);
        }
        let enough = config
            .max_failures
            .is_some_and(|most| failures_seen.load(Ordering::Relaxed) >= most);
        if enough {
            out_of_failures.store(true, Ordering::Relaxed);
        }
        over || enough
    };
    // With `--check-determinism` on an adapter, each schedule's first run follows a run fixed
    // by the corpus and the seeds, never by how the threads shared the corpus: the seed before
    // it, replayed; for a scenario's first seed, the last seed of the scenario before it in the
    // corpus, run there first unless this thread's process has just run it.
    let fixed_predecessors = config.check_determinism && implementation.is_adapter();
    std::thread::scope(|scope| {
        // A worker takes a scenario at a time: more workers than scenarios would idle.
        for _ in 0..threads.clamp(1, corpus.len().max(1)) {
            scope.spawn(|| {
                let mut last: Option<LastSchedule> = None;
                loop {
                    let index = next_scenario.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some(loaded) = corpus.get(index) else { break };
                    let mut summary = ExploreSummary {
                        coverage: config.coverage.then(coverage_counts),
                        selection: config.selection.clone(),
                        failure_counter: Some(failures_seen.clone()),
                        ..ExploreSummary::default()
                    };
                    match config.strategy {
                        StrategyKind::Exhaustive { bound, reduced } => {
                            let enumeration = enumerate(
                                loaded,
                                bound,
                                reduced,
                                config.check_determinism,
                                implementation,
                                &mut summary,
                                &timed_out,
                            );
                            let runs = enumeration.schedules + enumeration.abandoned;
                            summary.enumerations.push(enumeration);
                            progress(done.fetch_add(runs, Ordering::Relaxed) + runs, planned);
                        }
                        strategy => {
                            for seed in seeds.clone() {
                                if timed_out() {
                                    break;
                                }
                                if config.world == crate::run::WorldKind::Net {
                                    run_net_one(loaded, seed, config.check_determinism, implementation, &mut summary);
                                    progress(done.fetch_add(1, Ordering::Relaxed) + 1, planned);
                                    continue;
                                }
                                let first_seed = seeds.clone().next() == Some(seed);
                                let before = if fixed_predecessors && first_seed {
                                    follow_the_scenario_before(corpus, index, strategy, &seeds, last, implementation)
                                } else {
                                    last
                                };
                                let ran = run_one(
                                    loaded,
                                    strategy,
                                    Schedule::Seed {
                                        seed,
                                        after: before.map(|before| (&corpus[before.scenario], before.seed)),
                                    },
                                    config.check_determinism,
                                    implementation,
                                    &mut summary,
                                );
                                // What this thread's process ran last, while it runs.
                                last = ran.and_then(|_| implementation.pooled_pid()).map(|pid| LastSchedule {
                                    scenario: index,
                                    seed,
                                    pid,
                                });
                                progress(done.fetch_add(1, Ordering::Relaxed) + 1, planned);
                            }
                        }
                    }
                    results.lock().expect("no worker panics").push((index, summary));
                }
            });
        }
    });
    let results = results.into_inner().expect("no worker panics");
    merged(
        results,
        &config,
        out_of_time.load(Ordering::Relaxed),
        out_of_failures.load(Ordering::Relaxed),
    )
}

/// The schedule a worker thread's adapter process ran last (its replay, under
/// `--check-determinism`): the scenario's corpus index, the seed and the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LastSchedule {
    scenario: usize,
    seed: u64,
    pid: u32,
}

/// Before a scenario's first seed, under `--check-determinism` on an adapter: makes this
/// thread's process have just run the last seed of the nearest scenario before `index` in the
/// corpus (cyclically) that the adapter runs, unless it has, and returns it; `None` when no
/// other scenario runs, or the run broke (the first seed then runs in a new process).
fn follow_the_scenario_before(
    corpus: &[LoadedScenario],
    index: usize,
    strategy: StrategyKind,
    seeds: &(impl Iterator<Item = u64> + Clone),
    last: Option<LastSchedule>,
    implementation: &Implementation,
) -> Option<LastSchedule> {
    let last_seed = seeds.clone().last()?;
    for other in crate::suite::before_in_corpus(index, corpus.len()) {
        let pid = implementation.pooled_pid();
        if let Some(last) =
            last.filter(|last| last.scenario == other && last.seed == last_seed && Some(last.pid) == pid)
        {
            return Some(last);
        }
        let mut subject = implementation.subject();
        let warm_up = Run::of(&corpus[other])
            .seeded(strategy, last_seed)
            .on(implementation)
            .execute_with(&corpus[other], Driver::on(&mut subject).alone());
        drop(subject);
        return match warm_up.verdict {
            // Declined by its `hello`: nothing ran; the one before it, then.
            Verdict::NotApplicable { .. } => continue,
            Verdict::Broken(_) => None,
            _ => implementation.pooled_pid().map(|pid| LastSchedule {
                scenario: other,
                seed: last_seed,
                pid,
            }),
        };
    }
    None
}

/// The guided search over the whole corpus (`sim::guided::CorpusSearch`): one search, seeded
/// by the shard (`K - 1`), shares `seeds` schedules per scenario, on average and split over
/// the shards, among the scenarios by energy. It runs on one thread: each schedule depends on
/// the coverage of every schedule before it.
fn explore_guided(
    corpus: &[LoadedScenario],
    config: &ExploreConfig,
    implementation: &Implementation,
    progress: Progress<'_>,
    started: Instant,
) -> ExploreSummary {
    let budget = shard_seed_count(config.seeds, config.shard).saturating_mul(corpus.len() as u64);
    let failures_seen = std::sync::Arc::new(AtomicU64::new(0));
    let mut summaries: Vec<(usize, ExploreSummary)> = (0..corpus.len())
        .map(|index| {
            let summary = ExploreSummary {
                coverage: config.coverage.then(coverage_counts),
                selection: config.selection.clone(),
                failure_counter: Some(failures_seen.clone()),
                ..ExploreSummary::default()
            };
            (index, summary)
        })
        .collect();
    let mut search = CorpusSearch::new(config.shard.0 - 1, corpus.iter().map(|loaded| &loaded.scenario));
    let (mut out_of_time, mut out_of_failures) = (false, false);
    for schedule in 0..budget {
        out_of_time = config.time_limit.is_some_and(|limit| started.elapsed() >= limit);
        out_of_failures = config
            .max_failures
            .is_some_and(|most| failures_seen.load(Ordering::Relaxed) >= most);
        if out_of_time || out_of_failures {
            break;
        }
        let Some((index, run)) = search.next_run() else { break };
        let not_applicable = summaries[index].1.not_applicable;
        run_one(
            &corpus[index],
            StrategyKind::Guided,
            Schedule::Guided {
                search: &mut search,
                index,
                number: schedule,
                run: Box::new(run),
            },
            config.check_determinism,
            implementation,
            &mut summaries[index].1,
        );
        if summaries[index].1.not_applicable > not_applicable {
            // Declared unsupported by the implementation: its schedules find nothing.
            search.retire(index);
        }
        progress(schedule + 1, budget);
    }
    merged(summaries, config, out_of_time, out_of_failures)
}

/// One summary of per-scenario summaries, in corpus order.
fn merged(
    mut results: Vec<(usize, ExploreSummary)>,
    config: &ExploreConfig,
    stopped_by_time: bool,
    stopped_by_failures: bool,
) -> ExploreSummary {
    results.sort_by_key(|(index, _)| *index);
    let mut total = ExploreSummary {
        stopped_by_time,
        stopped_by_failures,
        selection: config.selection.clone(),
        coverage: config.coverage.then(coverage_counts),
        ..ExploreSummary::default()
    };
    for (_, summary) in results {
        if let (Some(total), Some(counts)) = (total.coverage.as_mut(), &summary.coverage) {
            for (sum, count) in total.iter_mut().zip(counts) {
                *sum += count;
            }
        }
        total.passed += summary.passed;
        total.failed += summary.failed;
        total.not_applicable += summary.not_applicable;
        total.not_applicable_scenarios.extend(summary.not_applicable_scenarios);
        total.failures.extend(summary.failures);
        total.failures.truncate(FAILURES_KEPT);
        total.tally.merge(summary.tally);
        for (pair, message) in summary.pairs {
            total.pairs.entry(pair).or_insert(message);
        }
        total.broken += summary.broken;
        total.enumerations.extend(summary.enumerations);
    }
    total
}

/// Zeroed counts for every situation, then every interleaving pair.
fn coverage_counts() -> Vec<u64> {
    vec![0; check::situations::situations().len() + check::pairs::PAIRS]
}

impl ExploreSummary {
    /// Counts the situations and the interleaving pairs one trace reached, when coverage is
    /// counted.
    fn count_reached(&mut self, reached: &check::Reached) {
        let Some(counts) = self.coverage.as_mut() else { return };
        for index in &reached.situations {
            counts[*index] += 1;
        }
        let pairs = &mut counts[check::situations::situations().len()..];
        for index in &reached.pairs {
            pairs[*index] += 1;
        }
    }

    /// Counts a schedule that could not run: the implementation declared `operation`, which the
    /// scenario uses, unsupported.
    fn not_applicable(&mut self, loaded: &LoadedScenario, reason: &str) {
        self.not_applicable += 1;
        self.not_applicable_scenarios
            .entry(loaded.name.clone())
            .or_insert_with(|| reason.to_string());
    }

    /// Counts one schedule: passed when the selected rules found nothing, else a failure with
    /// its replay and its violations, root cause first. `replay` spells the replay command and
    /// is asked only of a failure (a passing schedule, nearly every one, never builds it).
    fn record(
        &mut self,
        loaded: &LoadedScenario,
        replay: impl FnOnce() -> Run,
        mut violations: Vec<Violation>,
        broken: Option<SubjectFailure>,
        outcome: Option<&RunOutcome>,
        divergence: Option<&crate::protocol::diff::Divergence>,
    ) -> Option<&mut ExploreFailure> {
        violations.retain(|violation| violation.rule == "determinism" || self.selection.judges(&violation.rule));
        if let (Some(outcome), None) = (outcome, &broken) {
            self.tally.saw_trace(&outcome.trace);
        }
        if violations.is_empty() && broken.is_none() {
            self.passed += 1;
            return None;
        }
        if let Some(outcome) = outcome {
            violations = check::cause::order_by_cause(
                &loaded.scenario,
                &outcome.trace,
                &outcome.stored(&loaded.scenario),
                violations,
            );
        }
        if let Some(counter) = &self.failure_counter {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        let run = replay();
        let replay = run.command();
        self.failed += 1;
        self.tally.add(&loaded.name, &violations, divergence);
        if let Some(broken) = &broken {
            self.broken += 1;
            self.pairs
                .entry((loaded.name.clone(), crate::deviations::broken_rule(broken)))
                .or_insert_with(|| broken.to_string());
        }
        for violation in &violations {
            self.pairs
                .entry((loaded.name.clone(), violation.rule.clone()))
                .or_insert_with(|| format!("{} (replay: {replay})", violation.message));
        }
        if self.failures.len() >= FAILURES_KEPT {
            return None;
        }
        self.failures.push(ExploreFailure {
            scenario: loaded.name.clone(),
            run,
            violations,
            broken,
            choices: None,
            origin: String::new(),
        });
        self.failures.last_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_seeds_exactly_without_materializing_them() {
        for seeds in 0..40 {
            for count in 1..6 {
                let mut all = Vec::new();
                for index in 1..=count {
                    let shard: Vec<u64> = shard_seeds(seeds, (index, count)).collect();
                    assert!(shard.iter().all(|seed| seed % count == index - 1));
                    assert_eq!(shard.len() as u64, shard_seed_count(seeds, (index, count)));
                    all.extend(shard);
                }
                all.sort();
                assert_eq!(all, (0..seeds).collect::<Vec<_>>(), "{seeds} seeds in {count} shards");
            }
        }
        // The largest flag costs nothing until a schedule is run.
        assert_eq!(shard_seed_count(u64::MAX, (1, 1)), u64::MAX);
        assert_eq!(shard_seeds(u64::MAX, (3, 4)).next(), Some(2));
    }
}
