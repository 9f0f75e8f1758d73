//! `agentsim bench`: the kit's own speed, measured (never asserted in a test).
//!
//! - schedules per second on one scenario under the random strategy, on one thread, with and
//!   without checking every rule, beside the bare reference core driven by a minimal
//!   immediate driver (no scheduler, no trace) on the same scenario, measured interleaved:
//!   the ratios to the bare core are the cost of the scheduler and of the checkers; checked
//!   schedules whose trace is checked a second time give the checkers' cost with warm caches;
//! - the time to enumerate every schedule of a scenario exhaustively;
//! - `check-session` on generated session files of a given length: time and peak memory of a
//!   child process (`session.rs`);
//! - how the cost grows with the scenario's size and the exploration's length: schedules per
//!   second and peak memory, each point a child process (`growth.rs`);
//! - what each rule's checker costs on one scenario's traces (`rules.rs`).

use std::time::{Duration, Instant};

pub mod compare;
pub mod growth;
pub mod rules;
pub mod session;
pub mod stress;

use crate::model::{ContentBlock, OperationKind};
use crate::runtime::{Completion, Effect, HookOutcome, HookPhase, Input, OpId, Runtime, StoreOutcome, ToolOutcome};
use crate::scenario::{LoadedScenario, Scenario};
use crate::sim::fakes::model_reply;
use crate::sim::reduction::Enumerator;
use crate::sim::reference::{runtime_parts, ReferenceSubject};
use crate::sim::{simulate, simulate_with, Random};

/// A rate measured over a fixed wall-clock window.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub runs: u64,
    pub elapsed: Duration,
}

impl Rate {
    pub fn per_second(self) -> f64 {
        self.runs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

fn measure(window: Duration, mut body: impl FnMut(u64)) -> Rate {
    let started = Instant::now();
    let mut runs = 0;
    while started.elapsed() < window {
        for _ in 0..64 {
            body(runs);
            runs += 1;
        }
    }
    Rate {
        runs,
        elapsed: started.elapsed(),
    }
}

/// Random schedules of `scenario`, seed after seed; with `check`, every rule runs on each trace.
pub fn schedules_per_second(scenario: &Scenario, window: Duration, check: bool) -> Rate {
    measure(window, |seed| random_run(scenario, seed, check))
}

/// One random schedule of `scenario` under `seed`, on the reference, every rule checked when
/// `check`: what `explore` does per schedule.
fn random_run(scenario: &Scenario, seed: u64, check: bool) {
    scheduled_run(scenario, seed, u32::from(check), ReferenceSubject::new());
}

/// One random schedule on `subject`, its trace then judged by every rule `checks` times. A
/// second check finds the checkers' code and the trace in the caches, so checking twice less
/// checking once is what the checkers' own work costs, apart from fetching them after the run.
fn scheduled_run(scenario: &Scenario, seed: u64, checks: u32, mut subject: ReferenceSubject) {
    let outcome =
        simulate_with(scenario, &mut subject, &mut Random::new(seed), false).expect("the reference never breaks");
    for _ in 0..checks {
        let violations = outcome.violations(scenario);
        assert!(violations.is_empty(), "the reference violated a rule under seed {seed}");
    }
}

/// The rates of one scenario side by side: random schedules with every rule checked, the same
/// with the trace only, the trace only without the reference's self-check (what the scheduler
/// and its fakes cost on their own), the bare core, and checked schedules whose trace is
/// checked a second time (for the checkers' cost with warm caches). They are measured
/// interleaved, a batch of each in turn until `window` has passed for each, so a change of the
/// machine's load during the measurement weighs on all alike and their ratios stay honest.
#[derive(Debug, Clone, Copy)]
pub struct SideBySide {
    pub checked: Rate,
    pub trace_only: Rate,
    pub unchecked_reference: Rate,
    pub bare: Rate,
    pub checked_twice: Rate,
}

/// Where the time of one checked schedule goes, in microseconds, by differences of the rates
/// measured side by side (each difference carries the noise of two measurements).
#[derive(Debug, Clone, Copy)]
pub struct CheckedRunParts {
    /// The bare core's run.
    pub core: f64,
    /// The scheduler, its fakes and the trace, beyond the core.
    pub scheduler: f64,
    /// The reference's self-check.
    pub self_check: f64,
    /// Every rule's checker, run on the fresh trace after the run.
    pub checkers: f64,
    /// The same checkers on the same trace again, with the caches warm.
    pub checkers_warm: f64,
}

impl SideBySide {
    /// Time per checked schedule over time per bare core run.
    pub fn checked_over_bare(&self) -> f64 {
        self.bare.per_second() / self.checked.per_second().max(1e-9)
    }

    /// Time per traced schedule over time per bare core run.
    pub fn trace_over_bare(&self) -> f64 {
        self.bare.per_second() / self.trace_only.per_second().max(1e-9)
    }

    /// Time per traced schedule without the reference's self-check over time per bare run.
    pub fn unchecked_reference_over_bare(&self) -> f64 {
        self.bare.per_second() / self.unchecked_reference.per_second().max(1e-9)
    }

    /// The checked schedule's time, part by part.
    pub fn parts(&self) -> CheckedRunParts {
        let micros = |rate: Rate| 1e6 / rate.per_second().max(1e-9);
        CheckedRunParts {
            core: micros(self.bare),
            scheduler: micros(self.unchecked_reference) - micros(self.bare),
            self_check: micros(self.trace_only) - micros(self.unchecked_reference),
            checkers: micros(self.checked) - micros(self.trace_only),
            checkers_warm: micros(self.checked_twice) - micros(self.checked),
        }
    }
}

pub fn side_by_side(scenario: &Scenario, window: Duration) -> SideBySide {
    const BATCH: u64 = 64;
    let mut rates = [Rate {
        runs: 0,
        elapsed: Duration::ZERO,
    }; 5];
    let mut seed = 0;
    while rates.iter().any(|rate| rate.elapsed < window) {
        for (kind, rate) in rates.iter_mut().enumerate() {
            let started = Instant::now();
            for _ in 0..BATCH {
                match kind {
                    0 => random_run(scenario, seed, true),
                    1 => random_run(scenario, seed, false),
                    2 => scheduled_run(scenario, seed, 0, ReferenceSubject::without_self_check()),
                    3 => bare_run(scenario),
                    _ => scheduled_run(scenario, seed, 2, ReferenceSubject::new()),
                }
                seed += 1;
            }
            rate.elapsed += started.elapsed();
            rate.runs += BATCH;
        }
    }
    let [checked, trace_only, unchecked_reference, bare, checked_twice] = rates;
    SideBySide {
        checked,
        trace_only,
        unchecked_reference,
        bare,
        checked_twice,
    }
}

/// Seeds of `scenario` in the networked world (turmoil hosts, JSON-lines RPC, seeded latency
/// and faults), every rule checked on each trace: the same work as `schedules_per_second`
/// with `check`, through a simulated network and disk.
pub fn networked_per_second(scenario: &Scenario, window: Duration) -> Rate {
    let mut subject = crate::implementation::Implementation::reference().subject();
    measure(window, |seed| {
        let options = crate::net::NetOptions {
            seed,
            seeded_faults: true,
            ..crate::net::NetOptions::default()
        };
        let outcome = crate::net::run_net(scenario, &options, &mut subject)
            .expect("the networked world runs")
            .outcome;
        let violations = outcome.violations(scenario);
        assert!(
            violations.is_empty(),
            "the reference violated a rule in the networked world, seed {seed}"
        );
    })
}

/// The bare core: restore, deliver the operations in order, answer every effect at once.
pub fn bare_core_per_second(scenario: &Scenario, window: Duration) -> Rate {
    measure(window, |_| bare_run(scenario))
}

fn bare_run(scenario: &Scenario) {
    let (config, deps) = runtime_parts(scenario);
    let Ok(mut runtime) = Runtime::restore(config, deps, &scenario.session) else {
        return;
    };
    let mut model_index = 0;
    let mut pending: Vec<Input> = Vec::new();
    for (index, spec) in scenario.operations.iter().enumerate() {
        let op = OpId(index as u32 + 1);
        if !matches!(
            spec.op,
            OperationKind::Prompt | OperationKind::Flush | OperationKind::Dispose
        ) {
            continue;
        }
        pending.push(Input::Operation {
            op,
            operation: spec.operation(),
        });
    }
    while let Some(input) = pending.pop() {
        runtime.handle_input(input).expect("the bare driver answers in kind");
        while let Some(effect) = runtime.poll_effect() {
            let answer = match effect {
                Effect::ModelRequest { effect, .. } => {
                    let reply = model_reply(scenario, model_index, 0);
                    model_index += 1;
                    Completion::ModelFinal { message: reply.message }.into_input(effect)
                }
                Effect::ToolCall { effect, .. } => Completion::Tool(ToolOutcome::Ok {
                    content: vec![ContentBlock::text("ok")],
                    details: None,
                    is_error: false,
                })
                .into_input(effect),
                Effect::Hook { effect, phase, .. } => Completion::Hook(match phase {
                    HookPhase::Before => HookOutcome::Allow,
                    HookPhase::After => HookOutcome::Observe,
                })
                .into_input(effect),
                Effect::Append { effect, .. } => Completion::Append(StoreOutcome::Ok).into_input(effect),
                Effect::Write { effect, .. } => Completion::Write(StoreOutcome::Ok).into_input(effect),
                Effect::Notify { effect, .. } => {
                    Completion::Notify(crate::runtime::NotifyOutcome::Ok).into_input(effect)
                }
                Effect::AbortSignal { .. } | Effect::Settled { .. } => continue,
            };
            pending.push(answer);
        }
    }
}

/// What [`exhaustive_time`] measured.
#[derive(Debug, Clone, Copy)]
pub struct EnumerationTime {
    /// Schedules run to their end, each checked.
    pub schedules: u64,
    /// Runs the sleep sets stopped unfinished (reduced enumeration only).
    pub abandoned: u64,
    pub covered: bool,
    pub elapsed: Duration,
}

/// Every schedule of `loaded`, depth first, with or without reduction, up to `bound` runs,
/// each run to its end checked.
pub fn exhaustive_time(loaded: &LoadedScenario, bound: u64, reduced: bool) -> EnumerationTime {
    let started = Instant::now();
    let mut enumerator = Enumerator::new(reduced);
    let (mut schedules, mut abandoned) = (0, 0);
    while schedules + abandoned < bound {
        let Some(mut run) = enumerator.next_run() else { break };
        let mut subject = ReferenceSubject::new();
        let outcome = simulate(&loaded.scenario, &mut subject, &mut run).expect("the reference never breaks");
        if run.is_abandoned() {
            abandoned += 1;
        } else {
            schedules += 1;
            let violations = outcome.violations(&loaded.scenario);
            assert!(
                violations.is_empty(),
                "the reference violated a rule in {}",
                loaded.name
            );
        }
        enumerator.finish_run(run);
    }
    EnumerationTime {
        schedules,
        abandoned,
        covered: enumerator.covered(),
        elapsed: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(micros_per_run: u64) -> Rate {
        Rate {
            runs: 1_000,
            elapsed: Duration::from_micros(micros_per_run * 1_000),
        }
    }

    /// The parts are the differences of the rates, each named for what its rate adds, and they
    /// add up to the checked schedule.
    #[test]
    fn a_checked_schedule_splits_into_the_differences_of_its_rates() {
        let rates = SideBySide {
            checked: rate(30),
            trace_only: rate(18),
            unchecked_reference: rate(16),
            bare: rate(11),
            checked_twice: rate(38),
        };
        let parts = rates.parts();
        let close = |got: f64, expected: f64| (got - expected).abs() < 1e-6;
        assert!(close(parts.core, 11.0), "{parts:?}");
        assert!(close(parts.scheduler, 5.0), "{parts:?}");
        assert!(close(parts.self_check, 2.0), "{parts:?}");
        assert!(close(parts.checkers, 12.0), "{parts:?}");
        assert!(close(parts.checkers_warm, 8.0), "{parts:?}");
        assert!(close(
            parts.core + parts.scheduler + parts.self_check + parts.checkers,
            30.0
        ));
    }
}
