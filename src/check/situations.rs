//! Situations: what makes each rule non-vacuous (Antithesis' "sometimes" assertions).
//!
//! A rule whose premise never occurs in a trace holds there vacuously. Each rule names the
//! situations that make it bite (POISON-2: an operation queued when an append fails; LIFE-5:
//! dispose while a prompt is queued; AGENT-8: abort while a tool runs), and `explore
//! --coverage` counts how many traces reached each one. A situation no trace of the corpus
//! reaches under the exploration CI runs is a hole in the corpus, and fails the run.
//!
//! A detector reads only the [`Timeline`], like the checkers. Situations of the networked
//! world (`World::Net`) are required only of a networked exploration.

use crate::model::{EntryBody, Message, Operation, PathError};
use crate::runtime::{HookOutcome, HookPhase, OpValue, RunReason, Settlement};
use crate::trace::{AppendAnswer, Event};

use super::timeline::{Line, Timeline};

/// Where a situation can be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum World {
    /// Any world; required of every exploration.
    Any,
    /// Only the networked world (crashes, lost answers, reopening the file).
    Net,
}

/// One situation of one rule.
pub struct Situation {
    pub rule: &'static str,
    pub name: &'static str,
    pub world: World,
    pub reached: fn(&Timeline<'_>) -> bool,
}

// ----- the state of a run at a line -----

/// Whether anything but a state probe's record (`Event::State`, which a subject that probes
/// adds at the end of a step) happened between two lines.
fn events_between(timeline: &Timeline<'_>, from: Line, to: Line) -> bool {
    timeline
        .events
        .get(from + 1..to)
        .is_some_and(|between| between.iter().any(|event| !matches!(event, Event::State { .. })))
}

/// Whether an effect issued at `line` was still unanswered at `at`.
pub(super) fn open_at(issued: Line, answered: Option<Line>, at: Line) -> bool {
    issued < at && answered.is_none_or(|answered| answered > at)
}

fn append_in_flight(timeline: &Timeline<'_>, at: Line) -> bool {
    timeline
        .appends
        .iter()
        .any(|append| open_at(append.line, append.answer.map(|(line, _)| line), at))
}

fn tool_running(timeline: &Timeline<'_>, at: Line) -> bool {
    timeline
        .tool_calls
        .iter()
        .any(|call| open_at(call.line, call.answer.map(|(line, _)| line), at))
}

fn hook_running(timeline: &Timeline<'_>, at: Line, phase: HookPhase) -> bool {
    timeline
        .hooks
        .iter()
        .any(|hook| hook.phase == phase && open_at(hook.line, hook.answer.map(|(line, _)| line), at))
}

fn streaming(timeline: &Timeline<'_>, at: Line) -> bool {
    timeline
        .requests
        .iter()
        .any(|request| open_at(request.line, request.response.map(|(line, _)| line), at))
}

/// A later (not the first) request of its run was unanswered at `at`.
fn later_request_streaming(timeline: &Timeline<'_>, at: Line) -> bool {
    timeline.requests.iter().any(|request| {
        open_at(request.line, request.response.map(|(line, _)| line), at)
            && request
                .op
                .is_some_and(|op| timeline.requests_of(op).first().map(|first| first.line) != Some(request.line))
    })
}

/// Prompt-like operations delivered before `at` that had not started (no request) and not
/// settled at `at`, while another run was active.
pub(super) fn queued_at(timeline: &Timeline<'_>, at: Line) -> usize {
    let active = timeline.ops.iter().filter(|info| info.is_prompt_like()).any(|info| {
        info.delivered < at
            && info.run_finished.is_none_or(|finished| finished > at)
            && timeline
                .requests_of(info.op)
                .first()
                .is_some_and(|first| first.line < at)
    });
    if !active {
        return 0;
    }
    timeline
        .ops
        .iter()
        .filter(|info| info.is_prompt_like() && info.delivered < at)
        .filter(|info| info.settled.is_none_or(|(settled, _)| settled > at))
        .filter(|info| {
            timeline
                .requests_of(info.op)
                .first()
                .is_none_or(|first| first.line > at)
        })
        .count()
}

fn run_active(timeline: &Timeline<'_>, at: Line) -> bool {
    timeline
        .ops
        .iter()
        .filter(|info| info.is_prompt_like())
        .any(|info| info.delivered < at && info.run_finished.is_none_or(|finished| finished > at))
}

/// Some operation of `name` was delivered in a state `state` holds for.
fn delivered_while(timeline: &Timeline<'_>, name: &str, state: impl Fn(Line) -> bool) -> bool {
    timeline
        .ops
        .iter()
        .any(|info| info.operation.name() == name && state(info.delivered))
}

fn failure_line(timeline: &Timeline<'_>) -> Option<Line> {
    timeline.first_failure().map(|(line, _, _)| line)
}

fn path_error(timeline: &Timeline<'_>) -> Option<PathError> {
    timeline.leaf_path_error.clone()
}

fn resolved_runs(timeline: &Timeline<'_>) -> usize {
    timeline
        .ops
        .iter()
        .filter(|info| {
            matches!(
                info.settled,
                Some((_, Settlement::Resolved(OpValue::Run(_) | OpValue::Library { .. })))
            ) && !timeline.appends_of(info.op).is_empty()
        })
        .count()
}

/// A response asks for an unknown tool, or for one with arguments its schema rejects: a call
/// the core executor refuses (WIRE-7 and, for the refusal's text, WIRE-9).
fn executor_refuses_a_call(timeline: &Timeline<'_>) -> bool {
    timeline
        .requests
        .iter()
        .filter_map(|request| request.response)
        .any(|(_, response)| {
            response.tool_calls().iter().any(|call| {
                timeline
                    .scenario
                    .tools
                    .iter()
                    .find(|tool| tool.name == call.name)
                    .is_none_or(|tool| crate::model::validate_arguments(&tool.parameters, &call.arguments).is_err())
            })
        })
}

/// A run's storing failed after the store had applied one of its tool calls: the stored prefix
/// holds a call whose result was never stored (PERSIST-9 leaves that to poison).
fn storing_failed_after_a_call(timeline: &Timeline<'_>) -> bool {
    let stores_a_call = |append: &super::timeline::AppendInfo<'_>| {
        append.answer.is_some_and(|(_, answer)| answer.applied())
            && matches!(append.entry.as_message(), Some(Message::Assistant(assistant)) if !assistant.tool_calls().is_empty())
    };
    timeline
        .appends
        .iter()
        .filter(|append| append.failed().is_some())
        .any(|failed| {
            failed.op.is_some_and(|op| {
                timeline
                    .appends_of(op)
                    .iter()
                    .any(|earlier| earlier.line < failed.line && stores_a_call(earlier))
            })
        })
}

fn mode_named(timeline: &Timeline<'_>, known: bool) -> bool {
    timeline.ops.iter().any(|info| match &info.operation {
        Operation::Mode { mode, .. } => matches!(mode.as_str(), "interactive" | "print" | "json") == known,
        _ => false,
    })
}

macro_rules! situations {
    ($($rule:literal $world:ident $name:literal => $reached:expr;)*) => {
        &[$(Situation { rule: $rule, name: $name, world: World::$world, reached: $reached }),*]
    };
}

/// Every rule's situations, in catalogue order.
pub fn situations() -> &'static [Situation] {
    situations![
        "RESTORE-1" Any "an empty session restored with a null leaf" =>
            |t| t.scenario.session.is_empty() && t.scenario.config.active_leaf_id.is_none();
        "RESTORE-2" Any "an empty session given a leaf" =>
            |t| t.scenario.session.is_empty() && t.scenario.config.active_leaf_id.is_some();
        "RESTORE-3" Any "a non-empty session with a null leaf" =>
            |t| !t.scenario.session.is_empty() && t.scenario.config.active_leaf_id.is_none();
        "RESTORE-4" Any "a restore at a leaf with entries off the chosen path" =>
            |t| t.initial_path.as_ref().is_some_and(|path| path.len() < t.scenario.session.len());
        "RESTORE-4" Any "a restore whose path holds metadata or a compaction" =>
            |t| t.initial_path.as_ref().is_some_and(|path| path.iter().any(|entry| entry.as_message().is_none()));
        "RESTORE-5" Any "operations after a successful restore" =>
            |t| t.restored.is_some() && !t.ops.is_empty();
        "PATH-1" Any "a leaf no entry has" =>
            |t| matches!(path_error(t), Some(PathError::UnknownLeaf { .. }));
        "PATH-2" Any "two entries sharing an id" =>
            |t| matches!(path_error(t), Some(PathError::DuplicateId { .. }));
        "PATH-3" Any "a missing parent on the chosen chain" =>
            |t| matches!(path_error(t), Some(PathError::MissingParent { .. }));
        "PATH-4" Any "a cycle on the chosen chain" =>
            |t| matches!(path_error(t), Some(PathError::Cycle { .. }));
        "PROJECT-1" Any "a request with a tool round in the unpersisted suffix" =>
            |t| t.requests.iter().any(|r| r.messages.iter().any(|m| matches!(m, Message::ToolResult(_))) && r.op.is_some_and(|op| t.appends_of(op).iter().all(|a| a.line > r.line)));
        "PROJECT-1" Any "a request made after an earlier run committed" =>
            |t| t.requests.iter().any(|r| t.appends.iter().any(|a| a.op != r.op && a.accepted_before(r.line)));
        "PROJECT-2" Any "a request with a system prompt" =>
            |t| t.requests.iter().any(|r| r.system_prompt.is_some());
        "PROJECT-3" Any "a run with two or more requests" =>
            |t| t.ops.iter().any(|info| t.requests_of(info.op).len() >= 2);
        "PROJECT-4" Any "a request carrying two or more tools" =>
            |t| t.requests.iter().any(|r| r.tools.len() >= 2);
        "PROJECT-5" Any "two runs with requests" =>
            |t| t.ops.iter().filter(|info| !t.requests_of(info.op).is_empty()).count() >= 2;
        "PROJECT-5" Any "a tool call under the run's signal" =>
            |t| !t.tool_calls.is_empty();
        "PROJECT-6" Any "an id of the temporary form on the active path" =>
            |t| t.initial_path.as_ref().is_some_and(|path| path.iter().any(|entry| entry.id.contains("__runtime_context_")));
        "PROJECT-7" Any "a request after accepted appends (persisted and temporary meet)" =>
            |t| t.requests.iter().any(|r| t.appends.iter().any(|a| a.accepted_before(r.line)));
        "CONTEXT-1" Any "a request the budget cut (fewer messages than the transcript)" =>
            |t| t.requests.iter().any(|r| t.transcript_at(r.line).is_some_and(|transcript| r.messages.len() < transcript.len()));
        "CONTEXT-2" Any "a request carrying a tool call and its result" =>
            |t| t.requests.iter().any(|r| r.messages.iter().any(|m| matches!(m, Message::ToolResult(_))));
        "CONTEXT-3" Any "a compaction on the active path" =>
            |t| t.initial_path.as_ref().is_some_and(|path| path.iter().any(|entry| matches!(entry.body, EntryBody::Compaction(_))));
        "WIRE-1" Any "a configured prompt and resources" =>
            |t| t.scenario.config.system_prompt.as_deref().is_some_and(|text| !text.trim().is_empty()) && !t.scenario.resources.is_empty() && !t.requests.is_empty();
        "WIRE-2" Any "an empty catalog" =>
            |t| t.scenario.resources.is_empty() && !t.requests.is_empty();
        "WIRE-3" Any "an inactive skill with a body" =>
            |t| t.scenario.resources.skills.iter().any(|skill| !skill.body.trim().is_empty()) && !t.requests.is_empty();
        "WIRE-4" Any "a tool call through the hooks" =>
            |t| t.tool_calls.iter().any(|call| t.hooks.iter().any(|hook| hook.call.id == call.call.id && hook.phase == HookPhase::After));
        "WIRE-4" Any "a tool call through two extensions" =>
            |t| t.scenario.extensions.len() >= 2 && !t.tool_calls.is_empty();
        "WIRE-5" Any "a before hook denies or throws" =>
            |t| t.hooks.iter().any(|h| h.phase == HookPhase::Before && matches!(h.answer, Some((_, HookOutcome::Deny { .. } | HookOutcome::Threw { .. }))));
        "WIRE-6" Any "a before hook rewrites the arguments" =>
            |t| t.hooks.iter().any(|h| matches!(h.answer, Some((_, HookOutcome::RewriteArguments { .. }))));
        "WIRE-7" Any "a call to an unknown tool or with bad arguments" =>
            executor_refuses_a_call;
        "WIRE-8" Any "an after hook rewrites the result" =>
            |t| t.hooks.iter().any(|h| matches!(h.answer, Some((_, HookOutcome::RewriteResult { .. }))));
        "WIRE-9" Any "a call the executor refuses or a hook fails" =>
            |t| t.hooks.iter().any(|h| matches!(h.answer, Some((_, HookOutcome::Threw { .. })))) || executor_refuses_a_call(t);
        "PERSIST-1" Any "a run appends after a restored path" =>
            |t| t.initial_path.as_ref().is_some_and(|path| !path.is_empty()) && !t.appends.is_empty();
        "PERSIST-2" Any "a run of three or more appends" =>
            |t| t.ops.iter().any(|info| t.appends_of(info.op).len() >= 3);
        "PERSIST-3" Any "an append answered after other events" =>
            |t| t.appends.iter().any(|a| a.answer.is_some_and(|(line, _)| events_between(t, a.line, line)));
        "PERSIST-4" Any "appends of two runs" =>
            |t| t.ops.iter().filter(|info| !t.appends_of(info.op).is_empty()).count() >= 2;
        "PERSIST-5" Any "a failed append" =>
            |t| t.first_failure().is_some();
        "PERSIST-6" Any "a run resolved after several appends" =>
            |t| t.ops.iter().any(|info| matches!(info.settled, Some((_, Settlement::Resolved(OpValue::Run(_))))) && t.appends_of(info.op).len() >= 2);
        "PERSIST-7" Any "a run with two requests before its appends" =>
            |t| t.ops.iter().any(|info| t.requests_of(info.op).len() >= 2 && !t.appends_of(info.op).is_empty());
        "PERSIST-8" Any "appends of two runs (the clock moves on)" =>
            |t| t.ops.iter().filter(|info| !t.appends_of(info.op).is_empty()).count() >= 2;
        "PERSIST-10" Any "a probed runtime whose append was accepted" =>
            |t| t.probed && t.appends.iter().any(|a| matches!(a.answer, Some((_, AppendAnswer::Ok))));
        "PERSIST-10" Any "a probed runtime at the end of a step with an append in flight" =>
            |t| t.probed && t.appends.iter().any(|a| a.answer.is_none_or(|(at, _)| events_between(t, a.line, at)));
        "PERSIST-9" Any "a tool call and its result stored" =>
            |t| t.appends.iter().any(|a| matches!(a.entry.as_message(), Some(Message::ToolResult(_))) && a.answer.is_some_and(|(_, answer)| answer.applied()));
        "PERSIST-9" Any "a run's storing failed after it stored a tool call" =>
            storing_failed_after_a_call;
        "PERSIST-9" Net "the session file read back holds the runtime's entries" =>
            |t| t.store.len() > t.scenario.session.len() && t.events.iter().any(|e| matches!(e, Event::Reopened { outcome: Ok(_), .. }));
        "QUEUE-1" Any "a prompt arriving while another runs" =>
            |t| t.ops.iter().any(|info| info.is_prompt_like() && queued_at(t, info.delivered + 1) > 0);
        "QUEUE-2" Any "a prompt arriving while the previous run commits" =>
            |t| t.ops.iter().any(|info| info.is_prompt_like() && append_in_flight(t, info.delivered));
        "QUEUE-2" Any "two resolved runs" =>
            |t| resolved_runs(t) >= 2;
        "POISON-1" Any "a failed append" =>
            |t| t.first_failure().is_some();
        "POISON-2" Any "an operation queued when an append fails" =>
            |t| failure_line(t).is_some_and(|line| queued_at(t, line) > 0);
        "POISON-3" Any "a prompt queued when an append fails" =>
            |t| failure_line(t).is_some_and(|line| queued_at(t, line) > 0);
        "POISON-4" Any "a prompt or flush after an append failure" =>
            |t| failure_line(t).is_some_and(|line| t.ops.iter().any(|info| info.delivered > line && (info.is_prompt_like() || info.operation.name() == "flush")));
        "POISON-5" Any "an append applied, then reported failed" =>
            |t| t.appends.iter().any(|a| matches!(a.answer, Some((_, AppendAnswer::AppliedThenFailed { .. }))));
        "LIFE-1" Any "a flush while a run is active" =>
            |t| delivered_while(t, "flush", |at| run_active(t, at));
        "LIFE-1" Any "a flush while appends are in flight" =>
            |t| delivered_while(t, "flush", |at| append_in_flight(t, at));
        "LIFE-2" Any "a flush on an idle runtime" =>
            |t| delivered_while(t, "flush", |at| !run_active(t, at));
        "LIFE-3" Any "a flush settling after an append failure" =>
            |t| failure_line(t).is_some_and(|line| t.ops.iter().any(|info| info.operation.name() == "flush" && info.settled.is_some_and(|(settled, _)| settled > line)));
        "LIFE-4" Any "a prompt after dispose" =>
            |t| t.ops.iter().position(|info| info.operation.name() == "dispose").is_some_and(|index| t.ops[index..].iter().any(|info| info.is_prompt_like()));
        "LIFE-5" Any "dispose while a prompt is queued" =>
            |t| delivered_while(t, "dispose", |at| queued_at(t, at) > 0);
        "LIFE-5" Any "dispose while appends are in flight" =>
            |t| delivered_while(t, "dispose", |at| append_in_flight(t, at));
        "LIFE-6" Any "dispose twice" =>
            |t| t.ops.iter().filter(|info| info.operation.name() == "dispose").count() >= 2;
        "LIFE-7" Any "a run that ends with nothing pending" =>
            |t| t.end.is_some_and(|(_, pending)| pending.is_empty()) && t.ops.len() >= 2;
        "MODE-1" Any "a json mode run" =>
            |t| t.ops.iter().any(|info| matches!(&info.operation, Operation::Mode { mode, .. } if mode == "json") && t.writes.iter().any(|w| w.op == Some(info.op)));
        "MODE-1" Any "a print or interactive mode run" =>
            |t| t.ops.iter().any(|info| matches!(&info.operation, Operation::Mode { mode, .. } if mode == "print" || mode == "interactive") && t.writes.iter().any(|w| w.op == Some(info.op)));
        "MODE-2" Any "a mode that writes" =>
            |t| !t.writes.is_empty();
        "MODE-3" Any "an unknown mode" =>
            |t| mode_named(t, false);
        "MODE-4" Any "a sink error after the store committed" =>
            |t| t.writes.iter().any(|w| matches!(w.answer, Some((_, Some(_)))));
        "MODE-5" Any "a library call" =>
            |t| t.ops.iter().any(|info| matches!(info.operation, Operation::Library { .. }));
        "MODE-6" Any "a mode's write answered after another effect" =>
            |t| t.writes.iter().any(|w| w.answer.is_some_and(|(line, _)| events_between(t, w.line, line)));
        "OBSERVE-1" Any "a message stored while its observer has not answered" =>
            |t| t.notifications.iter().any(|n| matches!(n.event, crate::runtime::ObservedEvent::MessageEnd { .. }) && t.appends.iter().any(|a| open_at(n.line, n.answer.map(|(line, _)| line), a.line)));
        "OBSERVE-1" Any "an observer told of a message that was never stored" =>
            |t| t.appends.iter().any(|a| a.failed().is_some()) && t.notifications.iter().any(|n| matches!(n.event, crate::runtime::ObservedEvent::MessageEnd { message } if !t.appends.iter().any(|a| a.entry.as_message() == Some(message))));
        "OBSERVE-2" Any "two runs' ends told to one observer" =>
            |t| t.scenario.observers.iter().any(|o| t.notifications.iter().filter(|n| n.observer == o.name && matches!(n.event, crate::runtime::ObservedEvent::AgentEnd { .. })).count() >= 2);
        "OBSERVE-3" Any "an observer's handler throws" =>
            |t| t.notifications.iter().any(|n| matches!(n.answer, Some((_, crate::runtime::NotifyOutcome::Threw { .. }))));
        "OBSERVE-4" Any "a notification answered while a run is active" =>
            |t| t.notifications.iter().filter_map(|n| n.answer).any(|(line, _)| run_active(t, line));
        "OBSERVE-4" Any "a notification answered while an append is in flight" =>
            |t| t.notifications.iter().filter_map(|n| n.answer).any(|(line, _)| append_in_flight(t, line));
        "AGENT-1" Any "a run reaching maxSteps" =>
            |t| t.ops.iter().any(|info| t.run_reason_of(info.op) == Some(RunReason::MaxSteps));
        "AGENT-2" Any "a steer while a run is active" =>
            |t| delivered_while(t, "steer", |at| run_active(t, at));
        "AGENT-2" Any "a steer during a later request of the run" =>
            |t| delivered_while(t, "steer", |at| later_request_streaming(t, at));
        "AGENT-3" Any "a follow-up while a run is active" =>
            |t| delivered_while(t, "followUp", |at| run_active(t, at));
        "AGENT-3" Any "a follow-up during a later request of the run" =>
            |t| delivered_while(t, "followUp", |at| later_request_streaming(t, at));
        "AGENT-4" Any "abort while a tool runs" =>
            |t| delivered_while(t, "abort", |at| tool_running(t, at));
        "AGENT-4" Any "abort while a before hook runs" =>
            |t| delivered_while(t, "abort", |at| hook_running(t, at, HookPhase::Before));
        "AGENT-5" Any "a response with two tool calls" =>
            |t| t.requests.iter().filter_map(|r| r.response).any(|(_, response)| response.tool_calls().len() >= 2);
        "AGENT-6" Any "a response with stopReason error or length" =>
            |t| t.requests.iter().filter_map(|r| r.response).any(|(_, response)| matches!(response.stop_reason, crate::model::StopReason::Error | crate::model::StopReason::Length));
        "AGENT-7" Any "a control call" =>
            |t| t.ops.iter().any(|info| matches!(info.operation, Operation::Steer { .. } | Operation::FollowUp { .. } | Operation::Abort));
        "AGENT-8" Any "abort while a stream is open" =>
            |t| delivered_while(t, "abort", |at| streaming(t, at));
        "AGENT-8" Any "abort while an after hook runs" =>
            |t| delivered_while(t, "abort", |at| hook_running(t, at, HookPhase::After));
        "AGENT-8" Any "abort during a later request of the run" =>
            |t| delivered_while(t, "abort", |at| later_request_streaming(t, at));
        "DURABLE-1" Net "the store crashed after acknowledging appends" =>
            |t| t.events.iter().any(|e| matches!(e, Event::Net { change: crate::trace::NetChange::Crash { .. }, .. })) && t.appends.iter().any(|a| matches!(a.answer, Some((_, AppendAnswer::Ok))));
        "DURABLE-2" Net "a new runtime reopened from the file" =>
            |t| t.events.iter().any(|e| matches!(e, Event::Reopened { outcome: Ok(_), .. }));
        "DURABLE-3" Net "an append whose answer was lost" =>
            |t| t.appends.iter().any(|a| matches!(a.answer, Some((_, AppendAnswer::Lost { .. }))));
        "DURABLE-4" Net "a torn tail excluded when the store reopened" =>
            |t| t.events.iter().any(|e| matches!(e, Event::StoreOpened { torn_bytes: Some(_), .. }));
        "SETTLE-1" Any "a prompt arriving while another runs" =>
            |t| t.ops.iter().any(|info| info.is_prompt_like() && queued_at(t, info.delivered + 1) > 0);
        "SETTLE-1" Any "an operation delivered to a poisoned runtime" =>
            |t| failure_line(t).is_some_and(|line| t.ops.iter().any(|info| info.delivered > line));
        "SETTLE-1" Any "an operation delivered after dispose" =>
            |t| t.ops.iter().position(|info| info.operation.name() == "dispose").is_some_and(|index| t.ops.len() > index + 1);
        "SETTLE-2" Any "a flush or dispose waiting for a prompt's run" =>
            |t| t.ops.iter().any(|info| matches!(info.operation, Operation::Flush | Operation::Dispose) && t.ops.iter().any(|prompt| prompt.is_prompt_like() && prompt.delivered < info.delivered && prompt.run_finished.is_none_or(|finished| finished > info.delivered)));
        "SETTLE-2" Any "a mode's write answered" =>
            |t| t.writes.iter().any(|write| write.answer.is_some());
        "SETTLE-2" Any "an observer answering after its run was stored" =>
            |t| t.notifications.iter().any(|n| n.answer.is_some_and(|(at, _)| n.op.is_some_and(|op| t.ops.iter().any(|info| info.op == op && info.settled.is_some_and(|(settled, _)| settled < at)))));
        "REF-1" Any "an operation settled" =>
            |t| t.ops.iter().any(|info| info.settled.is_some());
        "REF-1" Any "an observer told of an event" =>
            |t| !t.notifications.is_empty();
    ]
}

/// The situations `timeline` reaches, as indexes into [`situations`].
pub fn reached(timeline: &Timeline<'_>) -> Vec<usize> {
    situations()
        .iter()
        .enumerate()
        .filter(|(_, situation)| (situation.reached)(timeline))
        .map(|(index, _)| index)
        .collect()
}
