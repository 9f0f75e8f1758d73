//! The scenario file format: one JSON file is one test.
//!
//! A scenario is versioned (`"version": 1`) and strict: unknown fields are rejected, and every
//! problem is reported as a [`ScenarioError`] naming the file, the line and the field. This
//! module only reads and validates; running a scenario is `sim`'s business.
//!
//! # Strictness
//!
//! - A key may appear once per object, anywhere in the file (free-form values such as a tool's
//!   `parameters` included): a duplicate is an error at the line of its second occurrence.
//! - Unknown keys are errors everywhere but in the initial `session` entries, which are Pi's
//!   entry shape and gain fields across Pi versions. There a metadata entry (`custom`, `label`,
//!   `model_change`, ...) and a compaction keep every key they were read with, value for value
//!   and in order, so an unknown key is allowed and written back unchanged; a `message` entry
//!   keeps only the fields the kit models, so a key it would drop (at any depth) is an error
//!   rather than a silent loss.
//! - The file must be UTF-8; an invalid byte is reported at its line and column, with the
//!   field it sits in.
//! - A message quotes input cut after 80 characters, and every message is printed on one line
//!   with control characters escaped.
//!
//! # Limits
//!
//! Every count, size and time a scenario gives is checked when it is loaded, so that no number
//! can make the kit allocate or wait in proportion to it (a bad input, exit 2, naming the field):
//!
//! | what | field | limit |
//! |---|---|---|
//! | the file | - | 4 MiB (bounds every text and list) |
//! | initial entries | `session` | 10,000 |
//! | scripted model responses | `model` | 10,000 |
//! | tool calls in one response | `model[i].toolCalls` | 1,000 |
//! | streamed chunks of one response | `model[i].chunks` | 1 to 1,000 |
//! | operations | `operations` | 1 to 10,000 |
//! | extensions, observers, tools | `extensions`, `observers`, `tools` | 1,000 each |
//! | an observer's scripted answers | `observers[i].answers` | 100,000 |
//! | model requests per prompt | `config.maxSteps` | 1,000 |
//! | first id number | `config.ids.start` | 10^12 |
//! | clock start, clock step | `config.clock.startMs`, `stepMs` | 4,102,444,800,000 (2100-01-01), 86,400,000 (a day) |
//! | context budget | `config.context.total`, `reservedOutput`, `safetyMargin` | 10^12 tokens |
//! | the faulted append or write | `faults.appends[i].at`, `faults.writes[i].at` | 1,000,000 |
//! | message latency | `net.latencyMinMs`, `net.latencyMaxMs` | 1 to 60,000 ms |
//! | store and model timeouts | `net.storeTimeoutMs`, `net.modelTimeoutMs` | 1 to 3,600,000 ms |
//! | a net fault's start and length | `net.faults[i].atMs`, `delayMs`, `forMs` | 3,600,000 ms (simulated) |
//! | nesting | - | 128 levels (the JSON reader's limit) |
//!
//! The constants are in [`limits`]. `after` counts are bounded by what the script can produce
//! (checked as before).

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
    /// Extensions that observe agent events (`message_end`, `turn_end`, `agent_end`), each
    /// notification an effect the schedule completes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observers: Vec<ObserverScript>,
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
    /// A pinned schedule: the choice taken at each step (an index into the enabled choices,
    /// operations first, then pending effects oldest first; 0 after the list ends). Present,
    /// it replaces the canonical schedule of `run` and `replay` (`--strategy scripted`), as
    /// `explore --shrink-to` writes a failing interleaving down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Vec<usize>>,
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
    #[serde(default, deserialize_with = "strict_cause::optional")]
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
    #[serde(deserialize_with = "strict_cause::required")]
    pub error: Cause,
}

/// A fault's `error` read strictly: `code` and `message`, nothing else (`Cause` itself is the
/// runtime's and reads leniently).
mod strict_cause {
    use serde::{Deserialize, Deserializer};

    use crate::runtime::Cause;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct StrictCause {
        code: String,
        message: String,
    }

    pub fn required<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Cause, D::Error> {
        StrictCause::deserialize(deserializer).map(|cause| Cause::new(cause.code, cause.message))
    }

    pub fn optional<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Cause>, D::Error> {
        Option::<StrictCause>::deserialize(deserializer)
            .map(|cause| cause.map(|cause| Cause::new(cause.code, cause.message)))
    }
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

/// A scenario file that could not be used. Always names the file, line and field. Displayed,
/// it is one line: control characters in any part are escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {}: {}", printable(&file.display().to_string()), printable(field), printable(message))]
pub struct ScenarioError {
    pub file: PathBuf,
    pub line: usize,
    /// The JSON path of the field, e.g. `operations[2].after`; `-` for the whole file.
    pub field: String,
    pub message: String,
}

impl ScenarioError {
    /// An error with its message fit to print ([`clip_message`]).
    pub fn new(file: &Path, line: usize, field: impl Into<String>, message: impl AsRef<str>) -> ScenarioError {
        ScenarioError {
            file: file.to_path_buf(),
            line,
            field: field.into(),
            message: clip_message(message.as_ref()),
        }
    }

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
    let cannot_read = |message: String| ScenarioError::new(path, 0, "-", message);
    let file = std::fs::File::open(path).map_err(|error| cannot_read(format!("cannot read: {error}")))?;
    // Read at most one byte over the limit, so that a huge file is refused without being held.
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, limits::FILE_BYTES_MAX + 1), &mut bytes)
        .map_err(|error| cannot_read(format!("cannot read: {error}")))?;
    if bytes.len() as u64 > limits::FILE_BYTES_MAX {
        return Err(cannot_read(format!(
            "the file is over the limit of {} bytes for a scenario",
            limits::FILE_BYTES_MAX
        )));
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        Err(error) => {
            let valid = &bytes[..error.valid_up_to()];
            // The prefix is valid UTF-8 by construction.
            let prefix = std::str::from_utf8(valid).unwrap_or_default();
            let line = 1 + valid.iter().filter(|byte| **byte == b'\n').count();
            let line_start = valid.iter().rposition(|byte| *byte == b'\n').map_or(0, |at| at + 1);
            let column = prefix[line_start..].chars().count() + 1;
            let field = render_path(&locate::path_at_end(prefix));
            return Err(ScenarioError::new(
                path,
                line,
                if field.is_empty() { "-".to_string() } else { field },
                format!(
                    "not valid UTF-8 at column {column} (byte {} of the file)",
                    valid.len() + 1
                ),
            ));
        }
    };
    let scenario = parse(path, text, known_rules)?;
    Ok(LoadedScenario {
        path: path.to_path_buf(),
        name: name.to_string(),
        scenario,
    })
}

/// Parses and validates scenario text.
pub fn parse(file: &Path, text: &str, known_rules: &[&str]) -> Result<Scenario, ScenarioError> {
    // Duplicate keys first, anywhere in a well-formed text: serde would keep the last value of
    // a free-form object (or of a session entry) and report something else, or nothing.
    if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
        if let Some((path, line, key)) = locate::find_duplicate_key(text) {
            return Err(ScenarioError::new(
                file,
                line,
                render_path(&path),
                format!("duplicate key `{key}`: every key may appear once per object"),
            ));
        }
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let scenario: Scenario = match serde_path_to_error::deserialize(&mut deserializer) {
        Ok(scenario) => scenario,
        Err(error) => {
            let mut segments = segments_of(error.path());
            let unknown_position = error
                .path()
                .iter()
                .any(|segment| matches!(segment, serde_path_to_error::Segment::Unknown));
            let inner = error.into_inner();
            let mut message = strip_position(&inner.to_string());
            let mut line = inner.line();
            let field = if inner.is_syntax() || inner.is_eof() || unknown_position {
                "-".to_string()
            } else {
                // An entry's own reader names the field inside the object: `field `x`: ...`;
                // a missing or repeated field is named by serde in its message.
                for (prefix, keep_prefix) in [
                    ("field `", false),
                    ("missing field `", true),
                    ("duplicate field `", true),
                ] {
                    let Some(rest) = message.strip_prefix(prefix) else {
                        continue;
                    };
                    let split = if keep_prefix {
                        rest.split_once('`')
                    } else {
                        rest.split_once("`: ")
                    };
                    if let Some((name, problem)) = split {
                        segments.push(Segment::Key(name.to_string()));
                        if !keep_prefix {
                            message = problem.to_string();
                        }
                    }
                    break;
                }
                line = line.min(line_of(text, &segments));
                let field = render_path(&segments);
                if field.is_empty() {
                    "-".to_string()
                } else {
                    field
                }
            };
            return Err(ScenarioError::new(file, line, field, message));
        }
    };
    if let Err(problem) = deserializer.end() {
        return Err(ScenarioError::new(
            file,
            problem.line(),
            "-",
            strip_position(&problem.to_string()),
        ));
    }
    let problem = validate_limits(&scenario)
        .and_then(|()| validate(&scenario, known_rules))
        .and_then(|()| validate_session_keys(text));
    problem.map_err(|(path, message)| ScenarioError::new(file, line_of(text, &path), render_path(&path), message))?;
    Ok(scenario)
}

fn segments_of(path: &serde_path_to_error::Path) -> Vec<Segment> {
    path.iter()
        .filter_map(|segment| match segment {
            serde_path_to_error::Segment::Seq { index } => Some(Segment::Index(*index)),
            serde_path_to_error::Segment::Map { key } => Some(Segment::Key(key.clone())),
            serde_path_to_error::Segment::Enum { variant } => Some(Segment::Key(variant.clone())),
            serde_path_to_error::Segment::Unknown => None,
        })
        .collect()
}

fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// How many characters of quoted input (between backticks) a message keeps.
const QUOTED_CHARS_MAX: usize = 80;

/// How many characters a whole message keeps.
const MESSAGE_CHARS_MAX: usize = 1_000;

/// `text` with every control character escaped (`\n`, `\u{1b}`): printed, it stays on one line
/// and cannot repaint a terminal.
/// The operations and behaviours a scenario uses, by the names an adapter's `hello` declares
/// (`features`, `unsupported`): its operations' kinds, `chunks` for a streamed response,
/// `observers` for extension event observers. In first-use order, each once.
pub fn features_used(scenario: &Scenario) -> Vec<&'static str> {
    let mut used: Vec<&'static str> = Vec::new();
    let mut add = |name: &'static str| {
        if !used.contains(&name) {
            used.push(name);
        }
    };
    for spec in &scenario.operations {
        add(spec.operation().name());
    }
    if scenario.model.iter().any(|step| step.chunks.unwrap_or(1) > 1) {
        add("chunks");
    }
    if !scenario.observers.is_empty() {
        add("observers");
    }
    used
}

pub fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            c if c.is_control() => escaped.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => escaped.push(c),
        }
    }
    escaped
}

/// A message fit to print: quoted input (between backticks) cut after 80 characters, the
/// whole cut after 1,000, control characters escaped.
pub fn clip_message(message: &str) -> String {
    let mut clipped = String::new();
    for (index, piece) in message.split('`').enumerate() {
        if index > 0 {
            clipped.push('`');
        }
        if index % 2 == 1 && piece.chars().count() > QUOTED_CHARS_MAX {
            clipped.extend(piece.chars().take(QUOTED_CHARS_MAX));
            clipped.push('…');
        } else {
            clipped.push_str(piece);
        }
    }
    if clipped.chars().count() > MESSAGE_CHARS_MAX {
        clipped = clipped.chars().take(MESSAGE_CHARS_MAX).collect();
        clipped.push('…');
    }
    printable(&clipped)
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

/// The limits a scenario is checked against when it is loaded (bad input, exit 2, naming the
/// field). Every count, size and time a scenario gives is bounded here, so that no number in a
/// file can make the kit allocate or wait in proportion to it. The module documentation lists them.
pub mod limits {
    /// The largest scenario file, in bytes (4 MiB): bounds every text, list and nesting.
    pub const FILE_BYTES_MAX: u64 = 4 * 1024 * 1024;
    /// `session`: initial entries.
    pub const SESSION_ENTRIES_MAX: usize = 10_000;
    /// `model`: scripted responses.
    pub const MODEL_STEPS_MAX: usize = 10_000;
    /// `model[i].toolCalls`: calls in one response.
    pub const TOOL_CALLS_PER_STEP_MAX: usize = 1_000;
    /// `model[i].chunks`: streamed pieces of one response (one string each).
    pub const CHUNKS_MAX: u32 = 1_000;
    /// `operations`.
    pub const OPERATIONS_MAX: usize = 10_000;
    /// `extensions`, `observers`, `tools`.
    pub const EXTENSIONS_MAX: usize = 1_000;
    /// `observers[i].answers`.
    pub const OBSERVER_ANSWERS_MAX: usize = 100_000;
    pub const TOOLS_MAX: usize = 1_000;
    /// `config.maxSteps`: model requests per prompt.
    pub const STEPS_MAX: u32 = 1_000;
    /// `config.ids.start`.
    pub const IDS_START_MAX: u64 = 1_000_000_000_000;
    /// `config.clock.startMs` (2100-01-01T00:00:00Z) and `config.clock.stepMs` (one day).
    pub const CLOCK_START_MS_MAX: u64 = 4_102_444_800_000;
    pub const CLOCK_STEP_MS_MAX: u64 = 86_400_000;
    /// `config.context.total`, `reservedOutput`, `safetyMargin` (tokens).
    pub const CONTEXT_TOKENS_MAX: u64 = 1_000_000_000_000;
    /// `faults.appends[i].at`, `faults.writes[i].at`: the 1-based append or write counted.
    pub const FAULT_AT_MAX: u32 = 1_000_000;
    /// `net.latencyMinMs`, `net.latencyMaxMs`.
    pub const NET_LATENCY_MS_MAX: u64 = 60_000;
    /// `net.storeTimeoutMs`, `net.modelTimeoutMs`, and `atMs`, `delayMs`, `forMs` of a net
    /// fault: one hour of simulated time.
    pub const NET_TIME_MS_MAX: u64 = 3_600_000;
}

fn over(path: &str, value: impl std::fmt::Display, limit: impl std::fmt::Display) -> Problem {
    at(
        path,
        format!("{value} is over the limit of {limit} (see the scenario format's limits)"),
    )
}

fn check_count(path: &str, count: usize, limit: usize) -> Result<(), Problem> {
    if count > limit {
        return Err(at(
            path,
            format!("{count} items, over the limit of {limit} (see the scenario format's limits)"),
        ));
    }
    Ok(())
}

fn check_number<T: PartialOrd + std::fmt::Display>(path: &str, value: T, limit: T) -> Result<(), Problem> {
    if value > limit {
        return Err(over(path, value, limit));
    }
    Ok(())
}

/// Every count, size and time within [`limits`].
fn validate_limits(scenario: &Scenario) -> Result<(), Problem> {
    check_count("session", scenario.session.len(), limits::SESSION_ENTRIES_MAX)?;
    check_count("model", scenario.model.len(), limits::MODEL_STEPS_MAX)?;
    check_count("operations", scenario.operations.len(), limits::OPERATIONS_MAX)?;
    if let Some(schedule) = &scenario.schedule {
        check_count("schedule", schedule.len(), crate::sim::STEPS_MAX)?;
    }
    check_count("extensions", scenario.extensions.len(), limits::EXTENSIONS_MAX)?;
    check_count("observers", scenario.observers.len(), limits::EXTENSIONS_MAX)?;
    for (index, observer) in scenario.observers.iter().enumerate() {
        check_count(
            &format!("observers[{index}].answers"),
            observer.answers.len(),
            limits::OBSERVER_ANSWERS_MAX,
        )?;
        if observer.events.is_empty() {
            return Err(at(
                &format!("observers[{index}].events"),
                "an observer subscribes to at least one event (message_end, turn_end, agent_end)",
            ));
        }
        if scenario.observers[..index]
            .iter()
            .any(|other| other.name == observer.name)
        {
            return Err(at(
                &format!("observers[{index}].name"),
                format!("`{}` names two observers", observer.name),
            ));
        }
    }
    check_count("tools", scenario.tools.len(), limits::TOOLS_MAX)?;
    let config = &scenario.config;
    check_number("config.maxSteps", config.max_steps, limits::STEPS_MAX)?;
    check_number("config.ids.start", config.ids.start, limits::IDS_START_MAX)?;
    check_number(
        "config.clock.startMs",
        config.clock.start_ms,
        limits::CLOCK_START_MS_MAX,
    )?;
    check_number("config.clock.stepMs", config.clock.step_ms, limits::CLOCK_STEP_MS_MAX)?;
    check_number("config.context.total", config.context.total, limits::CONTEXT_TOKENS_MAX)?;
    check_number(
        "config.context.reservedOutput",
        config.context.reserved_output,
        limits::CONTEXT_TOKENS_MAX,
    )?;
    check_number(
        "config.context.safetyMargin",
        config.context.safety_margin,
        limits::CONTEXT_TOKENS_MAX,
    )?;
    for (index, step) in scenario.model.iter().enumerate() {
        check_count(
            &format!("model[{index}].toolCalls"),
            step.tool_calls.len(),
            limits::TOOL_CALLS_PER_STEP_MAX,
        )?;
        if let Some(chunks) = step.chunks {
            check_number(&format!("model[{index}].chunks"), chunks, limits::CHUNKS_MAX)?;
        }
    }
    for (index, fault) in scenario.faults.appends.iter().enumerate() {
        check_number(&format!("faults.appends[{index}].at"), fault.at, limits::FAULT_AT_MAX)?;
    }
    for (index, fault) in scenario.faults.writes.iter().enumerate() {
        check_number(&format!("faults.writes[{index}].at"), fault.at, limits::FAULT_AT_MAX)?;
    }
    if let Some(net) = &scenario.net {
        check_number("net.latencyMinMs", net.latency_min_ms, limits::NET_LATENCY_MS_MAX)?;
        check_number("net.latencyMaxMs", net.latency_max_ms, limits::NET_LATENCY_MS_MAX)?;
        check_number("net.storeTimeoutMs", net.store_timeout_ms, limits::NET_TIME_MS_MAX)?;
        check_number("net.modelTimeoutMs", net.model_timeout_ms, limits::NET_TIME_MS_MAX)?;
        for (index, fault) in net.faults.iter().enumerate() {
            let path = |field: &str| format!("net.faults[{index}].{field}");
            if let Some(at_ms) = fault.at_ms {
                check_number(&path("atMs"), at_ms, limits::NET_TIME_MS_MAX)?;
            }
            check_number(&path("delayMs"), fault.delay_ms, limits::NET_TIME_MS_MAX)?;
            if let Some(for_ms) = fault.for_ms {
                check_number(&path("forMs"), for_ms, limits::NET_TIME_MS_MAX)?;
            }
        }
    }
    Ok(())
}

/// Unknown keys in the initial session's entries. A metadata entry (`custom`, `label`, ...)
/// and a compaction keep every key they were read with, so Pi's future fields pass through
/// unchanged and are allowed. A message entry keeps only the fields the kit models: a key it
/// would drop on writing the entry back is refused, so that nothing in a scenario is lost
/// silently.
fn validate_session_keys(text: &str) -> Result<(), Problem> {
    let Ok(Value::Object(document)) = serde_json::from_str::<Value>(text) else {
        return Ok(());
    };
    let Some(Value::Array(entries)) = document.get("session") else {
        return Ok(());
    };
    for (index, raw) in entries.iter().enumerate() {
        let Value::Object(object) = raw else {
            continue;
        };
        let Ok(entry) = SessionEntry::from_object(object.clone()) else {
            continue;
        };
        let written = Value::Object(entry.to_object());
        let mut path = vec![Segment::Key("session".into()), Segment::Index(index)];
        if let Some(key) = first_dropped_key(raw, &written, &mut path) {
            return Err((
                path,
                format!(
                    "unknown key `{key}` in a `{}` entry: the kit would drop it (only metadata entries and compactions keep unknown keys)",
                    entry.kind()
                ),
            ));
        }
    }
    Ok(())
}

/// The first key of `raw` that `written` lacks, at any depth; `path` is extended to it.
fn first_dropped_key(raw: &Value, written: &Value, path: &mut Vec<Segment>) -> Option<String> {
    match (raw, written) {
        (Value::Object(raw), Value::Object(written)) => {
            for (key, value) in raw {
                path.push(Segment::Key(key.clone()));
                let Some(kept) = written.get(key) else {
                    return Some(key.clone());
                };
                if let Some(found) = first_dropped_key(value, kept, path) {
                    return Some(found);
                }
                path.pop();
            }
            None
        }
        (Value::Array(raw), Value::Array(written)) => {
            for (index, (value, kept)) in raw.iter().zip(written).enumerate() {
                path.push(Segment::Index(index));
                if let Some(found) = first_dropped_key(value, kept, path) {
                    return Some(found);
                }
                path.pop();
            }
            None
        }
        _ => None,
    }
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
    // Counted in u64: the limits keep every product well inside it.
    let model_steps = scenario.model.len() as u64;
    let tool_calls: u64 = scenario.model.iter().map(|step| step.tool_calls.len() as u64).sum();
    let chunks: u64 = scenario
        .model
        .iter()
        .map(|step| u64::from(step.chunks.unwrap_or(1).saturating_sub(1)))
        .sum();
    let hooks = tool_calls * 2 * scenario.extensions.len() as u64;
    let mode_ops = scenario
        .operations
        .iter()
        .filter(|spec| spec.op == OpKind::Mode)
        .count() as u64;
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
                .count() as u64;
            let messages = prompts + model_steps + tool_calls + scenario.operations.len() as u64;
            (count, messages, "messages can be appended")
        }
        After::Writes(count) => (count, mode_ops, "mode operations can write"),
    };
    if count == 0 {
        return Err("a count of 0 always holds; leave `after` out instead".into());
    }
    if u64::from(count) > limit {
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
