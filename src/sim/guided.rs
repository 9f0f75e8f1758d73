//! The coverage-guided strategy (`--strategy guided`): a search over schedules that prefers
//! the ones reaching what no earlier schedule of the scenario reached.
//!
//! Feedback is the coverage of a trace: the rule situations it reached (`check::situations`)
//! and its abstract states, one token per delivery or answer naming what was in flight then
//! ("steer while model,hook-after"). A schedule that adds a token joins the pool. Each next
//! schedule either starts fresh (uniform random choices) or takes a pool member's choices up
//! to a random cut and continues at random from there, so new windows found once are widened
//! from. Everything comes from one seed through the portable PRNG; a failing schedule replays
//! exactly with `--choices` (the search's state is not needed to replay it).

use std::collections::BTreeSet;

use crate::check::{situations, Timeline};
use crate::runtime::HookPhase;
use crate::scenario::Scenario;
use crate::trace::{Event, Trace};

use super::rng::Rng;
use super::strategy::Strategy;
use super::{Choice, RunOutcome};

/// One schedule of the search: a prefix of choices, then uniform random picks.
pub struct GuidedRun {
    prefix: Vec<usize>,
    step: usize,
    rng: Rng,
}

impl Strategy for GuidedRun {
    fn pick(&mut self, choices: &[Choice]) -> usize {
        let index = match self.prefix.get(self.step) {
            Some(choice) => (*choice).min(choices.len() - 1),
            None => self.rng.below(choices.len() as u64) as usize,
        };
        self.step += 1;
        index
    }
}

/// The search over one scenario's schedules.
pub struct GuidedSearch {
    rng: Rng,
    /// Choice sequences that reached something new, oldest first.
    pool: Vec<Vec<usize>>,
    seen: BTreeSet<String>,
}

impl GuidedSearch {
    pub fn new(seed: u64) -> GuidedSearch {
        GuidedSearch {
            rng: Rng::new(seed),
            pool: Vec::new(),
            seen: BTreeSet::new(),
        }
    }

    /// The next schedule to run.
    pub fn next_run(&mut self) -> GuidedRun {
        let seed = self.rng.next_u64();
        // One schedule in four starts fresh, so the search never narrows to the pool alone.
        let prefix = if self.pool.is_empty() || self.rng.below(4) == 0 {
            Vec::new()
        } else {
            let parent = &self.pool[self.rng.below(self.pool.len() as u64) as usize];
            let cut = self.rng.below(parent.len() as u64 + 1) as usize;
            parent[..cut].to_vec()
        };
        GuidedRun {
            prefix,
            step: 0,
            rng: Rng::new(seed),
        }
    }

    /// Feeds back one finished schedule; returns whether it reached something new.
    pub fn feedback(&mut self, scenario: &Scenario, outcome: &RunOutcome) -> bool {
        let mut novel = false;
        for token in coverage_tokens(scenario, outcome) {
            novel |= self.seen.insert(token);
        }
        if novel {
            self.pool
                .push(outcome.choices.iter().map(|(index, _)| *index).collect());
        }
        novel
    }
}

/// What a trace covered: the situations it reached and its abstract states.
pub fn coverage_tokens(scenario: &Scenario, outcome: &RunOutcome) -> BTreeSet<String> {
    let timeline = Timeline::new(scenario, &outcome.trace, &outcome.store);
    let mut tokens: BTreeSet<String> = situations::reached(&timeline)
        .into_iter()
        .map(|index| format!("situation {index}"))
        .collect();
    tokens.extend(abstract_states(&outcome.trace));
    tokens
}

/// One token per delivery and per answer: what it was, and what was in flight at that moment.
pub fn abstract_states(trace: &Trace) -> BTreeSet<String> {
    let mut pending: std::collections::BTreeMap<crate::runtime::EffectId, &'static str> = Default::default();
    let mut tokens = BTreeSet::new();
    let in_flight = |pending: &std::collections::BTreeMap<crate::runtime::EffectId, &'static str>| {
        let kinds: BTreeSet<&str> = pending.values().copied().collect();
        kinds.into_iter().collect::<Vec<_>>().join(",")
    };
    for event in &trace.events {
        match event {
            Event::Deliver { operation, .. } => {
                tokens.insert(format!("{} while [{}]", operation.name(), in_flight(&pending)));
            }
            Event::ModelRequest { effect, .. } => {
                pending.insert(*effect, "model");
            }
            Event::ToolCall { effect, .. } => {
                pending.insert(*effect, "tool");
            }
            Event::Hook { effect, phase, .. } => {
                pending.insert(
                    *effect,
                    match phase {
                        HookPhase::Before => "hook-before",
                        HookPhase::After => "hook-after",
                    },
                );
            }
            Event::Append { effect, .. } => {
                pending.insert(*effect, "append");
            }
            Event::Write { effect, .. } => {
                pending.insert(*effect, "write");
            }
            Event::ModelChunk { effect, .. }
            | Event::ModelResponse { effect, .. }
            | Event::ToolAnswer { effect, .. }
            | Event::HookAnswer { effect, .. }
            | Event::AppendAnswer { effect, .. }
            | Event::WriteAnswer { effect, .. } => {
                let kind = if matches!(event, Event::ModelChunk { .. }) {
                    pending.get(effect).copied()
                } else {
                    pending.remove(effect)
                };
                if let Some(kind) = kind {
                    tokens.insert(format!("{kind} answered while [{}]", in_flight(&pending)));
                }
            }
            _ => {}
        }
    }
    tokens
}
