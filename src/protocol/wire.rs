//! The wire types of the adapter protocol, versions 1 and 2 (`docs/protocol.md`), and the
//! reading and writing of one line. Their conversions to and from the runtime's domain types
//! (`runtime::io`) are [`super::convert`].
//!
//! Every line on the wire is one JSON object with a `"type"`. [`KitMessage`] is what the kit
//! writes to an adapter's stdin; [`AdapterMessage`] is what an adapter writes to its stdout.
//! These structs are the protocol: they change only with its version, whatever happens to the
//! domain types. The envelopes, operations, completions, effects and settlements are this
//! module's own types (strict: unknown fields are rejected); the payloads that are Pi's own JSON
//! shapes (messages, session entries, tool calls, tool specs, resources) are the `model` types,
//! because those shapes are what every implementation of the family already speaks.
//!
//! This module never does IO and never decides anything: it parses, prints and converts. It is
//! one file on purpose: the wire format is one versioned concept, read whole when it changes
//! (its tests are `tests.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shape::{check_adapter_message, describe_subject, ShapeError};
use crate::model::{
    AssistantMessage, ContentBlock, Message, Resources, SessionEntry, ToolCall, ToolResultMessage, ToolSpec,
};
use crate::runtime::{AgentEventKind, NotifyOutcome, ObservedEvent};

pub use super::shape::{PROTOCOL_VERSION, PROTOCOL_VERSIONS};

/// The longest line either side may write, newline excluded.
pub const LINE_BYTES_MAX: usize = 4 * 1024 * 1024;

/// The `type` values an adapter may write, in the order docs/protocol.md lists them.
pub const ADAPTER_MESSAGE_TYPES: &[&str] = &[
    "hello",
    "started",
    "restore_failed",
    "effect",
    "abort_signal",
    "settled",
    "idle",
    "error",
];

/// The `effect.kind` values an adapter may write.
pub const EFFECT_KINDS: &[&str] = &["model_request", "tool_call", "hook", "append", "write", "notify"];

// ---------------------------------------------------------------------------------------------
// Kit -> adapter
// ---------------------------------------------------------------------------------------------

/// A line the kit writes to the adapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum KitMessage {
    /// Create the runtime. Answered by `started` or `restore_failed`, then `idle`.
    Start { scenario: StartScenario },
    /// One caller operation; `op` numbers operations in scenario order from 1.
    Operation { op: u32, operation: WireOperation },
    /// The world's answer to (or, for a model chunk, progress on) effect `effect`.
    Complete { effect: u32, completion: WireCompletion },
    /// Protocol 2: the run is over, another may follow on this process. The adapter discards
    /// the runtime and every per-run counter, then writes `idle`.
    Reset {},
    /// The process is done: exit 0. (A struct variant so that unknown fields are rejected.)
    Shutdown {},
}

/// What `start` carries: everything an adapter needs to create its runtime.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartScenario {
    pub config: WireConfig,
    /// The initial session entries, in Pi's entry shape.
    pub session: Vec<SessionEntry>,
    pub resources: Resources,
    /// The tool registry, in registration order.
    pub tools: Vec<ToolSpec>,
    /// Extension names, in the order their hooks run.
    pub extensions: Vec<String>,
    pub ids: WireIdRule,
    pub clock: WireClockRule,
    /// Informational: the kit answers every append and write itself (see docs/protocol.md).
    pub faults: WireFaults,
    /// Protocol 2: extensions observing agent events; absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observers: Vec<WireObserver>,
    /// Informational, like `faults`: for each scripted model response, in request order, the
    /// chunks it streams before its final message (the kit sends them itself); absent when no
    /// response streams any. A wrapper that injects faults (`serve --mutant`) may read it to
    /// know a stream's last chunk when it comes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<u32>,
}

/// An observer: an extension subscribed to agent events, told of each by a `notify` effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireObserver {
    pub name: String,
    /// `message_end`, `turn_end`, `agent_end`.
    pub events: Vec<AgentEventKind>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireConfig {
    /// Required and nullable: `null` is "a new conversation on an empty session".
    pub active_leaf_id: Option<String>,
    pub system_prompt: Option<String>,
    pub max_steps: u32,
    pub context: WireBudget,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireBudget {
    pub total: u64,
    pub reserved_output: u64,
    pub safety_margin: u64,
}

/// The k-th `createId` (0-based) returns `prefix + (start + k)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireIdRule {
    pub prefix: String,
    pub start: u64,
}

/// The k-th clock reading (0-based) returns `startMs + k * stepMs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireClockRule {
    pub start_ms: u64,
    pub step_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireFaults {
    pub appends: Vec<WireAppendFault>,
    pub writes: Vec<WireWriteFault>,
}

/// The fault planned for the `at`-th append (1-based over the run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireAppendFault {
    pub at: u32,
    /// `reject`, `appliedThenFail` or `late`.
    pub fault: String,
    /// The cause the kit will answer with (absent for `late`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<WireCause>,
    /// For `late`: the scenario's condition, as written in the scenario file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireWriteFault {
    pub at: u32,
    pub error: WireCause,
}

/// An operation, as `operation.operation`: the wire's own spelling of [`crate::model::Operation`],
/// versioned with the protocol. Each name is the one an adapter lists in `hello.features` and
/// `hello.unsupported`; a tidy test keeps the names those of the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", deny_unknown_fields)]
pub enum WireOperation {
    Prompt { text: String },
    Flush,
    Dispose,
    Steer { text: String },
    FollowUp { text: String },
    Abort,
    Mode { mode: String, text: String },
    Library { text: String },
}

/// `complete.completion`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WireCompletion {
    /// A streamed text delta; the model request stays pending.
    ModelChunk {
        text: String,
    },
    /// The final assistant message (pi-ai shape, `role` included).
    ModelFinal {
        #[serde(with = "assistant_with_role")]
        message: AssistantMessage,
    },
    Tool {
        outcome: WireToolOutcome,
    },
    Hook {
        answer: WireHookAnswer,
    },
    Append {
        outcome: WireStoreOutcome,
    },
    Write {
        outcome: WireStoreOutcome,
    },
    /// The observer's handler returned (`{"kind":"ok"}`) or threw (`{"kind":"threw","message"}`).
    Notify {
        outcome: NotifyOutcome,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WireToolOutcome {
    Ok {
        content: Vec<ContentBlock>,
        details: Option<Value>,
        #[serde(rename = "isError")]
        is_error: bool,
    },
    Threw {
        message: String,
    },
    Aborted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WireHookAnswer {
    Allow,
    Deny {
        reason: String,
    },
    RewriteArguments {
        arguments: Value,
    },
    Observe,
    RewriteResult {
        content: Vec<ContentBlock>,
        #[serde(rename = "isError")]
        is_error: bool,
    },
    Threw {
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WireStoreOutcome {
    Ok,
    Failed { cause: WireCause },
}

/// An error value: `{code, message}`. Two causes are "the same" when both fields are equal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireCause {
    pub code: String,
    pub message: String,
}

// ---------------------------------------------------------------------------------------------
// Adapter -> kit
// ---------------------------------------------------------------------------------------------

/// A line the adapter writes to the kit.
// One message exists at a time, on its way through; boxing would only add indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum AdapterMessage {
    /// The first line: the protocol version, who is speaking, and what it supports.
    Hello(Hello),
    /// The runtime was restored: its leaf and the restored transcript's length.
    Started {
        leaf: Option<String>,
        messages: usize,
    },
    /// The runtime rejected the session or leaf.
    RestoreFailed {
        cause: WireCause,
    },
    Effect {
        effect: WireEffect,
    },
    /// The run's abort signal fired.
    AbortSignal {
        signal: u32,
    },
    Settled {
        op: u32,
        settlement: WireSettlement,
    },
    /// The adapter is quiescent: the kit may write its next line. `state` (protocol 2, an
    /// adapter whose `hello.probes` holds `state`): the runtime's own leaf and persisted count,
    /// on every `idle` that ends the answer to `start` (once started), an `operation` or a
    /// `complete`.
    Idle {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<WireState>,
    },
    /// The adapter could not apply the kit's last line (e.g. a `complete` for an effect it does
    /// not know), or the implementation could not go on with the run. The run is broken.
    /// `recoverable` (protocol 2): the adapter stopped the run itself and its process is sound;
    /// it ends the answer with `idle` and serves the next run after `reset`.
    Error {
        code: String,
        message: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recoverable: bool,
    },
}

impl AdapterMessage {
    /// The `type` as written on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            AdapterMessage::Hello(_) => "hello",
            AdapterMessage::Started { .. } => "started",
            AdapterMessage::RestoreFailed { .. } => "restore_failed",
            AdapterMessage::Effect { .. } => "effect",
            AdapterMessage::AbortSignal { .. } => "abort_signal",
            AdapterMessage::Settled { .. } => "settled",
            AdapterMessage::Idle { .. } => "idle",
            AdapterMessage::Error { .. } => "error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    pub protocol: u32,
    pub implementation: Implementation,
    /// Operations and behaviours the adapter supports (`steer`, `followUp`, `abort`, `mode`,
    /// `library`, `chunks`, `sync-store`).
    #[serde(default)]
    pub features: Vec<String>,
    /// Operations or behaviours the adapter cannot run, each with the reason. A scenario that
    /// uses one is reported not applicable with that reason.
    #[serde(default)]
    pub unsupported: BTreeMap<String, String>,
    /// What the adapter reports of its runtime's insides at every `idle` of a run (protocol 2).
    /// A name this kit does not know is a malformed `hello`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<Probe>,
}

impl Hello {
    /// Whether the adapter reports its runtime's state (`"probes": ["state"]`).
    pub fn probes_state(&self) -> bool {
        self.probes.contains(&Probe::State)
    }
}

/// A probe an adapter may declare in `hello.probes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    /// `idle.state`: the runtime's leaf and how many appends it counts as persisted.
    State,
}

/// `idle.state`: the runtime's own leaf (the id of the entry it would append after, `null` for
/// none) and how many appends it counts as persisted (accepted by the store) since it was
/// restored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireState {
    #[serde(default)]
    pub leaf: Option<String>,
    pub persisted: u64,
}

impl From<WireState> for crate::trace::StateProbe {
    fn from(state: WireState) -> crate::trace::StateProbe {
        crate::trace::StateProbe {
            leaf: state.leaf,
            persisted: state.persisted,
        }
    }
}

impl From<crate::trace::StateProbe> for WireState {
    fn from(state: crate::trace::StateProbe) -> WireState {
        WireState {
            leaf: state.leaf,
            persisted: state.persisted,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Implementation {
    pub name: String,
    pub version: String,
}

impl std::fmt::Display for Implementation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.name, self.version)
    }
}

/// `effect.effect`: one effect, with the id the adapter chose for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WireEffect {
    ModelRequest {
        id: u32,
        signal: u32,
        request: WireModelRequest,
    },
    ToolCall {
        id: u32,
        signal: u32,
        call: ToolCall,
    },
    Hook {
        id: u32,
        extension: String,
        phase: WirePhase,
        call: ToolCall,
        /// The result an after hook observes; `null` for a before hook.
        result: Option<ToolResultMessage>,
    },
    Append {
        id: u32,
        entry: SessionEntry,
    },
    Write {
        id: u32,
        text: String,
    },
    /// Protocol 2: an observer's handler is called with an agent event (Pi's event shape).
    Notify {
        id: u32,
        observer: String,
        event: ObservedEvent,
    },
}

impl WireEffect {
    pub fn id(&self) -> u32 {
        match self {
            WireEffect::ModelRequest { id, .. }
            | WireEffect::ToolCall { id, .. }
            | WireEffect::Hook { id, .. }
            | WireEffect::Append { id, .. }
            | WireEffect::Write { id, .. }
            | WireEffect::Notify { id, .. } => *id,
        }
    }
}

/// What the model receives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireModelRequest {
    pub system_prompt: Option<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WirePhase {
    Before,
    After,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum WireSettlement {
    Resolved { value: WireValue },
    Rejected { cause: WireCause },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WireValue {
    /// flush, dispose, steer, followUp, abort. (A struct variant, so that unknown fields are
    /// rejected: serde lets a unit variant of a tagged enum carry any.)
    Unit {},
    /// prompt and the output modes: the agent's run result.
    Run {
        reason: WireRunReason,
        steps: u32,
        messages: Vec<Message>,
    },
    /// The library adapter: the run's reason and the last assistant text.
    Library { reason: WireRunReason, text: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireRunReason {
    Stop,
    Length,
    Error,
    Aborted,
    MaxSteps,
}

// ---------------------------------------------------------------------------------------------
// Lines
// ---------------------------------------------------------------------------------------------

/// A message as one line of JSON, without the newline.
pub fn to_line<T: Serialize>(message: &T) -> String {
    serde_json::to_string(message).expect("wire messages always serialize")
}

/// Why an adapter's line could not be read as an [`AdapterMessage`]. What an error quotes of
/// the line is printable ([`shown`]): control characters escaped, names cut short, so that a
/// verdict printed on a terminal stays on its line and cannot repaint it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    #[error("not a JSON object: {problem}")]
    Garbage { problem: String },
    #[error("unknown message type `{type_name}`")]
    UnknownType { type_name: String },
    #[error("unknown effect kind `{kind}`")]
    UnknownEffectKind { kind: String },
    #[error("`hello` speaks protocol {got}; this kit speaks 1 and 2")]
    Version { got: String },
    /// A known message with a bad field. `subject` says what the line is about (`effect append
    /// fx#6`, `settlement of op#1`, `` `started` ``); `location` is where the line departs from
    /// its shape (`protocol::shape`), and `problem` says so in words.
    #[error("bad {subject}: {problem}")]
    Malformed {
        type_name: String,
        subject: String,
        problem: String,
        location: Option<Box<ShapeError>>,
    },
}

impl LineError {
    pub fn code(&self) -> &'static str {
        match self {
            LineError::Garbage { .. } => "wire.garbage",
            LineError::UnknownType { .. } => "wire.unknown_type",
            LineError::UnknownEffectKind { .. } => "wire.unknown_effect_kind",
            LineError::Version { .. } => "wire.version",
            LineError::Malformed { .. } => "wire.malformed",
        }
    }
}

/// Reads one adapter line. The checks go from coarse to fine so that each problem gets its own
/// error: not JSON, no known `type`, an unknown effect kind, a foreign protocol version, and only
/// then the fields of a known message.
pub fn parse_adapter_line(line: &str) -> Result<AdapterMessage, LineError> {
    let value: Value = serde_json::from_str(line).map_err(|error| LineError::Garbage {
        problem: shown(&error.to_string()),
    })?;
    let Some(object) = value.as_object() else {
        return Err(LineError::Garbage {
            problem: format!("a JSON {}, not an object", crate::model::json_kind(&value)),
        });
    };
    let type_name = match object.get("type") {
        Some(Value::String(name)) => name.clone(),
        Some(other) => {
            return Err(LineError::UnknownType {
                type_name: shown(&other.to_string()),
            })
        }
        None => {
            return Err(LineError::UnknownType {
                type_name: "(missing)".into(),
            })
        }
    };
    if !ADAPTER_MESSAGE_TYPES.contains(&type_name.as_str()) {
        return Err(LineError::UnknownType {
            type_name: shown(&type_name),
        });
    }
    if type_name == "hello" {
        let got = object.get("protocol").cloned().unwrap_or(Value::Null);
        if !got
            .as_u64()
            .is_some_and(|version| PROTOCOL_VERSIONS.iter().any(|known| u64::from(*known) == version))
        {
            // A number as the line writes it: 2^64 + 1 is not a float to the adapter.
            let written = got
                .is_number()
                .then(|| crate::scenario::locate::raw_value_at(line, &crate::scenario::locate::parse_path("protocol")))
                .flatten();
            return Err(LineError::Version {
                got: shown(&written.map_or_else(|| got.to_string(), str::to_string)),
            });
        }
    }
    if type_name == "effect" {
        let kind = object.get("effect").and_then(|effect| effect.get("kind"));
        match kind {
            Some(Value::String(kind)) if EFFECT_KINDS.contains(&kind.as_str()) => {}
            Some(other) => {
                let kind = other.as_str().map(str::to_string).unwrap_or_else(|| other.to_string());
                return Err(LineError::UnknownEffectKind { kind: shown(&kind) });
            }
            None => {}
        }
    }
    serde_json::from_value(value).map_err(|error| {
        // serde refused the line; the shape tables say where and why (the value was consumed,
        // and a refused line is rare: it is read again). Should the tables find nothing (they
        // mirror the serde types, and tests/fixtures/protocol/lines.json holds both to that),
        // serde's own words are all there is.
        let value: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        let location = check_adapter_message(&value);
        LineError::Malformed {
            type_name,
            subject: shown(&describe_subject(&value)),
            problem: shown(
                &location
                    .as_ref()
                    .map_or_else(|| error.to_string(), ShapeError::to_string),
            ),
            location: location.map(Box::new),
        }
    })
}

/// How many characters of one piece of an adapter's line an error quotes.
const SHOWN_CHARS_MAX: usize = 200;

/// `text` as an error may print it: control characters escaped (`\u{1b}`), cut to
/// [`SHOWN_CHARS_MAX`] characters.
fn shown(text: &str) -> String {
    let cut: String = text.chars().take(SHOWN_CHARS_MAX).collect();
    let mut shown = crate::scenario::printable(&cut);
    if cut.len() < text.len() {
        shown.push('…');
    }
    shown
}

/// Reads one kit line (the adapter's side, used by `agentsim serve`).
pub fn parse_kit_line(line: &str) -> Result<KitMessage, String> {
    serde_json::from_str(line).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests;

/// An assistant message on the wire carries `"role": "assistant"`, as every pi-ai message does.
mod assistant_with_role {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::model::{AssistantMessage, Message};

    pub fn serialize<S: Serializer>(message: &AssistantMessage, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct WithRole<'a> {
            role: &'static str,
            #[serde(flatten)]
            message: &'a AssistantMessage,
        }
        WithRole {
            role: "assistant",
            message,
        }
        .serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<AssistantMessage, D::Error> {
        match Message::deserialize(deserializer)? {
            Message::Assistant(message) => Ok(message),
            other => Err(serde::de::Error::custom(format!(
                "expected an assistant message, got role `{}`",
                other.role()
            ))),
        }
    }
}
