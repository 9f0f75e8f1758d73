//! Naive stress testing, for comparison with the kit: the same subject and the same fakes,
//! driven by a real multi-threaded tokio runtime. Every operation and every effect's answer is
//! a task that sleeps a random while and then acts; nothing chooses the interleaving, the
//! threads and timers do. The trace is recorded in the order things really happened, and the
//! same checkers judge it.
//!
//! Operations ignore their `after` conditions: a stress test has no such control.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::check::Violation;
use crate::runtime::{EffectId, Input};
use crate::scenario::Scenario;
use crate::sim::rng::Rng;
use crate::sim::{Choice, RunOutcome, Subject, World};
use crate::trace::Event;

/// The longest random sleep before an operation or an answer.
const SLEEP_MAX_MICROS: u64 = 300;
/// A run that has not gone quiet by then is ended (a hanging tool, a stuck dispose).
const RUN_LIMIT: Duration = Duration::from_millis(200);

struct Shared<'a> {
    world: World<'a>,
    subject: Box<dyn Subject + Send>,
    in_flight: usize,
    broken: bool,
}

/// One stress run of `scenario` on a fresh subject; the violations its trace shows.
///
/// Tasks outlive nothing but the process, so the scenario must be `'static` (the bench leaks
/// its corpus once).
pub fn stress_once(
    scenario: &'static Scenario,
    make_subject: &(dyn Fn() -> Box<dyn Subject + Send> + Sync),
    seed: u64,
    runtime: &tokio::runtime::Runtime,
) -> Vec<Violation> {
    match runtime.block_on(run(scenario, make_subject(), seed)) {
        Some(outcome) => outcome.violations(scenario),
        None => Vec::new(),
    }
}

async fn run(scenario: &'static Scenario, mut subject: Box<dyn Subject + Send>, seed: u64) -> Option<RunOutcome> {
    let mut world = World::new(scenario);
    match subject.start(scenario).ok()? {
        Ok(restored) => world.push(Event::Restored {
            leaf: restored.leaf,
            messages: restored.messages,
            probed: false,
        }),
        Err(cause) => world.push(Event::RestoreFailed { cause }),
    }
    let shared = Arc::new(Mutex::new(Shared {
        world,
        subject,
        in_flight: 0,
        broken: false,
    }));
    let mut rng = Rng::new(seed);
    let mut tasks = Vec::new();
    for index in 0..scenario.operations.len() {
        let delay = Duration::from_micros(rng.below(SLEEP_MAX_MICROS * 4));
        let shared = shared.clone();
        let seed = rng.next_u64();
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let input = shared
                .lock()
                .expect("no task panics")
                .world
                .take(Choice::Deliver { index });
            deliver(&shared, input, seed).await;
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let started = Instant::now();
    while started.elapsed() < RUN_LIMIT {
        if shared.lock().expect("no task panics").in_flight == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let mut shared = shared.lock().expect("no task panics");
    if shared.broken {
        return None;
    }
    let pending: Vec<EffectId> = shared
        .world
        .pending_effects()
        .iter()
        .map(|(effect, _)| *effect)
        .collect();
    shared.world.push(Event::End {
        pending,
        undelivered: Vec::new(),
    });
    let world = std::mem::replace(&mut shared.world, World::new(scenario));
    let outcome = world.finish(Vec::new());
    Some(outcome)
}

/// Delivers an input and starts an answering task for every effect it produced.
fn deliver<'f>(
    shared: &'f Arc<Mutex<Shared<'static>>>,
    input: Input,
    seed: u64,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'f>> {
    Box::pin(async move {
        let new_effects: Vec<EffectId> = {
            let mut guard = shared.lock().expect("no task panics");
            let state = &mut *guard;
            let before: Vec<EffectId> = state
                .world
                .pending_effects()
                .iter()
                .map(|(effect, _)| *effect)
                .collect();
            let mut effects = Vec::new();
            if state.subject.deliver(input, &mut effects).is_err() {
                state.broken = true;
                return;
            }
            for effect in effects {
                state.world.record(effect);
            }
            let after = state.world.pending_effects();
            let new: Vec<EffectId> = after
                .iter()
                .map(|(effect, _)| *effect)
                .filter(|effect| !before.contains(effect))
                .collect();
            state.in_flight += new.len();
            new
        };
        let mut rng = Rng::new(seed);
        for effect in new_effects {
            let shared = shared.clone();
            let seed = rng.next_u64();
            tokio::spawn(async move { answer(shared, effect, seed).await });
        }
    })
}

/// Answers one effect after random sleeps (chunk by chunk for a streaming model).
async fn answer(shared: Arc<Mutex<Shared<'static>>>, effect: EffectId, seed: u64) {
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_micros(rng.below(SLEEP_MAX_MICROS))).await;
        let input = {
            let mut guard = shared.lock().expect("no task panics");
            let state = &mut *guard;
            let status = state.world.pending_effects().into_iter().find(|(id, _)| *id == effect);
            match status {
                None => {
                    state.in_flight -= 1;
                    return;
                }
                Some((_, false)) if started.elapsed() < RUN_LIMIT => None,
                Some((_, false)) => {
                    state.in_flight -= 1;
                    return;
                }
                // `take` reads only the effect of a completion.
                Some((_, true)) => Some(state.world.take(Choice::Complete {
                    effect,
                    answer: crate::sim::Answer::Model,
                })),
            }
        };
        if let Some(input) = input {
            deliver(&shared, input, rng.next_u64()).await;
        }
    }
}

/// Stress runs of the corpus, one scenario after another, until a violation or `budget`.
/// Returns the runs made and, when detected, the time it took.
pub fn stress_hunt(
    corpus: &'static [Scenario],
    make_subject: &(dyn Fn() -> Box<dyn Subject + Send> + Sync),
    budget: Duration,
) -> (u64, Option<Duration>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a tokio runtime starts");
    let started = Instant::now();
    let mut runs = 0;
    while started.elapsed() < budget {
        let scenario = &corpus[runs as usize % corpus.len()];
        runs += 1;
        if !stress_once(scenario, make_subject, runs, &runtime).is_empty() {
            return (runs, Some(started.elapsed()));
        }
    }
    (runs, None)
}
