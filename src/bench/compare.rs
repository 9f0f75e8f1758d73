//! Side by side on the interleaving tier: how each way of choosing schedules finds the bugs
//! the canonical schedule misses (`agentsim bench --interleaving`).
//!
//! Every strategy but `guided` walks the corpus the same way, round robin: its first schedule
//! of every scenario, then its second of every scenario, and so on, up to a budget of
//! schedules per scenario. A mutant is detected at the first schedule a catalogue rule flags.
//! In repetition `r` (of `--repeats`), `random` and `pct` take seed `r * budget + i` for
//! schedule `i`; `exhaustive` takes the reduced enumeration's `i`-th run (until the scenario's
//! space is covered; the same in every repetition; a run the sleep sets stop unfinished counts
//! as a schedule and judges nothing); `guided-per-scenario` takes the `i`-th schedule of a
//! coverage-guided search per scenario seeded `r * budget` (so its first schedule is
//! random's). `guided` is the corpus search `explore` runs, seeded `r * budget`: it chooses the
//! scenario of every schedule itself, by energy, within the same total budget (the budget
//! times the scenarios). Every schedule counts alike, whichever scenario it ran. Naive stress
//! testing (real threads, random sleeps) runs the corpus for a time budget instead.
//!
//! [`pct_detection`] measures, per mutant, PCT's detection probability per schedule on each
//! scenario, for the bench to set beside PCT's guarantee `1/(n k^(d-1))`.

use std::time::{Duration, Instant};

use crate::check::RULE_IDS;
use crate::implementation::Implementation;
use crate::scenario::LoadedScenario;
use crate::sim::guided::{CorpusSearch, GuidedSearch};
use crate::sim::reduction::Enumerator;
use crate::sim::{make_strategy, simulate_with, RunOutcome, Strategy, StrategyKind};
use crate::zoo::Mutant;

/// How one way of choosing schedules did on one mutant.
#[derive(Debug, Clone)]
pub struct Detection {
    /// Schedules run until the detection, or in all when it missed.
    pub schedules: u64,
    /// Time to the detection, or `None` when the budget ran out.
    pub time: Option<Duration>,
}

/// The strategies compared, by name.
/// `guided` is the corpus search `explore` runs; `guided-per-scenario` the same planning with
/// an equal share of schedules for every scenario, round robin (what `explore` ran before the
/// search shared its schedules by energy), for the difference the sharing makes.
pub const STRATEGIES: [&str; 6] = [
    "random",
    "pct",
    "pct:3:8",
    "exhaustive",
    "guided-per-scenario",
    "guided",
];

/// Where each scenario's next schedule comes from.
enum Source {
    Seeded(StrategyKind),
    /// One reduced enumeration per scenario, `None` once covered.
    Exhaustive(Vec<Option<Enumerator>>),
    Guided(Vec<GuidedSearch>),
}

/// Detects the bug of `implementation` (a mutant of the zoo, in process or served over the
/// protocol) with strategy `name` (one of [`STRATEGIES`]), `budget` schedules per scenario, in
/// repetition `repeat` (0 for the first).
pub fn detect(
    corpus: &[LoadedScenario],
    implementation: &Implementation,
    name: &str,
    budget: u64,
    repeat: u64,
) -> Detection {
    let first_seed = repeat * budget;
    let mut source = match name {
        "exhaustive" => Source::Exhaustive(corpus.iter().map(|_| Some(Enumerator::new(true))).collect()),
        "guided-per-scenario" => Source::Guided(corpus.iter().map(|_| GuidedSearch::new(first_seed)).collect()),
        seeded => Source::Seeded(StrategyKind::parse(seeded).expect("STRATEGIES are spelt as parse takes them")),
    };
    let started = Instant::now();
    if name == "guided" {
        return detect_guided(corpus, implementation, budget, first_seed, started);
    }
    let mut schedules = 0;
    for seed in 0..budget {
        let mut ran = false;
        for (index, loaded) in corpus.iter().enumerate() {
            if loaded.scenario.net.is_some() {
                continue;
            }
            let mut subject = implementation.subject();
            let run = |chooser: &mut dyn Strategy, subject: &mut dyn crate::sim::Subject| {
                simulate_with(&loaded.scenario, subject, chooser, false).ok()
            };
            let outcome: Option<RunOutcome> = match &mut source {
                Source::Seeded(kind) => run(make_strategy(*kind, first_seed + seed).as_mut(), subject.as_mut()),
                Source::Exhaustive(enumerators) => {
                    let Some(mut enumerated) = enumerators[index].as_mut().and_then(Enumerator::next_run) else {
                        continue;
                    };
                    let outcome = run(&mut enumerated, subject.as_mut());
                    let abandoned = enumerated.is_abandoned();
                    match &outcome {
                        Some(_) => enumerators[index].as_mut().expect("ran").finish_run(enumerated),
                        None => enumerators[index] = None,
                    }
                    // A run the sleep sets stopped unfinished costs a schedule; it judges nothing.
                    if abandoned {
                        ran = true;
                        schedules += 1;
                        continue;
                    }
                    outcome
                }
                Source::Guided(searches) => {
                    let mut guided = searches[index].next_run();
                    let outcome = run(&mut guided, subject.as_mut());
                    if let Some(outcome) = &outcome {
                        searches[index].feedback(&loaded.scenario, outcome);
                    }
                    outcome
                }
            };
            ran = true;
            schedules += 1;
            let Some(outcome) = outcome else { continue };
            if a_rule_flags(&loaded.scenario, &outcome) {
                return Detection {
                    schedules,
                    time: Some(started.elapsed()),
                };
            }
        }
        if !ran {
            break;
        }
    }
    Detection { schedules, time: None }
}

/// The guided search over the whole corpus: it picks each next scenario by energy, up to
/// `budget` schedules per scenario on average.
fn detect_guided(
    corpus: &[LoadedScenario],
    implementation: &Implementation,
    budget: u64,
    seed: u64,
    started: Instant,
) -> Detection {
    let in_process: Vec<&LoadedScenario> = corpus.iter().filter(|loaded| loaded.scenario.net.is_none()).collect();
    let mut search = CorpusSearch::new(seed, in_process.iter().map(|loaded| &loaded.scenario));
    let total = budget * in_process.len() as u64;
    for schedules in 1..=total {
        let Some((index, mut run)) = search.next_run() else {
            break;
        };
        let scenario = &in_process[index].scenario;
        let mut subject = implementation.subject();
        let Ok(outcome) = simulate_with(scenario, subject.as_mut(), &mut run, false) else {
            continue;
        };
        search.feedback(index, scenario, &outcome);
        if a_rule_flags(scenario, &outcome) {
            return Detection {
                schedules,
                time: Some(started.elapsed()),
            };
        }
    }
    Detection {
        schedules: total,
        time: None,
    }
}

/// Whether a catalogue rule (not the scenario's own `expect` block) flags the run: what
/// detects a mutant here.
fn a_rule_flags(scenario: &crate::scenario::Scenario, outcome: &RunOutcome) -> bool {
    outcome
        .violations(scenario)
        .iter()
        .any(|violation| RULE_IDS.contains(&violation.rule.as_str()))
}

/// PCT on one scenario against one mutant: how often a schedule detected it, and the run
/// length PCT's guarantee is stated in.
#[derive(Debug, Clone)]
pub struct PctDetection {
    pub scenario: String,
    /// Schedules run, and those a catalogue rule flagged.
    pub schedules: u64,
    pub detected: u64,
    /// Steps per schedule, on average (PCT's `k`).
    pub steps_mean: f64,
}

impl PctDetection {
    pub fn probability(&self) -> f64 {
        self.detected as f64 / self.schedules.max(1) as f64
    }

    /// PCT's lower bound on the probability that one schedule finds a bug of depth `depth`:
    /// `1 / (n k^(depth-1))`, `n` the lanes (PCT's threads), `k` the steps of a run.
    pub fn bound(&self, depth: u32) -> f64 {
        let lanes = crate::sim::Choice::LANES as f64;
        1.0 / (lanes * self.steps_mean.powi(depth as i32 - 1))
    }
}

/// Seeds `0..seeds` of `kind` (a pct) on every in-process scenario against `mutant`: the
/// scenario where a schedule detects it most often, if any does.
pub fn pct_detection(
    corpus: &[LoadedScenario],
    mutant: Mutant,
    kind: StrategyKind,
    seeds: u64,
) -> Option<PctDetection> {
    corpus
        .iter()
        .filter(|loaded| loaded.scenario.net.is_none())
        .map(|loaded| pct_on(loaded, mutant, kind, seeds))
        .filter(|measured| measured.detected > 0)
        .fold(None, |best: Option<PctDetection>, measured| match best {
            Some(best) if best.probability() >= measured.probability() => Some(best),
            _ => Some(measured),
        })
}

/// Seeds `0..seeds` of `kind` on one scenario against `mutant`.
pub fn pct_on(loaded: &LoadedScenario, mutant: Mutant, kind: StrategyKind, seeds: u64) -> PctDetection {
    let mut measured = PctDetection {
        scenario: loaded.name.clone(),
        schedules: 0,
        detected: 0,
        steps_mean: 0.0,
    };
    let mut steps = 0;
    for seed in 0..seeds {
        let mut subject = crate::implementation::Implementation::mutant(mutant).subject();
        let mut strategy = make_strategy(kind, seed);
        let Ok(outcome) = simulate_with(&loaded.scenario, subject.as_mut(), strategy.as_mut(), false) else {
            continue;
        };
        measured.schedules += 1;
        steps += outcome.choices.len();
        if a_rule_flags(&loaded.scenario, &outcome) {
            measured.detected += 1;
        }
    }
    measured.steps_mean = steps as f64 / measured.schedules.max(1) as f64;
    measured
}
