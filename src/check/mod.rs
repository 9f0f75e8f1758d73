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

/// `1 entry`, `3 entries`: a count with its noun in the right number.
pub(crate) fn counted(count: usize, singular: &str, plural: &str) -> String {
    if count == 1 {
        format!("1 {singular}")
    } else {
        format!("{count} {plural}")
    }
}

/// An entry's parent as a message names it: `` `old-assistant` ``, or no parent at all.
pub(crate) fn parent_name(parent: Option<&str>) -> String {
    match parent {
        Some(parent) => format!("`{parent}`"),
        None => "none (a root entry)".to_string(),
    }
}

/// `a user`, `an assistant`, `a toolResult`: a message role with its article.
pub(crate) fn a_role(role: &str) -> String {
    let article = if role.starts_with(['a', 'e', 'i', 'o']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {role}")
}

/// A checker: the violations of one rule in one run.
pub type Checker = fn(&Timeline<'_>) -> Vec<Violation>;

/// How much a rule binds an implementation (the A2A TCK's levels): a MUST rule is the commit
/// contract (what is stored, when the leaf moves, when a prompt resolves, poison, the queue,
/// dispose, and what the agent must never lose or leak); a SHOULD rule is one of the course's
/// own encodings and choices (exact texts, codes, the budget algorithm, the suffix-after-run
/// structure), which another implementation may make differently and stay correct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Must,
    Should,
}

impl Level {
    pub fn word(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        }
    }

    pub fn parse(text: &str) -> Option<Level> {
        match text.to_ascii_lowercase().as_str() {
            "must" => Some(Level::Must),
            "should" => Some(Level::Should),
            _ => None,
        }
    }
}

/// One rule of the catalogue.
#[derive(Clone, Copy)]
pub struct Rule {
    pub id: &'static str,
    /// The checker's path as conformance.md names it, e.g. `check::poison::poison_1`.
    pub checker_name: &'static str,
    pub checker: Checker,
    pub level: Level,
}

macro_rules! rules {
    ($($id:literal => $module:ident :: $function:ident, $level:ident),* $(,)?) => {
        &[$(Rule {
            id: $id,
            checker_name: concat!("check::", stringify!($module), "::", stringify!($function)),
            checker: $module::$function,
            level: Level::$level,
        }),*]
    };
}

/// The catalogue's rule with this ID.
pub fn rule(id: &str) -> Option<&'static Rule> {
    catalogue().iter().find(|rule| rule.id == id)
}

/// The level of a violation's rule; `None` for a scenario's own check (`expect`, a request
/// check of the scripted model), which binds no implementation but the reference.
pub fn level_of(rule_id: &str) -> Option<Level> {
    rule(rule_id).map(|rule| rule.level)
}

/// The catalogue, in conformance.md order.
pub fn catalogue() -> &'static [Rule] {
    rules![
        "RESTORE-1" => restore::restore_1, Must,
        "RESTORE-2" => restore::restore_2, Must,
        "RESTORE-3" => restore::restore_3, Must,
        "RESTORE-4" => restore::restore_4, Must,
        "RESTORE-5" => restore::restore_5, Must,
        "PATH-1" => restore::path_1, Should,
        "PATH-2" => restore::path_2, Should,
        "PATH-3" => restore::path_3, Should,
        "PATH-4" => restore::path_4, Should,
        "PROJECT-1" => project::project_1, Should,
        "PROJECT-2" => project::project_2, Should,
        "PROJECT-3" => project::project_3, Must,
        "PROJECT-4" => project::project_4, Must,
        "PROJECT-5" => project::project_5, Must,
        "PROJECT-6" => project::project_6, Must,
        "PROJECT-7" => project::project_7, Must,
        "CONTEXT-1" => context::context_1, Should,
        "CONTEXT-2" => context::context_2, Must,
        "CONTEXT-3" => context::context_3, Should,
        "WIRE-1" => wire::wire_1, Should,
        "WIRE-2" => wire::wire_2, Should,
        "WIRE-3" => wire::wire_3, Must,
        "WIRE-4" => wire::wire_4, Must,
        "WIRE-5" => wire::wire_5, Must,
        "WIRE-6" => wire::wire_6, Must,
        "WIRE-7" => wire::wire_7, Must,
        "WIRE-8" => wire::wire_8, Must,
        "PERSIST-1" => persist::persist_1, Must,
        "PERSIST-2" => persist::persist_2, Must,
        "PERSIST-3" => persist::persist_3, Must,
        "PERSIST-4" => persist::persist_4, Must,
        "PERSIST-5" => persist::persist_5, Must,
        "PERSIST-6" => persist::persist_6, Must,
        "PERSIST-7" => persist::persist_7, Should,
        "PERSIST-8" => persist::persist_8, Must,
        "QUEUE-1" => queue::queue_1, Must,
        "QUEUE-2" => queue::queue_2, Must,
        "POISON-1" => poison::poison_1, Must,
        "POISON-2" => poison::poison_2, Must,
        "POISON-3" => poison::poison_3, Must,
        "POISON-4" => poison::poison_4, Must,
        "POISON-5" => poison::poison_5, Must,
        "LIFE-1" => life::life_1, Must,
        "LIFE-2" => life::life_2, Must,
        "LIFE-3" => life::life_3, Must,
        "LIFE-4" => life::life_4, Must,
        "LIFE-5" => life::life_5, Must,
        "LIFE-6" => life::life_6, Must,
        "LIFE-7" => life::life_7, Must,
        "MODE-1" => mode::mode_1, Should,
        "MODE-2" => mode::mode_2, Must,
        "MODE-3" => mode::mode_3, Must,
        "MODE-4" => mode::mode_4, Must,
        "MODE-5" => mode::mode_5, Should,
        "MODE-6" => mode::mode_6, Must,
        "OBSERVE-1" => observe::observe_1, Must,
        "OBSERVE-2" => observe::observe_2, Must,
        "OBSERVE-3" => observe::observe_3, Must,
        "OBSERVE-4" => observe::observe_4, Must,
        "AGENT-1" => agent::agent_1, Must,
        "AGENT-2" => agent::agent_2, Must,
        "AGENT-3" => agent::agent_3, Must,
        "AGENT-4" => agent::agent_4, Must,
        "AGENT-5" => agent::agent_5, Must,
        "AGENT-6" => agent::agent_6, Must,
        "AGENT-7" => agent::agent_7, Must,
        "AGENT-8" => agent::agent_8, Must,
        "DURABLE-1" => durable::durable_1, Must,
        "DURABLE-2" => durable::durable_2, Must,
        "DURABLE-3" => durable::durable_3, Must,
        "DURABLE-4" => durable::durable_4, Must,
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

/// Which rules judge a run (`--rules AREA|ID,...`, `--level must|should`): every rule by
/// default. A scenario's own checks (`expect`, a request check of the scripted model) describe
/// the reference and judge only when every rule does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Rule IDs, `None` for all.
    rules: Option<std::collections::BTreeSet<&'static str>>,
    /// `--rules` as given (areas and IDs, normalized to upper case), for replay commands.
    spelled: Option<String>,
    level: Option<Level>,
}

impl Selection {
    /// Every rule.
    pub fn all() -> Selection {
        Selection::default()
    }

    /// `--rules`: comma-separated areas (`POISON`) or rule IDs (`PERSIST-6`).
    pub fn parse_rules(text: &str) -> Result<Selection, String> {
        let mut rules = std::collections::BTreeSet::new();
        for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let item_upper = item.to_ascii_uppercase();
            let matched: Vec<&'static str> = catalogue()
                .iter()
                .map(|rule| rule.id)
                .filter(|id| *id == item_upper || id.rsplit_once('-').is_some_and(|(area, _)| area == item_upper))
                .collect();
            if matched.is_empty() {
                let mut areas: Vec<&str> = catalogue()
                    .iter()
                    .filter_map(|rule| rule.id.rsplit_once('-').map(|(area, _)| area))
                    .collect();
                areas.dedup();
                return Err(format!(
                    "`{item}` is neither a rule ID (e.g. PERSIST-6) nor an area ({})",
                    areas.join(", ")
                ));
            }
            rules.extend(matched);
        }
        if rules.is_empty() {
            return Err("name at least one rule ID or area".into());
        }
        let spelled: Vec<String> = text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_ascii_uppercase)
            .collect();
        Ok(Selection {
            rules: Some(rules),
            spelled: Some(spelled.join(",")),
            level: None,
        })
    }

    /// This selection, narrowed to one level.
    pub fn with_level(mut self, level: Option<Level>) -> Selection {
        self.level = level;
        self
    }

    /// Every rule, every check.
    pub fn is_all(&self) -> bool {
        self.rules.is_none() && self.level.is_none()
    }

    /// Whether violations of `rule_id` (a rule ID or a scenario check) count.
    pub fn judges(&self, rule_id: &str) -> bool {
        match rule(rule_id) {
            Some(rule) => {
                self.rules.as_ref().is_none_or(|rules| rules.contains(rule.id))
                    && self.level.is_none_or(|level| rule.level == level)
            }
            None => self.is_all(),
        }
    }

    /// The catalogue's rules this selection judges.
    pub fn rules(&self) -> impl Iterator<Item = &'static Rule> + '_ {
        catalogue().iter().filter(|rule| self.judges(rule.id))
    }

    /// The flags that select the same rules (`--rules POISON --level must`); `None` for all.
    pub fn flags(&self) -> Option<String> {
        let mut words = Vec::new();
        if let Some(spelled) = &self.spelled {
            words.push(format!("--rules {spelled}"));
        }
        if let Some(level) = self.level {
            words.push(format!("--level {}", level.word().to_ascii_lowercase()));
        }
        (!words.is_empty()).then(|| words.join(" "))
    }

    /// For reports: `every rule`, or what was selected.
    pub fn describe(&self) -> String {
        if self.is_all() {
            return "every rule".into();
        }
        let count = self.rules().count();
        let level = self.level.map(|level| format!("{} ", level.word())).unwrap_or_default();
        format!(
            "{count} {level}rules ({})",
            self.rules().map(|rule| rule.id).collect::<Vec<_>>().join(", ")
        )
    }
}
