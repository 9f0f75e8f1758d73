//! Checkers: one function per rule ID of conformance.md, over a run's trace and final store.
//!
//! Every checker runs on every trace, whatever the strategy; a rule whose premise does not
//! occur in a trace holds there. Checkers read only what every Subject shows (operations,
//! effects, answers, settlements), never the reference's internals, so the same catalogue
//! judges the reference and external implementations alike.

mod agent;
mod carried;
pub mod cause;
mod context;
mod durable;
pub mod expect;
mod life;
mod mode;
mod observe;
pub mod pairs;
mod persist;
mod poison;
mod project;
mod queue;
pub mod reference;
mod restore;
pub mod settle;
pub mod situations;
pub mod timeline;
mod wiring;

use crate::model::{Message, SessionEntry};
use crate::scenario::Scenario;
use crate::trace::Trace;

pub use timeline::Timeline;

/// A rule broken by a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// A rule ID, or `expect` for a scenario's own expectations, or `model[N].expect` for a
    /// request check of the scripted model.
    pub rule: String,
    /// The clause of the rule the trace breaks (`OBSERVE-2.b`, one item of the rule's
    /// `Clauses:` in conformance.md); `None` for a scenario's own check (`expect`, a request
    /// check of the scripted model, `determinism`).
    pub clause: Option<&'static str>,
    /// 1-based trace lines that show it.
    pub lines: Vec<usize>,
    pub message: String,
    /// The 1-based line where the violation became evident (the shortest prefix of the trace
    /// that breaks the rule; see [`cause`]); `None` until the run's violations are ordered.
    pub evident_at: Option<usize>,
}

impl Violation {
    /// A violation of `id`: a clause of a rule (`OBSERVE-2.b`, whose rule is the part before
    /// the dot), a rule ID, or a scenario's own check (`expect`).
    pub fn new(id: &'static str, lines: &[timeline::Line], message: impl Into<String>) -> Violation {
        let (rule, clause) = match id.split_once('.') {
            Some((rule, _)) => (rule, Some(id)),
            None => (id, None),
        };
        // Every branch of a checker names the clause it decides (conformance.md's clauses).
        debug_assert!(
            clause.is_some() || self::rule(rule).is_none(),
            "a violation of {rule} names no clause"
        );
        Violation {
            rule: rule.to_string(),
            clause,
            lines: lines.iter().map(|line| line + 1).collect(),
            message: message.into(),
            evident_at: None,
        }
    }

    /// A violation of a check that is no catalogue rule, so it names no clause: a scenario's
    /// own check (`expect`, `model[N].expect` for a request check of the scripted model) or
    /// the kit's (`determinism`), shown at the 1-based trace `lines`.
    pub fn of_check(check: impl Into<String>, lines: Vec<usize>, message: impl Into<String>) -> Violation {
        let check = check.into();
        debug_assert!(
            self::rule(&check).is_none(),
            "{check} is a rule: its violations name a clause"
        );
        Violation {
            rule: check,
            clause: None,
            lines,
            message: message.into(),
            evident_at: None,
        }
    }

    /// What a report names: the clause it breaks (`OBSERVE-2.b`), or the id of a scenario's
    /// own check (`expect`). Grouping and expectations go by [`Violation::rule`].
    pub fn id(&self) -> &str {
        self.clause.unwrap_or(&self.rule)
    }
}

/// Whether `message` is a user message whose text is `text`; a plain text is compared in
/// place, without a copy.
pub(crate) fn is_user_text(message: &crate::model::Message, text: &str) -> bool {
    use crate::model::{Message, UserContent, UserMessage};
    match message {
        Message::User(UserMessage {
            content: UserContent::Text(own),
            ..
        }) => own == text,
        Message::User(_) => message.text() == text,
        _ => false,
    }
}

/// The text of a user message (`None` for the other roles), lent when it is one plain text.
pub(crate) fn user_text(message: &crate::model::Message) -> Option<std::borrow::Cow<'_, str>> {
    use crate::model::{Message, UserContent, UserMessage};
    match message {
        Message::User(UserMessage {
            content: UserContent::Text(own),
            ..
        }) => Some(std::borrow::Cow::Borrowed(own)),
        Message::User(_) => Some(std::borrow::Cow::Owned(message.text())),
        _ => None,
    }
}

/// A hash of what tells messages apart (role, timestamp, the length of each text, tool call
/// ids): equal messages have equal fingerprints, so a message is compared in full only with the
/// few of its own fingerprint. For finding repeats in a request in time linear in its length;
/// texts are counted by length only, so a long text is not read for it.
pub(crate) fn message_fingerprint(message: &crate::model::Message) -> u64 {
    use crate::model::{AssistantBlock, ContentBlock, Message, UserContent};
    let mut hash = Fingerprint(0);
    let add_blocks = |hash: &mut Fingerprint, blocks: &[ContentBlock]| {
        for block in blocks {
            match block {
                ContentBlock::Text { text } => hash.add(text.len() as u64),
                ContentBlock::Image { data, .. } => hash.add(!(data.len() as u64)),
            }
        }
    };
    match message {
        Message::User(user) => {
            hash.add(1);
            hash.add(user.timestamp);
            match &user.content {
                UserContent::Text(text) => hash.add(text.len() as u64),
                UserContent::Blocks(content) => add_blocks(&mut hash, content),
            }
        }
        Message::Assistant(assistant) => {
            hash.add(2);
            hash.add(assistant.timestamp);
            hash.add(assistant.stop_reason as u64);
            for block in &assistant.content {
                match block {
                    AssistantBlock::Text { text } => hash.add(text.len() as u64),
                    AssistantBlock::Thinking { thinking } => hash.add(!(thinking.len() as u64)),
                    AssistantBlock::ToolCall(call) => hash.add_bytes(call.id.as_bytes()),
                }
            }
        }
        Message::ToolResult(result) => {
            hash.add(3);
            hash.add(result.timestamp);
            hash.add(u64::from(result.is_error));
            hash.add_bytes(result.tool_call_id.as_bytes());
            add_blocks(&mut hash, &result.content);
        }
    }
    hash.0
}

/// Messages by their fingerprint (`check::message_fingerprint`): whether a list holds a message
/// is then a look-up and a comparison or two, not a walk of the list.
pub(crate) struct Fingerprinted<'m>(std::collections::HashMap<u64, Vec<&'m Message>>);

impl<'m> Fingerprinted<'m> {
    pub(crate) fn of(messages: impl IntoIterator<Item = &'m Message>) -> Fingerprinted<'m> {
        let mut by_fingerprint: std::collections::HashMap<u64, Vec<&'m Message>> = std::collections::HashMap::new();
        for message in messages {
            by_fingerprint
                .entry(message_fingerprint(message))
                .or_default()
                .push(message);
        }
        Fingerprinted(by_fingerprint)
    }

    pub(crate) fn contains(&self, message: &Message) -> bool {
        self.0
            .get(&message_fingerprint(message))
            .is_some_and(|same| same.contains(&message))
    }
}

/// FxHash's step (a rotate, a xor and a multiply per word): fast, and enough to spread the
/// fingerprints of the messages of one request.
struct Fingerprint(u64);

impl Fingerprint {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn add_bytes(&mut self, bytes: &[u8]) {
        self.add(bytes.len() as u64);
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
}

/// How many characters of a text a violation's message quotes, as many as the adapter
/// protocol's errors quote of a line: the longest texts the course writes (its error results)
/// are shown whole.
pub(crate) const QUOTED_CHARS_MAX: usize = 200;

/// `text` as a message quotes it (Rust's `{:?}`: in double quotes, escaped), cut after
/// [`QUOTED_CHARS_MAX`] characters with `…` and its length: a message stays short whatever the
/// input (a 3 MB system prompt, a runtime's whole write).
pub(crate) fn quoted(text: &str) -> String {
    let length = text.chars().count();
    if length <= QUOTED_CHARS_MAX {
        return format!("{text:?}");
    }
    let cut: String = text.chars().take(QUOTED_CHARS_MAX).collect();
    format!("{:?} ({length} characters)", format!("{cut}…"))
}

/// [`quoted`] of a text that may be absent, written as `{:?}` writes an `Option`.
pub(crate) fn quoted_option(text: Option<&str>) -> String {
    match text {
        Some(text) => format!("Some({})", quoted(text)),
        None => "None".to_string(),
    }
}

/// Texts as `{:?}` writes a list, each [`quoted`].
pub(crate) fn quoted_list<'t>(texts: impl IntoIterator<Item = &'t str>) -> String {
    let texts: Vec<String> = texts.into_iter().map(quoted).collect();
    format!("[{}]", texts.join(", "))
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

/// Whether `owned` and `lent` hold equal messages in the same order: a run's messages as a
/// subject reported them beside the messages the timeline lends from the trace.
pub(crate) fn same_messages(owned: &[Message], lent: &[&Message]) -> bool {
    owned.len() == lent.len() && owned.iter().zip(lent).all(|(owned, lent)| owned == *lent)
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
    /// The checker's path as conformance.md names it, e.g. `check::poison::failing_prompt_rejects_with_the_cause`.
    pub checker_name: &'static str,
    pub checker: Checker,
    pub level: Level,
}

/// The one list of the rules: it defines the catalogue and the list of IDs, so the two cannot
/// disagree.
macro_rules! rules {
    ($($id:literal => $module:ident :: $function:ident, $level:ident),* $(,)?) => {
        const CATALOGUE: &[Rule] = &[$(Rule {
            id: $id,
            checker_name: concat!("check::", stringify!($module), "::", stringify!($function)),
            checker: $module::$function,
            level: Level::$level,
        }),*];

        /// The rule IDs of conformance.md, in catalogue order.
        pub const RULE_IDS: &[&str] = &[$($id),*];
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
    CATALOGUE
}

rules! {
        "RESTORE-1" => restore::empty_session_null_leaf_restores_empty, Must,
        "RESTORE-2" => restore::empty_session_with_leaf_is_rejected, Must,
        "RESTORE-3" => restore::non_empty_session_needs_a_leaf, Must,
        "RESTORE-4" => restore::restores_exactly_the_chosen_path, Must,
        "RESTORE-5" => restore::restore_issues_no_effect, Must,
        "PATH-1" => restore::unknown_leaf_is_diagnosed, Should,
        "PATH-2" => restore::duplicate_id_is_diagnosed, Should,
        "PATH-3" => restore::missing_parent_is_diagnosed, Should,
        "PATH-4" => restore::cycle_is_diagnosed, Should,
        "PROJECT-1" => project::request_is_the_projection_of_path_and_suffix, Should,
        "PROJECT-2" => project::request_carries_the_merged_system_prompt, Should,
        "PROJECT-3" => project::temporary_entries_are_never_stored, Must,
        "PROJECT-4" => project::request_carries_the_registry_tools, Must,
        "PROJECT-5" => project::one_signal_per_run, Must,
        "PROJECT-6" => project::projection_never_fails_a_run, Must,
        "PROJECT-7" => project::persisted_count_in_range, Must,
        "CONTEXT-1" => context::fixed_costs_first_and_budget_used, Should,
        "CONTEXT-2" => context::tool_call_never_split_from_result, Must,
        "CONTEXT-3" => context::compaction_is_respected, Should,
        "WIRE-1" => wiring::configured_prompt_then_resources, Should,
        "WIRE-2" => wiring::empty_catalog_adds_no_header, Should,
        "WIRE-3" => wiring::inactive_skill_body_never_sent, Must,
        "WIRE-4" => wiring::hooks_wrap_the_core_executor, Must,
        "WIRE-5" => wiring::denied_call_does_not_run, Must,
        "WIRE-6" => wiring::rewritten_arguments_reach_the_executor, Must,
        "WIRE-7" => wiring::unknown_tool_or_bad_arguments_never_run, Must,
        "WIRE-8" => wiring::after_hook_decides_the_result, Must,
        "WIRE-9" => wiring::error_results_carry_the_course_texts, Should,
        "PERSIST-1" => persist::only_the_new_suffix_is_appended, Must,
        "PERSIST-2" => persist::entries_form_a_parent_chain, Must,
        "PERSIST-3" => persist::one_append_at_a_time, Must,
        "PERSIST-4" => persist::entry_ids_come_from_create_id, Must,
        "PERSIST-5" => persist::leaf_advances_only_after_acceptance, Must,
        "PERSIST-6" => persist::prompt_resolves_after_its_last_append, Must,
        "PERSIST-7" => persist::appends_start_after_the_run, Should,
        "PERSIST-8" => persist::entry_timestamps_come_from_now, Must,
        "PERSIST-9" => persist::stored_session_is_sound, Must,
        "PERSIST-10" => persist::leaf_names_only_accepted_entries, Must,
        "QUEUE-1" => queue::prompts_run_one_at_a_time_in_order, Must,
        "QUEUE-2" => queue::each_run_appends_its_own_messages, Must,
        "POISON-1" => poison::failing_prompt_rejects_with_the_cause, Must,
        "POISON-2" => poison::nothing_runs_after_a_failed_append, Must,
        "POISON-3" => poison::queued_prompts_reject_with_the_cause, Must,
        "POISON-4" => poison::later_calls_reject_with_the_cause, Must,
        "POISON-5" => poison::stored_tree_stays_valid, Must,
        "LIFE-1" => life::flush_waits_for_accepted_work, Must,
        "LIFE-2" => life::flush_creates_no_work, Must,
        "LIFE-3" => life::flush_reports_poison, Must,
        "LIFE-4" => life::dispose_closes_the_entry_at_once, Must,
        "LIFE-5" => life::dispose_waits_for_accepted_work, Must,
        "LIFE-6" => life::repeated_dispose_same_outcome, Must,
        "LIFE-7" => life::every_operation_settles, Must,
        "MODE-1" => mode::modes_encode_the_result, Should,
        "MODE-2" => mode::mode_prompts_and_writes_once, Must,
        "MODE-3" => mode::unknown_mode_fails_before_prompt, Must,
        "MODE-4" => mode::output_error_returned_unchanged, Must,
        "MODE-5" => mode::library_returns_reason_and_text, Should,
        "MODE-6" => mode::mode_settles_after_its_write, Must,
        "OBSERVE-1" => observe::observers_see_what_is_stored, Must,
        "OBSERVE-2" => observe::every_run_end_told_once, Must,
        "OBSERVE-3" => observe::observer_failure_is_contained, Must,
        "OBSERVE-4" => observe::nothing_waits_for_an_observer, Must,
        "AGENT-1" => agent::runs_bounded_by_max_steps, Must,
        "AGENT-2" => agent::steer_joins_the_next_request, Must,
        "AGENT-3" => agent::follow_up_continues_the_run, Must,
        "AGENT-4" => agent::aborted_run_stops, Must,
        "AGENT-5" => agent::tool_calls_run_in_order_once, Must,
        "AGENT-6" => agent::error_stop_reason_ends_the_run, Must,
        "AGENT-7" => agent::control_calls_settle_at_once, Should,
        "AGENT-8" => agent::abort_fires_the_run_signal, Must,
        "DURABLE-1" => durable::acknowledged_entries_survive, Must,
        "DURABLE-2" => durable::nothing_below_an_unknown_fate, Must,
        "DURABLE-3" => durable::reopened_session_is_the_acknowledged_one, Must,
        "DURABLE-4" => durable::torn_tail_is_cut_off, Must,
        "SETTLE-1" => settle::settlement_is_allowed, Must,
        "SETTLE-2" => settle::settled_in_time, Must,
        "REF-1" => reference::same_outputs_as_the_reference_on_the_same_inputs, Must,
}

/// The rules whose premise is the subject's state probe (`hello.probes`: `state`): a subject
/// that does not probe is not judged by them, and a report counts them neither held nor broken.
pub const PROBED_RULES: &[&str] = &["PERSIST-10"];

/// The rule the whole-trace oracle's difference breaks when no other rule does.
pub const REFERENCE_RULE: &str = "REF-1";

/// Runs every rule's checker on one run; violations in catalogue order, then by line.
pub fn check_all(scenario: &Scenario, trace: &Trace, store: &[&SessionEntry]) -> Vec<Violation> {
    check_timeline(&Timeline::new(scenario, trace, store))
}

/// [`check_all`] on a run's timeline already derived, which exploration shares with its
/// coverage count (what the checkers derive lazily is then derived once for both).
pub fn check_timeline(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for rule in catalogue() {
        let mut found = (rule.checker)(timeline);
        if !found.is_empty() {
            found.sort_by(|a, b| a.lines.cmp(&b.lines));
            violations.append(&mut found);
        }
    }
    // A difference from the reference is a verdict only where no other rule explains it.
    if violations.iter().any(|violation| violation.rule != REFERENCE_RULE) {
        violations.retain(|violation| violation.rule != REFERENCE_RULE);
    }
    violations
}

/// The rule situations and the interleaving pairs one run reached, as indexes into
/// [`situations::situations`] and [`pairs::pairs`]: what exploration counts for coverage and
/// the guided search feeds on, derived once per run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reached {
    pub situations: Vec<usize>,
    pub pairs: Vec<usize>,
}

impl Reached {
    pub fn of(timeline: &Timeline<'_>) -> Reached {
        Reached {
            situations: situations::reached(timeline),
            pairs: pairs::reached(timeline),
        }
    }
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
