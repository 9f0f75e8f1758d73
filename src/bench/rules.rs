//! `agentsim bench --rule-costs`: what each checker costs on one scenario's traces.
//!
//! The traces of a batch of random schedules are made once; then, round after round, their
//! timelines are built afresh and every rule runs over the batch in the catalogue's order, as
//! `check::check_all` runs them. One clock reading brackets a rule's pass over the whole batch,
//! so the clock's own cost is spread over the batch. What a timeline derives on first use
//! (each request's expected messages, the call stories) is paid by the first rule that asks,
//! as in `check_all`. The same batch is also run through `check_all` itself, interleaved with
//! the rounds, so the parts can be held against the whole.

use std::time::{Duration, Instant};

use crate::check::{self, Timeline};
use crate::model::SessionEntry;
use crate::scenario::Scenario;
use crate::sim::reference::ReferenceSubject;
use crate::sim::{simulate_with, Random, RunOutcome};
use crate::trace::Trace;

/// Traces per batch: enough schedules that the batch is not one trace's shape.
const BATCH: usize = 64;

/// One rule's cost, in nanoseconds per trace.
#[derive(Debug, Clone)]
pub struct RuleCost {
    pub id: &'static str,
    pub nanos_per_trace: f64,
}

#[derive(Debug, Clone)]
pub struct RuleCosts {
    /// Traces in the batch, and rounds run over it.
    pub traces: usize,
    pub rounds: u64,
    /// Mean events per trace in the batch.
    pub events_per_trace: f64,
    /// `check_all` per trace, measured on the same batch between the rounds.
    pub check_all: f64,
    /// Building the timeline per trace (its lazily derived parts not included).
    pub timeline: f64,
    /// The whole-trace oracle per trace: the trace's inputs replayed on a new reference and
    /// every output compared (`oracle::replay`), which REF-1's checker then only reads.
    pub oracle: f64,
    /// One run of the reference per trace (`simulate`, the request checks off), for scale.
    pub run: f64,
    /// Every rule, the costliest first (ties in catalogue order).
    pub rules: Vec<RuleCost>,
}

impl RuleCosts {
    /// The timeline and the rules, summed: what `check_all` costs but for its own loop.
    pub fn parts(&self) -> f64 {
        self.timeline + self.rules.iter().map(|rule| rule.nanos_per_trace).sum::<f64>()
    }
}

/// Measures every rule on `BATCH` random schedules of `scenario` (seeds 0 to 63) for about
/// `window` of wall-clock time, half in rounds of rule by rule and half in `check_all`.
pub fn rule_costs(scenario: &Scenario, window: Duration) -> RuleCosts {
    let outcomes: Vec<RunOutcome> = (0..BATCH as u64)
        .map(|seed| {
            simulate_with(scenario, &mut ReferenceSubject::new(), &mut Random::new(seed), false)
                .expect("the reference never breaks")
        })
        .collect();
    let outcomes: Vec<(&Trace, Vec<&SessionEntry>)> = outcomes
        .iter()
        .map(|outcome| (&outcome.trace, outcome.stored(scenario)))
        .collect();
    let catalogue = check::catalogue();
    let mut rule_nanos = vec![0u128; catalogue.len()];
    let (mut timeline_nanos, mut check_all_nanos, mut rounds) = (0u128, 0u128, 0u64);
    let (mut oracle_nanos, mut run_nanos) = (0u128, 0u128);
    let started = Instant::now();
    while started.elapsed() < window || rounds == 0 {
        let clock = Instant::now();
        let timelines: Vec<Timeline<'_>> = outcomes
            .iter()
            .map(|(trace, store)| Timeline::new(scenario, trace, store))
            .collect();
        timeline_nanos += clock.elapsed().as_nanos();
        for (rule, nanos) in catalogue.iter().zip(rule_nanos.iter_mut()) {
            let clock = Instant::now();
            for timeline in &timelines {
                std::hint::black_box((rule.checker)(timeline));
            }
            *nanos += clock.elapsed().as_nanos();
        }
        drop(timelines);
        let clock = Instant::now();
        for (trace, store) in &outcomes {
            std::hint::black_box(check::check_all(scenario, trace, store));
        }
        check_all_nanos += clock.elapsed().as_nanos();
        let clock = Instant::now();
        for (trace, _) in &outcomes {
            std::hint::black_box(crate::oracle::replay(
                scenario,
                trace,
                &mut ReferenceSubject::new(),
                crate::oracle::Freedoms::ALL,
            ));
        }
        oracle_nanos += clock.elapsed().as_nanos();
        let clock = Instant::now();
        for seed in 0..BATCH as u64 {
            std::hint::black_box(
                simulate_with(scenario, &mut ReferenceSubject::new(), &mut Random::new(seed), false).ok(),
            );
        }
        run_nanos += clock.elapsed().as_nanos();
        rounds += 1;
    }
    let per_trace = |nanos: u128| nanos as f64 / (rounds as f64 * BATCH as f64);
    let mut rules: Vec<RuleCost> = catalogue
        .iter()
        .zip(&rule_nanos)
        .map(|(rule, nanos)| RuleCost {
            id: rule.id,
            nanos_per_trace: per_trace(*nanos),
        })
        .collect();
    rules.sort_by(|left, right| right.nanos_per_trace.total_cmp(&left.nanos_per_trace));
    RuleCosts {
        traces: BATCH,
        rounds,
        events_per_trace: outcomes.iter().map(|(trace, _)| trace.events.len()).sum::<usize>() as f64 / BATCH as f64,
        check_all: per_trace(check_all_nanos),
        timeline: per_trace(timeline_nanos),
        oracle: per_trace(oracle_nanos),
        run: per_trace(run_nanos),
        rules,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table names every rule once, whatever the clock says; no figure is asserted.
    #[test]
    fn every_rule_is_costed_once() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/wiring/walkthrough.json");
        let loaded = crate::scenario::load(&path, "walkthrough", check::RULE_IDS).expect("the walk-through loads");
        let costs = rule_costs(&loaded.scenario, Duration::ZERO);
        assert_eq!(costs.rounds, 1);
        assert_eq!(costs.traces, BATCH);
        let mut costed: Vec<&str> = costs.rules.iter().map(|rule| rule.id).collect();
        costed.sort_unstable();
        let mut ids: Vec<&str> = check::catalogue().iter().map(|rule| rule.id).collect();
        ids.sort_unstable();
        assert_eq!(costed, ids);
        assert!(costs.oracle > 0.0 && costs.run > 0.0);
        assert!(costs
            .rules
            .windows(2)
            .all(|pair| pair[0].nanos_per_trace >= pair[1].nanos_per_trace));
    }
}
