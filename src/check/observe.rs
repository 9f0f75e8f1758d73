//! OBSERVE: extension event observers (`observers` in a scenario; `notify` effects).
//!
//! An observer only watches. What it is told must be what is stored (OBSERVE-1), every run
//! tells it of its end once (OBSERVE-2), its failure is contained (OBSERVE-3), and its answer
//! never sets anything in motion: no store write, no request, no settlement waits for an
//! observer (OBSERVE-4), so what is stored and when a prompt resolves do not depend on how slow
//! an observer is.

use crate::model::{Message, SessionEntry};
use crate::runtime::{AgentEventKind, NotifyOutcome, ObservedEvent, OpId, OpValue, Settlement};
use crate::trace::Event;

use super::timeline::{Line, Timeline};
use super::Violation;

/// The observers that subscribe to `kind`, by name.
fn subscribers<'t>(timeline: &'t Timeline<'_>, kind: AgentEventKind) -> impl Iterator<Item = &'t str> {
    timeline
        .scenario
        .observers
        .iter()
        .filter(move |observer| observer.events.contains(&kind))
        .map(|observer| observer.name.as_str())
}

/// The message entries the runtime appended, in the order it issued the appends.
fn appended_messages<'t>(timeline: &'t Timeline<'_>) -> Vec<(Line, &'t Message)> {
    timeline
        .appends
        .iter()
        .filter_map(|append| SessionEntry::as_message(append.entry).map(|message| (append.line, message)))
        .collect()
}

/// OBSERVE-1: for each observer of `message_end`, the appended messages, in order, are a
/// prefix of the messages it was told of, in order: nothing is stored that it was not told of,
/// and what it was told is what is stored.
pub fn observers_see_what_is_stored(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let appended = appended_messages(timeline);
    for observer in subscribers(timeline, AgentEventKind::MessageEnd) {
        let told: Vec<(Line, &Message)> = timeline
            .notifications
            .iter()
            .filter(|info| info.observer == observer)
            .filter_map(|info| match info.event {
                ObservedEvent::MessageEnd { message } => Some((info.line, message)),
                _ => None,
            })
            .collect();
        for (index, (line, message)) in appended.iter().enumerate() {
            match told.get(index) {
                None => {
                    violations.push(Violation::new(
                        "OBSERVE-1.a",
                        &[*line],
                        format!(
                            "the {} message appended ({}) was never announced to observer `{observer}` by message_end",
                            ordinal(index + 1),
                            super::a_role(message.role())
                        ),
                    ));
                    break;
                }
                Some((told_line, told_message)) if told_message != message => {
                    violations.push(Violation::new(
                        "OBSERVE-1.b",
                        &[*told_line, *line],
                        format!(
                            "observer `{observer}` was told of {} by message_end that differs from the {} message appended ({})",
                            super::a_role(told_message.role()),
                            ordinal(index + 1),
                            super::a_role(message.role())
                        ),
                    ));
                    break;
                }
                Some(_) => {}
            }
        }
    }
    violations
}

/// The runs of a trace: prompt-like operations whose run started, shown by a model request,
/// an append, or a resolution with a run's value (a run whose context could not be projected
/// issues no request).
fn runs(timeline: &Timeline<'_>) -> usize {
    timeline
        .ops
        .iter()
        .filter(|info| {
            info.is_prompt_like()
                && (!timeline.requests_of(info.op).is_empty()
                    || !timeline.appends_of(info.op).is_empty()
                    || matches!(info.settled, Some((_, Settlement::Resolved(value))) if *value != OpValue::Unit))
        })
        .count()
}

/// OBSERVE-2: when nothing is left pending, each observer of `agent_end` was told of exactly
/// one end per run, and each end carries the run's messages, starting with its prompt.
pub fn every_run_end_told_once(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let Some((end_line, pending)) = timeline.end else {
        return violations;
    };
    if !pending.is_empty() {
        return violations;
    }
    let runs = runs(timeline);
    for observer in subscribers(timeline, AgentEventKind::AgentEnd) {
        let ends: Vec<(Line, &Vec<Message>)> = timeline
            .notifications
            .iter()
            .filter(|info| info.observer == observer)
            .filter_map(|info| match info.event {
                ObservedEvent::AgentEnd { messages } => Some((info.line, messages)),
                _ => None,
            })
            .collect();
        if ends.len() != runs {
            let mut lines: Vec<Line> = ends.iter().map(|(line, _)| *line).collect();
            lines.push(end_line);
            violations.push(Violation::new(
                "OBSERVE-2.a",
                &lines,
                format!(
                    "observer `{observer}` was told of {} for {}: each run's end once",
                    super::counted(ends.len(), "agent_end", "agent_ends"),
                    super::counted(runs, "run", "runs")
                ),
            ));
            continue;
        }
        for (line, messages) in ends {
            if !matches!(messages.first(), Some(Message::User(_))) {
                violations.push(Violation::new(
                    "OBSERVE-2.b",
                    &[line],
                    format!(
                        "observer `{observer}` was told of a run's end whose messages do not start with its prompt"
                    ),
                ));
            }
        }
    }
    violations.extend(ends_carry_their_run(timeline));
    violations
}

/// The run `op` committed whole: it resolved with its run's result, so its appended messages
/// are its messages (PERSIST-6).
fn committed(timeline: &Timeline<'_>, op: crate::runtime::OpId) -> bool {
    timeline.op(op).is_some_and(|info| {
        matches!(
            info.settled,
            Some((_, Settlement::Resolved(OpValue::Run(_) | OpValue::Library { .. })))
        )
    })
}

/// The run a notification is about, told by the event it carries, not by when it was issued
/// (a bus that hands an observer its next event only after it answered the previous one tells
/// of a run's end while the next run is in progress): an `agent_end` belongs to the earliest
/// run whose prompt its messages start with and that this observer was not told the end of
/// yet, a `turn_end` to the run of the request whose response it carries. Otherwise (and for a
/// `message_end`), the run in progress when it was issued.
fn notified_run(
    timeline: &Timeline<'_>,
    info: &super::timeline::NotifyInfo<'_>,
    ended: &std::collections::BTreeSet<(&str, OpId)>,
) -> Option<OpId> {
    let by_content = match info.event {
        ObservedEvent::AgentEnd { messages } => messages.first().and_then(|first| {
            timeline
                .ops
                .iter()
                .filter(|op| op.is_prompt_like() && op.delivered < info.line)
                .filter(|op| !ended.contains(&(info.observer, op.op)))
                .find(|op| op.operation.text().is_some_and(|text| super::is_user_text(first, text)))
                .map(|op| op.op)
        }),
        ObservedEvent::TurnEnd {
            message: Message::Assistant(told),
            ..
        } => timeline
            .requests
            .iter()
            .position(|request| {
                request.line < info.line && request.response.is_some_and(|(_, response)| response == told)
            })
            .and_then(|index| timeline.request_run(index)),
        _ => None,
    };
    by_content.or(info.op)
}

/// OBSERVE-2, what the ends carry, for the runs that committed: an `agent_end` carries the
/// run's messages (what its entries store); the k-th `turn_end` an observer hears of a run
/// carries the run's k-th response and the results, as stored, of that response's tool calls.
/// Each notification is judged against the run it is about ([`notified_run`]).
fn ends_carry_their_run(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    // Per (observer, run): the turn_ends told so far.
    let mut turns: std::collections::BTreeMap<(&str, OpId), usize> = Default::default();
    // The (observer, run) pairs whose agent_end was told.
    let mut ended: std::collections::BTreeSet<(&str, OpId)> = Default::default();
    for info in &timeline.notifications {
        let run = notified_run(timeline, info, &ended);
        if let (ObservedEvent::AgentEnd { .. }, Some(run)) = (info.event, run) {
            ended.insert((info.observer, run));
        }
        let Some(op) = run.filter(|op| committed(timeline, *op)) else {
            continue;
        };
        let stored = timeline.appended_messages(op);
        match info.event {
            ObservedEvent::AgentEnd { messages } if !super::same_messages(messages, stored) => {
                violations.push(Violation::new(
                    "OBSERVE-2.c",
                    &[info.line],
                    format!(
                        "observer `{}` was told of {op}'s end with {}, but the run stored {}",
                        info.observer,
                        super::counted(messages.len(), "message", "messages"),
                        describe_difference(messages, stored, "message", "messages")
                    ),
                ))
            }
            ObservedEvent::TurnEnd { message, tool_results } => {
                let told = turns.entry((info.observer, op)).or_default();
                let index = *told;
                *told += 1;
                let response = timeline
                    .requests_of(op)
                    .get(index)
                    .and_then(|request| request.response)
                    .map(|(_, response)| Message::Assistant(response.clone()));
                let calls: Vec<&str> = match message {
                    Message::Assistant(assistant) => {
                        assistant.tool_calls().iter().map(|call| call.id.as_str()).collect()
                    }
                    _ => Vec::new(),
                };
                let results: Vec<&Message> = stored
                    .iter()
                    .filter(|stored| matches!(stored, Message::ToolResult(result) if calls.contains(&result.tool_call_id.as_str())))
                    .copied()
                    .collect();
                if response.as_ref() != Some(message) {
                    violations.push(Violation::new(
                        "OBSERVE-2.d",
                        &[info.line],
                        format!(
                            "observer `{}` was told of turn {} of {op} with a message that is not the run's response {}",
                            info.observer,
                            index + 1,
                            index + 1
                        ),
                    ));
                } else if !super::same_messages(tool_results, &results) {
                    violations.push(Violation::new(
                        "OBSERVE-2.e",
                        &[info.line],
                        format!(
                            "observer `{}` was told of turn {} of {op} with {}, but the run stored {} for its calls",
                            info.observer,
                            index + 1,
                            super::counted(tool_results.len(), "tool result", "tool results"),
                            describe_difference(tool_results, &results, "tool result", "tool results")
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    violations
}

/// `N messages` when the counts differ, else where the first difference is.
fn describe_difference(told: &[Message], stored: &[&Message], singular: &str, plural: &str) -> String {
    if told.len() != stored.len() {
        return super::counted(stored.len(), singular, plural);
    }
    match told.iter().zip(stored).position(|(told, stored)| told != *stored) {
        Some(index) => format!("another message at position {}", index + 1),
        None => "the same messages".to_string(),
    }
}

/// OBSERVE-3: an observer's failure is contained: no operation is rejected with the error an
/// observer threw.
pub fn observer_failure_is_contained(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let thrown: Vec<(Line, &str, &str)> = timeline
        .notifications
        .iter()
        .filter_map(|info| match info.answer {
            Some((line, NotifyOutcome::Threw { message })) => Some((line, info.observer, message.as_str())),
            _ => None,
        })
        .collect();
    for info in &timeline.ops {
        let (Some(cause), Some((settled, _))) = (info.rejected_cause(), info.settled) else {
            continue;
        };
        if let Some((line, observer, _)) = thrown
            .iter()
            .find(|(line, _, message)| *line < settled && !message.is_empty() && cause.message.contains(message))
        {
            violations.push(Violation::new(
                "OBSERVE-3.a",
                &[*line, settled],
                format!(
                    "{} was rejected with the error observer `{observer}` threw ({cause}): an observer's failure is not the runtime's",
                    info.op
                ),
            ));
        }
    }
    violations
}

/// What the runtime did, if `event` is a step of its own that an observer must not set off.
fn consequential(event: &Event) -> Option<&'static str> {
    match event {
        Event::ModelRequest { .. } => Some("a model request"),
        Event::ToolCall { .. } => Some("a tool call"),
        Event::Hook { .. } => Some("a hook"),
        Event::Append { .. } => Some("an append"),
        Event::Write { .. } => Some("an output write"),
        Event::Settled { .. } => Some("a settlement"),
        _ => None,
    }
}

/// Whether `event` is an effect or signal the runtime issued (its reaction to an input).
fn issued(event: &Event) -> bool {
    consequential(event).is_some() || matches!(event, Event::Notify { .. } | Event::AbortSignal { .. })
}

/// OBSERVE-4: an observer's answer sets nothing in motion: the runtime's reaction to a
/// notification's answer holds no store write, model request, tool call, hook, output or
/// settlement (telling the next observer is allowed).
pub fn nothing_waits_for_an_observer(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for info in &timeline.notifications {
        let Some((answered, _)) = info.answer else {
            continue;
        };
        let reaction = timeline.events[answered + 1..]
            .iter()
            .enumerate()
            .take_while(|(_, event)| issued(event))
            .find_map(|(offset, event)| consequential(event).map(|what| (offset, what)));
        if let Some((offset, what)) = reaction {
            let line = answered + 1 + offset;
            violations.push(Violation::new(
                "OBSERVE-4.a",
                &[info.line, answered, line],
                format!(
                    "observer `{}`'s answer to its {} notification set off {what}: the runtime waited for an observer",
                    info.observer,
                    info.event.kind().name(),
                ),
            ));
        }
    }
    violations
}

fn ordinal(number: usize) -> String {
    let suffix = match (number % 10, number % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{number}{suffix}")
}
