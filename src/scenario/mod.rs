//! The scenario file format: one JSON file is one test.
//!
//! A scenario is versioned (`"version": 1`) and strict: unknown fields are rejected, and every
//! problem is reported as a [`ScenarioError`] naming the file, the line and the field. This
//! module only reads and validates; running a scenario is `sim`'s business.

pub mod locate;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{ContextBudget, Resources, SessionEntry, StopReason, ToolCall, ToolSpec};
use crate::runtime::{Cause, ClockRule, IdRule};
use crate::trace::Operation;

use locate::{line_of, parse_path, render_path, Segment};

/// The only version this kit reads.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    pub version: u32,
    #[serde(default)]
    pub description: String,
    /// The rule IDs (conformance.md) this scenario is written to exercise.
    pub rules: Vec<String>,
    /// The initial session entries, in Pi's entry shape.
    #[serde(default)]
    pub session: Vec<SessionEntry>,
    pub config: Config,
    #[serde(default)]
    pub resources: Resources,
    #[serde(default)]
    pub extensions: Vec<ExtensionScript>,
    #[serde(default)]
    pub tools: Vec<ToolScript>,
    #[serde(default)]
    pub model: Vec<ModelStep>,
    #[serde(default)]
    pub faults: FaultPlan,
    pub operations: Vec<OperationSpec>,
    #[serde(default)]
    pub expect: Expectations,
    /// Run in the networked world (`net`): the runtime, a store server and a model server on
    /// turmoil hosts. Absent: the in-process scheduler.
    #[serde(default)]
    pub net: Option<NetPlan>,
}

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
    /// How long the runtime waits for the store's answer before the append counts as failed.
    #[serde(default = "default_store_timeout")]
    pub store_timeout_ms: u64,
    /// How long the runtime waits for the model before the request ends with stop reason error.
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
    1_000
}

fn default_model_timeout() -> u64 {
    10_000
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
    #[serde(default)]
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

/// The written fault plan (see `sim::fault` for what each fault means).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultPlan {
    #[serde(default)]
    pub appends: Vec<AppendFault>,
    #[serde(default)]
    pub writes: Vec<WriteFault>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppendFault {
    /// The 1-based index of the append, counted over the whole run.
    pub at: u32,
    pub fault: AppendFaultKind,
    #[serde(default)]
    pub error: Option<Cause>,
    /// For `late`: the completion is enabled only once this holds.
    #[serde(default)]
    pub until: Option<After>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AppendFaultKind {
    /// Rejected and not applied.
    Reject,
    /// Applied, then reported failed: the acknowledgement was lost.
    AppliedThenFail,
    /// Accepted, but the answer is held back until `until` holds.
    Late,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFault {
    pub at: u32,
    pub error: Cause,
}

/// The default cause of an append fault without `error`.
pub fn default_disk_error() -> Cause {
    Cause::new("diskError", "the store failed to write the entry")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OpKind {
    Prompt,
    Flush,
    Dispose,
    Steer,
    FollowUp,
    Abort,
    Mode,
    Library,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationSpec {
    pub op: OpKind,
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
        let text = self.text.clone().unwrap_or_default();
        match self.op {
            OpKind::Prompt => Operation::Prompt { text },
            OpKind::Flush => Operation::Flush,
            OpKind::Dispose => Operation::Dispose,
            OpKind::Steer => Operation::Steer { text },
            OpKind::FollowUp => Operation::FollowUp { text },
            OpKind::Abort => Operation::Abort,
            OpKind::Mode => Operation::Mode {
                mode: self.mode.clone().unwrap_or_default(),
                text,
            },
            OpKind::Library => Operation::Library { text },
        }
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

/// A scenario file that could not be used. Always names the file, line and field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {field}: {message}")]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: usize,
    /// The JSON path of the field, e.g. `operations[2].after`; `-` for the whole file.
    pub field: String,
    pub message: String,
}

impl ScenarioError {
    pub fn code(&self) -> &'static str {
        "scenario.invalid"
    }
}

/// A scenario with where it came from.
#[derive(Debug, Clone)]
pub struct LoadedScenario {
    pub path: PathBuf,
    /// The test name: the path below the corpus root without `.json`, e.g. `poison/disk-error`.
    pub name: String,
    pub scenario: Scenario,
}

/// Reads, parses and validates a scenario file. `known_rules` are the catalogue's IDs.
pub fn load(path: &Path, name: &str, known_rules: &[&str]) -> Result<LoadedScenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|error| ScenarioError {
        file: path.to_path_buf(),
        line: 0,
        field: "-".into(),
        message: format!("cannot read: {error}"),
    })?;
    let scenario = parse(path, &text, known_rules)?;
    Ok(LoadedScenario {
        path: path.to_path_buf(),
        name: name.to_string(),
        scenario,
    })
}

/// Parses and validates scenario text.
pub fn parse(file: &Path, text: &str, known_rules: &[&str]) -> Result<Scenario, ScenarioError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let scenario: Scenario = match serde_path_to_error::deserialize(&mut deserializer) {
        Ok(scenario) => scenario,
        Err(error) => {
            let path = error.path().to_string();
            let inner = error.into_inner();
            let mut message = strip_position(&inner.to_string());
            let mut line = inner.line();
            let field = if inner.is_syntax() || inner.is_eof() || path == "." || path.contains('?') {
                "-".to_string()
            } else {
                // An entry's own reader names the field inside the object: `field `x`: ...`.
                let mut field = path;
                if let Some(rest) = message.strip_prefix("field `") {
                    if let Some((name, problem)) = rest.split_once("`: ") {
                        field = format!("{field}.{name}");
                        message = problem.to_string();
                    }
                }
                line = line.min(line_of(text, &parse_path(&field)));
                field
            };
            return Err(ScenarioError {
                file: file.to_path_buf(),
                line,
                field,
                message,
            });
        }
    };
    if let Err(problem) = deserializer.end() {
        return Err(ScenarioError {
            file: file.to_path_buf(),
            line: problem.line(),
            field: "-".into(),
            message: strip_position(&problem.to_string()),
        });
    }
    validate(&scenario, known_rules).map_err(|(path, message)| ScenarioError {
        file: file.to_path_buf(),
        line: line_of(text, &path),
        field: render_path(&path),
        message,
    })?;
    Ok(scenario)
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

type Problem = (Vec<Segment>, String);

fn at(path: &str, message: impl Into<String>) -> Problem {
    (parse_path(path), message.into())
}

/// Semantic checks serde cannot express.
fn validate_net(net: &NetPlan) -> Result<(), Problem> {
    if net.latency_min_ms == 0 {
        return Err(at(
            "net.latencyMinMs",
            "must be at least 1: at 0 ms an acknowledgement slips through a partition made in the same step",
        ));
    }
    if net.latency_max_ms < net.latency_min_ms {
        return Err(at("net.latencyMaxMs", "must not be below net.latencyMinMs"));
    }
    if net.store_timeout_ms == 0 || net.model_timeout_ms == 0 {
        let field = if net.store_timeout_ms == 0 {
            "net.storeTimeoutMs"
        } else {
            "net.modelTimeoutMs"
        };
        return Err(at(field, "must be at least 1"));
    }
    for (index, fault) in net.faults.iter().enumerate() {
        if fault.after.is_some() == fault.at_ms.is_some() {
            return Err(at(
                &format!("net.faults[{index}]"),
                "give exactly one of `after` (a trace condition) and `atMs` (simulated time)",
            ));
        }
    }
    Ok(())
}

fn validate(scenario: &Scenario, known_rules: &[&str]) -> Result<(), Problem> {
    if scenario.version != VERSION {
        return Err(at(
            "version",
            format!(
                "unsupported version {}; this kit reads version {VERSION}",
                scenario.version
            ),
        ));
    }
    if scenario.rules.is_empty() {
        return Err(at("rules", "name at least one rule ID this scenario exercises"));
    }
    for (index, rule) in scenario.rules.iter().enumerate() {
        if !known_rules.contains(&rule.as_str()) {
            return Err(at(
                &format!("rules[{index}]"),
                format!("unknown rule ID `{rule}` (see conformance.md)"),
            ));
        }
    }
    if let Some(net) = &scenario.net {
        validate_net(net)?;
    }
    let tool_names: Vec<&str> = scenario.tools.iter().map(|tool| tool.name.as_str()).collect();
    for (step_index, step) in scenario.model.iter().enumerate() {
        for (call_index, call) in step.tool_calls.iter().enumerate() {
            // A call to an unknown tool is a legitimate fault only when the scenario says so by
            // naming the rule for it.
            let exercises_unknown_tool = scenario.rules.iter().any(|rule| rule == UNKNOWN_TOOL_RULE);
            if !tool_names.contains(&call.name.as_str()) && !exercises_unknown_tool {
                return Err(at(
                    &format!("model[{step_index}].toolCalls[{call_index}].name"),
                    format!(
                        "the model calls tool `{}`, which no tool defines (name {UNKNOWN_TOOL_RULE} in `rules` to script an unknown-tool call)",
                        call.name
                    ),
                ));
            }
        }
        if step.chunks == Some(0) {
            return Err(at(&format!("model[{step_index}].chunks"), "chunks must be at least 1"));
        }
    }
    let operations = &scenario.operations;
    if operations.is_empty() {
        return Err(at("operations", "a scenario needs at least one operation"));
    }
    for (index, spec) in operations.iter().enumerate() {
        let needs_text = matches!(
            spec.op,
            OpKind::Prompt | OpKind::Steer | OpKind::FollowUp | OpKind::Mode | OpKind::Library
        );
        if needs_text && spec.text.is_none() {
            return Err(at(&format!("operations[{index}].text"), "this operation needs `text`"));
        }
        if !needs_text && spec.text.is_some() {
            return Err(at(
                &format!("operations[{index}].text"),
                "this operation takes no `text`",
            ));
        }
        if (spec.op == OpKind::Mode) != spec.mode.is_some() {
            return Err(at(
                &format!("operations[{index}].mode"),
                "`mode` is required for a mode operation and allowed nowhere else",
            ));
        }
        if let Some(after) = spec.after {
            check_after(after, index, scenario)
                .map_err(|message| at(&format!("operations[{index}].after"), message))?;
        }
    }
    for (index, fault) in scenario.faults.appends.iter().enumerate() {
        if fault.at == 0 {
            return Err(at(&format!("faults.appends[{index}].at"), "appends are counted from 1"));
        }
        match (fault.fault, fault.until) {
            (AppendFaultKind::Late, None) => {
                return Err(at(
                    &format!("faults.appends[{index}].until"),
                    "a late append needs `until`",
                ));
            }
            (AppendFaultKind::Late, Some(after)) => check_after(after, operations.len(), scenario)
                .map_err(|message| at(&format!("faults.appends[{index}].until"), message))?,
            (_, Some(_)) => {
                return Err(at(
                    &format!("faults.appends[{index}].until"),
                    "`until` belongs to a late append",
                ));
            }
            (_, None) => {}
        }
    }
    if let Some(settlements) = &scenario.expect.settlements {
        if settlements.len() != operations.len() {
            return Err(at(
                "expect.settlements",
                format!("{} settlements for {} operations", settlements.len(), operations.len()),
            ));
        }
        for (index, settlement) in settlements.iter().enumerate() {
            let valid = settlement == "resolved"
                || settlement == "pending"
                || settlement
                    .strip_prefix("resolved:")
                    .is_some_and(|reason| !reason.is_empty())
                || settlement
                    .strip_prefix("rejected:")
                    .is_some_and(|code| !code.is_empty());
            if !valid {
                return Err(at(
                    &format!("expect.settlements[{index}]"),
                    format!("`{settlement}`: expected resolved, resolved:<reason>, rejected:<code> or pending"),
                ));
            }
        }
    }
    Ok(())
}

/// The rule a scenario names when its model deliberately calls a tool nobody defines.
pub const UNKNOWN_TOOL_RULE: &str = "WIRE-7";

/// Rejects `after` conditions that can never hold for the operation at `index`.
fn check_after(after: After, index: usize, scenario: &Scenario) -> Result<(), String> {
    let model_steps = scenario.model.len() as u32;
    let tool_calls: u32 = scenario.model.iter().map(|step| step.tool_calls.len() as u32).sum();
    let chunks: u32 = scenario
        .model
        .iter()
        .map(|step| step.chunks.unwrap_or(1).saturating_sub(1))
        .sum();
    let hooks = tool_calls * 2 * scenario.extensions.len() as u32;
    let mode_ops = scenario
        .operations
        .iter()
        .filter(|spec| spec.op == OpKind::Mode)
        .count() as u32;
    let (count, limit, what) = match after {
        After::Settled(op) => {
            if op == 0 || op as usize > scenario.operations.len() {
                return Err(format!(
                    "operation {op} does not exist (operations are numbered from 1)"
                ));
            }
            if op as usize > index {
                return Err(format!(
                    "operation {} waits for operation {op} to settle, which is delivered only after it: this can never hold",
                    index + 1
                ));
            }
            return Ok(());
        }
        After::ModelRequests(count) => (count, model_steps, "model responses are scripted"),
        After::Chunks(count) => (count, chunks, "chunks are scripted"),
        After::ToolCalls(count) => (count, tool_calls, "tool calls are scripted"),
        After::Hooks(count) => (count, hooks, "hook calls are possible"),
        After::AppendsIssued(count) | After::AppendsAccepted(count) => {
            let prompts = scenario
                .operations
                .iter()
                .filter(|spec| spec.operation().is_prompt_like())
                .count() as u32;
            let messages = prompts + model_steps + tool_calls + scenario.operations.len() as u32;
            (count, messages, "messages can be appended")
        }
        After::Writes(count) => (count, mode_ops, "mode operations can write"),
    };
    if count == 0 {
        return Err("a count of 0 always holds; leave `after` out instead".into());
    }
    if count > limit {
        return Err(format!(
            "waits for {count}, but at most {limit} {what}: this can never hold"
        ));
    }
    Ok(())
}

/// Every `*.json` file below `root` (or `root` itself), sorted by path.
pub fn discover(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if root.is_file() {
        files.push(root.to_path_buf());
        return Ok(files);
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The test name of a scenario file: its path below `root`, without `.json`, with `/`.
pub fn name_of(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    let relative = if relative.as_os_str().is_empty() {
        path.file_name().map(Path::new).unwrap_or(path)
    } else {
        relative
    };
    let text = relative.with_extension("").to_string_lossy().replace('\\', "/");
    text.trim_start_matches("scenarios/").to_string()
}
