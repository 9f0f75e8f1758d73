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
//! One file, one concept: running many schedules of a corpus and tallying them (per-scenario
//! workers, the ways a schedule is chosen, the summary they fill, coverage counts included);
//! shrinking lives in `shrink.rs`, the zoo's hunt in `cli/explore.rs`.
//! Longer than 700 lines: a split is due with issue 47's `Run` (one value for a run).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::check::{self, Violation};
use crate::implementation::Implementation;
use crate::replay::{ReplaySpec, ReplayWorld};
use crate::scenario::LoadedScenario;
use crate::sim::guided::{CorpusSearch, GuidedRun};
use crate::sim::reduction::{EnumeratedRun, Enumerator, Probe};
use crate::sim::{make_strategy, simulate_with, Replay, RunOutcome, StrategyKind, SubjectFailure};

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
    pub world: crate::suite::WorldKind,
    /// Count, per rule situation (`check::situations`), the traces that reach it.
    pub coverage: bool,
    /// The rules that judge (`--rules`, `--level`).
    pub selection: check::Selection,
    /// Stop starting schedules once this many failed (`--max-failures`).
    pub max_failures: Option<u64>,
}

/// One schedule that broke a rule (or was not deterministic, or broke the subject).
#[derive(Debug, Clone)]
pub struct ExploreFailure {
    pub scenario: String,
    pub replay: String,
    pub violations: Vec<Violation>,
    pub broken: Option<SubjectFailure>,
    /// The choice sequence the failing run took (in-process schedules), for shrinking.
    pub choices: Option<Vec<usize>>,
    /// A description of the run, e.g. `random seed 7`.
    pub origin: String,
}

impl ExploreFailure {
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
                                if config.world == crate::suite::WorldKind::Net {
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
                                    seed,
                                    Schedule::Seed {
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
        let warm_up = simulate_with(
            &corpus[other].scenario,
            subject.as_mut(),
            make_strategy(strategy, last_seed).as_mut(),
            false,
        );
        drop(subject);
        return match warm_up {
            // Declined by its `hello`: nothing ran; the one before it, then.
            Err(SubjectFailure::Unsupported { .. }) => continue,
            Err(_) => None,
            Ok(_) => implementation.pooled_pid().map(|pid| LastSchedule {
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
        run_one(
            &corpus[index],
            StrategyKind::Guided,
            schedule,
            Schedule::Guided {
                search: &mut search,
                index,
                run: Box::new(run),
            },
            config.check_determinism,
            implementation,
            &mut summaries[index].1,
        );
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

/// One seed in the networked world: the scenario's faults plus those drawn from the seed.
fn run_net_one(
    loaded: &LoadedScenario,
    seed: u64,
    check_determinism: bool,
    implementation: &Implementation,
    summary: &mut ExploreSummary,
) {
    let mut subject = implementation.subject();
    let options = crate::net::NetOptions {
        seed,
        seeded_faults: true,
        ..crate::net::NetOptions::default()
    };
    let judging = summary.selection.flags();
    let replay = || {
        ReplaySpec {
            world: crate::replay::ReplayWorld::NetSeeded,
            mutant: implementation.mutant_name().map(str::to_string),
            implementation: implementation.adapter_command(),
            judging,
            ..ReplaySpec::new(loaded.path.clone(), StrategyKind::Random, seed)
        }
        .command()
    };
    let mut run_world = |options: &crate::net::NetOptions| crate::net::run_net(&loaded.scenario, options, &mut subject);
    let outcome = match run_world(&options) {
        Ok(crate::net::NetRun {
            failure: Some(SubjectFailure::Unsupported { operation, reason }),
            ..
        }) => {
            // Not applicable to this implementation: nothing to judge, but counted.
            summary.not_applicable(loaded, &operation, &reason);
            return;
        }
        Ok(crate::net::NetRun {
            failure: Some(failure), ..
        }) => {
            summary.record(loaded, replay, Vec::new(), Some(failure), None);
            return;
        }
        Ok(run) => run.outcome,
        Err(error) => {
            let broken = SubjectFailure::Protocol {
                message: error.to_string(),
            };
            summary.record(loaded, replay, Vec::new(), Some(broken), None);
            return;
        }
    };
    let stored = outcome.stored(&loaded.scenario);
    let timeline = check::Timeline::new(&loaded.scenario, &outcome.trace, &stored);
    let mut violations = check::check_timeline(&timeline);
    if summary.coverage.is_some() {
        summary.count_reached(&check::Reached::of(&timeline));
    }
    if check_determinism {
        let same = run_world(&options)
            .is_ok_and(|again| again.failure.is_none() && again.outcome.trace.render() == outcome.trace.render());
        if !same {
            violations.push(nondeterministic(
                "the same seed, run again in the networked world, gave a different trace",
            ));
        }
    }
    summary.record(loaded, replay, violations, None, Some(&outcome));
}

/// The violation a run that did not repeat its trace gets.
fn nondeterministic(message: &str) -> Violation {
    Violation {
        rule: "determinism".into(),
        clause: None,
        lines: Vec::new(),
        message: message.into(),
        evident_at: None,
    }
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
    fn not_applicable(&mut self, loaded: &LoadedScenario, operation: &str, reason: &str) {
        self.not_applicable += 1;
        self.not_applicable_scenarios
            .entry(loaded.name.clone())
            .or_insert_with(|| format!("`{operation}` is unsupported: {reason}"));
    }

    /// Counts one schedule: passed when the selected rules found nothing, else a failure with
    /// its replay and its violations, root cause first. `replay` spells the replay command and
    /// is asked only of a failure (a passing schedule, nearly every one, never builds it).
    fn record(
        &mut self,
        loaded: &LoadedScenario,
        replay: impl FnOnce() -> String,
        mut violations: Vec<Violation>,
        broken: Option<SubjectFailure>,
        outcome: Option<&RunOutcome>,
    ) -> Option<&mut ExploreFailure> {
        violations.retain(|violation| violation.rule == "determinism" || self.selection.judges(&violation.rule));
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
        let replay = replay();
        self.failed += 1;
        self.tally.add(&loaded.name, &violations, None);
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
            replay,
            violations,
            broken,
            choices: None,
            origin: String::new(),
        });
        self.failures.last_mut()
    }
}

/// Where one schedule's choices come from.
enum Schedule<'s> {
    /// `strategy` from `seed` (random, pct); `after`: the schedule (scenario and seed) its
    /// first run follows on the adapter's process, when the kit fixed it.
    Seed { after: Option<(&'s LoadedScenario, u64)> },
    /// The next run of an exhaustive enumeration.
    Enumerated(&'s mut EnumeratedRun),
    /// A guided search's schedule `run` of scenario `index`; the search gets its coverage back.
    Guided {
        search: &'s mut CorpusSearch,
        index: usize,
        run: Box<GuidedRun>,
    },
}

/// One schedule: `seed` for random/pct, a fixed choice sequence, or a guided search's next.
fn run_one(
    loaded: &LoadedScenario,
    strategy: StrategyKind,
    seed: u64,
    schedule: Schedule<'_>,
    check_determinism: bool,
    implementation: &Implementation,
    summary: &mut ExploreSummary,
) -> Option<RunOutcome> {
    let prefix = match &schedule {
        Schedule::Enumerated(run) => Some(run.prefix()),
        _ => None,
    };
    let choices = prefix.as_deref();
    let by_choices = !matches!(schedule, Schedule::Seed { .. });
    let after = match schedule {
        Schedule::Seed { after } => after,
        _ => None,
    };
    let judging = summary.selection.flags();
    let spec = |choices: Option<&[usize]>, after: Option<(std::path::PathBuf, u64)>| -> String {
        ReplaySpec {
            choices: choices.map(<[usize]>::to_vec),
            after,
            mutant: implementation.mutant_name().map(str::to_string),
            implementation: implementation.adapter_command(),
            judging: judging.clone(),
            // Explore schedules a scenario with a `net` block in the in-process scheduler,
            // where `run` and a plain replay take it to the networked world.
            world: if loaded.scenario.net.is_some() {
                ReplayWorld::InProcess
            } else {
                ReplayWorld::Sim
            },
            ..ReplaySpec::new(loaded.path.clone(), strategy, seed)
        }
        .command()
    };
    let (guided, guided_run, mut enumerated) = match schedule {
        Schedule::Guided { search, index, run } => (Some((search, index)), Some(run), None),
        Schedule::Enumerated(run) => (None, None, Some(run)),
        Schedule::Seed { .. } => (None, None, None),
    };
    let run = |choices: Option<&[usize]>| -> Result<RunOutcome, SubjectFailure> {
        let mut subject = implementation.subject();
        match choices {
            Some(choices) => simulate_with(
                &loaded.scenario,
                subject.as_mut(),
                &mut Replay::new(choices.to_vec()),
                false,
            ),
            None => simulate_with(
                &loaded.scenario,
                subject.as_mut(),
                make_strategy(strategy, seed).as_mut(),
                false,
            ),
        }
    };
    let first = match (guided_run, enumerated.as_mut()) {
        (Some(mut guided_run), _) => {
            let mut subject = implementation.subject();
            simulate_with(&loaded.scenario, subject.as_mut(), guided_run.as_mut(), false)
        }
        (None, Some(enumerated)) => {
            let mut subject = implementation.subject();
            simulate_with(&loaded.scenario, subject.as_mut(), &mut **enumerated, false)
        }
        (None, None) => run(choices),
    };
    let outcome = match first {
        Ok(outcome) => outcome,
        // The implementation declared something this scenario uses unsupported: not
        // applicable, so neither passed nor failed, but counted.
        Err(SubjectFailure::Unsupported { operation, reason }) => {
            summary.not_applicable(loaded, &operation, &reason);
            return None;
        }
        Err(failure) => {
            summary.record(loaded, || spec(choices, None), Vec::new(), Some(failure), None);
            return None;
        }
    };
    if enumerated.is_some_and(|run| run.is_abandoned()) {
        // Equivalent to a schedule already run: not judged, not counted.
        return Some(outcome);
    }
    // One timeline of the run for the rules, the coverage count and the guided search's
    // feedback.
    let stored = outcome.stored(&loaded.scenario);
    let timeline = check::Timeline::new(&loaded.scenario, &outcome.trace, &stored);
    let reached = (guided.is_some() || summary.coverage.is_some()).then(|| check::Reached::of(&timeline));
    if let (Some((search, index)), Some(reached)) = (guided, &reached) {
        let coverage = crate::sim::guided::coverage_of(&loaded.scenario, &outcome, reached);
        search.feedback_coverage(index, &loaded.scenario, &outcome, &coverage);
    }
    // The run the first run followed, when its replay differed: the replay runs after it.
    let mut differed_after: Option<(&LoadedScenario, u64)> = None;
    // A fixed-choice or guided run replays with the whole sequence it took.
    let replay = |differed_after: Option<(&LoadedScenario, u64)>| {
        let after = differed_after.map(|(before, before_seed)| (before.path.clone(), before_seed));
        match by_choices {
            true => {
                let taken: Vec<usize> = outcome.choices.iter().map(|(index, _)| *index).collect();
                spec(Some(&taken), after)
            }
            false => spec(choices, after),
        }
    };
    let mut violations = check::check_timeline(&timeline);
    if let Some(reached) = &reached {
        summary.count_reached(reached);
    }
    if check_determinism {
        let fixed: Vec<usize> = outcome.choices.iter().map(|(index, _)| *index).collect();
        let again = run(Some(&fixed));
        let same = again
            .as_ref()
            .is_ok_and(|again| again.trace.render() == outcome.trace.render());
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
            differed_after = after;
        }
    }
    if let Some(failure) = summary.record(loaded, || replay(differed_after), violations, None, Some(&outcome)) {
        failure.choices = Some(outcome.choices.iter().map(|(index, _)| *index).collect());
        failure.origin = match (choices, strategy) {
            (Some(_), _) => format!("{} (exhaustive)", loaded.name),
            (None, StrategyKind::Guided) => format!("{} (guided schedule {seed})", loaded.name),
            (None, _) => format!("{} ({} seed {seed})", loaded.name, strategy.spelling()),
        };
    }
    Some(outcome)
}

/// Depth-first enumeration of the schedules, with or without reduction, up to `bound` runs;
/// then how much plain enumeration would run, and when the bound cut, what is left.
#[allow(clippy::too_many_arguments)]
fn enumerate(
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
            0,
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
    let space = |reduced: bool| SpaceSize::Estimated(estimate_space(loaded, implementation, reduced));
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
                true => count_plain(loaded, implementation, u64::from(bound)).unwrap_or(estimate),
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

/// How one mutant died: the first schedule on which a catalogue rule flagged it.
#[derive(Debug, Clone)]
pub struct Kill {
    pub rule: String,
    pub scenario: String,
    pub strategy: StrategyKind,
    pub seed: u64,
    pub replay: String,
    /// Schedules run until the kill, this one included.
    pub schedules: u64,
    pub elapsed: Duration,
}

/// What hunting one mutant found.
#[derive(Debug, Clone)]
pub struct Hunt {
    pub mutant: crate::zoo::Mutant,
    /// The kill by a rule; `None` when the mutant survived every schedule tried.
    pub kill: Option<Kill>,
    /// Whether the canonical schedules alone kill it.
    pub canonical: bool,
    /// A canonical failure flagged only by a scenario's `expect` block or a request check of
    /// the scripted model: shown, never counted (it describes one schedule of the reference).
    pub expect_only: Option<String>,
    /// Every rule that flagged the mutant on a schedule run (all canonical schedules, and the
    /// killing schedule of the hunt).
    pub rules: BTreeSet<String>,
}

/// Hunts a mutant: the canonical schedule of every scenario (all of them, to learn which rules
/// it breaks), then `seeds` random and pct seeds of each scenario until a rule kills it. Only a
/// catalogue rule's violation is a kill.
pub fn hunt_mutant(corpus: &[LoadedScenario], mutant: crate::zoo::Mutant, seeds: u64) -> Hunt {
    use crate::suite::{run_case, Verdict};
    let started = Instant::now();
    let mut hunt = Hunt {
        mutant,
        kill: None,
        canonical: false,
        expect_only: None,
        rules: BTreeSet::new(),
    };
    let mut schedules = 0;
    let strategies = [
        StrategyKind::Scripted,
        StrategyKind::Random,
        StrategyKind::Pct { depth: 3 },
    ];
    for strategy in strategies {
        let seed_count = if strategy == StrategyKind::Scripted { 1 } else { seeds };
        for seed in 0..seed_count {
            for loaded in corpus {
                if hunt.kill.is_some() && strategy != StrategyKind::Scripted {
                    return hunt;
                }
                schedules += 1;
                let case = run_case(loaded, strategy, seed, &Implementation::mutant(mutant)).against_reference(loaded);
                if case.verdict != Verdict::Failed {
                    continue;
                }
                let by_rule: Vec<&Violation> = case
                    .violations
                    .iter()
                    .filter(|violation| check::RULE_IDS.contains(&violation.rule.as_str()))
                    .collect();
                hunt.rules
                    .extend(by_rule.iter().map(|violation| violation.rule.clone()));
                let Some(first) = by_rule.first() else {
                    if hunt.expect_only.is_none() {
                        let rule = case
                            .violations
                            .first()
                            .map(|violation| violation.rule.as_str())
                            .unwrap_or("-");
                        hunt.expect_only = Some(format!("{rule} in {}", loaded.name));
                    }
                    continue;
                };
                if hunt.kill.is_none() {
                    hunt.canonical = strategy == StrategyKind::Scripted;
                    hunt.kill = Some(Kill {
                        rule: first.rule.clone(),
                        scenario: loaded.name.clone(),
                        strategy,
                        seed,
                        replay: case.replay_command(),
                        schedules,
                        elapsed: started.elapsed(),
                    });
                }
            }
        }
        if hunt.kill.is_some() {
            return hunt;
        }
    }
    hunt
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
