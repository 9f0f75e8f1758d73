//! The seam every mutant of the zoo is written at: a decorator around any [`Subject`] that
//! rewrites what crosses between it and the world, the way a buggy wiring around a correct core
//! would (an extension host that drops a hook, a queue that starts the newest prompt first, a
//! store client that acknowledges an append before the store did).
//!
//! [`Decorated`] owns the wrapped subject and one [`Bug`]. The bug sees every input from the
//! world before the subject does and every effect of the subject before the world does, and
//! decides what goes on: an input is delivered (as it is, rewritten, later, or never, the bug
//! settling it itself); an effect is shown to the world (as it is, rewritten, later, or never,
//! the bug answering it itself). A bug may also show the world effects of its own (ids from
//! [`Seam::fresh_effect`]) and answer them itself. What a bug needs to know of the run, it reads
//! from [`Facts`] (the scenario as the world gave it) and [`Watch`] (what has crossed the seam
//! so far, as the world saw it); it keeps only its own state.
//!
//! Nothing here reads the wrapped subject's insides, so every mutant wraps the in-process
//! reference, an adapter process, or another mutant alike.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::model::{
    build_context, merge_system_prompt, path_to, ContextBudget, Message, Operation, Resources, SessionEntry, ToolSpec,
};
use crate::runtime::{
    Cause, ClockRule, Completion, Effect, EffectId, HookPhase, IdRule, Input, OpId, Settlement, StoreOutcome,
};
use crate::scenario::Scenario;
use crate::sim::{Restored, Subject, SubjectFailure};
use crate::trace::StateProbe;

/// One deliberate bug, written at the seam. Every hook has the correct wiring as its default.
pub(crate) trait Bug: Send {
    /// The scenario the wrapped subject is started with (`given` starts as the world's own),
    /// or the restore's outcome decided here without starting it.
    fn start(&mut self, given: &mut Scenario, facts: &Facts) -> Result<(), Cause> {
        let _ = (given, facts);
        Ok(())
    }

    /// The restore outcome the world sees.
    fn restored(&mut self, started: Result<Restored, Cause>, facts: &Facts) -> Result<Restored, Cause> {
        let _ = facts;
        started
    }

    /// An input from the world, before the subject gets it.
    fn input(&mut self, input: Input, seam: &mut Seam) {
        seam.deliver(input);
    }

    /// An effect of the subject, before the world sees it.
    fn effect(&mut self, effect: Effect, seam: &mut Seam) {
        seam.emit(effect);
    }

    /// The world's answer to an effect the bug showed of its own ([`Seam::inject`]); the
    /// subject never hears of it.
    fn own_answer(&mut self, effect: EffectId, completion: Completion, seam: &mut Seam) {
        let _ = (effect, completion, seam);
    }

    /// Everything one input from the world produced, in the order the world will see it.
    fn batch(&mut self, effects: &mut [Effect]) {
        let _ = effects;
    }

    /// The state the subject reports at the end of a step ([`Subject::state`]), as the world
    /// hears it: the wrapped runtime's own by default (a store client that lies to it moves its
    /// leaf, as it would). A bug that stores entries of its own or renames the runtime's reports
    /// none (`None` whatever it is given), since the wrapped runtime's leaf never names them.
    fn state(&self, probed: Option<StateProbe>, watch: &Watch) -> Option<StateProbe> {
        let _ = watch;
        probed
    }
}

/// The scenario as the world gave it: what a buggy wiring knows of its configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    pub configured_prompt: Option<String>,
    pub merged_prompt: Option<String>,
    pub resources: Resources,
    /// Extension names, in hook order.
    pub extensions: Vec<String>,
    pub tools: Vec<ToolSpec>,
    pub session: Vec<SessionEntry>,
    pub ids: IdRule,
    pub clock: ClockRule,
    /// Chunks each scripted model response streams before its final message (0: none).
    pub chunks: Vec<u32>,
}

impl Facts {
    fn of(scenario: &Scenario) -> Facts {
        Facts {
            configured_prompt: scenario
                .config
                .system_prompt
                .clone()
                .filter(|text| !text.trim().is_empty()),
            merged_prompt: merge_system_prompt(scenario.config.system_prompt.as_deref(), &scenario.resources),
            resources: scenario.resources.clone(),
            extensions: scenario.extensions.iter().map(|script| script.name.clone()).collect(),
            tools: scenario.tools.iter().map(|tool| tool.spec()).collect(),
            session: scenario.session.clone(),
            ids: scenario.config.ids.clone(),
            clock: scenario.config.clock.clone(),
            chunks: scenario.model.iter().map(|step| step.chunks.unwrap_or(0)).collect(),
        }
    }
}

/// What has crossed the seam so far, as the world saw it: the inputs it sent and the effects it
/// was shown (after the bug's rewriting).
#[derive(Debug, Clone, Default)]
pub(crate) struct Watch {
    /// The model request in flight: its id, its index among all requests, chunks streamed.
    pub model: Option<(EffectId, usize, u32)>,
    /// Model requests shown so far, over the whole run of the subject.
    pub model_requests: usize,
    /// Model requests of the current agent run.
    pub run_requests: usize,
    /// Appends shown since the last model request: the one in flight is the run's
    /// `run_appends`-th (a run appends after its last request).
    pub run_appends: usize,
    pub tools: BTreeSet<EffectId>,
    pub hooks: BTreeMap<EffectId, HookPhase>,
    /// Appends shown and not answered, with their entries.
    pub appends: BTreeMap<EffectId, SessionEntry>,
    pub writes: BTreeSet<EffectId>,
    /// Model responses since the last write was shown (`None`: no write pending).
    pub responses_since_write: Option<usize>,
    pub notifications: BTreeSet<EffectId>,
    /// Prompt-like operations (prompt, mode, library) delivered and not settled, oldest first.
    pub prompts: Vec<OpId>,
    /// Every prompt-like operation the world sent.
    pub prompt_ops: BTreeSet<OpId>,
    /// Control operations (steer, followUp, abort) sent and not settled.
    pub controls: Vec<OpId>,
    /// Flush and dispose operations sent and not settled (`true`: a dispose).
    pub waits: BTreeMap<OpId, bool>,
    /// Messages the store holds on the active path: the restored ones, then every accepted one.
    pub persisted: Vec<Message>,
    /// The active path's entries: the restored path, then every accepted entry.
    pub path: Vec<SessionEntry>,
    /// The first append failure the world reported.
    pub poison: Option<Cause>,
    /// How many entries of `path` (and messages of `persisted`) were restored.
    restored_entries: usize,
    restored_messages: usize,
    /// A dispose was sent.
    pub disposed: bool,
    /// Model responses between the last write shown and the world's answer to it, once it
    /// answered (a sink error that comes back after the next run got a response is late).
    pub responses_before_write_answer: Option<usize>,
}

impl Watch {
    pub fn after_hook_running(&self) -> bool {
        self.hooks.values().any(|phase| *phase == HookPhase::After)
    }

    pub fn later_request_running(&self) -> bool {
        self.model.is_some() && self.run_requests >= 2
    }

    /// The restored path's entries.
    pub fn restored_path(&self) -> &[SessionEntry] {
        &self.path[..self.restored_entries]
    }

    /// The restored path's messages.
    pub fn restored_messages(&self) -> &[Message] {
        &self.persisted[..self.restored_messages]
    }

    /// The leaf: the last entry of the active path.
    pub fn leaf(&self) -> Option<&str> {
        self.path.last().map(|entry| entry.id.as_str())
    }

    /// How many leading messages of a request are the persisted path's projection (restored or
    /// accepted, a compaction's summary first): the longest tail of it the request starts with
    /// (the budget may have dropped the oldest interactions). What follows is the run's suffix.
    pub fn persisted_prefix(&self, messages: &[Message]) -> usize {
        let unbounded = ContextBudget {
            total: u64::MAX,
            reserved_output: 0,
            safety_margin: 0,
        };
        let projected = build_context(&self.path, None, &unbounded).messages;
        (0..=projected.len())
            .map(|dropped| &projected[dropped..])
            .find(|tail| messages.starts_with(tail))
            .map_or(0, <[Message]>::len)
    }

    fn saw_input(&mut self, input: &Input) {
        match input {
            Input::Operation { op, operation } => match operation {
                Operation::Prompt { .. } | Operation::Mode { .. } | Operation::Library { .. } => {
                    self.prompts.push(*op);
                    self.prompt_ops.insert(*op);
                }
                Operation::Steer { .. } | Operation::FollowUp { .. } | Operation::Abort => self.controls.push(*op),
                Operation::Dispose => {
                    self.disposed = true;
                    self.waits.insert(*op, true);
                }
                Operation::Flush => {
                    self.waits.insert(*op, false);
                }
            },
            Input::Complete { effect, completion } => match completion {
                Completion::ModelChunk { .. } => {
                    if let Some((_, _, streamed)) = self.model.as_mut() {
                        *streamed += 1;
                    }
                }
                Completion::ModelFinal { .. } => {
                    self.model = None;
                    if let Some(responses) = self.responses_since_write.as_mut() {
                        *responses += 1;
                    }
                }
                Completion::Tool(_) => {
                    self.tools.remove(effect);
                }
                Completion::Hook(_) => {
                    self.hooks.remove(effect);
                }
                Completion::Append(outcome) => {
                    if let Some(entry) = self.appends.remove(effect) {
                        match outcome {
                            StoreOutcome::Ok => {
                                if let Some(message) = entry.as_message() {
                                    self.persisted.push(message.clone());
                                }
                                self.path.push(entry);
                            }
                            StoreOutcome::Failed(cause) => {
                                self.poison.get_or_insert_with(|| cause.clone());
                            }
                        }
                    }
                }
                Completion::Write(_) => {
                    self.writes.remove(effect);
                    self.responses_before_write_answer = self.responses_since_write.take();
                }
                Completion::Notify(_) => {
                    self.notifications.remove(effect);
                }
            },
        }
    }

    fn saw_effect(&mut self, effect: &Effect) {
        match effect {
            Effect::ModelRequest { effect, .. } => {
                self.model = Some((*effect, self.model_requests, 0));
                self.model_requests += 1;
                self.run_requests += 1;
                self.run_appends = 0;
            }
            Effect::ToolCall { effect, .. } => {
                self.tools.insert(*effect);
            }
            Effect::Hook { effect, phase, .. } => {
                self.hooks.insert(*effect, *phase);
            }
            Effect::Append { effect, entry } => {
                self.appends.insert(*effect, entry.clone());
                self.run_appends += 1;
            }
            Effect::Write { effect, .. } => {
                self.writes.insert(*effect);
                self.responses_since_write = Some(0);
            }
            Effect::Notify { effect, .. } => {
                self.notifications.insert(*effect);
            }
            Effect::AbortSignal { .. } => {}
            Effect::Settled { op, .. } => {
                if self.prompts.contains(op) {
                    self.prompts.retain(|other| other != op);
                    self.run_requests = 0;
                }
                self.controls.retain(|other| other != op);
                self.waits.remove(op);
            }
        }
    }

    fn restored(&mut self, given: &Scenario, restored: &Restored) {
        if let Some(leaf) = &restored.leaf {
            if let Ok(path) = path_to(&given.session, leaf) {
                self.persisted = path.iter().filter_map(SessionEntry::as_message).cloned().collect();
                self.path = path;
                self.restored_entries = self.path.len();
                self.restored_messages = self.persisted.len();
            }
        }
    }
}

/// Effect ids a bug gives the effects it shows of its own: far above any a subject numbers.
const INJECTED_EFFECT_FIRST: u32 = 1 << 30;

/// What a bug may do at the seam, while one input or effect is handled.
pub(crate) struct Seam<'a> {
    pub facts: &'a Facts,
    watch: &'a mut Watch,
    to_subject: &'a mut VecDeque<Input>,
    to_world: &'a mut Vec<Effect>,
    injected: &'a mut u32,
    own: &'a mut BTreeSet<EffectId>,
}

impl Seam<'_> {
    /// What has crossed the seam so far.
    pub fn watch(&self) -> &Watch {
        self.watch
    }

    /// Shows the world an effect (the subject's, rewritten or not, or one of the bug's own).
    pub fn emit(&mut self, effect: Effect) {
        self.watch.saw_effect(&effect);
        self.to_world.push(effect);
    }

    /// Settles an operation at the seam, without the subject.
    pub fn settle(&mut self, op: OpId, settlement: Settlement) {
        self.emit(Effect::Settled { op, settlement });
    }

    /// Gives the subject an input: the world's, rewritten or not, or the bug's own answer to
    /// an effect it did not show. It is delivered once the current step is done.
    pub fn deliver(&mut self, input: Input) {
        self.to_subject.push_back(input);
    }

    /// Answers one of the subject's effects here.
    pub fn answer(&mut self, effect: EffectId, completion: Completion) {
        self.deliver(completion.into_input(effect));
    }

    /// An id for an effect of the bug's own, which no subject's effect has.
    pub fn fresh_effect(&mut self) -> EffectId {
        let id = EffectId(INJECTED_EFFECT_FIRST + *self.injected);
        *self.injected += 1;
        id
    }

    /// Shows the world an effect of the bug's own (its id from [`Seam::fresh_effect`]): the
    /// world's answer goes to [`Bug::own_answer`], and [`Watch`] does not count it as the
    /// subject's (a stored temporary entry is not on the subject's path).
    pub fn inject(&mut self, effect: Effect) {
        if let Some(id) = effect.pending_id() {
            self.own.insert(id);
        }
        self.to_world.push(effect);
    }
}

/// A detour: the bug shows the world an effect of its own in the middle of a run (a tool the
/// runtime skipped, a request or a hook it should not make) and holds the subject's effects
/// back until the world has answered it, as a runtime that awaited that effect would.
#[derive(Default)]
pub(crate) struct Detour {
    held: Option<Vec<Effect>>,
}

impl Detour {
    /// Takes `effect` while a detour is under way; gives it back otherwise.
    pub fn hold(&mut self, effect: Effect) -> Option<Effect> {
        match &mut self.held {
            Some(held) => {
                held.push(effect);
                None
            }
            None => Some(effect),
        }
    }

    /// Shows `own` (its id from [`Seam::fresh_effect`]) and holds `next`, and every effect after
    /// it, until [`Detour::end`].
    pub fn start(&mut self, own: Effect, next: Effect, seam: &mut Seam) {
        seam.inject(own);
        self.held = Some(vec![next]);
    }

    /// The effects held back, in order, once the world answered the detour's effect.
    pub fn end(&mut self) -> Vec<Effect> {
        self.held.take().unwrap_or_default()
    }
}

/// A subject with one bug at its seam.
pub struct Decorated {
    inner: Box<dyn Subject + Send>,
    /// Builds the bug afresh for every run: its state is one run's.
    build: fn() -> Box<dyn Bug>,
    bug: Box<dyn Bug>,
    facts: Facts,
    watch: Watch,
    to_subject: VecDeque<Input>,
    injected: u32,
    own: BTreeSet<EffectId>,
}

impl Decorated {
    pub(crate) fn new(inner: Box<dyn Subject + Send>, build: fn() -> Box<dyn Bug>) -> Decorated {
        Decorated {
            inner,
            build,
            bug: build(),
            facts: Facts::default(),
            watch: Watch::default(),
            to_subject: VecDeque::new(),
            injected: 0,
            own: BTreeSet::new(),
        }
    }

    /// Delivers the inputs waiting for the subject, each with everything it produces passed
    /// through the bug before the next one (an answer the bug gives an effect is handled before
    /// the effects after it).
    fn drain(&mut self, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        while let Some(input) = self.to_subject.pop_front() {
            let mut produced = Vec::new();
            self.inner.deliver(input, &mut produced)?;
            for effect in produced {
                let mut seam = Seam {
                    facts: &self.facts,
                    watch: &mut self.watch,
                    to_subject: &mut self.to_subject,
                    to_world: effects,
                    injected: &mut self.injected,
                    own: &mut self.own,
                };
                self.bug.effect(effect, &mut seam);
                // What the bug gave the subject in answer comes before the next effect.
                self.drain(effects)?;
            }
        }
        Ok(())
    }
}

impl Subject for Decorated {
    fn start(&mut self, scenario: &Scenario) -> Result<Result<Restored, Cause>, SubjectFailure> {
        self.bug = (self.build)();
        self.facts = Facts::of(scenario);
        self.watch = Watch::default();
        self.to_subject.clear();
        self.injected = 0;
        self.own.clear();
        let mut given = scenario.clone();
        if let Err(cause) = self.bug.start(&mut given, &self.facts) {
            return Ok(Err(cause));
        }
        let started = self.inner.start(&given)?;
        let started = self.bug.restored(started, &self.facts);
        if let Ok(restored) = &started {
            self.watch.restored(&given, restored);
        }
        Ok(started)
    }

    fn blocking(&self) -> crate::sim::Blocking {
        self.inner.blocking()
    }

    fn deliver(&mut self, input: Input, effects: &mut Vec<Effect>) -> Result<(), SubjectFailure> {
        let first = effects.len();
        let own = match &input {
            Input::Complete { effect, .. } => self.own.remove(effect),
            _ => false,
        };
        if !own {
            self.watch.saw_input(&input);
        }
        let mut seam = Seam {
            facts: &self.facts,
            watch: &mut self.watch,
            to_subject: &mut self.to_subject,
            to_world: effects,
            injected: &mut self.injected,
            own: &mut self.own,
        };
        match input {
            Input::Complete { effect, completion } if own => self.bug.own_answer(effect, completion, &mut seam),
            input => self.bug.input(input, &mut seam),
        }
        self.drain(effects)?;
        self.bug.batch(&mut effects[first..]);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SubjectFailure> {
        self.inner.finish()
    }

    fn state(&self) -> Option<StateProbe> {
        self.bug.state(self.inner.state(), &self.watch)
    }
}
