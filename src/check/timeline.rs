//! The facts every checker reads, derived once from a trace: operations with their delivery and
//! settlement, and every effect with its answer, attributed to the operation whose run issued it.
//!
//! Attribution (conformance.md): every effect belongs to the earliest delivered prompt-like
//! operation whose run has not finished (settled or, for a mode, written) when it is issued.
//! Runs are serial in a conforming runtime, so this is exact there; an implementation that
//! overlaps runs is caught by QUEUE-1 and PROJECT-5, which look at signals.
//!
//! The facts and what the checkers ask of them are here; deriving them from the events, in one
//! pass, is `derive.rs`.

mod derive;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::BTreeMap;

use crate::model::{
    path_to_borrowed, AssistantMessage, Message, Operation, PathError, Projection, SessionEntry, ToolCall,
    ToolResultMessage, ToolSpec,
};
use crate::runtime::{
    Cause, EffectId, HookOutcome, HookPhase, NotifyOutcome, ObservedEvent, OpId, Settlement, SignalId, ToolOutcome,
};
use crate::scenario::Scenario;
use crate::trace::{AppendAnswer, Event};

/// 0-based index into the trace's events; rendered 1-based.
pub type Line = usize;

/// The kinds of effect a runtime issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EffectKind {
    Request,
    Tool,
    Hook,
    Append,
    Write,
    Notify,
}

#[derive(Debug, Clone)]
pub struct OpInfo<'a> {
    pub op: OpId,
    pub operation: &'a Operation,
    pub delivered: Line,
    pub settled: Option<(Line, &'a Settlement)>,
    /// When the operation's run finished: settled, or (for a mode) its write was issued.
    pub run_finished: Option<Line>,
    pub signal: Option<SignalId>,
}

impl<'a> OpInfo<'a> {
    pub fn is_prompt_like(&self) -> bool {
        self.operation.is_prompt_like()
    }

    pub fn rejected_cause(&self) -> Option<&'a Cause> {
        match self.settled {
            Some((_, Settlement::Rejected(cause))) => Some(cause),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RequestInfo<'a> {
    pub line: Line,
    pub effect: EffectId,
    pub signal: SignalId,
    pub system_prompt: Option<&'a str>,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub op: Option<OpId>,
    pub response: Option<(Line, &'a AssistantMessage)>,
}

#[derive(Debug, Clone)]
pub struct ToolCallInfo<'a> {
    pub line: Line,
    pub effect: EffectId,
    pub signal: SignalId,
    pub call: &'a ToolCall,
    pub op: Option<OpId>,
    pub answer: Option<(Line, &'a ToolOutcome)>,
}

#[derive(Debug, Clone)]
pub struct HookInfo<'a> {
    pub line: Line,
    pub effect: EffectId,
    pub extension: &'a str,
    pub phase: HookPhase,
    pub call: &'a ToolCall,
    pub result: Option<&'a ToolResultMessage>,
    pub op: Option<OpId>,
    pub answer: Option<(Line, &'a HookOutcome)>,
}

#[derive(Debug, Clone)]
pub struct AppendInfo<'a> {
    pub line: Line,
    pub effect: EffectId,
    pub entry: &'a SessionEntry,
    pub op: Option<OpId>,
    pub answer: Option<(Line, &'a AppendAnswer)>,
}

impl<'a> AppendInfo<'a> {
    pub fn accepted_before(&self, line: Line) -> bool {
        matches!(self.answer, Some((at, AppendAnswer::Ok)) if at < line)
    }

    pub fn failed(&self) -> Option<(Line, &'a Cause)> {
        match self.answer {
            Some((at, answer)) => answer.cause().map(|cause| (at, cause)),
            None => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct WriteInfo<'a> {
    pub line: Line,
    pub effect: EffectId,
    pub text: &'a str,
    pub op: Option<OpId>,
    /// `None` while unanswered; `Some(None)` written; `Some(Some(cause))` failed.
    pub answer: Option<(Line, Option<&'a Cause>)>,
}

/// The derived view of one run.
/// An observer's notification and its answer.
#[derive(Debug, Clone)]
pub struct NotifyInfo<'a> {
    pub line: Line,
    pub effect: EffectId,
    pub observer: &'a str,
    pub event: &'a ObservedEvent,
    pub op: Option<OpId>,
    pub answer: Option<(Line, &'a NotifyOutcome)>,
}

pub struct Timeline<'a> {
    pub scenario: &'a Scenario,
    pub events: &'a [Event],
    /// The store at the end of the run.
    pub store: &'a [&'a SessionEntry],
    pub restored: Option<(Line, Option<&'a str>, usize)>,
    /// Whether the subject probed its state (`Event::Restored::probed`): PERSIST-10's premise.
    pub probed: bool,
    /// Every change of the subject's probed state: its line, leaf and persisted count.
    pub states: Vec<(Line, Option<&'a str>, u64)>,
    pub restore_failed: Option<(Line, &'a Cause)>,
    pub ops: Vec<OpInfo<'a>>,
    pub requests: Vec<RequestInfo<'a>>,
    pub tool_calls: Vec<ToolCallInfo<'a>>,
    pub hooks: Vec<HookInfo<'a>>,
    pub appends: Vec<AppendInfo<'a>>,
    pub writes: Vec<WriteInfo<'a>>,
    pub notifications: Vec<NotifyInfo<'a>>,
    pub aborts: Vec<(Line, SignalId)>,
    pub end: Option<(Line, &'a [EffectId])>,
    /// The chosen path of the initial session, when it exists, lent from the scenario.
    pub initial_path: Option<Vec<&'a SessionEntry>>,
    /// Why the configured leaf has no path in the initial session (`None` when it has one, or
    /// when no leaf is configured).
    pub leaf_path_error: Option<PathError>,
    /// Where each operation's first delivery is in `ops`: a checker asks for an operation's
    /// facts once per request or append, which a walk of `ops` would make quadratic.
    op_positions: BTreeMap<OpId, usize>,
    /// The first difference from the reference fed the same inputs, when the runner computed
    /// it (REF-1, [`super::reference`]).
    reference: Option<super::reference::ReferenceDifference>,
    /// What several checkers derive from the same facts, derived once on first use.
    shared: Shared<'a>,
}

/// Facts derived from the timeline on first use and shared by the checkers that read them.
/// They lend from the trace and the scenario rather than copy: a checked run must cost little
/// more than the run itself.
#[derive(Default)]
struct Shared<'a> {
    /// The merged system prompt every request must carry: lent from the first request when
    /// it carries it, else built.
    system_prompt: OnceCell<Option<Cow<'a, str>>>,
    /// For each request, in order, the messages it must carry when the trace fixes them
    /// (`check::project::expected_request_messages`).
    request_messages: OnceCell<Vec<Option<Projection<'a>>>>,
    /// The registry's tool specs, in registration order.
    registry_tools: OnceCell<Vec<ToolSpec>>,
    /// For each operation with requests, in the order of its first request, its requests.
    requests_by_op: OnceCell<ByOp<RequestInfo<'a>>>,
    /// For each operation with appends, in the order of its first append, its appends.
    appends_by_op: OnceCell<ByOp<AppendInfo<'a>>>,
    /// For each operation with appended messages, in the order of its first, the messages.
    appended_messages: OnceCell<ByOp<&'a Message>>,
    /// The appends the store accepted, in the order of its answers (`accepted`).
    accepted: OnceCell<Accepted<'a>>,
    /// Every tool call's story (`call_stories`).
    call_stories: OnceCell<Vec<CallStory<'a>>>,
    /// The run of each request, told by what it carries (`run_of_request`).
    runs_of_requests: OnceCell<Vec<Option<OpId>>>,
}

/// The appends answered `ok`, in the order of their answers, and the messages of the longest
/// first part of them that forms one chain from the restored leaf: what the store held at any
/// line is a prefix of them, found by a binary search instead of a walk of every append.
struct Accepted<'a> {
    /// Each accepted append's answer line and its index in [`Timeline::appends`].
    in_answer_order: Vec<(Line, usize)>,
    /// The entries of the first accepted appends that form one chain of message entries from
    /// the restored leaf, and their messages.
    chain_entries: Vec<&'a SessionEntry>,
    chain: Vec<&'a Message>,
    /// How many of the first accepted appends hold ids unique among them and the session's.
    unique_ids: usize,
}

/// Everything that happened to one tool call of one operation, in trace order: its hooks and
/// its runs of the core executor, as indexes into [`Timeline::hooks`] and
/// [`Timeline::tool_calls`].
#[derive(Debug, Clone)]
pub struct CallStory<'a> {
    pub op: Option<OpId>,
    pub call_id: &'a str,
    pub hooks: Vec<usize>,
    pub core: Vec<usize>,
}
impl<'a> Timeline<'a> {
    pub fn op(&self, op: OpId) -> Option<&OpInfo<'a>> {
        self.ops.get(*self.op_positions.get(&op)?)
    }

    fn op_mut(&mut self, op: OpId) -> Option<&mut OpInfo<'a>> {
        self.ops.get_mut(*self.op_positions.get(&op)?)
    }

    /// The appends attributed to `op`, in order (grouped once for every operation: a dozen
    /// checkers ask, some once per operation).
    pub fn appends_of(&self, op: OpId) -> &[AppendInfo<'a>] {
        of_op(
            self.shared
                .appends_by_op
                .get_or_init(|| by_op(&self.appends, |append| Some((append.op?, append.clone())))),
            op,
        )
    }

    /// The messages `op` appended, in order (derived once for every operation).
    pub fn appended_messages(&self, op: OpId) -> &[&'a Message] {
        of_op(
            self.shared
                .appended_messages
                .get_or_init(|| by_op(&self.appends, |append| Some((append.op?, append.entry.as_message()?)))),
            op,
        )
    }

    /// The specs of the scenario's tools, in registration order: what every request carries
    /// (derived once).
    pub fn registry_tools(&self) -> &[ToolSpec] {
        self.shared
            .registry_tools
            .get_or_init(|| self.scenario.tools.iter().map(|tool| tool.spec()).collect())
    }

    /// The merged system prompt every request must carry (derived once). When the first
    /// request carries exactly that text (compared piece by piece), it is lent from the trace
    /// rather than merged again.
    pub fn expected_system_prompt(&self) -> Option<&str> {
        self.shared
            .system_prompt
            .get_or_init(|| {
                let configured = self.scenario.config.system_prompt.as_deref();
                let resources = &self.scenario.resources;
                match self.requests.first() {
                    Some(first)
                        if crate::model::is_merged_system_prompt(first.system_prompt, configured, resources) =>
                    {
                        first.system_prompt.map(Cow::Borrowed)
                    }
                    _ => crate::model::merge_system_prompt(configured, resources).map(Cow::Owned),
                }
            })
            .as_deref()
    }

    /// The messages the request at `index` of `requests` must carry, when the trace fixes
    /// them, derived once for every request by `derive_one`.
    pub(crate) fn request_messages(
        &self,
        index: usize,
        derive_one: fn(&Timeline<'a>, &RequestInfo<'a>) -> Option<Projection<'a>>,
    ) -> Option<&Projection<'a>> {
        self.shared
            .request_messages
            .get_or_init(|| self.requests.iter().map(|request| derive_one(self, request)).collect())
            .get(index)?
            .as_ref()
    }

    pub fn requests_of(&self, op: OpId) -> &[RequestInfo<'a>] {
        of_op(
            self.shared
                .requests_by_op
                .get_or_init(|| by_op(&self.requests, |request| Some((request.op?, request.clone())))),
            op,
        )
    }

    /// Whether every append of `op` was accepted before `line`, and there was at least one.
    pub fn all_appends_accepted_before(&self, op: OpId, line: Line) -> bool {
        let appends = self.appends_of(op);
        !appends.is_empty() && appends.iter().all(|append| append.accepted_before(line))
    }

    /// The first input of the world (a delivery or an answer) after `line`: where the step that
    /// `line` belongs to ends, the runtime having been quiescent since its last output.
    pub fn next_input_after(&self, line: Line) -> Option<Line> {
        let from = line + 1;
        (self.events.get(from..)?.iter())
            .position(Event::is_input)
            .map(|offset| from + offset)
    }

    /// Every effect attributed to `op`'s run: its kind, the line it was issued on and the line
    /// of its answer, if any.
    pub fn effects_of(&self, op: OpId) -> impl Iterator<Item = (EffectKind, Line, Option<Line>)> + '_ {
        let mine = move |owner: Option<OpId>| owner == Some(op);
        (self.requests.iter().filter(move |e| mine(e.op)))
            .map(move |e| (EffectKind::Request, e.line, e.response.map(|(line, _)| line)))
            .chain(
                (self.tool_calls.iter().filter(move |e| mine(e.op)))
                    .map(|e| (EffectKind::Tool, e.line, e.answer.map(|(line, _)| line))),
            )
            .chain(
                (self.hooks.iter().filter(move |e| mine(e.op)))
                    .map(|e| (EffectKind::Hook, e.line, e.answer.map(|(line, _)| line))),
            )
            .chain(
                (self.appends.iter().filter(move |e| mine(e.op)))
                    .map(|e| (EffectKind::Append, e.line, e.answer.map(|(line, _)| line))),
            )
            .chain(
                (self.writes.iter().filter(move |e| mine(e.op)))
                    .map(|e| (EffectKind::Write, e.line, e.answer.map(|(line, _)| line))),
            )
            .chain(
                (self.notifications.iter().filter(move |e| mine(e.op)))
                    .map(|e| (EffectKind::Notify, e.line, e.answer.map(|(line, _)| line))),
            )
    }

    /// The first failed append: its answer line, cause and the append.
    pub fn first_failure(&self) -> Option<(Line, &'a Cause, &AppendInfo<'a>)> {
        self.appends
            .iter()
            .filter_map(|append| append.failed().map(|(line, cause)| (line, cause, append)))
            .min_by_key(|(line, _, _)| *line)
    }

    /// The appends the store accepted, in answer order, with the chain they form (derived once).
    fn accepted(&self) -> &Accepted<'a> {
        self.shared.accepted.get_or_init(|| {
            let mut in_answer_order: Vec<(Line, usize)> = self
                .appends
                .iter()
                .enumerate()
                .filter_map(|(index, append)| match append.answer {
                    Some((at, AppendAnswer::Ok)) => Some((at, index)),
                    _ => None,
                })
                .collect();
            in_answer_order.sort_by_key(|(at, _)| *at);
            let mut leaf = self.scenario.config.active_leaf_id.as_deref();
            let mut chain_entries = Vec::with_capacity(in_answer_order.len());
            let mut chain = Vec::with_capacity(in_answer_order.len());
            for (_, index) in &in_answer_order {
                let entry = self.appends[*index].entry;
                let Some(message) = entry.as_message().filter(|_| entry.parent_id.as_deref() == leaf) else {
                    break;
                };
                leaf = Some(entry.id.as_str());
                chain_entries.push(entry);
                chain.push(message);
            }
            let mut ids: std::collections::HashSet<&str> =
                self.scenario.session.iter().map(|entry| entry.id.as_str()).collect();
            let unique_ids = in_answer_order
                .iter()
                .take_while(|(_, index)| ids.insert(self.appends[*index].entry.id.as_str()))
                .count();
            Accepted {
                in_answer_order,
                chain_entries,
                chain,
                unique_ids,
            }
        })
    }

    /// How many appends the store had accepted before `line`: a prefix of
    /// [`Accepted::in_answer_order`].
    fn accepted_count_before(&self, line: Line) -> usize {
        self.accepted().in_answer_order.partition_point(|(at, _)| *at < line)
    }

    /// The leaf the runtime should hold at `line`: the last append accepted before it, else
    /// the restored leaf.
    pub fn leaf_at(&self, line: Line) -> Option<&'a str> {
        let accepted = self.accepted_count_before(line);
        match accepted.checked_sub(1) {
            Some(last) => Some(self.appends[self.accepted().in_answer_order[last].1].entry.id.as_str()),
            None => self.scenario.config.active_leaf_id.as_deref(),
        }
    }

    /// The active path at `line`: the tree of the session plus accepted appends, walked from
    /// `leaf_at(line)`; `None` when the initial path did not exist. Lent from the scenario and
    /// the trace.
    pub fn active_path_at(&self, line: Line) -> Option<Cow<'_, [&'a SessionEntry]>> {
        let initial = self.initial_path.as_ref()?;
        let count = self.accepted_count_before(line);
        if count == 0 {
            return Some(Cow::Borrowed(initial));
        }
        // Accepted appends that form one chain from the restored leaf, their ids unique (as in
        // every conforming run), extend the initial path: what the walk below would find, at
        // the cost of the path rather than of sorting every entry again for each line.
        let accepted = self.accepted();
        if count <= accepted.chain.len() && count <= accepted.unique_ids {
            let mut path = initial.clone();
            path.extend_from_slice(&accepted.chain_entries[..count]);
            return Some(Cow::Owned(path));
        }
        let accepted: Vec<&'a SessionEntry> = self
            .appends
            .iter()
            .filter(|append| append.accepted_before(line))
            .map(|append| append.entry)
            .collect();
        let entries = self.scenario.session.iter().chain(accepted.iter().copied());
        match self.leaf_at(line) {
            Some(leaf) => path_to_borrowed(entries, leaf).ok().or_else(|| {
                let mut path = initial.clone();
                path.extend(accepted);
                Some(path)
            }),
            None => Some(Vec::new()),
        }
        .map(Cow::Owned)
    }

    /// Whether the session or an append holds a compaction: when neither does, no active path
    /// holds one, and nothing needs to walk a path to find one.
    pub fn has_compaction(&self) -> bool {
        let compaction = |entry: &SessionEntry| matches!(entry.body, crate::model::EntryBody::Compaction(_));
        self.scenario.session.iter().any(compaction) || self.appends.iter().any(|append| compaction(append.entry))
    }

    /// The messages of the appends accepted before `line`, in acceptance order, when they form
    /// one chain from the restored leaf (as in every conforming run); `None` otherwise.
    pub fn accepted_chain_before(&self, line: Line) -> Option<&[&'a Message]> {
        let accepted = self.accepted_count_before(line);
        self.accepted().chain.get(..accepted)
    }

    /// The reason `op`'s run ended with, as the trace shows it: `aborted` when its signal fired;
    /// else its last response's stop reason, `max_steps` when the last of `maxSteps` requests
    /// still asked for tools. `None` when the run made no request or its last is unanswered.
    pub fn run_reason_of(&self, op: OpId) -> Option<crate::runtime::RunReason> {
        use crate::model::StopReason;
        use crate::runtime::RunReason;
        let info = self.op(op)?;
        if let Some(signal) = info.signal {
            if self.aborts.iter().any(|(_, fired)| *fired == signal) {
                return Some(RunReason::Aborted);
            }
        }
        let requests = self.requests_of(op);
        let (_, last) = requests.last()?.response?;
        Some(match last.stop_reason {
            StopReason::Error => RunReason::Error,
            StopReason::Aborted => RunReason::Aborted,
            StopReason::Length if last.tool_calls().is_empty() => RunReason::Length,
            _ if !last.tool_calls().is_empty() => {
                if requests.len() >= self.scenario.config.max_steps.max(1) as usize {
                    RunReason::MaxSteps
                } else {
                    return None;
                }
            }
            // At the step bound, a pending steer or follow-up makes the run end `max_steps`
            // rather than `stop`; the trace does not always show which.
            _ if requests.len() >= self.scenario.config.max_steps.max(1) as usize => return None,
            _ => RunReason::Stop,
        })
    }

    /// The transcript at `line`: the restored path's messages, then every message accepted
    /// before it; `None` when the accepted appends do not form one chain.
    pub fn transcript_at(&self, line: Line) -> Option<Vec<Message>> {
        let initial = self.initial_path.as_ref()?;
        let mut messages: Vec<Message> = initial.iter().filter_map(|entry| entry.as_message().cloned()).collect();
        messages.extend(self.accepted_chain_before(line)?.iter().copied().cloned());
        Some(messages)
    }

    /// Every tool call's story: the hooks and core runs of one call id in one operation's
    /// run, in trace order (derived once; the WIRE rules read them).
    pub fn call_stories(&self) -> &[CallStory<'a>] {
        self.shared.call_stories.get_or_init(|| {
            let mut stories: Vec<CallStory<'a>> = Vec::new();
            let mut positions: BTreeMap<(Option<OpId>, &'a str), usize> = BTreeMap::new();
            for (index, hook) in self.hooks.iter().enumerate() {
                let story = story_index(&mut stories, &mut positions, hook.op, &hook.call.id);
                stories[story].hooks.push(index);
            }
            for (index, call) in self.tool_calls.iter().enumerate() {
                let story = story_index(&mut stories, &mut positions, call.op, &call.call.id);
                stories[story].core.push(index);
            }
            stories
        })
    }

    /// The prompt-like operation whose run made the request at `index` of [`Timeline::requests`],
    /// told by what the request carries rather than by its signal: the latest operation still
    /// in flight (delivered, its run not finished) whose prompt the request carries as a user
    /// message, more often than the restored history and the earlier operations with the same
    /// text account for (as sent, or inside an envelope of the runtime's own). `None` when no
    /// operation in flight is carried that way: then the attribution by time
    /// ([`RequestInfo::op`]) is all there is.
    pub fn run_of_request(&self, index: usize) -> Option<OpId> {
        *self.runs_of_requests().get(index)?
    }

    /// [`Timeline::run_of_request`] of every request (derived once): each request's user
    /// messages are read once for every prompt at a time (`check::carried`).
    fn runs_of_requests(&self) -> &[Option<OpId>] {
        self.shared.runs_of_requests.get_or_init(|| {
            let prompts = || self.ops.iter().filter(|info| info.is_prompt_like());
            let finder = super::carried::PromptFinder::new(prompts().filter_map(|info| info.operation.text()));
            let restored = finder.count(
                self.initial_path
                    .iter()
                    .flatten()
                    .filter_map(|entry| entry.as_message()),
            );
            // The prompt-like operations of each text.
            let mut by_text: BTreeMap<&str, Vec<OpId>> = BTreeMap::new();
            for info in prompts() {
                if let Some(text) = info.operation.text() {
                    by_text.entry(text).or_default().push(info.op);
                }
            }
            self.requests
                .iter()
                .map(|request| {
                    let in_flight = |info: &&OpInfo<'a>| {
                        info.is_prompt_like()
                            && info.delivered < request.line
                            && info.run_finished.is_none_or(|finished| finished > request.line)
                    };
                    let carried = finder.count(request.messages);
                    self.ops.iter().filter(in_flight).rev().find_map(|info| {
                        let text = info.operation.text()?;
                        let same_text_before = by_text
                            .get(text)
                            .map_or(0, |ops| ops.iter().filter(|op| **op <= info.op).count());
                        (finder.carrying(&carried, text) >= finder.carrying(&restored, text) + same_text_before)
                            .then_some(info.op)
                    })
                })
                .collect()
        })
    }

    /// The run a request belongs to: [`Timeline::run_of_request`], or else the operation in
    /// flight when it was made.
    pub fn request_run(&self, index: usize) -> Option<OpId> {
        self.run_of_request(index).or_else(|| self.requests.get(index)?.op)
    }

    /// The run a tool call belongs to: the run of the latest earlier request whose response
    /// asked for it (by call id), or else the operation in flight when it was made.
    pub fn tool_call_run(&self, index: usize) -> Option<OpId> {
        let call = self.tool_calls.get(index)?;
        let asked = self.requests.iter().rposition(|request| {
            request.line < call.line
                && request
                    .response
                    .is_some_and(|(_, response)| response.tool_calls().iter().any(|asked| asked.id == call.call.id))
        });
        asked.and_then(|request| self.request_run(request)).or(call.op)
    }

    /// The event index right after `line`, skipping nothing.
    pub fn next_event(&self, line: Line) -> Option<&'a Event> {
        self.events.get(line + 1)
    }
}

/// Values grouped by operation, in the order of each operation's first value, with where each
/// operation's group is: a checker asks for one operation's group at a time.
struct ByOp<V> {
    groups: Vec<(OpId, Vec<V>)>,
    positions: BTreeMap<OpId, usize>,
}

/// What `keyed` gives for each of `items` (an operation and a value; `None` leaves the item
/// out), grouped by the operation, in the order of each operation's first value.
fn by_op<T, V>(items: &[T], keyed: impl Fn(&T) -> Option<(OpId, V)>) -> ByOp<V> {
    let mut grouped = ByOp {
        groups: Vec::new(),
        positions: BTreeMap::new(),
    };
    for (op, value) in items.iter().filter_map(keyed) {
        match grouped.positions.get(&op) {
            Some(position) => grouped.groups[*position].1.push(value),
            None => {
                grouped.positions.insert(op, grouped.groups.len());
                grouped.groups.push((op, vec![value]));
            }
        }
    }
    grouped
}

/// The group of `op` in `grouped`; empty when it has none.
fn of_op<V>(grouped: &ByOp<V>, op: OpId) -> &[V] {
    grouped
        .positions
        .get(&op)
        .map_or(&[], |position| grouped.groups[*position].1.as_slice())
}

/// The index of the story of call `id` in `op`'s run, which is added when it is new;
/// `positions` finds a story by its run and call id.
fn story_index<'a>(
    stories: &mut Vec<CallStory<'a>>,
    positions: &mut BTreeMap<(Option<OpId>, &'a str), usize>,
    op: Option<OpId>,
    id: &'a str,
) -> usize {
    *positions.entry((op, id)).or_insert_with(|| {
        stories.push(CallStory {
            op,
            call_id: id,
            hooks: Vec::new(),
            core: Vec::new(),
        });
        stories.len() - 1
    })
}
