//! Checkers: one function per rule ID of conformance.md, over a run's trace and final store.
//!
//! Every checker runs on every trace, whatever the strategy; a rule whose premise does not
//! occur in a trace holds there. Checkers read only what every Subject shows (operations,
//! effects, answers, settlements), never the reference's internals, so the same catalogue
//! judges the reference and external implementations alike.

mod agent;
pub mod cause;
mod context;
mod durable;
pub mod expect;
mod ids;
mod life;
mod mode;
mod observe;
mod persist;
mod poison;
mod project;
mod queue;
mod restore;
pub mod situations;
pub mod timeline;
mod wire;

use crate::model::SessionEntry;
use crate::scenario::Scenario;
use crate::trace::Trace;

pub use ids::RULE_IDS;
pub use timeline::Timeline;

/// A rule broken by a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// A rule ID, or `expect` for a scenario's own expectations, or `model[N].expect` for a
    /// request check of the scripted model.
    pub rule: String,
    /// 1-based trace lines that show it.
    pub lines: Vec<usize>,
    pub message: String,
    /// The 1-based line where the violation became evident (the shortest prefix of the trace
    /// that breaks the rule; see [`cause`]); `None` until the run's violations are ordered.
    pub evident_at: Option<usize>,
}

impl Violation {
    pub fn new(rule: &str, lines: &[timeline::Line], message: impl Into<String>) -> Violation {
        Violation {
            rule: rule.to_string(),
            lines: lines.iter().map(|line| line + 1).collect(),
            message: message.into(),
            evident_at: None,
        }
    }
}

/// A checker: the violations of one rule in one run.
pub type Checker = fn(&Timeline<'_>) -> Vec<Violation>;

/// One rule of the catalogue.
#[derive(Clone, Copy)]
pub struct Rule {
    pub id: &'static str,
    /// The checker's path as conformance.md names it, e.g. `check::poison::poison_1`.
    pub checker_name: &'static str,
    pub checker: Checker,
}

macro_rules! rules {
    ($($id:literal => $module:ident :: $function:ident),* $(,)?) => {
        &[$(Rule {
            id: $id,
            checker_name: concat!("check::", stringify!($module), "::", stringify!($function)),
            checker: $module::$function,
        }),*]
    };
}

/// The catalogue, in conformance.md order.
pub fn catalogue() -> &'static [Rule] {
    rules![
        "RESTORE-1" => restore::restore_1,
        "RESTORE-2" => restore::restore_2,
        "RESTORE-3" => restore::restore_3,
        "RESTORE-4" => restore::restore_4,
        "RESTORE-5" => restore::restore_5,
        "PATH-1" => restore::path_1,
        "PATH-2" => restore::path_2,
        "PATH-3" => restore::path_3,
        "PATH-4" => restore::path_4,
        "PROJECT-1" => project::project_1,
        "PROJECT-2" => project::project_2,
        "PROJECT-3" => project::project_3,
        "PROJECT-4" => project::project_4,
        "PROJECT-5" => project::project_5,
        "PROJECT-6" => project::project_6,
        "PROJECT-7" => project::project_7,
        "CONTEXT-1" => context::context_1,
        "CONTEXT-2" => context::context_2,
        "CONTEXT-3" => context::context_3,
        "WIRE-1" => wire::wire_1,
        "WIRE-2" => wire::wire_2,
        "WIRE-3" => wire::wire_3,
        "WIRE-4" => wire::wire_4,
        "WIRE-5" => wire::wire_5,
        "WIRE-6" => wire::wire_6,
        "WIRE-7" => wire::wire_7,
        "WIRE-8" => wire::wire_8,
        "PERSIST-1" => persist::persist_1,
        "PERSIST-2" => persist::persist_2,
        "PERSIST-3" => persist::persist_3,
        "PERSIST-4" => persist::persist_4,
        "PERSIST-5" => persist::persist_5,
        "PERSIST-6" => persist::persist_6,
        "PERSIST-7" => persist::persist_7,
        "PERSIST-8" => persist::persist_8,
        "QUEUE-1" => queue::queue_1,
        "QUEUE-2" => queue::queue_2,
        "POISON-1" => poison::poison_1,
        "POISON-2" => poison::poison_2,
        "POISON-3" => poison::poison_3,
        "POISON-4" => poison::poison_4,
        "POISON-5" => poison::poison_5,
        "LIFE-1" => life::life_1,
        "LIFE-2" => life::life_2,
        "LIFE-3" => life::life_3,
        "LIFE-4" => life::life_4,
        "LIFE-5" => life::life_5,
        "LIFE-6" => life::life_6,
        "LIFE-7" => life::life_7,
        "MODE-1" => mode::mode_1,
        "MODE-2" => mode::mode_2,
        "MODE-3" => mode::mode_3,
        "MODE-4" => mode::mode_4,
        "MODE-5" => mode::mode_5,
        "MODE-6" => mode::mode_6,
        "OBSERVE-1" => observe::observe_1,
        "OBSERVE-2" => observe::observe_2,
        "OBSERVE-3" => observe::observe_3,
        "OBSERVE-4" => observe::observe_4,
        "AGENT-1" => agent::agent_1,
        "AGENT-2" => agent::agent_2,
        "AGENT-3" => agent::agent_3,
        "AGENT-4" => agent::agent_4,
        "AGENT-5" => agent::agent_5,
        "AGENT-6" => agent::agent_6,
        "AGENT-7" => agent::agent_7,
        "AGENT-8" => agent::agent_8,
        "DURABLE-1" => durable::durable_1,
        "DURABLE-2" => durable::durable_2,
        "DURABLE-3" => durable::durable_3,
        "DURABLE-4" => durable::durable_4,
    ]
}

/// Runs every rule's checker on one run; violations in catalogue order, then by line.
pub fn check_all(scenario: &Scenario, trace: &Trace, store: &[SessionEntry]) -> Vec<Violation> {
    let timeline = Timeline::new(scenario, trace, store);
    let mut violations = Vec::new();
    for rule in catalogue() {
        let mut found = (rule.checker)(&timeline);
        found.sort_by(|a, b| a.lines.cmp(&b.lines));
        violations.extend(found);
    }
    violations
}
