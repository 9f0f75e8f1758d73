//! The reference Runtime: the seed chapter's contract as a sans-IO state machine.
//!
//! `runtime` never imports tokio, never reads a clock, never draws a random number, never
//! spawns. A driver owns the loop:
//!
//! 1. [`Runtime::restore`] builds the runtime from session entries and an explicit leaf.
//! 2. The driver feeds [`Input`]s with [`Runtime::handle_input`]: operations (prompt, flush,
//!    dispose, steer, followUp, abort, mode, library) and completions of effects.
//! 3. After every input the driver drains [`Runtime::poll_effect`] until it returns `None`. An
//!    effect with a [`Effect::pending_id`] waits for exactly one completing input (a model
//!    request may take chunk inputs before its final one); notifications (settlements, abort
//!    signals) need nothing.
//!
//! Between inputs the runtime is quiescent: everything it can do without the world is done.
//!
//! Order of one prompt: accepted into the one queue -> started (poison re-checked,
//! `beforeCount` read) -> agent loop (projection before every model request, tools through the
//! hooks) -> the run's new suffix appended one entry at a time, each parented on the previous,
//! the leaf advanced only after each append is accepted -> resolved with a copy of the result.
//! The first failed append poisons the runtime for good with that cause.

pub mod agent;
mod control;
pub mod deps;
pub mod executor;
pub mod io;
pub mod mode;
mod observe;
mod persist;
pub mod projection;
mod queue;

use std::collections::{BTreeMap, VecDeque};

use crate::model::{
    merge_system_prompt, path_to, AssistantMessage, ContextBudget, Message, Operation, PathError, Resources,
    SessionEntry, StopReason, ToolRegistry, Usage,
};

pub use agent::{Agent, AgentError, AgentEvent, AgentOptions, AgentState, AgentStep, AgentView, SubscriptionId};
pub use control::Control;
pub use deps::{ClockRule, IdRule, IdsAndClock, OtherReaders};
pub use executor::{Execution, ExecutorStep};
pub use io::{
    AgentEventKind, Cause, Completion, Effect, EffectId, HookOutcome, HookPhase, Input, ModelRequest, NotifyOutcome,
    ObservedEvent, ObserverSpec, OpId, OpValue, RunReason, RunResult, Settlement, SignalId, StoreOutcome, ToolOutcome,
};
pub use mode::Mode;
pub use projection::{project, temporary_entries, temporary_id, ProjectionError, Snapshot};

/// `RuntimeConfig`. `active_leaf_id` is required and nullable: `None` means "a new
/// conversation on an empty session", never "guess a leaf".
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeConfig {
    pub active_leaf_id: Option<String>,
    pub system_prompt: Option<String>,
    pub steps_max: u32,
    pub context: ContextBudget,
}

/// `RuntimeDeps`, minus the model, tools' code and the store, which are the world's effects.
#[derive(Debug, Clone, Default)]
pub struct RuntimeDeps {
    pub resources: Resources,
    /// Extension names, in the order their hooks run.
    pub extensions: Vec<String>,
    pub tools: ToolRegistry,
    pub ids: IdRule,
    pub clock: ClockRule,
    /// Extensions that observe agent events, in the order they are told.
    pub observers: Vec<ObserverSpec>,
    /// Who else reads the clock and draws ids (nobody, for the reference).
    pub other_readers: OtherReaders,
}

/// Why a runtime could not be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    #[error("the session is empty but activeLeafId is `{leaf}`: no such leaf")]
    LeafForEmptySession { leaf: String },
    #[error("the session has {entries} entries but activeLeafId is null: choose a branch explicitly")]
    LeafRequired { entries: usize },
    #[error(transparent)]
    Path(#[from] PathError),
}

impl RestoreError {
    pub fn code(&self) -> &'static str {
        match self {
            RestoreError::LeafForEmptySession { .. } => "restore.unknown_leaf",
            RestoreError::LeafRequired { .. } => "restore.leaf_required",
            RestoreError::Path(error) => error.code(),
        }
    }
}

/// A driver's mistake: the input does not fit the runtime's state. The runtime is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    #[error("{0} is not a pending effect")]
    UnknownEffect(EffectId),
    #[error("{effect} is a pending {expected}; it cannot be completed with {got}")]
    CompletionMismatch {
        effect: EffectId,
        expected: &'static str,
        got: &'static str,
    },
    #[error("{effect}: {problem}")]
    BadHookAnswer { effect: EffectId, problem: &'static str },
}

impl InputError {
    pub fn code(&self) -> &'static str {
        match self {
            InputError::UnknownEffect(_) => "input.unknown_effect",
            InputError::CompletionMismatch { .. } => "input.completion_mismatch",
            InputError::BadHookAnswer { .. } => "input.bad_hook_answer",
        }
    }
}

/// The cause a prompt gets once the runtime is disposed.
pub fn disposed_cause() -> Cause {
    Cause::new("runtime.disposed", "the runtime is disposed; it accepts no new prompt")
}

/// The cause a mode operation gets for a mode name it does not know.
pub fn unknown_mode_cause(mode: &str) -> Cause {
    Cause::new(
        "mode.unknown",
        format!("unknown mode `{mode}`: expected interactive, print or json"),
    )
}

/// Who asked for a run, and so what happens when it is persisted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Prompt,
    Mode(Mode),
    Library,
}

#[derive(Debug, Clone)]
struct Queued {
    op: OpId,
    seq: u64,
    purpose: Purpose,
    text: String,
}

// One value of each exists at a time; boxing would only add indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
enum Stage {
    Agent {
        execution: Option<Execution>,
    },
    Persist {
        result: RunResult,
        suffix: Vec<Message>,
        /// The next suffix index to append.
        next: usize,
        /// The append issued and not yet answered: one at a time.
        in_flight: bool,
    },
}

#[derive(Debug, Clone)]
struct Active {
    op: OpId,
    seq: u64,
    purpose: Purpose,
    before_count: usize,
    stage: Stage,
}

#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
enum Pending {
    Model,
    Tool,
    Hook,
    /// Boxed, as `Write`'s result: the map of pending effects then moves small values.
    Append {
        entry: Box<SessionEntry>,
    },
    Write {
        op: OpId,
        result: Box<RunResult>,
    },
    /// An observer's handler runs; nothing waits for it.
    Notify,
}

impl Pending {
    fn name(&self) -> &'static str {
        match self {
            Pending::Model => "model request",
            Pending::Tool => "tool call",
            Pending::Hook => "hook",
            Pending::Append { .. } => "append",
            Pending::Write { .. } => "write",
            Pending::Notify => "notification",
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Disposal {
    /// Dispose operations waiting for the accepted work to finish.
    waiting: Vec<OpId>,
    /// The last prompt accepted before the first dispose.
    upto: u64,
    outcome: Option<Settlement>,
}

/// The reference Runtime. See the module documentation for the driver's protocol.
#[derive(Debug)]
pub struct Runtime {
    config: RuntimeConfig,
    system_prompt: Option<String>,
    resources: Resources,
    extensions: Vec<String>,
    tools: ToolRegistry,
    ids_and_clock: IdsAndClock,
    agent: Agent,
    active_path: Vec<SessionEntry>,
    persisted_message_count: usize,
    leaf: Option<String>,
    queue: VecDeque<Queued>,
    active: Option<Active>,
    accepted_through: u64,
    settled_through: u64,
    flushes: Vec<(OpId, u64)>,
    disposal: Option<Disposal>,
    poison: Option<Cause>,
    pending: BTreeMap<EffectId, Pending>,
    effects: VecDeque<Effect>,
    effect_next: u32,
    signal_next: u32,
    observers: observe::Observers,
}

impl Runtime {
    /// `createRuntime`: restores the agent from the chosen leaf. Of the four combinations of
    /// empty/non-empty session and null/given leaf, two succeed: empty+null (empty transcript)
    /// and non-empty+leaf (the messages of `path_to(entries, leaf)`, copied).
    pub fn restore(
        config: RuntimeConfig,
        deps: RuntimeDeps,
        entries: &[SessionEntry],
    ) -> Result<Runtime, RestoreError> {
        let active_path = match (entries.is_empty(), &config.active_leaf_id) {
            (true, None) => Vec::new(),
            (true, Some(leaf)) => return Err(RestoreError::LeafForEmptySession { leaf: leaf.clone() }),
            (false, None) => return Err(RestoreError::LeafRequired { entries: entries.len() }),
            (false, Some(leaf)) => path_to(entries, leaf)?,
        };
        let initial_messages: Vec<Message> = active_path
            .iter()
            .filter_map(SessionEntry::as_message)
            .cloned()
            .collect();
        let persisted_message_count = initial_messages.len();
        let system_prompt = merge_system_prompt(config.system_prompt.as_deref(), &deps.resources);
        let restored_messages = initial_messages.len();
        let agent = Agent::new(AgentOptions {
            initial_messages,
            steps_max: config.steps_max,
        });
        Ok(Runtime {
            leaf: config.active_leaf_id.clone(),
            config,
            system_prompt,
            resources: deps.resources,
            extensions: deps.extensions,
            tools: deps.tools,
            ids_and_clock: IdsAndClock::shared(deps.ids, deps.clock, deps.other_readers),
            agent,
            active_path,
            persisted_message_count,
            queue: VecDeque::new(),
            active: None,
            accepted_through: 0,
            settled_through: 0,
            flushes: Vec::new(),
            disposal: None,
            poison: None,
            pending: BTreeMap::new(),
            effects: VecDeque::new(),
            effect_next: 1,
            signal_next: 1,
            observers: observe::Observers::new(deps.observers, restored_messages),
        })
    }

    // ----- observation -----

    /// The next effect, in the order the runtime produced them.
    pub fn poll_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// The agent's controls: state, subscription, steer, followUp, abort. There is no prompt
    /// here; new work enters only through a prompt-like `Input::Operation`, so nothing skips
    /// persistence.
    ///
    /// ```compile_fail
    /// # fn f(runtime: &mut agentsim::runtime::Runtime) {
    /// runtime.control().prompt("skips the store"); // no such method
    /// # }
    /// ```
    pub fn control(&mut self) -> Control<'_> {
        Control { runtime: self }
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// The merged system prompt every model request carries.
    pub fn system_prompt(&self) -> Option<&str> {
        self.system_prompt.as_deref()
    }

    /// The resource catalog the system prompt was built from (the caller's, moved in).
    pub fn resources(&self) -> &Resources {
        &self.resources
    }

    /// The extension host: names in hook order.
    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }

    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    pub fn leaf(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    pub fn active_path(&self) -> &[SessionEntry] {
        &self.active_path
    }

    pub fn persisted_message_count(&self) -> usize {
        self.persisted_message_count
    }

    pub fn poison(&self) -> Option<&Cause> {
        self.poison.as_ref()
    }

    pub fn is_closed(&self) -> bool {
        self.disposal.is_some()
    }

    /// How many times `createId` was called.
    pub fn ids_issued(&self) -> u64 {
        self.ids_and_clock.ids_issued()
    }

    /// The effects issued and not yet completed, in id order.
    pub fn pending_effects(&self) -> Vec<EffectId> {
        self.pending_effect_ids().collect()
    }

    /// `pending_effects()`, without collecting them.
    pub fn pending_effect_ids(&self) -> impl Iterator<Item = EffectId> + '_ {
        self.pending.keys().copied()
    }

    // ----- input -----

    pub fn handle_input(&mut self, input: Input) -> Result<(), InputError> {
        match input {
            Input::Operation { op, operation } => self.handle_operation(op, operation),
            Input::Complete { effect, completion } => return self.handle_complete(effect, completion),
        }
        Ok(())
    }

    fn handle_operation(&mut self, op: OpId, operation: Operation) {
        match operation {
            Operation::Prompt { text } => self.handle_prompt(op, Purpose::Prompt, text),
            Operation::Mode { mode, text } => match Mode::parse(&mode) {
                Some(mode) => self.handle_prompt(op, Purpose::Mode(mode), text),
                None => self.settle(op, Settlement::Rejected(unknown_mode_cause(&mode))),
            },
            Operation::Library { text } => self.handle_prompt(op, Purpose::Library, text),
            Operation::Flush => self.handle_flush(op),
            Operation::Dispose => self.handle_dispose(op),
            Operation::Steer { text } => {
                self.control().steer(text);
                self.settle(op, Settlement::Resolved(OpValue::Unit));
            }
            Operation::FollowUp { text } => {
                self.control().follow_up(text);
                self.settle(op, Settlement::Resolved(OpValue::Unit));
            }
            Operation::Abort => {
                self.control().abort();
                self.settle(op, Settlement::Resolved(OpValue::Unit));
            }
        }
    }

    fn handle_complete(&mut self, effect: EffectId, completion: Completion) -> Result<(), InputError> {
        let pending = self.pending.get(&effect).ok_or(InputError::UnknownEffect(effect))?;
        let mismatch = |got| InputError::CompletionMismatch {
            effect,
            expected: pending.name(),
            got,
        };
        match (pending, completion) {
            (Pending::Model, Completion::ModelChunk { text }) => {
                self.agent
                    .handle_model_chunk(&text)
                    .expect("a pending model request means the agent awaits it");
            }
            (Pending::Model, Completion::ModelFinal { message }) => {
                self.pending.remove(&effect);
                let now = self.ids_and_clock.now();
                let step = self
                    .agent
                    .handle_model_final(message, now)
                    .expect("the agent awaits a model response");
                self.advance(step);
            }
            (Pending::Tool, Completion::Tool(outcome)) => {
                self.pending.remove(&effect);
                let clock = &mut self.ids_and_clock;
                let step = execution_in(&mut self.active).handle_core(outcome, &self.extensions, &mut || clock.now());
                self.advance_execution(step.expect("a pending tool call means the execution is at its core"));
            }
            (Pending::Hook, Completion::Hook(outcome)) => {
                let clock = &mut self.ids_and_clock;
                // A bad answer changes nothing: the clock is read only on the way to a result.
                let mut reads = 0;
                let clock_before = clock.clone();
                let step =
                    execution_in(&mut self.active).handle_hook(outcome, &self.extensions, &self.tools, &mut || {
                        reads += 1;
                        clock.now()
                    });
                let step = match step {
                    Ok(step) => step,
                    Err(problem) => {
                        if reads > 0 {
                            self.ids_and_clock = clock_before;
                        }
                        return Err(InputError::BadHookAnswer { effect, problem });
                    }
                };
                self.pending.remove(&effect);
                self.advance_execution(step);
            }
            (Pending::Append { .. }, Completion::Append(outcome)) => {
                let Some(Pending::Append { entry }) = self.pending.remove(&effect) else {
                    unreachable!("matched above")
                };
                self.handle_append_outcome(*entry, outcome);
            }
            (Pending::Notify, Completion::Notify(_)) => {
                // An observer only watches: its answer, even a throw, changes nothing.
                self.pending.remove(&effect);
            }
            (Pending::Write { .. }, Completion::Write(outcome)) => {
                let Some(Pending::Write { op, result }) = self.pending.remove(&effect) else {
                    unreachable!("matched above")
                };
                let settlement = match outcome {
                    StoreOutcome::Ok => Settlement::Resolved(OpValue::Run(*result)),
                    // Returned unchanged; the committed session stays as it is.
                    StoreOutcome::Failed(cause) => Settlement::Rejected(cause),
                };
                self.settle(op, settlement);
            }
            (_, completion) => return Err(mismatch(completion_name(&completion))),
        }
        Ok(())
    }

    /// Serves agent steps until one needs the world.
    fn advance(&mut self, mut step: AgentStep) {
        loop {
            self.announce(
                matches!(step, AgentStep::Model { .. }),
                matches!(step, AgentStep::Finished(_)),
            );
            match step {
                AgentStep::Model { signal } => {
                    // The latest snapshot, read at every request.
                    let snapshot = Snapshot {
                        active_path: &self.active_path,
                        persisted_message_count: self.persisted_message_count,
                    };
                    let projected = project(
                        snapshot,
                        self.agent.messages(),
                        self.system_prompt.as_deref(),
                        &self.config.context,
                        &self.tools.shared(),
                    );
                    match projected {
                        Ok(request) => {
                            let effect = self.issue(Pending::Model);
                            self.effects.push_back(Effect::ModelRequest {
                                effect,
                                signal,
                                request,
                            });
                            return;
                        }
                        Err(error) => {
                            let now = self.ids_and_clock.now();
                            let message = projection_failure(&error, now);
                            step = self
                                .agent
                                .handle_model_final(message, now)
                                .expect("the agent awaits a model");
                        }
                    }
                }
                AgentStep::Tool { call, signal: _ } => {
                    let clock = &mut self.ids_and_clock;
                    let (execution, executor_step) =
                        Execution::start(call, &self.extensions, &self.tools, &mut || clock.now());
                    if let Some(Active {
                        stage: Stage::Agent { execution: slot },
                        ..
                    }) = self.active.as_mut()
                    {
                        *slot = Some(execution);
                    }
                    match self.serve_execution(executor_step) {
                        Some(next) => step = next,
                        None => return,
                    }
                }
                AgentStep::Finished(result) => {
                    let active = self.active.as_mut().expect("a run belongs to an active operation");
                    let suffix = result.messages[active.before_count..].to_vec();
                    active.stage = Stage::Persist {
                        result,
                        suffix,
                        next: 0,
                        in_flight: false,
                    };
                    self.append_next();
                    return;
                }
            }
        }
    }

    fn advance_execution(&mut self, step: ExecutorStep) {
        if let Some(next) = self.serve_execution(step) {
            self.advance(next);
        }
    }

    /// Issues the executor's effect, or hands a finished result back to the agent.
    fn serve_execution(&mut self, step: ExecutorStep) -> Option<AgentStep> {
        match step {
            ExecutorStep::Hook {
                extension,
                phase,
                call,
                result,
            } => {
                let effect = self.issue(Pending::Hook);
                self.effects.push_back(Effect::Hook {
                    effect,
                    extension,
                    phase,
                    call,
                    result,
                });
                None
            }
            ExecutorStep::Core { call } => {
                if self.agent.is_aborted() {
                    // The signal fired while the hooks ran: the core tool never starts.
                    let clock = &mut self.ids_and_clock;
                    let step = execution_in(&mut self.active)
                        .handle_core(ToolOutcome::Aborted, &self.extensions, &mut || clock.now())
                        .expect("the execution is at its core");
                    return self.serve_execution(step);
                }
                let signal = self.current_signal();
                let effect = self.issue(Pending::Tool);
                self.effects.push_back(Effect::ToolCall { effect, signal, call });
                None
            }
            ExecutorStep::Done(result) => {
                if let Some(Active {
                    stage: Stage::Agent { execution },
                    ..
                }) = self.active.as_mut()
                {
                    *execution = None;
                }
                let now = self.ids_and_clock.now();
                Some(
                    self.agent
                        .handle_tool_result(result, now)
                        .expect("the agent awaits this tool result"),
                )
            }
        }
    }

    fn current_signal(&self) -> SignalId {
        SignalId(self.signal_next - 1)
    }

    // ----- settlement -----

    fn settle(&mut self, op: OpId, settlement: Settlement) {
        self.effects.push_back(Effect::Settled { op, settlement });
    }

    /// Tells the observers of the messages the agent added since the last step (and of a turn's
    /// end before the next request, and of the run's end). Nothing waits for these notifications.
    fn announce(&mut self, requesting: bool, ended: bool) {
        if self.observers.is_empty() {
            return;
        }
        for (observer, event) in self.observers.announce(self.agent.messages(), requesting, ended) {
            let effect = self.issue(Pending::Notify);
            self.effects.push_back(Effect::Notify {
                effect,
                observer,
                event,
            });
        }
    }

    fn issue(&mut self, pending: Pending) -> EffectId {
        let effect = EffectId(self.effect_next);
        self.effect_next += 1;
        self.pending.insert(effect, pending);
        effect
    }
}

/// The execution in flight of the active operation.
fn execution_in(active: &mut Option<Active>) -> &mut Execution {
    match active.as_mut().map(|active| &mut active.stage) {
        Some(Stage::Agent {
            execution: Some(execution),
        }) => execution,
        _ => unreachable!("a pending hook or tool call means an execution is in flight"),
    }
}

fn completion_name(completion: &Completion) -> &'static str {
    match completion {
        Completion::ModelChunk { .. } => "a model chunk",
        Completion::ModelFinal { .. } => "a model response",
        Completion::Tool(_) => "a tool outcome",
        Completion::Hook(_) => "a hook outcome",
        Completion::Append(_) => "an append outcome",
        Completion::Write(_) => "a write outcome",
        Completion::Notify(_) => "a notification outcome",
    }
}

/// The assistant message a run ends with when its context could not be projected.
pub fn projection_failure(error: &ProjectionError, timestamp: u64) -> AssistantMessage {
    AssistantMessage {
        content: Vec::new(),
        api: "agentsim".to_string(),
        provider: "agentsim".to_string(),
        model: "projection".to_string(),
        usage: Usage::default(),
        stop_reason: StopReason::Error,
        error_message: Some(format!("{}: {error}", error.code())),
        timestamp,
    }
}
