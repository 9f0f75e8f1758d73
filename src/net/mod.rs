//! The networked world: the reference Runtime on one turmoil host, a store server and a model
//! server on two others, talking JSON lines over turmoil TCP with seeded latency.
//!
//! ```text
//!   runtime host                         store host                 model host
//!   Shell (async core) --append-------> FileStore<SimDisk> (JSONL)
//!        |             <--ok/failed----  (turmoil fs: unsynced writes die in a crash)
//!        +-------------model request-------------------------------> scripted replies
//!                      <--------------------start, chunks, final---
//!   tools, hooks, output: local, scripted (the in-process fakes)
//! ```
//!
//! What the in-process scheduler cannot show, this world can: an append applied but its
//! acknowledgement lost (the runtime only sees a timeout), a partition or a held link between
//! the runtime and the store or model, and a store host that crashes and restarts with its
//! unsynced writes gone. Faults come from the scenario's `net.faults` (triggered by a trace
//! condition or at a simulated time) and, with `seeded_faults`, from the seed.
//!
//! After the run the world restarts a crashed store, reads the session file back, and restores
//! a *new* runtime from it at the last acknowledged leaf (`Event::Reopened`): the durability
//! rules (`check::durable`) judge that.
//!
//! Determinism: every host runs on one thread inside turmoil, whose RNG is seeded from the
//! kit's seed ([`turmoil_seed`]); the trace is recorded in the order the hosts' tasks run.
//! turmoil's RNG is not portable across its versions, so a replay is pinned to Cargo.lock.

pub mod crash;
mod hosts;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use tokio::sync::watch;

use crate::model::SessionEntry;
use crate::runtime::EffectId;
use crate::scenario::{NetFaultKind, Scenario};
use crate::sim::rng::Rng;
use crate::sim::{BoxedSubject, Counters, Lent, RunOutcome};
use crate::trace::{Event, NetChange, Trace};

pub const STORE_HOST: &str = "store";
pub const MODEL_HOST: &str = "model";
pub const RUNTIME_HOST: &str = "runtime";
pub const VERIFIER_HOST: &str = "verifier";

/// How long the runtime host waits with nothing happening before it ends the run (a hanging
/// tool nobody aborts, an `after` that never holds): simulated time.
pub const IDLE_MS: u64 = 30_000;
/// How long a crashed store stays down when the crash comes from a crash point.
pub const CRASH_DOWN_MS: u64 = 50;

/// How to run one scenario in the networked world.
#[derive(Debug, Clone, Default)]
pub struct NetOptions {
    pub seed: u64,
    /// Add faults drawn from the seed to the scenario's own.
    pub seeded_faults: bool,
    /// Crash the store host after this many simulation steps (the crash test).
    pub crash_at_step: Option<u64>,
}

/// One run in the networked world.
#[derive(Debug, Clone)]
pub struct NetRun {
    pub outcome: RunOutcome,
    pub turmoil_seed: u64,
    pub steps: u64,
    /// The implementation under test could not be driven (a run on a subject only).
    pub failure: Option<crate::sim::SubjectFailure>,
}

/// The networked world could not run (a bug of the world, reported rather than panicking).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the networked world failed: {message}")]
pub struct NetError {
    pub message: String,
}

/// The seed turmoil's RNG gets for a kit seed (printed with every networked failure).
pub fn turmoil_seed(seed: u64) -> u64 {
    Rng::new(seed ^ 0x6e65_742d_776f_726c).next_u64()
}

/// The run's record, shared by the hosts (turmoil runs them all on one thread).
pub(crate) struct Record {
    pub trace: Trace,
    pub counters: Counters,
    /// Effects issued and not answered yet.
    pub pending: BTreeSet<EffectId>,
    /// The fault plan's numbering of appends and writes: the harness's, so it survives a
    /// restart of the store host.
    pub appends_seen: u32,
    pub writes_seen: u32,
    /// What the verifier read back; the store judged at the end.
    pub final_store: Vec<SessionEntry>,
    /// Bumped on every event, so waiters can notice progress.
    pub progress: watch::Sender<u64>,
}

pub(crate) type Shared = Rc<RefCell<Record>>;

impl Record {
    pub fn push(&mut self, event: Event) {
        self.counters.observe(&event);
        match &event {
            Event::ModelRequest { effect, .. }
            | Event::ToolCall { effect, .. }
            | Event::Hook { effect, .. }
            | Event::Append { effect, .. }
            | Event::Write { effect, .. } => {
                self.pending.insert(*effect);
            }
            Event::ModelResponse { effect, .. }
            | Event::ToolAnswer { effect, .. }
            | Event::HookAnswer { effect, .. }
            | Event::AppendAnswer { effect, .. }
            | Event::WriteAnswer { effect, .. } => {
                self.pending.remove(effect);
            }
            _ => {}
        }
        self.trace.push(event);
        self.progress.send_modify(|count| *count += 1);
    }
}

/// A fault episode: when it starts, how long it lasts.
#[derive(Debug, Clone)]
struct Episode {
    kind: NetFaultKind,
    trigger: Trigger,
    for_ms: Option<u64>,
    state: EpisodeState,
}

#[derive(Debug, Clone, Copy)]
enum Trigger {
    /// When the condition first holds, plus a delay.
    After(crate::scenario::After, u64),
    AtMs(u64),
    AtStep(u64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum EpisodeState {
    Waiting,
    /// Started; ends at this simulated time (never, for `None`).
    Active(Option<u64>),
    Done,
}

/// The faults drawn from the seed: up to two episodes, each starting a few milliseconds after
/// an append or a model request is issued (where a fault matters), lasting up to 250 ms (longer
/// than the default store timeout of 100 ms, so some appends time out and some are merely
/// late). turmoil steps every millisecond of simulated time, so the world's time scale is its
/// cost: faults, timeouts and latencies are kept short, in the same proportions.
fn seeded_episodes(seed: u64) -> Vec<Episode> {
    use crate::scenario::After;
    let mut rng = Rng::new(seed ^ 0x6661_756c_7473_2d31);
    let kinds = [
        NetFaultKind::PartitionStore,
        NetFaultKind::HoldStore,
        NetFaultKind::PartitionModel,
        NetFaultKind::CrashStore,
    ];
    (0..1 + rng.below(2))
        .map(|_| {
            let kind = kinds[rng.below(kinds.len() as u64) as usize];
            let count = 1 + rng.below(4) as u32;
            let after = match kind {
                NetFaultKind::PartitionModel => After::ModelRequests(count.min(2)),
                _ => After::AppendsIssued(count),
            };
            Episode {
                kind,
                trigger: Trigger::After(after, rng.below(12)),
                for_ms: Some(1 + rng.below(250)),
                state: EpisodeState::Waiting,
            }
        })
        .collect()
}

/// Runs `scenario` in the networked world on `subject`: the world takes the subject for the
/// run (its runtime is the runtime host's task) and gives it back, so an adapter process
/// serves the next run too. A failure to drive the subject is `NetRun::failure`.
pub fn run_net(scenario: &Scenario, options: &NetOptions, subject: &mut BoxedSubject) -> Result<NetRun, NetError> {
    let lent = Rc::new(RefCell::new(std::mem::replace(subject, Box::new(Lent))));
    let run = run_net_on(scenario, options, lent.clone());
    // Every host is dropped with the world, so the subject comes back.
    if let Ok(cell) = Rc::try_unwrap(lent) {
        *subject = cell.into_inner();
    }
    run
}

fn run_net_on(
    scenario: &Scenario,
    options: &NetOptions,
    subject: Rc<RefCell<BoxedSubject>>,
) -> Result<NetRun, NetError> {
    let plan = scenario.net.clone().unwrap_or_default();
    let turmoil_seed = turmoil_seed(options.seed);
    let mut builder = turmoil::Builder::new();
    builder
        .rng_seed(turmoil_seed)
        .tick_duration(Duration::from_millis(1))
        .min_message_latency(Duration::from_millis(plan.latency_min_ms))
        .max_message_latency(Duration::from_millis(plan.latency_max_ms))
        .simulation_duration(Duration::from_secs(24 * 3600));
    // Torn writes: a crash may keep a prefix of an unsynced line (in 64-byte blocks).
    builder.fs().block_size(64);
    let mut sim = builder.build();

    let (progress, _) = watch::channel(0);
    let shared: Shared = Rc::new(RefCell::new(Record {
        trace: Trace::default(),
        counters: Counters::default(),
        pending: BTreeSet::new(),
        appends_seen: 0,
        writes_seen: 0,
        final_store: Vec::new(),
        progress,
    }));
    let scenario = Rc::new(scenario.clone());
    let plan = Rc::new(plan);

    {
        let (shared, scenario, sync) = (shared.clone(), scenario.clone(), plan.sync);
        sim.host(STORE_HOST, move || {
            hosts::store_server(shared.clone(), scenario.clone(), sync)
        });
    }
    {
        let scenario = scenario.clone();
        sim.host(MODEL_HOST, move || hosts::model_server(scenario.clone()));
    }
    let failure = Rc::new(RefCell::new(None));
    sim.client(
        RUNTIME_HOST,
        hosts::runtime_client(
            shared.clone(),
            scenario.clone(),
            plan.clone(),
            subject.clone(),
            failure.clone(),
        ),
    );

    let mut episodes: Vec<Episode> = plan
        .faults
        .iter()
        .map(|fault| Episode {
            kind: fault.kind,
            trigger: match (fault.after, fault.at_ms) {
                (Some(after), _) => Trigger::After(after, fault.delay_ms),
                (None, at_ms) => Trigger::AtMs(at_ms.unwrap_or(0)),
            },
            for_ms: fault.for_ms,
            state: EpisodeState::Waiting,
        })
        .collect();
    if options.seeded_faults {
        episodes.extend(seeded_episodes(options.seed));
    }
    if let Some(step) = options.crash_at_step {
        episodes.push(Episode {
            kind: NetFaultKind::CrashStore,
            trigger: Trigger::AtStep(step),
            for_ms: Some(CRASH_DOWN_MS),
            state: EpisodeState::Waiting,
        });
    }

    let mut steps = 0u64;
    loop {
        drive_episodes(&mut sim, &shared, &mut episodes, steps, false);
        let finished = sim.step().map_err(|error| NetError {
            message: format!("step {steps}: {error}"),
        })?;
        steps += 1;
        if finished {
            break;
        }
    }
    // The run is over: end every fault, so the store is up and reachable, then verify.
    drive_episodes(&mut sim, &shared, &mut episodes, steps, true);
    sim.client(VERIFIER_HOST, hosts::verifier_client(shared.clone(), scenario.clone()));
    sim.run().map_err(|error| NetError {
        message: format!("verification: {error}"),
    })?;
    drop(sim);
    // Only now is the subject's run over: effects may complete while the verifier reads.
    if failure.borrow().is_none() {
        if let Err(error) = subject.borrow_mut().finish() {
            *failure.borrow_mut() = Some(error);
        }
    }
    let failure = failure.borrow_mut().take();

    let record = Rc::try_unwrap(shared)
        .map_err(|_| NetError {
            message: "a host still holds the run's record".into(),
        })?
        .into_inner();
    // An operation settles once, in this world as in process (`subject.settled_twice`).
    let failure = failure.or_else(|| settled_twice(&record.trace));
    Ok(NetRun {
        outcome: RunOutcome {
            trace: record.trace,
            store: crate::sim::FinalStore::Read(record.final_store),
            findings: Vec::new(),
            choices: Vec::new(),
        },
        turmoil_seed,
        steps,
        failure,
    })
}

/// The first operation the trace shows settled a second time, as the in-process scheduler
/// refuses it: the op, the 1-based line of the second settlement and of the first.
fn settled_twice(trace: &crate::trace::Trace) -> Option<crate::sim::SubjectFailure> {
    let mut first: std::collections::BTreeMap<crate::runtime::OpId, usize> = Default::default();
    for (index, event) in trace.events.iter().enumerate() {
        if let Event::Settled { op, .. } = event {
            if let Some(first) = first.get(op) {
                return Some(crate::sim::SubjectFailure::SettledTwice {
                    op: *op,
                    line: index + 1,
                    first: *first,
                });
            }
            first.insert(*op, index + 1);
        }
    }
    None
}

/// Starts and ends fault episodes whose time has come; with `finish`, ends every active one.
fn drive_episodes(sim: &mut turmoil::Sim<'_>, shared: &Shared, episodes: &mut [Episode], step: u64, finish: bool) {
    let now = sim.elapsed().as_millis() as u64;
    for episode in episodes.iter_mut() {
        if episode.state == EpisodeState::Waiting && !finish {
            if let Trigger::After(after, delay) = episode.trigger {
                if delay > 0 && shared.borrow().counters.holds(after) {
                    episode.trigger = Trigger::AtMs(now + delay);
                }
            }
            let due = match episode.trigger {
                Trigger::After(after, _) => shared.borrow().counters.holds(after),
                Trigger::AtMs(at) => now >= at,
                Trigger::AtStep(at) => step >= at,
            };
            if due {
                start(sim, shared, episode.kind, now);
                episode.state = EpisodeState::Active(episode.for_ms.map(|duration| now + duration));
            }
        }
        if let EpisodeState::Active(until) = episode.state {
            if finish || until.is_some_and(|until| now >= until) {
                end(sim, shared, episode.kind, now);
                episode.state = EpisodeState::Done;
            }
        }
        if finish && episode.state == EpisodeState::Waiting {
            episode.state = EpisodeState::Done;
        }
    }
}

fn start(sim: &mut turmoil::Sim<'_>, shared: &Shared, kind: NetFaultKind, at_ms: u64) {
    let change = match kind {
        NetFaultKind::PartitionStore => {
            sim.partition(RUNTIME_HOST, STORE_HOST);
            NetChange::Partition {
                peer: STORE_HOST.into(),
            }
        }
        NetFaultKind::HoldStore => {
            sim.hold(RUNTIME_HOST, STORE_HOST);
            NetChange::Hold {
                peer: STORE_HOST.into(),
            }
        }
        NetFaultKind::PartitionModel => {
            sim.partition(RUNTIME_HOST, MODEL_HOST);
            NetChange::Partition {
                peer: MODEL_HOST.into(),
            }
        }
        NetFaultKind::CrashStore => {
            if !sim.is_host_running(STORE_HOST) {
                return;
            }
            sim.crash(STORE_HOST);
            NetChange::Crash {
                host: STORE_HOST.into(),
            }
        }
    };
    shared.borrow_mut().push(Event::Net { at_ms, change });
}

fn end(sim: &mut turmoil::Sim<'_>, shared: &Shared, kind: NetFaultKind, at_ms: u64) {
    let change = match kind {
        NetFaultKind::PartitionStore => {
            sim.repair(RUNTIME_HOST, STORE_HOST);
            NetChange::Repair {
                peer: STORE_HOST.into(),
            }
        }
        NetFaultKind::HoldStore => {
            sim.release(RUNTIME_HOST, STORE_HOST);
            NetChange::Release {
                peer: STORE_HOST.into(),
            }
        }
        NetFaultKind::PartitionModel => {
            sim.repair(RUNTIME_HOST, MODEL_HOST);
            NetChange::Repair {
                peer: MODEL_HOST.into(),
            }
        }
        NetFaultKind::CrashStore => {
            if sim.is_host_running(STORE_HOST) {
                return;
            }
            // Record the restart before the host runs, so its `store_opened` follows it.
            shared.borrow_mut().push(Event::Net {
                at_ms,
                change: NetChange::Restart {
                    host: STORE_HOST.into(),
                },
            });
            sim.bounce(STORE_HOST);
            return;
        }
    };
    shared.borrow_mut().push(Event::Net { at_ms, change });
}

/// The header the store host writes at the top of the session file of a run of `scenario`.
pub fn session_header(scenario: &crate::scenario::Scenario) -> crate::model::SessionHeader {
    hosts::header(scenario)
}
