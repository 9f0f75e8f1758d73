//! Side by side on the interleaving tier: how each way of choosing schedules finds the bugs
//! the canonical schedule misses (`agentsim bench --interleaving`).
//!
//! Every strategy walks the corpus the same way, round robin: its first schedule of every
//! scenario, then its second of every scenario, and so on, up to a budget of schedules per
//! scenario. A mutant is detected at the first schedule a catalogue rule flags. `random` and
//! `pct` take seed `i` for schedule `i`; `exhaustive` takes the enumeration's `i`-th choice
//! sequence (scenarios of up to three operations, until their space is covered); `guided` takes
//! the `i`-th schedule of a coverage-guided search per scenario (seed 0). Naive stress testing
//! (real threads, random sleeps) runs the corpus for a time budget instead.

use std::time::{Duration, Instant};

use crate::check::{self, RULE_IDS};
use crate::explore::{next_prefix, EXHAUSTIVE_OPERATIONS_MAX};
use crate::scenario::LoadedScenario;
use crate::sim::guided::GuidedSearch;
use crate::sim::{make_strategy, simulate_with, Replay, RunOutcome, Strategy, StrategyKind};
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
pub const STRATEGIES: [&str; 4] = ["random", "pct", "exhaustive", "guided"];

/// Where each scenario's next schedule comes from.
enum Source {
    Seeded(StrategyKind),
    Exhaustive(Vec<Option<Vec<usize>>>),
    Guided(Vec<GuidedSearch>),
}

/// Detects `mutant` with strategy `name` (one of [`STRATEGIES`]), `budget` schedules per scenario.
pub fn detect(corpus: &[LoadedScenario], mutant: Mutant, name: &str, budget: u64) -> Detection {
    let mut source = match name {
        "random" => Source::Seeded(StrategyKind::Random),
        "pct" => Source::Seeded(StrategyKind::Pct { depth: 3 }),
        "exhaustive" => Source::Exhaustive(
            corpus
                .iter()
                .map(|loaded| (loaded.scenario.operations.len() <= EXHAUSTIVE_OPERATIONS_MAX).then(Vec::new))
                .collect(),
        ),
        _ => Source::Guided(corpus.iter().map(|_| GuidedSearch::new(0)).collect()),
    };
    let started = Instant::now();
    let mut schedules = 0;
    for seed in 0..budget {
        let mut ran = false;
        for (index, loaded) in corpus.iter().enumerate() {
            if loaded.scenario.net.is_some() {
                continue;
            }
            let mut subject = crate::implementation::Implementation::mutant(mutant).subject();
            let run = |chooser: &mut dyn Strategy, subject: &mut dyn crate::sim::Subject| {
                simulate_with(&loaded.scenario, subject, chooser, false).ok()
            };
            let outcome: Option<RunOutcome> = match &mut source {
                Source::Seeded(kind) => run(make_strategy(*kind, seed).as_mut(), subject.as_mut()),
                Source::Exhaustive(prefixes) => match prefixes[index].take() {
                    Some(prefix) => {
                        let outcome = run(&mut Replay::new(prefix), subject.as_mut());
                        prefixes[index] = outcome.as_ref().and_then(|outcome| next_prefix(&outcome.choices));
                        outcome
                    }
                    None => continue,
                },
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
            let violations = check::check_all(&loaded.scenario, &outcome.trace, &outcome.store);
            if violations
                .iter()
                .any(|violation| RULE_IDS.contains(&violation.rule.as_str()))
            {
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
