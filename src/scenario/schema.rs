//! The scenario file's schema: serde types, strict (`deny_unknown_fields`), camelCase as the
//! files spell them. Only data: reading them is `load`, judging them `validate`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{ContextBudget, Operation, OperationKind, StopReason, ToolCall, ToolSpec};
use crate::runtime::{ClockRule, IdRule};

/// The networked world's settings and its planned faults (`net`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetPlan {
    /// When the store server syncs the session file: `every-append` (before it answers) or `none`.
    #[serde(default)]
    pub sync: crate::store::SyncPolicy,
    /// Per-message latency, drawn by turmoil between these bounds (milliseconds, at least 1:
    /// at 0 ms an acknowledgement slips through a partition made in the same step).
    #[serde(default = "default_latency_min")]
    pub latency_min_ms: u64,
    #[serde(default = "default_latency_max")]
    pub latency_max_ms: u64,
    /// How long the runtime waits for the store's answer before the append counts as failed
    /// (default 100 ms: twenty round trips at the default latency).
    #[serde(default = "default_store_timeout")]
    pub store_timeout_ms: u64,
    /// How long the runtime waits for the model before the request ends with stop reason error
    /// (default 300 ms: longer than any seeded fault, 250 ms at most, so a partitioned model
    /// times a request out however long the partition lasts).
    #[serde(default = "default_model_timeout")]
    pub model_timeout_ms: u64,
    #[serde(default)]
    pub faults: Vec<NetFault>,
}

impl Default for NetPlan {
    fn default() -> NetPlan {
        NetPlan {
            sync: crate::store::SyncPolicy::default(),
            latency_min_ms: default_latency_min(),
            latency_max_ms: default_latency_max(),
            store_timeout_ms: default_store_timeout(),
            model_timeout_ms: default_model_timeout(),
            faults: Vec::new(),
        }
    }
}

fn default_latency_min() -> u64 {
    1
}

fn default_latency_max() -> u64 {
    5
}

fn default_store_timeout() -> u64 {
    100
}

fn default_model_timeout() -> u64 {
    300
}

/// One planned change of the networked world: when it starts (`after` a trace condition, or
/// `atMs` of simulated time) and how long it lasts (`forMs`; absent: to the end of the run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NetFault {
    pub kind: NetFaultKind,
    #[serde(default)]
    pub after: Option<After>,
    #[serde(default)]
    pub at_ms: Option<u64>,
    /// Starts this long after `after` first holds (simulated milliseconds): with a fixed
    /// latency, this can land a fault between the store applying an append and its answer.
    #[serde(default)]
    pub delay_ms: u64,
    #[serde(default)]
    pub for_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetFaultKind {
    /// Messages between the runtime and the store are dropped; repaired after `forMs`.
    PartitionStore,
    /// Messages between the runtime and the store are held; released after `forMs`.
    HoldStore,
    /// Messages between the runtime and the model are dropped; repaired after `forMs`.
    PartitionModel,
    /// The store host crashes (unsynced writes are lost) and restarts after `forMs`.
    CrashStore,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    pub active_leaf_id: Option<String>,
    #[serde(default)]
    pub system_prompt: Option<String>,
    #[serde(default = "default_steps_max")]
    pub max_steps: u32,
    #[serde(default = "default_budget")]
    pub context: ContextBudget,
    #[serde(default)]
    pub ids: IdRule,
    #[serde(default)]
    pub clock: ClockRule,
}

fn default_steps_max() -> u32 {
    8
}

fn default_budget() -> ContextBudget {
    ContextBudget {
        total: 100_000,
        reserved_output: 0,
        safety_margin: 0,
    }
}

/// An extension that observes agent events, and how its handler answers each notification
/// (consumed in order; when the list runs out the handler returns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserverScript {
    pub name: String,
    pub events: Vec<crate::runtime::AgentEventKind>,
    /// A slow handler: the canonical schedule completes its notifications only when nothing
    /// else can go (other schedules complete them whenever they choose).
    #[serde(default)]
    pub slow: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<ObserverAnswer>,
}

/// `"return"` or `{"throw": "message"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ObserverAnswer {
    Return,
    Throw(String),
}

impl ObserverScript {
    pub fn spec(&self) -> crate::runtime::ObserverSpec {
        crate::runtime::ObserverSpec {
            name: self.name.clone(),
            events: self.events.clone(),
        }
    }
}

/// An extension and its scripted hook answers, consumed one per call; when a list runs out the
/// before hook allows and the after hook observes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtensionScript {
    pub name: String,
    #[serde(default)]
    pub before: Vec<BeforeAnswer>,
    #[serde(default)]
    pub after: Vec<AfterAnswer>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BeforeAnswer {
    Allow,
    Deny(String),
    Rewrite(Value),
    Throw(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AfterAnswer {
    Observe,
    Rewrite(RewrittenResult),
    Throw(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RewrittenResult {
    pub text: String,
    #[serde(default)]
    pub is_error: bool,
}

/// A tool: its spec and its scripted answers, consumed one per call (then `{"result": "ok"}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolScript {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "any_object")]
    pub parameters: Value,
    #[serde(default)]
    pub results: Vec<ToolStep>,
}

fn any_object() -> Value {
    serde_json::json!({"type": "object"})
}

impl ToolScript {
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolStep {
    /// A successful result with this text.
    Result(String),
    /// A result with `isError: true`.
    Error(String),
    /// The tool throws.
    Throw(String),
    /// The tool never finishes until its abort signal fires.
    Hang,
}

/// One model response, consumed in request order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ModelStep {
    #[serde(default)]
    pub thinking: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    /// Strict like the rest of the file (a key the kit would drop is an error), whereas Pi's
    /// tool-call blocks inside session entries are read as Pi writes them.
    #[serde(default, deserialize_with = "strict_tool_calls")]
    pub tool_calls: Vec<ToolCall>,
    /// Default: `toolUse` with tool calls, `error` with `error`, else `stop`.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    #[serde(default)]
    pub error: Option<String>,
    /// Stream the text in this many chunks before the final message (default 1: no chunks).
    #[serde(default)]
    pub chunks: Option<u32>,
    /// Checks on the request this response answers.
    #[serde(default)]
    pub expect: Option<RequestCheck>,
    /// The model ignores its abort signal: this response is delivered as scripted even after
    /// the run's abort fired (the abort landed after the last chunk).
    #[serde(default)]
    pub ignores_abort: bool,
}

/// Checks the scripted model applies to the request it receives.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestCheck {
    #[serde(default)]
    pub roles: Option<Vec<String>>,
    /// `null` demands no system prompt.
    #[serde(default, with = "double_option")]
    pub system_prompt: Option<Option<String>>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub message_count: Option<usize>,
    /// Texts that must appear somewhere in the request: the system prompt, then each message
    /// as compact JSON (so a newline or quote inside a message is matched in its escaped form).
    #[serde(default)]
    pub contains: Vec<String>,
    /// Texts that must appear nowhere in the request.
    #[serde(default)]
    pub excludes: Vec<String>,
}

mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Option<String>>, serializer: S) -> Result<S::Ok, S::Error> {
        value.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
        Option::<String>::deserialize(deserializer).map(Some)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationSpec {
    pub op: OperationKind,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
    /// Deliver only once this holds (and every earlier operation was delivered).
    #[serde(default)]
    pub after: Option<After>,
}

impl OperationSpec {
    pub fn operation(&self) -> Operation {
        Operation::new(self.op, self.text.as_deref(), self.mode.as_deref())
    }
}

/// A condition on the trace so far: "at least N such events happened".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum After {
    /// Operation N (1-based, file order) has settled.
    Settled(u32),
    ModelRequests(u32),
    Chunks(u32),
    ToolCalls(u32),
    Hooks(u32),
    AppendsIssued(u32),
    AppendsAccepted(u32),
    Writes(u32),
}

/// Expected outcomes, checked on the canonical (scripted) schedule.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expectations {
    /// `"ok"` or a restore error code.
    #[serde(default)]
    pub restore: Option<String>,
    /// One per operation, in file order: `resolved`, `resolved:<reason>`, `rejected:<code>`,
    /// `pending` (never settled).
    #[serde(default)]
    pub settlements: Option<Vec<String>>,
    /// The leaf after the last accepted append (or the restored leaf).
    #[serde(default)]
    pub leaf: Option<String>,
    /// Ids of the entries the store holds at the end, beyond the initial session, in order.
    #[serde(default)]
    pub appended: Option<Vec<String>>,
    #[serde(default)]
    pub model_requests: Option<usize>,
    #[serde(default)]
    pub appends: Option<usize>,
    #[serde(default)]
    pub tool_calls: Option<usize>,
    /// Texts written by output modes, in order.
    #[serde(default)]
    pub writes: Option<Vec<String>>,
}

/// A scripted tool call as the file spells it: `id`, `name`, `arguments`, nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StrictToolCall {
    id: String,
    name: String,
    arguments: Value,
}

fn strict_tool_calls<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<ToolCall>, D::Error> {
    let calls = Vec::<StrictToolCall>::deserialize(deserializer)?;
    Ok(calls
        .into_iter()
        .map(|call| ToolCall {
            id: call.id,
            name: call.name,
            arguments: call.arguments,
        })
        .collect())
}
