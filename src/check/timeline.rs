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
    requests_by_op: OnceCell<Vec<(OpId, Vec<RequestInfo<'a>>)>>,
    /// For each operation with appends, in the order of its first append, its appends.
    appends_by_op: OnceCell<Vec<(OpId, Vec<AppendInfo<'a>>)>>,
    /// For each operation with appended messages, in the order of its first, the messages.
    appended_messages: OnceCell<Vec<(OpId, Vec<&'a Message>)>>,
    /// Every tool call's story (`call_stories`).
    call_stories: OnceCell<Vec<CallStory<'a>>>,
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
        self.ops.iter().find(|info| info.op == op)
    }

    fn op_mut(&mut self, op: OpId) -> Option<&mut OpInfo<'a>> {
        self.ops.iter_mut().find(|info| info.op == op)
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

    /// The first failed append: its answer line, cause and the append.
    pub fn first_failure(&self) -> Option<(Line, &'a Cause, &AppendInfo<'a>)> {
        self.appends
            .iter()
            .filter_map(|append| append.failed().map(|(line, cause)| (line, cause, append)))
            .min_by_key(|(line, _, _)| *line)
    }

    /// The leaf the runtime should hold at `line`: the last append accepted before it, else
    /// the restored leaf.
    pub fn leaf_at(&self, line: Line) -> Option<&'a str> {
        self.appends
            .iter()
            .filter(|append| append.accepted_before(line))
            .max_by_key(|append| append.answer.as_ref().map(|(at, _)| *at))
            .map(|append| append.entry.id.as_str())
            .or(self.scenario.config.active_leaf_id.as_deref())
    }

    /// The active path at `line`: the tree of the session plus accepted appends, walked from
    /// `leaf_at(line)`; `None` when the initial path did not exist. Lent from the scenario and
    /// the trace.
    pub fn active_path_at(&self, line: Line) -> Option<Cow<'_, [&'a SessionEntry]>> {
        let initial = self.initial_path.as_ref()?;
        if !self.appends.iter().any(|append| append.accepted_before(line)) {
            return Some(Cow::Borrowed(initial));
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

    /// The messages of the appends accepted before `line`, in acceptance order, when they form
    /// one chain from the restored leaf (as in every conforming run); `None` otherwise.
    pub fn accepted_chain_before(&self, line: Line) -> Option<Vec<&'a Message>> {
        let mut accepted: Vec<&AppendInfo<'a>> = self
            .appends
            .iter()
            .filter(|append| append.accepted_before(line))
            .collect();
        accepted.sort_by_key(|append| append.answer.map(|(at, _)| at));
        let mut leaf = self.scenario.config.active_leaf_id.as_deref();
        let mut messages = Vec::with_capacity(accepted.len());
        for append in accepted {
            if append.entry.parent_id.as_deref() != leaf {
                return None;
            }
            leaf = Some(append.entry.id.as_str());
            messages.push(append.entry.as_message()?);
        }
        Some(messages)
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
        messages.extend(self.accepted_chain_before(line)?.into_iter().cloned());
        Some(messages)
    }

    /// Every tool call's story: the hooks and core runs of one call id in one operation's
    /// run, in trace order (derived once; the WIRE rules read them).
    pub fn call_stories(&self) -> &[CallStory<'a>] {
        self.shared.call_stories.get_or_init(|| {
            let mut stories: Vec<CallStory<'a>> = Vec::new();
            for (index, hook) in self.hooks.iter().enumerate() {
                let story = story_index(&mut stories, hook.op, &hook.call.id);
                stories[story].hooks.push(index);
            }
            for (index, call) in self.tool_calls.iter().enumerate() {
                let story = story_index(&mut stories, call.op, &call.call.id);
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
        let request = self.requests.get(index)?;
        let in_flight = |info: &&OpInfo<'a>| {
            info.is_prompt_like()
                && info.delivered < request.line
                && info.run_finished.is_none_or(|finished| finished > request.line)
        };
        // A user message carries a prompt as sent, or inside an envelope of the runtime's own
        // (a reminder it prepends): what the model is told is the runtime's choice.
        let carries = |message: &Message, text: &str| {
            super::is_user_text(message, text)
                || (!text.is_empty() && matches!(message, Message::User(_)) && message.text().contains(text))
        };
        let count = |text: &str| request.messages.iter().filter(|message| carries(message, text)).count();
        let restored = |text: &str| {
            self.initial_path.as_ref().map_or(0, |path| {
                path.iter()
                    .filter_map(|entry| entry.as_message())
                    .filter(|message| carries(message, text))
                    .count()
            })
        };
        self.ops.iter().filter(in_flight).rev().find_map(|info| {
            let text = info.operation.text()?;
            let same_text_before = self
                .ops
                .iter()
                .filter(|other| other.is_prompt_like() && other.op <= info.op && other.operation.text() == Some(text))
                .count();
            (count(text) >= restored(text) + same_text_before).then_some(info.op)
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

/// What `keyed` gives for each of `items` (an operation and a value; `None` leaves the item
/// out), grouped by the operation, in the order of each operation's first value.
fn by_op<T, V>(items: &[T], keyed: impl Fn(&T) -> Option<(OpId, V)>) -> Vec<(OpId, Vec<V>)> {
    let mut grouped: Vec<(OpId, Vec<V>)> = Vec::new();
    for (op, value) in items.iter().filter_map(keyed) {
        match grouped.iter_mut().find(|(other, _)| *other == op) {
            Some((_, group)) => group.push(value),
            None => grouped.push((op, vec![value])),
        }
    }
    grouped
}

/// The group of `op` in `grouped`; empty when it has none.
fn of_op<T>(grouped: &[(OpId, Vec<T>)], op: OpId) -> &[T] {
    grouped
        .iter()
        .find(|(other, _)| *other == op)
        .map_or(&[], |(_, group)| group.as_slice())
}

/// The index of the story of call `id` in `op`'s run, which is added when it is new.
fn story_index<'a>(stories: &mut Vec<CallStory<'a>>, op: Option<OpId>, id: &'a str) -> usize {
    match stories.iter().position(|story| story.op == op && story.call_id == id) {
        Some(index) => index,
        None => {
            stories.push(CallStory {
                op,
                call_id: id,
                hooks: Vec::new(),
                core: Vec::new(),
            });
            stories.len() - 1
        }
    }
}
