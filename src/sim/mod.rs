//! The deterministic scheduler: runs a Subject under scripted fakes and faults.
//!
//! At every quiescent point the scheduler lists the enabled [`Choice`]s: deliver the next
//! operation (in file order, once its `after` condition holds), or complete one pending effect
//! (a model chunk or response, a tool's result, a hook's answer, the store's answer to an
//! append, the sink's answer to a write). A [`Strategy`] picks one. The fakes fixed each answer
//! when the effect was issued, so `(scenario, strategy, seed)` determines the whole trace.
//!
//! The scheduler never looks inside a Subject: the reference in process and an external
//! implementation behind the wire protocol are driven the same way.

mod failure;
pub mod fakes;
pub mod fault;
pub mod guided;
pub mod reduction;
pub mod reference;
pub mod rng;
pub mod strategy;
mod subject;
pub mod variant;

use std::collections::BTreeSet;

use crate::model::{ContentBlock, SessionEntry};
use crate::runtime::{
    Cause, Completion, Effect, EffectId, HookOutcome, Input, OpId, SignalId, StoreOutcome, ToolOutcome,
};
use crate::scenario::{After, AppendFault, AppendFaultKind, Scenario, ToolStep};
use crate::trace::{Event, StateRecorder, Trace};

pub use failure::{DriverFailure, SubjectFailure};
use fakes::{check_request, model_reply, ModelReply, Scripts};
use fault::StoreFake;
pub use strategy::{Pct, Random, Replay, Scripted, Strategy, StrategyKind};
pub use subject::{Blocking, BoxedSubject, Lent, Subject};

/// The result of a successful restore.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    pub leaf: Option<String>,
    pub messages: usize,
    /// What the runtime did while it was being created, before any operation (an adapter's
    /// runtime may append entries of its own as it opens a session): recorded after the
    /// restore, and answered before the first operation is delivered. The reference does
    /// nothing there.
    pub setup: Vec<Effect>,
}

/// One thing the scheduler may do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Deliver operation `index` (0-based, file order).
    Deliver { index: usize },
    /// Complete (or advance, for a streaming model) a pending effect.
    Complete { effect: EffectId, answer: Answer },
}

/// What kind of answer completing a pending effect gives: what the choice touches, for PCT's
/// lanes and for the dependence relation of the reduced enumeration (`sim::reduction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Model,
    Tool,
    Hook,
    Append,
    Write,
    /// An observer's handler returned (or threw); `observer` is its place among the scenario's
    /// observers, `None` for a name the scenario does not declare; `last`: no observer comes
    /// after it.
    Notify {
        observer: Option<u32>,
        last: bool,
    },
}

impl Choice {
    /// Lanes for PCT: the caller, then one per effect kind.
    pub const LANES: usize = 6;

    pub fn lane(&self) -> usize {
        match self {
            Choice::Deliver { .. } => 0,
            Choice::Complete { answer, .. } => match answer {
                Answer::Model => 1,
                Answer::Tool => 2,
                Answer::Hook => 3,
                Answer::Append => 4,
                Answer::Write => 5,
                // Observers are extensions: they share the hooks' lane.
                Answer::Notify { .. } => 3,
            },
        }
    }
}

/// A problem found while running that is not a rule violation of the subject's trace: a
/// request check of the scripted model failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: String,
    /// 1-based trace line.
    pub line: usize,
    pub message: String,
}

/// A finding is judged as a violation of the scenario's own check, at its trace line.
impl From<&Finding> for crate::check::Violation {
    fn from(finding: &Finding) -> crate::check::Violation {
        crate::check::Violation::of_check(finding.rule.clone(), vec![finding.line], finding.message.clone())
    }
}

/// Everything one run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub trace: Trace,
    /// The store at the end (read through [`RunOutcome::stored`]).
    pub store: FinalStore,
    pub findings: Vec<Finding>,
    /// The index picked at each step, with how many choices there were.
    pub choices: Vec<(usize, usize)>,
}

/// Where the store at the end of a run is read.
#[derive(Debug, Clone, PartialEq)]
pub enum FinalStore {
    /// The world's store fake, which applies exactly what its answers say: the scenario's
    /// session, then the entry of every append the trace shows applied, in answer order
    /// ([`Trace::applied_store`]). Read from the scenario and the trace, never copied: a
    /// second copy of every entry cost a twentieth of a checked schedule.
    Applied,
    /// Entries read back from a store of the world's own (the networked world's disk), which
    /// a crash or a lost answer can make differ from what the answers say.
    Read(Vec<SessionEntry>),
}

impl RunOutcome {
    /// The store at the end: the initial session plus every applied append, lent.
    pub fn stored<'a>(&'a self, scenario: &'a Scenario) -> Vec<&'a SessionEntry> {
        match &self.store {
            FinalStore::Applied => self.trace.applied_store(&scenario.session),
            FinalStore::Read(entries) => entries.iter().collect(),
        }
    }

    /// Every rule's violations on this run ([`crate::check::check_all`] on its trace and store;
    /// REF-1 needs the oracle: [`crate::oracle::check_with_reference`]).
    pub fn violations(&self, scenario: &Scenario) -> Vec<crate::check::Violation> {
        crate::check::check_all(scenario, &self.trace, &self.stored(scenario))
    }
}

#[derive(Debug, Clone)]
enum PendingKind {
    Model {
        signal: SignalId,
        reply: ModelReply,
    },
    Tool {
        signal: SignalId,
        step: ToolStep,
    },
    Hook {
        answer: HookOutcome,
    },
    Append {
        fault: Option<AppendFault>,
    },
    Write {
        error: Option<Cause>,
    },
    /// An observer's notification; a slow observer's comes last on the canonical schedule.
    Notify {
        answer: crate::runtime::NotifyOutcome,
        slow: bool,
        /// The observer's place among the scenario's observers, and whether it is the last.
        observer: Option<u32>,
        last: bool,
    },
}

impl PendingKind {
    fn answer(&self) -> Answer {
        match self {
            PendingKind::Model { .. } => Answer::Model,
            PendingKind::Tool { .. } => Answer::Tool,
            PendingKind::Hook { .. } => Answer::Hook,
            PendingKind::Append { .. } => Answer::Append,
            PendingKind::Write { .. } => Answer::Write,
            PendingKind::Notify { observer, last, .. } => Answer::Notify {
                observer: *observer,
                last: *last,
            },
        }
    }
}

#[derive(Debug, Clone)]
struct Pending {
    effect: EffectId,
    kind: PendingKind,
}

/// How many of each event happened so far: what `after` conditions test.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    model_requests: u32,
    chunks: u32,
    tool_calls: u32,
    hooks: u32,
    appends_issued: u32,
    appends_accepted: u32,
    writes: u32,
    settled: BTreeSet<OpId>,
}

impl Counters {
    /// Counts one event of a trace recorded elsewhere (the networked world).
    pub(crate) fn observe(&mut self, event: &Event) {
        match event {
            Event::ModelRequest { .. } => self.model_requests += 1,
            Event::ModelChunk { .. } => self.chunks += 1,
            Event::ToolCall { .. } => self.tool_calls += 1,
            Event::Hook { .. } => self.hooks += 1,
            Event::Append { .. } => self.appends_issued += 1,
            Event::AppendAnswer {
                answer: crate::trace::AppendAnswer::Ok,
                ..
            } => self.appends_accepted += 1,
            Event::Write { .. } => self.writes += 1,
            Event::Settled { op, .. } => {
                self.settled.insert(*op);
            }
            _ => {}
        }
    }

    pub(crate) fn holds(&self, after: After) -> bool {
        match after {
            After::Settled(op) => self.settled.contains(&OpId(op)),
            After::ModelRequests(count) => self.model_requests >= count,
            After::Chunks(count) => self.chunks >= count,
            After::ToolCalls(count) => self.tool_calls >= count,
            After::Hooks(count) => self.hooks >= count,
            After::AppendsIssued(count) => self.appends_issued >= count,
            After::AppendsAccepted(count) => self.appends_accepted >= count,
            After::Writes(count) => self.writes >= count,
        }
    }
}

/// The world of one run: the scripted fakes, the store, the pending effects and the trace.
///
/// `simulate` drives it with a strategy; the naive stress harness of `bench` drives it from
/// concurrent tasks. Either way every answer comes from the same fakes.
pub struct World<'a> {
    scenario: &'a Scenario,
    trace: Trace,
    store: StoreFake,
    scripts: Scripts,
    pending: Vec<Pending>,
    aborted: BTreeSet<SignalId>,
    counters: Counters,
    next_op: usize,
    model_index: usize,
    findings: Vec<Finding>,
    effects: Vec<Effect>,
    /// Whether the scripted model applies the scenario's request checks.
    request_checks: bool,
    /// Which effects block the subject's runtime until answered (`Subject::blocking`).
    blocking: Blocking,
}

/// Runs `scenario` on `subject`, choosing with `strategy`, and returns the trace.
pub fn simulate(
    scenario: &Scenario,
    subject: &mut dyn Subject,
    strategy: &mut dyn Strategy,
) -> Result<RunOutcome, SubjectFailure> {
    simulate_with(scenario, subject, strategy, true)
}

/// `simulate`, choosing whether the scripted model checks the requests it receives (those
/// checks describe the canonical schedule; exploration skips them).
pub fn simulate_with(
    scenario: &Scenario,
    subject: &mut dyn Subject,
    strategy: &mut dyn Strategy,
    request_checks: bool,
) -> Result<RunOutcome, SubjectFailure> {
    let mut sim = World::new(scenario);
    sim.request_checks = request_checks;
    let mut choices_taken = Vec::new();
    let mut states;
    match subject.start(scenario).map_err(|failure| failure.at_trace_line(1))? {
        Ok(restored) => {
            sim.blocking = subject.blocking();
            states = StateRecorder::restored(restored.leaf.as_deref());
            sim.trace.push(Event::Restored {
                leaf: restored.leaf,
                messages: restored.messages,
                probed: subject.state().is_some(),
            });
            for effect in restored.setup {
                sim.record(effect);
            }
            sim.trace.events.extend(states.observe(subject.state()));
        }
        Err(cause) => {
            sim.trace.push(Event::RestoreFailed { cause });
            subject.finish()?;
            return Ok(sim.finish(choices_taken));
        }
    }
    let mut choices = Vec::new();
    // How much of the trace the strategy was shown.
    let mut shown = 0;
    loop {
        sim.enabled(&mut choices);
        if choices.is_empty() || choices_taken.len() >= crate::limits::SCHEDULE_STEPS_MAX {
            break;
        }
        strategy.observe(&sim.trace.events[shown..]);
        shown = sim.trace.events.len();
        let index = strategy.pick(&choices);
        if strategy.abandoned() {
            // Every continuation is equivalent to a schedule already run (a sleep-set
            // enumeration, `sim::reduction`): the run ends here, unfinished, and is not judged.
            break;
        }
        choices_taken.push((index, choices.len()));
        let input = sim.take(choices[index]);
        sim.effects.clear();
        let mut effects = std::mem::take(&mut sim.effects);
        subject
            .deliver(input, &mut effects)
            .map_err(|failure| failure.at_trace_line(sim.trace.events.len() + effects.len() + 1))?;
        for effect in effects.drain(..) {
            if let Effect::Settled { op, .. } = &effect {
                if let Some(first) = sim.counters.settled.contains(op).then(|| sim.settled_at(*op)).flatten() {
                    return Err(SubjectFailure::SettledTwice {
                        op: *op,
                        line: sim.trace.events.len() + 1,
                        first,
                    });
                }
            }
            sim.record(effect);
        }
        sim.effects = effects;
        sim.trace.events.extend(states.observe(subject.state()));
    }
    let pending: Vec<EffectId> = sim.pending.iter().map(|pending| pending.effect).collect();
    let undelivered: Vec<OpId> = (sim.next_op..scenario.operations.len())
        .map(|index| OpId(index as u32 + 1))
        .collect();
    sim.trace.push(Event::End { pending, undelivered });
    subject.finish()?;
    Ok(sim.finish(choices_taken))
}

impl<'a> World<'a> {
    pub fn new(scenario: &'a Scenario) -> World<'a> {
        World {
            scenario,
            // Room for a walk-through's run and more, so a trace rarely grows by copying.
            trace: Trace {
                events: Vec::with_capacity(32),
            },
            store: StoreFake::default(),
            scripts: Scripts::default(),
            pending: Vec::new(),
            aborted: BTreeSet::new(),
            counters: Counters::default(),
            next_op: 0,
            model_index: 0,
            findings: Vec::new(),
            effects: Vec::new(),
            request_checks: true,
            blocking: Blocking::default(),
        }
    }

    /// The 1-based trace line where `op` settled, if it did.
    fn settled_at(&self, op: OpId) -> Option<usize> {
        self.trace
            .events
            .iter()
            .position(|event| matches!(event, Event::Settled { op: settled, .. } if *settled == op))
            .map(|index| index + 1)
    }

    /// Records an event and counts it for the `after` conditions.
    pub fn push(&mut self, event: Event) {
        self.counters.observe(&event);
        self.trace.push(event);
    }

    /// The pending effects, oldest first, and whether each can be completed now.
    pub fn pending_effects(&self) -> Vec<(EffectId, bool)> {
        self.pending
            .iter()
            .map(|pending| (pending.effect, self.ready(pending)))
            .collect()
    }

    /// Whether the world can answer `pending` now (a hanging tool waits for its abort signal;
    /// a late append for its condition).
    fn ready(&self, pending: &Pending) -> bool {
        match &pending.kind {
            PendingKind::Tool {
                signal,
                step: ToolStep::Hang,
            } => self.aborted.contains(signal),
            PendingKind::Append { fault: Some(fault), .. } if fault.fault == AppendFaultKind::Late => {
                fault.until.is_none_or(|until| self.counters.holds(until))
            }
            _ => true,
        }
    }

    pub fn finish(self, choices: Vec<(usize, usize)>) -> RunOutcome {
        RunOutcome {
            trace: self.trace,
            store: FinalStore::Applied,
            findings: self.findings,
            choices,
        }
    }

    /// The enabled choices: the next operation first, then pending effects oldest first.
    pub fn enabled(&self, choices: &mut Vec<Choice>) {
        choices.clear();
        // A runtime blocked on an effect (`Blocking`) takes nothing but that effect's answer:
        // its thread is waiting in the call. A late append is then only slow (nothing else can
        // happen while it is held), so it is answered.
        let blocked_on = self.pending.iter().find(|pending| match pending.kind {
            PendingKind::Append { .. } => self.blocking.appends,
            PendingKind::Write { .. } => self.blocking.writes,
            _ => false,
        });
        if let Some(pending) = blocked_on {
            choices.push(Choice::Complete {
                effect: pending.effect,
                answer: pending.kind.answer(),
            });
            return;
        }
        // The runtime's set-up (what it did while it was created, `Restored::setup`) is
        // answered before the first operation is delivered.
        let setting_up = self.next_op == 0 && !self.pending.is_empty();
        if let Some(spec) = self.scenario.operations.get(self.next_op).filter(|_| !setting_up) {
            if spec.after.is_none_or(|after| self.counters.holds(after)) {
                choices.push(Choice::Deliver { index: self.next_op });
            }
        }
        let slow = |pending: &Pending| matches!(pending.kind, PendingKind::Notify { slow: true, .. });
        // A slow observer's notifications go last, so the canonical schedule (the first
        // choice) completes them only when nothing else can go.
        for late in [false, true] {
            for pending in self.pending.iter().filter(|pending| slow(pending) == late) {
                if self.ready(pending) {
                    choices.push(Choice::Complete {
                        effect: pending.effect,
                        answer: pending.kind.answer(),
                    });
                }
            }
        }
    }

    /// Turns a choice into the input for the subject, recording the world's side in the trace.
    pub fn take(&mut self, choice: Choice) -> Input {
        match choice {
            Choice::Deliver { index } => {
                self.next_op = index + 1;
                let op = OpId(index as u32 + 1);
                let operation = self.scenario.operations[index].operation();
                self.push(Event::Deliver {
                    op,
                    operation: operation.clone(),
                });
                Input::Operation { op, operation }
            }
            Choice::Complete { effect, .. } => {
                let position = self
                    .pending
                    .iter()
                    .position(|pending| pending.effect == effect)
                    .expect("choices name pending effects");
                self.complete(position)
            }
        }
    }

    fn complete(&mut self, position: usize) -> Input {
        let effect = self.pending[position].effect;
        let completion = match &mut self.pending[position].kind {
            PendingKind::Model { signal, reply } => {
                if self.aborted.contains(signal) && !reply.ignores_abort {
                    let message = reply.aborted();
                    self.pending.remove(position);
                    self.push(Event::ModelResponse {
                        effect,
                        message: message.clone(),
                    });
                    Completion::ModelFinal { message }
                } else if reply.chunks_sent < reply.chunks.len() {
                    let text = reply.chunks[reply.chunks_sent].clone();
                    reply.chunks_sent += 1;
                    self.push(Event::ModelChunk {
                        effect,
                        text: text.clone(),
                    });
                    Completion::ModelChunk { text }
                } else {
                    let Pending {
                        kind: PendingKind::Model { reply, .. },
                        ..
                    } = self.pending.remove(position)
                    else {
                        unreachable!("the pending effect at `position` is this model request")
                    };
                    let message = reply.message;
                    self.push(Event::ModelResponse {
                        effect,
                        message: message.clone(),
                    });
                    Completion::ModelFinal { message }
                }
            }
            PendingKind::Tool { signal, step } => {
                let answer = if self.aborted.contains(signal) {
                    ToolOutcome::Aborted
                } else {
                    match step {
                        ToolStep::Result(text) => ToolOutcome::Ok {
                            content: vec![ContentBlock::text(text.clone())],
                            details: None,
                            is_error: false,
                        },
                        ToolStep::Error(text) => ToolOutcome::Ok {
                            content: vec![ContentBlock::text(text.clone())],
                            details: None,
                            is_error: true,
                        },
                        ToolStep::Throw(message) => ToolOutcome::Threw {
                            message: message.clone(),
                        },
                        ToolStep::Hang => ToolOutcome::Aborted,
                    }
                };
                self.pending.remove(position);
                self.push(Event::ToolAnswer {
                    effect,
                    answer: answer.clone(),
                });
                Completion::Tool(answer)
            }
            PendingKind::Hook { answer } => {
                let answer = answer.clone();
                self.pending.remove(position);
                self.push(Event::HookAnswer {
                    effect,
                    answer: answer.clone(),
                });
                Completion::Hook(answer)
            }
            PendingKind::Append { fault } => {
                let answer = self.store.answer_append(fault.as_ref());
                self.pending.remove(position);
                let outcome = match answer.cause() {
                    None => StoreOutcome::Ok,
                    Some(cause) => StoreOutcome::Failed(cause.clone()),
                };
                self.push(Event::AppendAnswer { effect, answer });
                Completion::Append(outcome)
            }
            PendingKind::Notify { answer, .. } => {
                let answer = answer.clone();
                self.pending.remove(position);
                self.push(Event::NotifyAnswer {
                    effect,
                    answer: answer.clone(),
                });
                Completion::Notify(answer)
            }
            PendingKind::Write { error } => {
                let error = error.clone();
                self.pending.remove(position);
                self.push(Event::WriteAnswer {
                    effect,
                    error: error.clone(),
                });
                Completion::Write(match error {
                    None => StoreOutcome::Ok,
                    Some(cause) => StoreOutcome::Failed(cause),
                })
            }
        };
        Input::Complete { effect, completion }
    }

    /// Records one effect of the subject and prepares the world's answer to it. The effect
    /// moves into the trace; the answer is planned from it first, so nothing is copied but
    /// what the answer keeps.
    pub fn record(&mut self, effect: Effect) {
        // The 1-based line the effect's event takes.
        let line = self.trace.events.len() + 1;
        let planned = match &effect {
            Effect::ModelRequest {
                effect,
                signal,
                request,
            } => {
                let index = self.model_index;
                self.model_index += 1;
                let timestamp = self.scenario.config.clock.start_ms + 500_000 + index as u64 * 1_000;
                let reply = model_reply(self.scenario, index, timestamp);
                let check = self.scenario.model.get(index).and_then(|step| step.expect.as_ref());
                if let Some(check) = check.filter(|_| self.request_checks) {
                    for problem in check_request(check, request) {
                        self.findings.push(Finding {
                            rule: format!("model[{index}].expect"),
                            line,
                            message: problem,
                        });
                    }
                }
                Some((*effect, PendingKind::Model { signal: *signal, reply }))
            }
            Effect::ToolCall { effect, signal, call } => {
                let step = self.scripts.next_tool(self.scenario, &call.name);
                Some((*effect, PendingKind::Tool { signal: *signal, step }))
            }
            Effect::Hook {
                effect,
                extension,
                phase,
                ..
            } => {
                let answer = self.scripts.next_hook(self.scenario, extension, *phase);
                Some((*effect, PendingKind::Hook { answer }))
            }
            Effect::Append { effect, .. } => {
                let (_, fault) = self.store.plan_append(&self.scenario.faults);
                let fault = fault.cloned();
                Some((*effect, PendingKind::Append { fault }))
            }
            Effect::Write { effect, .. } => {
                let error = self.store.plan_write(&self.scenario.faults);
                Some((*effect, PendingKind::Write { error }))
            }
            Effect::Notify { effect, observer, .. } => {
                let (answer, slow) = self.scripts.next_notify(self.scenario, observer);
                let place = self
                    .scenario
                    .observers
                    .iter()
                    .position(|script| script.name == *observer)
                    .map(|place| place as u32);
                let last = place.is_some_and(|place| place as usize + 1 == self.scenario.observers.len());
                Some((
                    *effect,
                    PendingKind::Notify {
                        answer,
                        slow,
                        observer: place,
                        last,
                    },
                ))
            }
            Effect::AbortSignal { signal } => {
                self.aborted.insert(*signal);
                None
            }
            Effect::Settled { .. } => None,
        };
        self.push(Event::from_effect(effect));
        if let Some((effect, kind)) = planned {
            self.pending.push(Pending { effect, kind });
        }
    }
}

/// A strategy instance for a kind and seed. `Exhaustive` runs use [`Replay`] from the explorer;
/// as a single run it is the first schedule of the enumeration.
pub fn make_strategy(kind: StrategyKind, seed: u64) -> Box<dyn Strategy> {
    match kind {
        StrategyKind::Scripted => Box::new(Scripted),
        StrategyKind::Random => Box::new(Random::new(seed)),
        StrategyKind::Pct { depth } => Box::new(Pct::new(seed, depth)),
        StrategyKind::PctSteps { depth, steps } => Box::new(Pct::with_steps(seed, depth, u64::from(steps))),
        // With or without reduction, the enumeration's first schedule takes choice 0 throughout.
        StrategyKind::Exhaustive { .. } => Box::new(Replay::new(Vec::new())),
        // As a single run, a guided search's first schedule: uniform random from the seed.
        StrategyKind::Guided => Box::new(Random::new(seed)),
    }
}
