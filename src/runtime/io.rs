//! The runtime's boundary: the Inputs a driver feeds in and the Effects it takes out.
//!
//! Every identifier is a small integer newtype: operations are numbered by the driver (the
//! scenario's order), effects and abort signals by the runtime, in the order it creates them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{
    AssistantMessage, ContentBlock, Message, Operation, OperationKind, SessionEntry, ToolCall, ToolResultMessage,
    ToolSpec,
};

/// An operation: one call a caller makes (prompt, flush, dispose, steer, followUp, abort, mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OpId(pub u32);

/// One effect the runtime asked the world to perform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EffectId(pub u32);

/// The abort signal of one agent run; every model request and tool call of the run carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SignalId(pub u32);

impl std::fmt::Display for OpId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "op#{}", self.0)
    }
}

impl std::fmt::Display for EffectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "fx#{}", self.0)
    }
}

impl std::fmt::Display for SignalId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sig#{}", self.0)
    }
}

/// What a caller or the world tells the runtime.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A caller's call, numbered `op` by the driver.
    Operation { op: OpId, operation: Operation },
    /// The world finished (or advanced, for model chunks) one pending effect.
    Complete { effect: EffectId, completion: Completion },
}

impl Input {
    /// The number of the operation this input delivers; `None` for a completion.
    pub fn op(&self) -> Option<OpId> {
        match self {
            Input::Operation { op, .. } => Some(*op),
            Input::Complete { .. } => None,
        }
    }

    /// The operation this input delivers; `None` for a completion.
    pub fn operation(&self) -> Option<&Operation> {
        match self {
            Input::Operation { operation, .. } => Some(operation),
            Input::Complete { .. } => None,
        }
    }

    /// The number of the operation this input delivers, when it is of `kind`.
    pub fn op_of_kind(&self, kind: OperationKind) -> Option<OpId> {
        match self {
            Input::Operation { op, operation } if operation.kind() == kind => Some(*op),
            _ => None,
        }
    }
}

/// How the world answered one effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Completion {
    /// A streamed text delta; the model request stays pending.
    ModelChunk {
        text: String,
    },
    /// The final assistant message (stop reason `error` or `aborted` included).
    ModelFinal {
        message: AssistantMessage,
    },
    Tool(ToolOutcome),
    Hook(HookOutcome),
    Append(StoreOutcome),
    Write(StoreOutcome),
    /// An observer's handler returned (or threw): the notification is done.
    Notify(NotifyOutcome),
}

/// An extension that subscribes to agent events (Pi: `pi.on("message_end", handler)`, whose
/// handler may be async). Each event it subscribes to is an [`Effect::Notify`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserverSpec {
    pub name: String,
    pub events: Vec<AgentEventKind>,
}

/// The agent events an observer may subscribe to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentEventKind {
    /// A message joined the run's transcript (the prompt, a steer or follow-up, a response, a
    /// tool result).
    MessageEnd,
    /// A turn ended: one response and the results of its tool calls.
    TurnEnd,
    /// The agent run ended.
    AgentEnd,
}

impl AgentEventKind {
    pub fn name(self) -> &'static str {
        match self {
            AgentEventKind::MessageEnd => "message_end",
            AgentEventKind::TurnEnd => "turn_end",
            AgentEventKind::AgentEnd => "agent_end",
        }
    }
}

/// What an observer is told, in Pi's event shapes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ObservedEvent {
    MessageEnd {
        message: Message,
    },
    TurnEnd {
        message: Message,
        /// The turn's tool results, as `toolResult` messages.
        #[serde(rename = "toolResults")]
        tool_results: Vec<Message>,
    },
    AgentEnd {
        messages: Vec<Message>,
    },
}

impl ObservedEvent {
    pub fn kind(&self) -> AgentEventKind {
        match self {
            ObservedEvent::MessageEnd { .. } => AgentEventKind::MessageEnd,
            ObservedEvent::TurnEnd { .. } => AgentEventKind::TurnEnd,
            ObservedEvent::AgentEnd { .. } => AgentEventKind::AgentEnd,
        }
    }
}

/// How an observer's handler ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum NotifyOutcome {
    Ok,
    Threw { message: String },
}

impl Completion {
    /// The input that delivers this completion for `effect`.
    pub fn into_input(self, effect: EffectId) -> Input {
        Input::Complete {
            effect,
            completion: self,
        }
    }
}

/// The core tool's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolOutcome {
    Ok {
        content: Vec<ContentBlock>,
        details: Option<Value>,
        is_error: bool,
    },
    Threw {
        message: String,
    },
    /// The tool observed its abort signal and stopped.
    Aborted,
}

/// An extension hook's answer. `Allow`, `Deny` and `RewriteArguments` answer a before hook;
/// `Observe` and `RewriteResult` answer an after hook; `Threw` answers either.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HookOutcome {
    Allow,
    Deny { reason: String },
    RewriteArguments { arguments: Value },
    Observe,
    RewriteResult { content: Vec<ContentBlock>, is_error: bool },
    Threw { message: String },
}

/// The answer of the store to an append, or of the output sink to a write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StoreOutcome {
    Ok,
    Failed(Cause),
}

/// An error value as a caller sees it. Poisoned operations carry the very cause of the failed
/// append, so equality of causes is what "the same cause" means.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Cause {
    pub code: String,
    pub message: String,
}

impl Cause {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Cause {
        Cause {
            code: code.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// Which side of the core executor a hook runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HookPhase {
    Before,
    After,
}

impl HookPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            HookPhase::Before => "before",
            HookPhase::After => "after",
        }
    }
}

/// What the model receives: the projection of the current path and the unpersisted suffix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    pub system_prompt: Option<String>,
    pub messages: Vec<Message>,
    /// The registry's specs, shared rather than copied (values equal the registry's).
    pub tools: std::sync::Arc<[ToolSpec]>,
}

/// What the runtime asks of the world, or tells it.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    ModelRequest {
        effect: EffectId,
        signal: SignalId,
        request: ModelRequest,
    },
    /// The core executor: run the tool. Only reached when every before hook allowed it.
    ToolCall {
        effect: EffectId,
        signal: SignalId,
        call: ToolCall,
    },
    Hook {
        effect: EffectId,
        extension: String,
        phase: HookPhase,
        call: ToolCall,
        /// The result an after hook observes; `None` for a before hook.
        result: Option<ToolResultMessage>,
    },
    Append {
        effect: EffectId,
        entry: SessionEntry,
    },
    /// A mode's output; completed by the output sink.
    Write {
        effect: EffectId,
        text: String,
    },
    /// An observer's handler is called with an agent event; completed when it returns.
    Notify {
        effect: EffectId,
        observer: String,
        event: ObservedEvent,
    },
    /// The run's abort signal fired. Not pending: nothing completes it.
    AbortSignal {
        signal: SignalId,
    },
    /// An operation resolved or rejected. Not pending.
    Settled {
        op: OpId,
        settlement: Settlement,
    },
}

impl Effect {
    /// The id of an effect the world must complete; `None` for notifications.
    pub fn pending_id(&self) -> Option<EffectId> {
        match self {
            Effect::ModelRequest { effect, .. }
            | Effect::ToolCall { effect, .. }
            | Effect::Hook { effect, .. }
            | Effect::Append { effect, .. }
            | Effect::Write { effect, .. }
            | Effect::Notify { effect, .. } => Some(*effect),
            Effect::AbortSignal { .. } | Effect::Settled { .. } => None,
        }
    }
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Settlement {
    Resolved(OpValue),
    Rejected(Cause),
}

/// The value an operation resolves with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpValue {
    /// flush, dispose, steer, followUp, abort.
    Unit,
    /// prompt and the output modes: a deep copy of the agent's run result.
    Run(RunResult),
    /// The library adapter: the run's reason and the last assistant's text.
    Library { reason: RunReason, text: String },
}

/// Why an agent run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunReason {
    Stop,
    Length,
    Error,
    Aborted,
    MaxSteps,
}

impl RunReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RunReason::Stop => "stop",
            RunReason::Length => "length",
            RunReason::Error => "error",
            RunReason::Aborted => "aborted",
            RunReason::MaxSteps => "max_steps",
        }
    }
}

/// `AgentRunResult`: the whole transcript after the run, how it ended and how many model
/// requests it made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub reason: RunReason,
    pub steps: u32,
    pub messages: Vec<Message>,
}

impl RunResult {
    /// The text of the last assistant message, or "" when there is none.
    pub fn final_assistant_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find_map(Message::as_assistant)
            .map(AssistantMessage::text)
            .unwrap_or_default()
    }
}
