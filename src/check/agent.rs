//! AGENT: the multi-step loop, steering, follow-ups, abort.

use crate::model::{Message, Operation, StopReason};
use crate::runtime::{OpValue, RunReason, Settlement};
use crate::trace::Event;

use super::timeline::{OpInfo, RequestInfo, Timeline};
use super::Violation;

fn run_reason(info: &OpInfo) -> Option<RunReason> {
    match &info.settled {
        Some((_, Settlement::Resolved(OpValue::Run(result)))) => Some(result.reason),
        Some((_, Settlement::Resolved(OpValue::Library { reason, .. }))) => Some(*reason),
        _ => None,
    }
}

/// Whether a user message of the request carries `text`: as sent, or inside an envelope of the
/// runtime's own (oh-my-pi wraps a steer in `<system-notice>`): what the model is told is the
/// runtime's choice, that it is told is the rule's.
fn has_user_text(request: &RequestInfo, text: &str) -> bool {
    request
        .messages
        .iter()
        .any(|message| matches!(message, Message::User(_)) && message.text().contains(text))
}

pub fn runs_bounded_by_max_steps(timeline: &Timeline<'_>) -> Vec<Violation> {
    let steps_max = timeline.scenario.config.max_steps.max(1) as usize;
    let mut violations = Vec::new();
    for info in timeline.ops.iter().filter(|info| info.is_prompt_like()) {
        let requests = timeline.requests_of(info.op);
        if requests.len() > steps_max {
            violations.push(Violation::new(
                "AGENT-1.a",
                &[requests[steps_max].line],
                format!(
                    "{} made {} model requests; maxSteps is {steps_max}",
                    info.op,
                    requests.len()
                ),
            ));
        }
        // A run cut by the bound: its maxSteps-th response asked for tools, and it stopped
        // anyway (abort, error and the other reasons are AGENT-4's and AGENT-6's).
        let cut = requests.len() == steps_max
            && requests
                .last()
                .and_then(|request| request.response)
                .is_some_and(|(_, response)| !response.tool_calls().is_empty());
        if cut && run_reason(info) == Some(RunReason::Stop) {
            violations.push(Violation::new(
                "AGENT-1.b",
                &[info.settled.as_ref().map(|(line, _)| *line).unwrap_or(info.delivered)],
                format!(
                    "{}'s run was cut by the bound (its request {steps_max} of {steps_max} asked for tools) but ended with reason stop, not max_steps",
                    info.op
                ),
            ));
        }
        // Over the bound is AGENT-1.a's alone. At the bound, a last response without tool calls
        // would have stopped the run anyway, unless a steer or a follow-up was waiting (the
        // run would have gone on with it): a run that may have had one is not judged there.
        let settled_at = info.settled.as_ref().map_or(usize::MAX, |(line, _)| *line);
        let message_waiting = timeline.ops.iter().any(|other| {
            matches!(other.operation, Operation::Steer { .. } | Operation::FollowUp { .. })
                && other.delivered < settled_at
        });
        let uncut = requests.len() < steps_max || (requests.len() == steps_max && !cut && !message_waiting);
        if run_reason(info) == Some(RunReason::MaxSteps) && uncut {
            violations.push(Violation::new(
                "AGENT-1.c",
                &[info.settled.as_ref().map(|(line, _)| *line).unwrap_or(info.delivered)],
                format!(
                    "{} ended with max_steps after {} of {steps_max} requests, the last asking for {}",
                    info.op,
                    requests.len(),
                    if cut { "tools" } else { "no tool" }
                ),
            ));
        }
        // A prompt's or a mode's result counts its requests (a mode's requests all come before
        // its output, while the timeline still attributes them to it).
        let prompt = matches!(info.operation, Operation::Prompt { .. } | Operation::Mode { .. });
        if let (true, Some((line, Settlement::Resolved(OpValue::Run(result))))) = (prompt, info.settled) {
            // A mode that wrote before its run's work was done (a header line) is no longer
            // attributed its later requests: those issued before it settled while no run was in
            // progress are its own.
            let unattributed = match info.operation {
                Operation::Mode { .. } => (timeline.requests.iter())
                    .filter(|request| request.op.is_none() && request.line > info.delivered && request.line < line)
                    .count(),
                _ => 0,
            };
            let made = requests.len() + unattributed;
            if result.steps as usize != made {
                violations.push(Violation::new(
                    "AGENT-1.d",
                    &[line],
                    format!(
                        "{} reported {}, but its run made {}",
                        info.op,
                        super::counted(result.steps as usize, "step", "steps"),
                        super::counted(made, "model request", "model requests")
                    ),
                ));
            }
        }
    }
    violations
}

/// A steering or follow-up message that arrived while a run was active and that the run ended
/// without: the run stopped (reason `stop`) after the message arrived, yet none of its later
/// requests carried it. (A run cut short by abort, error, length or the step bound leaves it
/// for the next run.)
fn lost_by_run(rule: &'static str, timeline: &Timeline<'_>, info: &OpInfo<'_>, text: &str) -> Option<Violation> {
    let run = run_in_agent_phase(timeline, info.delivered)?;
    let requests = timeline.requests_of(run.op);
    let (last_response, _) = requests.last()?.response?;
    if last_response < info.delivered || timeline.run_reason_of(run.op) != Some(RunReason::Stop) {
        return None;
    }
    let carried = requests
        .iter()
        .any(|request| request.line > info.delivered && has_user_text(request, text));
    (!carried).then(|| {
        Violation::new(
            rule,
            &[info.delivered, last_response],
            format!(
                "{} {} arrived while {}'s run was active, but the run stopped without it",
                info.operation.name(),
                info.op,
                run.op
            ),
        )
    })
}

/// A follow-up no request carried, though a run that could take it came: the next run to start
/// after it stopped (reason `stop`) without it. (One the run active at its arrival lost is
/// [`lost_by_run`]'s; one a run cut short by abort, error, length or the step bound left is the
/// next run's to take.)
fn lost_by_next_run(timeline: &Timeline<'_>, info: &OpInfo<'_>, text: &str) -> Option<Violation> {
    let later = || timeline.requests.iter().filter(|request| request.line > info.delivered);
    if later().any(|request| has_user_text(request, text)) {
        return None;
    }
    let next = timeline
        .ops
        .iter()
        .filter(|other| other.is_prompt_like())
        .find(|other| {
            timeline
                .requests_of(other.op)
                .first()
                .is_some_and(|first| first.line > info.delivered)
        })?;
    if timeline.run_reason_of(next.op) != Some(RunReason::Stop) {
        return None;
    }
    let (last_response, _) = timeline.requests_of(next.op).last()?.response?;
    Some(Violation::new(
        "AGENT-3.c",
        &[info.delivered, last_response],
        format!(
            "follow-up {} reached no model request: the next run to start after it ({}) stopped without it",
            info.op, next.op
        ),
    ))
}

pub fn steer_joins_the_next_request(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for info in timeline.ops.iter() {
        let Operation::Steer { text } = &info.operation else {
            continue;
        };
        // A steer the run lost is AGENT-2.b's alone.
        if let Some(lost) = lost_by_run("AGENT-2.b", timeline, info, text) {
            violations.push(lost);
            continue;
        }
        let Some(next) = timeline.requests.iter().find(|request| request.line > info.delivered) else {
            continue;
        };
        if !has_user_text(next, text) {
            violations.push(Violation::new(
                "AGENT-2.a",
                &[info.delivered, next.line],
                format!(
                    "the next model request after steer {} does not carry {}",
                    info.op,
                    super::quoted(text)
                ),
            ));
        }
    }
    violations
}

pub fn follow_up_continues_the_run(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for info in timeline.ops.iter() {
        let Operation::FollowUp { text } = &info.operation else {
            continue;
        };
        // A follow-up the active run lost is AGENT-3.b's alone.
        if let Some(lost) = lost_by_run("AGENT-3.b", timeline, info, text) {
            violations.push(lost);
            continue;
        }
        // One the next run lost is AGENT-3.c's alone.
        if let Some(lost) = lost_by_next_run(timeline, info, text) {
            violations.push(lost);
            continue;
        }
        let later: Vec<&RequestInfo> = timeline
            .requests
            .iter()
            .filter(|request| request.line > info.delivered)
            .collect();
        for request in &later {
            // Would the run have stopped before this request? Only when the previous response of
            // the same run had no tool call; a run's first request is never such a point.
            let previous = timeline
                .requests
                .iter()
                .rfind(|earlier| earlier.op == request.op && earlier.line < request.line);
            let would_stop = match previous.and_then(|earlier| earlier.response.as_ref()) {
                None => false,
                Some((_, response)) => response.tool_calls().is_empty(),
            };
            let carries = has_user_text(request, text);
            // Steering goes first: a would-stop point that delivers a steer defers follow-ups.
            let delivers_steer = timeline.ops.iter().any(|other| match &other.operation {
                Operation::Steer { text: steer } if other.delivered < request.line => {
                    has_user_text(request, steer) && previous.is_none_or(|earlier| !has_user_text(earlier, steer))
                }
                _ => false,
            });
            if would_stop && delivers_steer {
                continue;
            }
            if would_stop {
                if !carries {
                    violations.push(Violation::new(
                        "AGENT-3.a",
                        &[info.delivered, request.line],
                        format!(
                            "follow-up {} was not delivered when the run would have stopped",
                            info.op
                        ),
                    ));
                }
                break;
            }
            if carries {
                violations.push(Violation::new(
                    "AGENT-3.a",
                    &[info.delivered, request.line],
                    format!("follow-up {} was delivered mid-run, like a steer", info.op),
                ));
                break;
            }
        }
    }
    violations
}

pub fn aborted_run_stops(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (line, signal) in &timeline.aborts {
        for request in timeline
            .requests
            .iter()
            .filter(|request| request.signal == *signal && request.line > *line)
        {
            violations.push(Violation::new(
                "AGENT-4.a",
                &[*line, request.line],
                format!("a model request with {signal} after it was aborted"),
            ));
        }
        for call in timeline
            .tool_calls
            .iter()
            .filter(|call| call.signal == *signal && call.line > *line)
        {
            violations.push(Violation::new(
                "AGENT-4.b",
                &[*line, call.line],
                format!("tool call {} started with {signal} after it was aborted", call.call.id),
            ));
        }
        let owner = timeline
            .requests
            .iter()
            .find(|request| request.signal == *signal)
            .and_then(|request| request.op);
        if let Some(info) = owner.and_then(|op| timeline.op(op)) {
            if let Some(reason) = run_reason(info) {
                if reason != RunReason::Aborted {
                    violations.push(Violation::new(
                        "AGENT-4.c",
                        &[*line, info.settled.as_ref().map(|(at, _)| *at).unwrap_or(*line)],
                        format!("{} was aborted but resolved with reason {}", info.op, reason.as_str()),
                    ));
                }
            }
        }
    }
    // A run resolves `aborted` only if its signal fired before it settled.
    for info in timeline.ops.iter().filter(|info| info.is_prompt_like()) {
        let (Some(RunReason::Aborted), Some((settled, _))) = (run_reason(info), info.settled) else {
            continue;
        };
        let fired = match info.signal {
            Some(signal) => timeline
                .aborts
                .iter()
                .any(|(line, fired)| *fired == signal && *line < settled),
            // A run aborted before it made a request or started a tool (a runtime that stores
            // its user message first, say) shows its signal only as it fires: a signal no other
            // run owns, fired while this run was the one in progress.
            None => timeline.aborts.iter().any(|(line, fired)| {
                *line > info.delivered
                    && *line < settled
                    && !timeline.ops.iter().any(|other| other.signal == Some(*fired))
            }),
        };
        // The provider may report an abort of its own: the run's last response says so.
        let reported = timeline
            .requests_of(info.op)
            .last()
            .and_then(|request| request.response)
            .is_some_and(|(_, response)| response.stop_reason == StopReason::Aborted);
        if !fired && !reported {
            violations.push(Violation::new(
                "AGENT-4.d",
                &[settled],
                format!(
                    "{} resolved with reason aborted, but its signal never fired and the model reported no abort",
                    info.op
                ),
            ));
        }
    }
    violations
}

/// The prompt-like operation whose agent run is in progress at `line`: it issued a model
/// request before `line`, has appended nothing yet (appends start when the run ends) and has
/// not settled.
fn run_in_agent_phase<'t>(timeline: &'t Timeline<'_>, line: usize) -> Option<&'t OpInfo<'t>> {
    timeline.ops.iter().filter(|info| info.is_prompt_like()).find(|info| {
        timeline
            .requests_of(info.op)
            .first()
            .is_some_and(|first| first.line < line)
            && !timeline.appends_of(info.op).iter().any(|append| append.line < line)
            && info.run_finished.is_none_or(|finished| finished > line)
    })
}

/// Whether the event is something the subject emitted (not the world's answer or a delivery).
fn is_subject_output(event: &Event) -> bool {
    matches!(
        event,
        Event::ModelRequest { .. }
            | Event::ToolCall { .. }
            | Event::Hook { .. }
            | Event::Append { .. }
            | Event::Write { .. }
            | Event::AbortSignal { .. }
            | Event::Settled { .. }
    )
}

pub fn abort_fires_the_run_signal(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for abort in timeline
        .ops
        .iter()
        .filter(|info| matches!(info.operation, Operation::Abort))
    {
        let Some(run) = run_in_agent_phase(timeline, abort.delivered) else {
            continue;
        };
        let Some(signal) = run.signal else { continue };
        if timeline
            .aborts
            .iter()
            .any(|(line, fired)| *fired == signal && *line < abort.delivered)
        {
            continue;
        }
        // The runtime's answer to the abort: the events it emitted before the world's next move.
        let batch: Vec<(usize, &Event)> = timeline
            .events
            .iter()
            .enumerate()
            .skip(abort.delivered + 1)
            .take_while(|(_, event)| is_subject_output(event))
            .collect();
        let fired_at = batch
            .iter()
            .find(|(_, event)| matches!(event, Event::AbortSignal { signal: fired } if *fired == signal))
            .map(|(line, _)| *line);
        let first_work = batch
            .iter()
            .find(|(_, event)| {
                matches!(
                    event,
                    Event::ModelRequest { .. } | Event::ToolCall { .. } | Event::Hook { .. } | Event::Append { .. }
                )
            })
            .map(|(line, _)| *line);
        match (fired_at, first_work) {
            (None, _) => violations.push(Violation::new(
                "AGENT-8.a",
                &[abort.delivered],
                format!(
                    "abort {} arrived while {}'s run was active, but {signal} did not fire",
                    abort.op, run.op
                ),
            )),
            (Some(fired), Some(work)) if work < fired => violations.push(Violation::new(
                "AGENT-8.b",
                &[abort.delivered, work, fired],
                format!("{}'s run issued more work before {signal} fired", run.op),
            )),
            _ => {}
        }
    }
    violations
}

pub fn tool_calls_run_in_order_once(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for request in &timeline.requests {
        let Some((response_line, response)) = &request.response else {
            continue;
        };
        let calls = response.tool_calls();
        if calls.is_empty() {
            continue;
        }
        let next_response = timeline
            .requests
            .iter()
            .filter(|later| later.op == request.op && later.line > *response_line)
            .map(|later| later.line)
            .min()
            .unwrap_or(usize::MAX);
        let executed: Vec<&str> = timeline
            .tool_calls
            .iter()
            .filter(|core| core.op == request.op && core.line > *response_line && core.line < next_response)
            .map(|core| core.call.id.as_str())
            .collect();
        let order: Vec<&str> = calls
            .iter()
            .map(|call| call.id.as_str())
            .filter(|id| executed.contains(id))
            .collect();
        if executed != order {
            violations.push(Violation::new(
                "AGENT-5.a",
                &[*response_line],
                format!(
                    "tool calls ran as [{}], the message orders them [{}]",
                    executed.join(","),
                    order.join(",")
                ),
            ));
        }
        if let Some(op) = request.op {
            let appended = timeline.appended_messages(op);
            let resolved = matches!(
                timeline.op(op).and_then(|info| info.settled.as_ref()),
                Some((_, Settlement::Resolved(_)))
            );
            if resolved && appended.iter().any(|message| message.as_assistant() == Some(response)) {
                for call in &calls {
                    let results = appended
                        .iter()
                        .filter(
                            |message| matches!(message, Message::ToolResult(result) if result.tool_call_id == call.id),
                        )
                        .count();
                    if results != 1 {
                        violations.push(Violation::new(
                            "AGENT-5.b",
                            &[*response_line],
                            format!(
                                "tool call {} has {results} results in the transcript, expected 1",
                                call.id
                            ),
                        ));
                    }
                }
            }
        }
    }
    violations
}

pub fn error_stop_reason_ends_the_run(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for request in &timeline.requests {
        let Some((response_line, response)) = &request.response else {
            continue;
        };
        let ends = match response.stop_reason {
            StopReason::Error => Some(RunReason::Error),
            StopReason::Aborted => Some(RunReason::Aborted),
            StopReason::Length if response.tool_calls().is_empty() => Some(RunReason::Length),
            _ => None,
        };
        let Some(reason) = ends else { continue };
        for later in timeline
            .requests
            .iter()
            .filter(|later| later.op == request.op && later.line > *response_line)
        {
            violations.push(Violation::new(
                "AGENT-6.a",
                &[*response_line, later.line],
                format!(
                    "the run went on after a response with stopReason {}",
                    response.stop_reason.as_str()
                ),
            ));
        }
        if let Some(info) = request.op.and_then(|op| timeline.op(op)) {
            if let Some(got) = run_reason(info) {
                if got != reason {
                    violations.push(Violation::new(
                        "AGENT-6.b",
                        &[*response_line],
                        format!(
                            "{} resolved with reason {}, expected {}",
                            info.op,
                            got.as_str(),
                            reason.as_str()
                        ),
                    ));
                }
            }
        }
    }
    violations
}

pub fn control_calls_settle_at_once(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for info in timeline.ops.iter().filter(|info| {
        matches!(
            info.operation,
            Operation::Steer { .. } | Operation::FollowUp { .. } | Operation::Abort
        )
    }) {
        let mut line = info.delivered + 1;
        while matches!(timeline.events.get(line), Some(Event::AbortSignal { .. })) {
            line += 1;
        }
        let message = match timeline.events.get(line) {
            Some(Event::Settled {
                op,
                settlement: Settlement::Resolved(OpValue::Unit),
            }) if *op == info.op => continue,
            // Settled at once, but not as a control call settles: say what it got.
            Some(Event::Settled { op, settlement }) if *op == info.op => format!(
                "{} {} settled at once, but not resolved with nothing as a control call is: {}",
                info.operation.name(),
                info.op,
                crate::trace::describe_settlement(settlement)
            ),
            _ => format!("{} {} did not settle at once", info.operation.name(), info.op),
        };
        violations.push(Violation::new("AGENT-7.a", &[info.delivered], message));
    }
    violations
}
