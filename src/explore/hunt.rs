//! Hunting one mutant of the zoo: the canonical schedules, then random and pct seeds until a
//! catalogue rule kills it (`agentsim mutants`).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::check::{self, Violation};
use crate::implementation::Implementation;
use crate::run::{Run, Verdict};
use crate::scenario::LoadedScenario;
use crate::sim::StrategyKind;

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
                let case = Run::of(loaded)
                    .seeded(strategy, seed)
                    .on(&Implementation::mutant(mutant))
                    .execute(loaded);
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
