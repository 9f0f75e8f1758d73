//! What is in flight while a schedule runs, read from the events the world recorded, and the
//! coverage features a schedule meets: the windows each delivery and each answer met, the whole
//! in-flight sets, and the rule situations and interleaving pairs of its trace. The search in
//! `mod.rs` plans from them; nothing here chooses.

use std::collections::{BTreeMap, BTreeSet};

use crate::check::{pairs, Reached, Timeline};
use crate::model::OperationKind;
use crate::runtime::{EffectId, HookPhase, OpId, SignalId};
use crate::scenario::Scenario;
use crate::trace::Event;

use super::super::RunOutcome;

/// The in-flight states a [`Tracker`] tells apart, one bit each. `append` is a run's first
/// append (a run appends after its last request), `later-append` any other.
pub(super) const WINDOWS: [&str; 14] = [
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
pub(super) const IDLE: usize = WINDOWS.len();

/// Targets: every window, then idle.
pub(super) const TARGETS: usize = WINDOWS.len() + 1;

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
pub(super) fn operation_kind(kind: OperationKind) -> usize {
    pairs::OPERATIONS
        .iter()
        .position(|listed| *listed == kind)
        .unwrap_or(pairs::OPERATIONS.len())
}

/// Coverage features, one `u64` each: a tag, then two small numbers.
pub(super) fn feature(tag: u64, first: usize, second: usize) -> u64 {
    (tag << 40) | ((first as u64) << 20) | second as u64
}

pub(super) const DELIVERED_IN: u64 = 1;
pub(super) const DELIVERED_IN_SET: u64 = 2;
pub(super) const ANSWERED_IN: u64 = 3;
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
    pub(super) before: u32,
    pub(super) during: u32,
}

impl Turn {
    /// Whether a planned aim at `target` that missed was blocked by the operations before it:
    /// the window opened before the operation's turn and never during it.
    pub(super) fn blocked(self, target: usize) -> bool {
        target != IDLE && self.during & (1 << target) == 0 && self.before & (1 << target) != 0
    }
}

/// How many chunks the world's script streams for each model request of `scenario`.
pub(super) fn scripted_chunks(scenario: &Scenario) -> Vec<usize> {
    (0..scenario.model.len())
        .map(|index| super::super::fakes::model_reply(scenario, index, 0).chunks.len())
        .collect()
}

/// The windows `scenario` can open, read from its script before any schedule ran: a first
/// request (and its chunks) when the model has a response, later requests when it has more
/// than one, hooks around tools when an extension and a tool call are scripted, a write when
/// an operation is a mode, a notification when an observer listens, a queued prompt when two
/// operations start runs, and a run's appends. A prediction, for the first schedule: after it,
/// an operation aims at the windows some schedule saw open before its delivery, and at a
/// predicted window never seen there only once, as a guess
/// ([`Freshness::Guessed`](super::Freshness::Guessed)): the first operation never meets a write,
/// the second prompt of two never meets a later request of the first's run.
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
    if scenario.operations.iter().any(|spec| spec.op == OperationKind::Mode) {
        mask |= window("write");
    }
    if !scenario.observers.is_empty() {
        mask |= window("notify");
    }
    let runs = scenario
        .operations
        .iter()
        .filter(|spec| spec.op.is_prompt_like())
        .count();
    if runs >= 2 {
        mask |= window("queued");
    }
    mask
}

impl Tracker {
    pub fn new(scenario: &Scenario) -> Tracker {
        Tracker::with_chunks(scripted_chunks(scenario))
    }

    /// A tracker of a world whose script streams `chunks` for each model request, in order.
    pub(super) fn with_chunks(chunks: Vec<usize>) -> Tracker {
        Tracker {
            chunks,
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
    pub(super) fn answer_is_new(&self, effect: EffectId, reached: &BTreeSet<u64>) -> bool {
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
    pub(super) fn passed(&self, target: usize) -> bool {
        target < WINDOWS.len() && self.seen_at_turn & (1 << target) != 0 && self.since_turn & (1 << target) == 0
    }

    pub(super) fn is_open(&self, target: usize) -> bool {
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
