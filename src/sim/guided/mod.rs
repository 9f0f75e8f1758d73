//! The coverage-guided strategy (`--strategy guided`): a search over schedules that aims each
//! operation at an in-flight window no earlier schedule opened for it, and, over a corpus
//! ([`CorpusSearch`]), gives each scenario schedules by what it can still find.
//!
//! The interleaving bugs the kit hunts are windows: an operation that lands while something is
//! in flight (an after hook, a tool, a later request of the run, a stream past its chunk, an
//! append, a write, a notification, a queued prompt), or an answer that comes back while an
//! older effect waits. Uniform random choices deliver an operation at the first chance with
//! probability one half, the second with one quarter, and so on, so late windows are
//! exponentially rare. The search instead:
//!
//! - **watches what is in flight** ([`Tracker`], fed by [`Strategy::observe`] with the events
//!   the world recorded so far, never more), so a schedule can hold an operation back until a
//!   chosen window is open and deliver it there;
//! - **feeds back coverage**: the (operation kind, in-flight state) pairs each delivery met, the
//!   (answer kind, in-flight state) pairs each answer met, the whole in-flight sets, and the rule
//!   situations (`check::situations`) and interleaving pairs (`check::pairs`) of the trace;
//! - **chooses targets by rarity**: each planned schedule gives every operation a target window,
//!   drawn among the pairs no schedule of the corpus reached, else those no schedule of the
//!   scenario reached, else with weight falling with how many schedules reached that (kind,
//!   window) pair and how often aiming at it failed (a window that never opens for that
//!   operation fades), so unreached pairs go first and the rest are spread evenly, not
//!   geometrically. An operation aims only at windows some schedule saw open before its
//!   delivery (operations go in file order, so the first one meets nothing), with the windows
//!   the script predicts for it tried once each as guesses. An aim the operations before it
//!   made impossible, its window closed before its turn came ([`Turn`]), counts half a miss,
//!   and the operation then goes at once rather than holding the ones after it;
//! - **keeps a pool** of schedules that reached something new; one schedule in eight continues
//!   a cut of one of them at random, and one in eight starts afresh, uniform random;
//! - **shares the schedules by energy** over a corpus ([`CorpusSearch`]): a scenario's energy
//!   is the fresh pairs its operations can still aim at plus the Good-Turing estimate of the
//!   features its next schedule finds, so schedules go where new behaviour is likely rather
//!   than the same number to every scenario.
//!
//! A search that knows its scenario ([`GuidedSearch::for_scenario`], as the corpus search's do)
//! reads the windows it can open from its script ([`predicted_windows`]) and plans from its
//! first schedule; one that does not ([`GuidedSearch::new`]) runs the uniform random schedule
//! of its seed first (what `random` runs for that seed). Everything comes from the one seed
//! through the portable PRNG, in `BTreeMap` order; a failing schedule replays exactly with
//! `--choices` (the search's state is not needed to replay it).

use std::collections::{BTreeMap, BTreeSet};

use crate::check::{pairs, Reached, Timeline};
use crate::model::OperationKind;
use crate::runtime::{EffectId, HookPhase, OpId, SignalId};
use crate::scenario::Scenario;
use crate::trace::Event;

use super::rng::Rng;
use super::strategy::Strategy;
use super::{Choice, RunOutcome};

mod corpus;

pub use corpus::CorpusSearch;

/// How many schedules reached each coverage feature.
type Counts = BTreeMap<u64, u32>;

/// The in-flight states a [`Tracker`] tells apart, one bit each. `append` is a run's first
/// append (a run appends after its last request), `later-append` any other.
const WINDOWS: [&str; 14] = [
    "first-request",
    "first-request>chunk",
    "first-request>last-chunk",
    "later-request",
    "later-request>chunk",
    "later-request>last-chunk",
    "before-hook",
    "after-hook",
    "tool",
    "append",
    "write",
    "notify",
    "queued",
    "later-append",
];

/// The target "nothing in flight": hold the operation until it is the only choice.
const IDLE: usize = WINDOWS.len();

/// Targets: every window, then idle.
const TARGETS: usize = WINDOWS.len() + 1;

/// Not a target but the canonical habit: deliver the operation as soon as it can go (what a
/// focused schedule does with the operations before the one it aims).
const EAGER: usize = TARGETS + 1;

/// What one pending effect is, for the windows.
#[derive(Debug, Clone, Copy)]
enum InFlight {
    /// A model request: the run's first or a later one, its chunks sent and scripted.
    Model {
        first: bool,
        sent: usize,
        total: usize,
    },
    BeforeHook,
    AfterHook,
    Tool,
    Append {
        later: bool,
    },
    Write,
    Notify,
}

impl InFlight {
    /// The window bit this effect opens (models by request and by chunk).
    fn window(self) -> usize {
        match self {
            InFlight::Model { first, sent, total } => {
                let stream = match sent {
                    0 => 0,
                    sent if sent < total => 1,
                    _ => 2,
                };
                if first {
                    stream
                } else {
                    3 + stream
                }
            }
            InFlight::BeforeHook => 6,
            InFlight::AfterHook => 7,
            InFlight::Tool => 8,
            InFlight::Append { later: false } => 9,
            InFlight::Append { later: true } => 13,
            InFlight::Write => 10,
            InFlight::Notify => 11,
        }
    }
}

/// The index of an operation kind in `check::pairs::OPERATIONS`.
fn operation_kind(kind: OperationKind) -> usize {
    pairs::OPERATIONS
        .iter()
        .position(|listed| *listed == kind)
        .unwrap_or(pairs::OPERATIONS.len())
}

/// Coverage features, one `u64` each: a tag, then two small numbers.
fn feature(tag: u64, first: usize, second: usize) -> u64 {
    (tag << 40) | ((first as u64) << 20) | second as u64
}

const DELIVERED_IN: u64 = 1;
const DELIVERED_IN_SET: u64 = 2;
const ANSWERED_IN: u64 = 3;
const ANSWERED_IN_SET: u64 = 4;
const SITUATION: u64 = 5;
const PAIR: u64 = 6;

/// What is in flight, read from the events the world recorded, and the features met so far.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    pending: BTreeMap<EffectId, InFlight>,
    /// Runs (signals) that already made a model request.
    requested: BTreeSet<SignalId>,
    /// Prompt-like operations delivered and not settled.
    running: BTreeSet<OpId>,
    features: BTreeSet<u64>,
    /// Every window that was open at some point.
    windows_seen: u32,
    /// The chunks the world's script streams for each model request, in request order.
    chunks: Vec<usize>,
    requests: usize,
    /// Appends since the last model request.
    run_appends: usize,
    /// Per delivered operation (file order), the windows it could not have met and those it
    /// could: see [`Turn`].
    turns: Vec<Turn>,
    /// The windows open at some point since the last delivery.
    since_turn: u32,
    /// The windows open at some point before the last delivery.
    seen_at_turn: u32,
}

/// The windows around one operation's turn (from the delivery of the operation before it to
/// its own): those open only before its turn could not be met, however long it waited, because
/// an earlier operation went late; those open during its turn could.
#[derive(Debug, Clone, Copy, Default)]
pub struct Turn {
    before: u32,
    during: u32,
}

impl Turn {
    /// Whether a planned aim at `target` that missed was blocked by the operations before it:
    /// the window opened before the operation's turn and never during it.
    fn blocked(self, target: usize) -> bool {
        target != IDLE && self.during & (1 << target) == 0 && self.before & (1 << target) != 0
    }
}

/// How many chunks the world's script streams for each model request of `scenario`.
fn scripted_chunks(scenario: &Scenario) -> Vec<usize> {
    (0..scenario.model.len())
        .map(|index| super::fakes::model_reply(scenario, index, 0).chunks.len())
        .collect()
}

/// The windows `scenario` can open, read from its script before any schedule ran: a first
/// request (and its chunks) when the model has a response, later requests when it has more
/// than one, hooks around tools when an extension and a tool call are scripted, a write when
/// an operation is a mode, a notification when an observer listens, a queued prompt when two
/// operations start runs, and a run's appends. A prediction, for the first schedule: after it,
/// an operation aims at the windows some schedule saw open before its delivery, and at a
/// predicted window never seen there only once, as a guess ([`Freshness::Guessed`]): the first
/// operation never meets a write, the second prompt of two never meets a later request of the
/// first's run.
pub fn predicted_windows(scenario: &Scenario) -> u32 {
    let window = |name: &str| 1u32 << WINDOWS.iter().position(|window| *window == name).expect("a window");
    let mut mask = 0;
    let chunked = scenario.model.iter().any(|step| step.chunks.unwrap_or(1) >= 2);
    let tool_calls = scenario.model.iter().any(|step| !step.tool_calls.is_empty());
    if let Some(first) = scenario.model.first() {
        mask |=
            window("first-request") | window("first-request>last-chunk") | window("append") | window("later-append");
        if first.chunks.unwrap_or(1) >= 2 {
            mask |= window("first-request>chunk");
        }
    }
    if scenario.model.len() >= 2 {
        mask |= window("later-request") | window("later-request>last-chunk");
        if chunked {
            mask |= window("later-request>chunk");
        }
    }
    if tool_calls {
        mask |= window("tool");
        if !scenario.extensions.is_empty() {
            mask |= window("before-hook") | window("after-hook");
        }
    }
    let kinds: Vec<&str> = scenario.operations.iter().map(|spec| spec.operation().name()).collect();
    if kinds.contains(&"mode") {
        mask |= window("write");
    }
    if !scenario.observers.is_empty() {
        mask |= window("notify");
    }
    let runs = scenario
        .operations
        .iter()
        .filter(|spec| spec.operation().is_prompt_like())
        .count();
    if runs >= 2 {
        mask |= window("queued");
    }
    mask
}

impl Tracker {
    pub fn new(scenario: &Scenario) -> Tracker {
        Tracker {
            chunks: scripted_chunks(scenario),
            ..Tracker::default()
        }
    }

    /// The open windows, one bit per entry of [`WINDOWS`].
    fn mask(&self) -> u32 {
        let mut mask = 0;
        for in_flight in self.pending.values() {
            mask |= 1 << in_flight.window();
        }
        if self.running.len() >= 2 {
            mask |= 1 << 12;
        }
        mask
    }

    /// Whether answering `effect` now would meet a window no schedule answered it in yet.
    fn answer_is_new(&self, effect: EffectId, reached: &BTreeSet<u64>) -> bool {
        let Some(in_flight) = self.pending.get(&effect) else {
            return false;
        };
        let mut mask = if self.running.len() >= 2 { 1 << 12 } else { 0 };
        for (other, other_in_flight) in &self.pending {
            if *other != effect {
                mask |= 1 << other_in_flight.window();
            }
        }
        let kind = in_flight.window();
        if mask == 0 {
            return !reached.contains(&feature(ANSWERED_IN, kind, IDLE));
        }
        (0..WINDOWS.len())
            .any(|window| mask & (1 << window) != 0 && !reached.contains(&feature(ANSWERED_IN, kind, window)))
    }

    /// Whether `target` was open before the latest delivery and has not been open since.
    fn passed(&self, target: usize) -> bool {
        target < WINDOWS.len() && self.seen_at_turn & (1 << target) != 0 && self.since_turn & (1 << target) == 0
    }

    fn is_open(&self, target: usize) -> bool {
        match target {
            IDLE => false,
            window => self.mask() & (1 << window) != 0,
        }
    }

    /// Records `kind` meeting the current windows (`tag`: delivered or answered).
    fn meet(&mut self, tag: u64, set_tag: u64, kind: usize) {
        let mask = self.mask();
        self.features.insert(feature(set_tag, kind, mask as usize));
        if mask == 0 {
            self.features.insert(feature(tag, kind, IDLE));
        }
        for window in 0..WINDOWS.len() {
            if mask & (1 << window) != 0 {
                self.features.insert(feature(tag, kind, window));
            }
        }
    }

    fn answered(&mut self, effect: EffectId) {
        if let Some(in_flight) = self.pending.remove(&effect) {
            self.meet(ANSWERED_IN, ANSWERED_IN_SET, in_flight.window());
        }
    }

    pub fn observe(&mut self, event: &Event) {
        if let Event::Deliver { .. } = event {
            self.turns.push(Turn {
                before: self.seen_at_turn,
                during: self.since_turn | self.mask(),
            });
            self.seen_at_turn = self.windows_seen;
            self.since_turn = 0;
        }
        self.track(event);
        let mask = self.mask();
        self.windows_seen |= mask;
        self.since_turn |= mask;
    }

    fn track(&mut self, event: &Event) {
        match event {
            Event::Deliver { op, operation } => {
                self.meet(DELIVERED_IN, DELIVERED_IN_SET, operation_kind(operation.kind()));
                if operation.is_prompt_like() {
                    self.running.insert(*op);
                }
            }
            Event::Settled { op, .. } => {
                self.running.remove(op);
            }
            Event::ModelRequest { effect, signal, .. } => {
                let first = self.requested.insert(*signal);
                let total = self.chunks.get(self.requests).copied().unwrap_or(0);
                self.requests += 1;
                self.run_appends = 0;
                self.pending.insert(*effect, InFlight::Model { first, sent: 0, total });
            }
            Event::ModelChunk { effect, .. } => {
                if let Some(InFlight::Model { first, sent, total }) = self.pending.get(effect).copied() {
                    self.meet(ANSWERED_IN, ANSWERED_IN_SET, TARGETS);
                    let sent = sent + 1;
                    self.pending.insert(*effect, InFlight::Model { first, sent, total });
                }
            }
            Event::Hook { effect, phase, .. } => {
                let in_flight = match phase {
                    HookPhase::Before => InFlight::BeforeHook,
                    HookPhase::After => InFlight::AfterHook,
                };
                self.pending.insert(*effect, in_flight);
            }
            Event::ToolCall { effect, .. } => {
                self.pending.insert(*effect, InFlight::Tool);
            }
            Event::Append { effect, .. } => {
                let later = self.run_appends >= 1;
                self.run_appends += 1;
                self.pending.insert(*effect, InFlight::Append { later });
            }
            Event::Write { effect, .. } => {
                self.pending.insert(*effect, InFlight::Write);
            }
            Event::Notify { effect, .. } => {
                self.pending.insert(*effect, InFlight::Notify);
            }
            Event::ModelResponse { effect, .. }
            | Event::HookAnswer { effect, .. }
            | Event::ToolAnswer { effect, .. }
            | Event::AppendAnswer { effect, .. }
            | Event::WriteAnswer { effect, .. }
            | Event::NotifyAnswer { effect, .. } => self.answered(*effect),
            _ => {}
        }
    }
}

/// One schedule of the search: a prefix of choices, then either uniform random picks or, for
/// a planned schedule, each operation held back until its target window is open.
pub struct GuidedRun {
    prefix: Vec<usize>,
    step: usize,
    rng: Rng,
    /// Per operation (file order), the target the plan aims it at and whether that pair was
    /// never reached; empty: uniform random.
    targets: Vec<(usize, bool)>,
    tracker: Tracker,
    /// The (answer, window) features reached before, for a planned schedule.
    answers_reached: BTreeSet<u64>,
}

impl GuidedRun {
    fn uniform(seed: u64, prefix: Vec<usize>) -> GuidedRun {
        GuidedRun {
            prefix,
            step: 0,
            rng: Rng::new(seed),
            targets: Vec::new(),
            tracker: Tracker::default(),
            answers_reached: BTreeSet::new(),
        }
    }
}

impl GuidedRun {
    /// An answer among `choices[first..]`: three times in four one that meets a window no
    /// schedule answered it in yet, when there is one; otherwise any, uniformly.
    fn pick_answer(&mut self, choices: &[Choice], first: usize) -> usize {
        let new: Vec<usize> = (first..choices.len())
            .filter(|index| match choices[*index] {
                Choice::Complete { effect, .. } => self.tracker.answer_is_new(effect, &self.answers_reached),
                Choice::Deliver { .. } => false,
            })
            .collect();
        if !new.is_empty() && self.rng.below(4) > 0 {
            return new[self.rng.below(new.len() as u64) as usize];
        }
        first + self.rng.below((choices.len() - first) as u64) as usize
    }
}

impl Strategy for GuidedRun {
    fn pick(&mut self, choices: &[Choice]) -> usize {
        let step = self.step;
        self.step += 1;
        if let Some(choice) = self.prefix.get(step) {
            return (*choice).min(choices.len() - 1);
        }
        let target = match choices[0] {
            Choice::Deliver { index } if choices.len() > 1 => self.targets.get(index).copied(),
            _ => None,
        };
        match target {
            // In the window: deliver; for a pair reached before, one time in two wait for a
            // later opening instead (a window met twice, say the second after hook of a run).
            Some((EAGER, _)) => 0,
            Some((target, fresh)) if self.tracker.is_open(target) && (fresh || self.rng.below(2) == 0) => 0,
            // Its window opened only before its turn: the operations before it went late, so
            // go now rather than hold the ones after it too.
            Some((target, true)) if self.tracker.passed(target) => 0,
            Some(_) => self.pick_answer(choices, 1),
            None if !self.targets.is_empty() && !matches!(choices[0], Choice::Deliver { .. }) => {
                self.pick_answer(choices, 0)
            }
            None => self.rng.below(choices.len() as u64) as usize,
        }
    }

    fn observe(&mut self, events: &[Event]) {
        for event in events {
            self.tracker.observe(event);
        }
    }
}

/// How new a target is to a planned schedule, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Freshness {
    /// Reached by some schedule, or aimed at and missed: weighted by how often.
    Known,
    /// Never seen open before the operation's delivery, but predicted from the script or seen
    /// later in a run, and never aimed at: a guess, tried once each when nothing better is
    /// left.
    Guessed,
    /// Neither reached nor aimed at by this scenario's schedules.
    ToScenario,
    /// Also reached by no schedule of any scenario (in a corpus search).
    ToCorpus,
}

/// The search over one scenario's schedules.
pub struct GuidedSearch {
    seed: u64,
    rng: Rng,
    runs: u64,
    /// The operation kind of each operation of the scenario (given, or learnt from the first
    /// feedback).
    kinds: Vec<usize>,
    /// The chunks of each scripted model response (learnt with `kinds`).
    chunks: Vec<usize>,
    /// Per feature, the schedules that reached it.
    reached: Counts,
    /// Per (operation, target), how often a planned schedule aimed there and missed though the
    /// window opened in the operation's turn, or never opened before its delivery.
    missed: BTreeMap<(usize, usize), u32>,
    /// Per (operation, target), how often a planned schedule aimed there and the operations
    /// before it went so late that the window had closed before its turn ([`Turn::blocked`]):
    /// two count as one miss.
    blocked: BTreeMap<(usize, usize), u32>,
    /// The targets of the schedule handed out last, if it was planned.
    planned: Vec<usize>,
    /// Whether the last planned schedule aimed at a pair never reached nor aimed at.
    planned_fresh: bool,
    /// Choice sequences that reached something new, oldest first.
    pool: Vec<Vec<usize>>,
    /// Every window some schedule of the search saw open (or the scenario's script predicts):
    /// what a target may be.
    windows_seen: u32,
    /// Per operation, every window some schedule saw open before the operation's delivery.
    before_delivery: Vec<u32>,
    /// The features exactly one schedule reached (for the Good-Turing estimate).
    singletons: u64,
    /// The schedules fed back.
    fed: u64,
}

impl GuidedSearch {
    /// A search that learns the scenario from its first schedule, uniform random.
    pub fn new(seed: u64) -> GuidedSearch {
        GuidedSearch {
            seed,
            rng: Rng::new(seed),
            runs: 0,
            kinds: Vec::new(),
            chunks: Vec::new(),
            reached: BTreeMap::new(),
            missed: BTreeMap::new(),
            blocked: BTreeMap::new(),
            planned: Vec::new(),
            planned_fresh: true,
            pool: Vec::new(),
            windows_seen: 0,
            before_delivery: Vec::new(),
            singletons: 0,
            fed: 0,
        }
    }

    /// A search that reads the scenario first ([`predicted_windows`]): its first schedule is
    /// already planned.
    pub fn for_scenario(seed: u64, scenario: &Scenario) -> GuidedSearch {
        GuidedSearch {
            kinds: operation_kinds(scenario),
            chunks: scripted_chunks(scenario),
            windows_seen: predicted_windows(scenario),
            ..GuidedSearch::new(seed)
        }
    }

    /// The next schedule to run.
    pub fn next_run(&mut self) -> GuidedRun {
        self.next_run_in(None)
    }

    /// The next schedule to run, in a corpus whose schedules reached `corpus` (a pair no
    /// scenario reached goes before one only this scenario did not).
    fn next_run_in(&mut self, corpus: Option<&Counts>) -> GuidedRun {
        self.runs += 1;
        self.planned.clear();
        if self.runs == 1 && self.kinds.is_empty() {
            return GuidedRun::uniform(self.seed, Vec::new());
        }
        let seed = self.rng.next_u64();
        // Fresh pairs left: one schedule in sixteen is uniform and one a pool cut; once every
        // pair was reached or aimed at, one in eight each.
        let odds = if self.planned_fresh { 16 } else { 8 };
        match self.rng.below(odds) {
            0 if self.runs > 1 => GuidedRun::uniform(seed, Vec::new()),
            1 if !self.pool.is_empty() => {
                let parent = &self.pool[self.rng.below(self.pool.len() as u64) as usize];
                let cut = self.rng.below(parent.len() as u64 + 1) as usize;
                GuidedRun::uniform(seed, parent[..cut].to_vec())
            }
            _ => {
                // One planned schedule in four focuses on one operation (one with a fresh pair
                // left, if any): the operations before it go as soon as they can, so it can
                // land in a window they would otherwise have pushed it past (five operations
                // queued in one before hook); the others aim all at once.
                let focus = match self.rng.below(FOCUS_ODDS) {
                    0 => {
                        let fresh: Vec<usize> = (0..self.kinds.len())
                            .filter(|op| self.target_weights(*op, corpus).1 > Freshness::Known)
                            .collect();
                        match fresh.is_empty() {
                            true => self.rng.below(self.kinds.len().max(1) as u64) as usize,
                            false => fresh[self.rng.below(fresh.len() as u64) as usize],
                        }
                    }
                    _ => 0,
                };
                let targets: Vec<(usize, bool)> = (0..self.kinds.len())
                    .map(|op| match op < focus {
                        true => (EAGER, false),
                        false => self.draw_target(op, corpus),
                    })
                    .collect();
                self.planned = targets.iter().map(|(target, _)| *target).collect();
                self.planned_fresh = targets.iter().any(|(_, fresh)| *fresh);
                // An operation goes at the first opening of a window it never met here.
                let targets = targets
                    .into_iter()
                    .enumerate()
                    .map(|(op, (target, _))| {
                        let unmet = target < TARGETS
                            && !self
                                .reached
                                .contains_key(&feature(DELIVERED_IN, self.kinds[op], target));
                        (target, unmet)
                    })
                    .collect();
                let answers_reached = self
                    .reached
                    .range(feature(ANSWERED_IN, 0, 0)..feature(ANSWERED_IN + 1, 0, 0))
                    .map(|(feature, _)| *feature)
                    .collect();
                GuidedRun {
                    targets,
                    answers_reached,
                    tracker: Tracker {
                        chunks: self.chunks.clone(),
                        ..Tracker::default()
                    },
                    ..GuidedRun::uniform(seed, Vec::new())
                }
            }
        }
    }

    /// A target for operation `op`, and whether it is fresh: an unreached (kind, window) pair
    /// first, weighted down by the schedules that reached it and by the aims that missed it.
    fn draw_target(&mut self, op: usize, corpus: Option<&Counts>) -> (usize, bool) {
        let (weights, freshness) = self.target_weights(op, corpus);
        let fresh = freshness > Freshness::Known;
        let total: u64 = weights.iter().sum();
        let mut draw = self.rng.below(total.max(1));
        for (target, weight) in weights.iter().enumerate() {
            if draw < *weight {
                return (target, fresh);
            }
            draw -= weight;
        }
        (IDLE, false)
    }

    /// The weight of each target for operation `op`, and the freshness of the best: only the
    /// targets of the best freshness weigh.
    fn target_weights(&self, op: usize, corpus: Option<&Counts>) -> (Vec<u64>, Freshness) {
        let kind = self.kinds[op];
        let targets: Vec<Option<(Freshness, u64, u64)>> = (0..TARGETS)
            .map(|target| {
                let bit = 1 << target;
                // A window seen open before this operation's delivery, or only predicted (or
                // seen later in a run) and never aimed at: a guess, tried once among the known.
                let confirmed = target == IDLE || self.target_windows(op) & bit != 0;
                let guessed = !confirmed && self.windows_seen & bit != 0 && !self.missed.contains_key(&(op, target));
                (confirmed || guessed).then(|| {
                    let pair = feature(DELIVERED_IN, kind, target);
                    let reached = u64::from(*self.reached.get(&pair).unwrap_or(&0));
                    let missed = u64::from(*self.missed.get(&(op, target)).unwrap_or(&0))
                        + u64::from(*self.blocked.get(&(op, target)).unwrap_or(&0)) / 2;
                    let freshness = match (reached, missed) {
                        (0, 0) if guessed => Freshness::Guessed,
                        (0, 0) if corpus.is_some_and(|corpus| !corpus.contains_key(&pair)) => Freshness::ToCorpus,
                        (0, 0) => Freshness::ToScenario,
                        _ => Freshness::Known,
                    };
                    (freshness, reached, missed)
                })
            })
            .collect();
        let best = targets
            .iter()
            .flatten()
            .map(|(freshness, _, _)| *freshness)
            .max()
            .unwrap_or(Freshness::Known);
        let weights: Vec<u64> = targets
            .iter()
            .map(|target| match target {
                None => 0,
                Some((freshness, _, _)) if best > Freshness::Known => u64::from(*freshness == best),
                Some((_, reached, missed)) => {
                    let damping = (1 + reached) * (1 + missed);
                    1_000_000 / (damping * damping * damping)
                }
            })
            .collect();
        (weights, best)
    }

    /// The windows operation `op` may aim at: before any feedback, the windows predicted or
    /// seen; after, those some schedule saw open before the operation's delivery.
    fn target_windows(&self, op: usize) -> u32 {
        match self.fed {
            0 => self.windows_seen,
            _ => self.before_delivery.get(op).copied().unwrap_or(0),
        }
    }

    /// How much this scenario's next planned schedule can still find, for a corpus search to
    /// share its schedules by: per operation, its fresh targets (a pair new to the corpus
    /// counts [`CORPUS_FRESH`] times one new to the scenario), else one; plus the Good-Turing
    /// estimate ([`GuidedSearch::discovery`]); at least one.
    fn energy(&self, corpus: &Counts) -> u64 {
        (0..self.kinds.len())
            .map(|op| {
                let (weights, freshness) = self.target_weights(op, Some(corpus));
                let fresh = weights.iter().filter(|weight| **weight > 0).count() as u64;
                match freshness {
                    Freshness::ToCorpus => CORPUS_FRESH * fresh,
                    Freshness::ToScenario | Freshness::Guessed => fresh,
                    Freshness::Known => 1,
                }
            })
            .sum::<u64>()
            .saturating_add(self.discovery())
            // A scenario without operations still runs now and then.
            .max(1)
    }

    /// The Good-Turing estimate of how many new features the next schedule finds, scaled:
    /// the features one schedule alone reached, per schedule (Böhme's STADS; libFuzzer's
    /// entropic schedule rests on the same estimate).
    fn discovery(&self) -> u64 {
        DISCOVERY_SCALE * self.singletons / self.fed.max(1)
    }

    /// Feeds back one finished schedule; returns whether it reached something new.
    pub fn feedback(&mut self, scenario: &Scenario, outcome: &RunOutcome) -> bool {
        let coverage = coverage_features(scenario, outcome);
        self.feedback_features(scenario, outcome, &coverage)
    }

    fn feedback_features(&mut self, scenario: &Scenario, outcome: &RunOutcome, coverage: &Coverage) -> bool {
        let features = &coverage.features;
        if self.kinds.is_empty() {
            self.chunks = scripted_chunks(scenario);
            self.kinds = operation_kinds(scenario);
        }
        self.windows_seen |= coverage.windows_seen;
        if self.before_delivery.len() < self.kinds.len() {
            self.before_delivery.resize(self.kinds.len(), 0);
        }
        for (windows, turn) in self.before_delivery.iter_mut().zip(&coverage.turns) {
            *windows |= turn.before | turn.during;
        }
        self.fed += 1;
        let mut novel = false;
        for feature in features {
            let count = self.reached.entry(*feature).or_insert(0);
            match *count {
                0 => {
                    novel = true;
                    self.singletons += 1;
                }
                1 => self.singletons -= 1,
                _ => {}
            }
            *count += 1;
        }
        for (op, target) in self.planned.iter().enumerate().filter(|(_, target)| **target != EAGER) {
            if features.contains(&feature(DELIVERED_IN, self.kinds[op], *target)) {
                continue;
            }
            let misses = match coverage.turns.get(op).is_some_and(|turn| turn.blocked(*target)) {
                true => &mut self.blocked,
                false => &mut self.missed,
            };
            *misses.entry((op, *target)).or_insert(0) += 1;
        }
        if novel {
            self.pool
                .push(outcome.choices.iter().map(|(index, _)| *index).collect());
        }
        novel
    }
}

/// What a pair no schedule of the corpus reached weighs in a scenario's energy, against one
/// only the scenario's own schedules did not reach.
const CORPUS_FRESH: u64 = 10;

/// What one expected new feature weighs in a scenario's energy.
const DISCOVERY_SCALE: u64 = 1;

const FOCUS_ODDS: u64 = 4;

/// The operation kind of each operation of `scenario`.
fn operation_kinds(scenario: &Scenario) -> Vec<usize> {
    scenario.operations.iter().map(|spec| operation_kind(spec.op)).collect()
}

/// What a trace covered: the windows its deliveries and answers met, its rule situations and
/// its interleaving pairs; and the windows it saw open.
pub fn coverage_features(scenario: &Scenario, outcome: &RunOutcome) -> Coverage {
    let stored = outcome.stored(scenario);
    let timeline = Timeline::new(scenario, &outcome.trace, &stored);
    coverage_of(scenario, outcome, &Reached::of(&timeline))
}

/// [`coverage_features`] with the situations and pairs the trace reached already derived.
pub fn coverage_of(scenario: &Scenario, outcome: &RunOutcome, reached: &Reached) -> Coverage {
    let mut tracker = Tracker::new(scenario);
    for event in &outcome.trace.events {
        tracker.observe(event);
    }
    let mut features = tracker.features;
    features.extend(reached.situations.iter().map(|index| feature(SITUATION, *index, 0)));
    features.extend(reached.pairs.iter().map(|index| feature(PAIR, *index, 0)));
    Coverage {
        features,
        windows_seen: tracker.windows_seen,
        turns: tracker.turns,
    }
}

/// What one schedule covered ([`coverage_features`]).
pub struct Coverage {
    pub features: BTreeSet<u64>,
    /// Every window that was open at some point.
    pub windows_seen: u32,
    /// Per delivered operation, the windows around its turn.
    pub turns: Vec<Turn>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::reference::ReferenceSubject;
    use crate::sim::{simulate_with, Random};

    fn scenario() -> Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/agent/steer-and-flush-while-hooks-run.json");
        crate::scenario::load(&path, "steer-and-flush-while-hooks-run", crate::check::RULE_IDS)
            .expect("the scenario loads")
            .scenario
    }

    /// The choice sequences of the first `runs` schedules of a search seeded `seed`.
    fn search(scenario: &Scenario, seed: u64, runs: usize) -> Vec<Vec<usize>> {
        let mut search = GuidedSearch::new(seed);
        (0..runs)
            .map(|_| {
                let mut run = search.next_run();
                let mut subject = ReferenceSubject::new();
                let outcome = simulate_with(scenario, &mut subject, &mut run, false).expect("the reference runs");
                search.feedback(scenario, &outcome);
                outcome.choices.iter().map(|(index, _)| *index).collect()
            })
            .collect()
    }

    #[test]
    fn a_search_is_determined_by_its_seed_and_starts_with_randoms_schedule() {
        let scenario = scenario();
        let first = search(&scenario, 7, 30);
        assert_eq!(first, search(&scenario, 7, 30));
        assert_ne!(first, search(&scenario, 8, 30));
        let mut subject = ReferenceSubject::new();
        let random = simulate_with(&scenario, &mut subject, &mut Random::new(7), false).expect("runs");
        let random: Vec<usize> = random.choices.iter().map(|(index, _)| *index).collect();
        assert_eq!(first[0], random);
    }

    /// The prompt queued behind a print mode never meets a queued prompt (it is the second) nor
    /// a later request (the mode's run makes one request), though the script predicts both:
    /// each is aimed at once, as a guess, and never again; the mode, first, meets nothing.
    #[test]
    fn a_window_never_open_before_an_operation_is_aimed_at_once() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/modes/sink-error-while-next-prompt-runs.json");
        let scenario = crate::scenario::load(&path, "sink-error-while-next-prompt-runs", crate::check::RULE_IDS)
            .expect("the scenario loads")
            .scenario;
        let window = |name: &str| WINDOWS.iter().position(|window| *window == name).expect("a window");
        let mut search = GuidedSearch::for_scenario(5, &scenario);
        let mut aims: BTreeMap<(usize, usize), u32> = BTreeMap::new();
        for _ in 0..60 {
            let mut run = search.next_run();
            for (op, target) in search.planned.iter().enumerate() {
                *aims.entry((op, *target)).or_insert(0) += 1;
            }
            let mut subject = ReferenceSubject::new();
            let outcome = simulate_with(&scenario, &mut subject, &mut run, false).expect("the reference runs");
            search.feedback(&scenario, &outcome);
        }
        for name in ["queued", "later-request"] {
            let aimed = aims.get(&(1, window(name))).copied().unwrap_or(0);
            assert!(aimed <= 1, "the prompt aimed at {name} {aimed} times");
        }
        let mode_aims: u32 = (0..WINDOWS.len()).filter_map(|target| aims.get(&(0, target))).sum();
        assert!(
            mode_aims <= WINDOWS.len() as u32,
            "the mode aimed at a window {mode_aims} times"
        );
    }

    /// The planned schedules aim each operation at the windows the first one saw open: within
    /// a few schedules the flush lands in the after hook, which uniform choices reach about
    /// once in twenty schedules of this scenario.
    #[test]
    fn planned_schedules_reach_a_late_window_in_few_schedules() {
        let scenario = scenario();
        let mut search_state = GuidedSearch::new(0);
        let mut reached_at = None;
        for run_index in 0..12 {
            let mut run = search_state.next_run();
            let mut subject = ReferenceSubject::new();
            let outcome = simulate_with(&scenario, &mut subject, &mut run, false).expect("the reference runs");
            search_state.feedback(&scenario, &outcome);
            let features = coverage_features(&scenario, &outcome).features;
            let after_hook = WINDOWS
                .iter()
                .position(|window| *window == "after-hook")
                .expect("a window");
            if features.contains(&feature(DELIVERED_IN, operation_kind(OperationKind::Flush), after_hook)) {
                reached_at = Some(run_index);
                break;
            }
        }
        assert!(reached_at.is_some(), "no flush during an after hook in 12 schedules");
    }
}
