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
//! | scripted model responses | `model` | 1,000 |
//! | tool calls in one response | `model[i].toolCalls` | 1,000 |
//! | streamed chunks of one response | `model[i].chunks` | 1 to 1,000 |
//! | operations | `operations` | 1 to 1,000 |
//! | messages the model requests could carry in all: (model + operations) x (session + model + 2 x operations + tool calls + 1), each request carrying the whole context | `operations` | 2,000,000 |
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
//! The constants are in [`crate::limits`]. `after` counts are bounded by what the script can produce
//! (checked as before).

//!
//! The module's parts: [`schema`] (the serde types), [`fault`] (the fault plan's types),
//! [`load`] (reading and its errors), [`validate`] (what serde cannot check), [`discover`]
//! (files and test names), [`locate`] (JSON paths to lines). The limits are
//! [`crate::limits`].

mod discover;
mod fault;
mod load;
pub mod locate;
mod schema;
mod validate;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::model::{Resources, SessionEntry};

pub use crate::limits;
pub use discover::{discover, kind_of, name_of};
pub use fault::*;
pub use load::{clip_message, load, parse, printable, ScenarioError};
pub use schema::*;
pub use validate::UNKNOWN_TOOL_RULE;

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

/// A scenario with where it came from.
#[derive(Debug, Clone)]
pub struct LoadedScenario {
    pub path: PathBuf,
    /// The test name: the path below the corpus root without `.json`, e.g. `poison/disk-error`.
    pub name: String,
    pub scenario: Scenario,
}

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
