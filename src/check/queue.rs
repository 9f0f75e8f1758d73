//! QUEUE: one operation queue, beforeCount at operation start.

use std::collections::BTreeMap;

use crate::model::Message;
use crate::runtime::{OpValue, Settlement, SignalId};

use super::timeline::Timeline;
use super::Violation;

pub fn prompts_run_one_at_a_time_in_order(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = started_before_previous_finished(timeline);
    // Runs are the spans of their signals' use; the spans of two runs' signals may not
    // overlap. A signal's run is the run of its first use, told by what the request carries
    // (or by the call's request), so two signals of one run (a runtime that gives every request
    // a signal of its own breaks PROJECT-5, not the queue) are not two runs.
    #[derive(Clone, Copy)]
    enum Use {
        Request(usize),
        ToolCall(usize),
    }
    let run_of = |first: Use| match first {
        Use::Request(index) => timeline.request_run(index),
        Use::ToolCall(index) => timeline.tool_call_run(index),
    };
    let mut spans: BTreeMap<SignalId, (usize, usize, Use)> = BTreeMap::new();
    let uses = timeline
        .requests
        .iter()
        .enumerate()
        .flat_map(|(index, request)| {
            let end = request.response.as_ref().map(|(line, _)| *line).unwrap_or(request.line);
            [(request.signal, request.line, end, Use::Request(index))]
        })
        .chain(timeline.tool_calls.iter().enumerate().map(|(index, call)| {
            let end = call.answer.as_ref().map(|(line, _)| *line).unwrap_or(call.line);
            (call.signal, call.line, end, Use::ToolCall(index))
        }));
    for (signal, line, end, used) in uses {
        let span = spans.entry(signal).or_insert((line, end, used));
        if line < span.0 {
            span.0 = line;
            span.2 = used;
        }
        span.1 = span.1.max(end);
    }
    let spans: Vec<(SignalId, (usize, usize, Use))> = spans.into_iter().collect();
    for (index, (signal, (start, end, first))) in spans.iter().enumerate() {
        for (other, (other_start, other_end, other_first)) in &spans[index + 1..] {
            if !(start < other_end && other_start < end) {
                continue;
            }
            let run = run_of(*first);
            if run.is_some() && run == run_of(*other_first) {
                continue;
            }
            violations.push(Violation::new(
                "QUEUE-1.b",
                &[*start.max(other_start)],
                format!("the runs of {signal} and {other} overlap: prompts must run one at a time"),
            ));
        }
    }
    // Prompt-like operations that succeed settle in arrival order.
    let mut last: Option<(usize, crate::runtime::OpId)> = None;
    for info in timeline.ops.iter().filter(|info| info.is_prompt_like()) {
        let Some((line, Settlement::Resolved(_))) = &info.settled else {
            continue;
        };
        let finished = info.run_finished.unwrap_or(*line);
        if let Some((previous_line, previous_op)) = last {
            if finished < previous_line {
                violations.push(Violation::new(
                    "QUEUE-1.c",
                    &[finished, previous_line],
                    format!("{} finished before {previous_op}, which arrived earlier", info.op),
                ));
            }
        }
        last = Some((finished, info.op));
    }
    violations
}

/// A run starts only after the previous one finished: a model request that already carries the
/// prompt of a later operation, while an earlier prompt-like operation has not finished
/// (settled, or for a mode, written), means the later run started first. The prompt's text
/// is what shows it: it enters the transcript only when its run starts.
fn started_before_previous_finished(timeline: &Timeline<'_>) -> Vec<Violation> {
    let count = |messages: &[Message], text: &str| {
        messages
            .iter()
            .filter(|message| matches!(message, Message::User(_)) && message.text() == text)
            .count()
    };
    let mut violations = Vec::new();
    let mut reported = std::collections::BTreeSet::new();
    for request in &timeline.requests {
        let Some(earlier) = request.op.and_then(|op| timeline.op(op)) else {
            continue;
        };
        if earlier.run_finished.is_some_and(|finished| finished < request.line) {
            continue;
        }
        // The transcript at the request, derived only when a later operation is there to judge.
        let mut history: Option<Option<Vec<Message>>> = None;
        for later in timeline
            .ops
            .iter()
            .filter(|info| info.is_prompt_like() && info.op > earlier.op && info.delivered < request.line)
        {
            if reported.contains(&later.op) {
                continue;
            }
            let Some(text) = later.operation.text() else { continue };
            let Some(history) = history.get_or_insert_with(|| timeline.transcript_at(request.line)) else {
                break;
            };
            // What may carry the same text legitimately: the history, the earlier run's own
            // prompt, and steering or follow-up messages delivered before the request.
            let allowed = count(history, text)
                + usize::from(earlier.operation.text() == Some(text))
                + timeline
                    .ops
                    .iter()
                    .filter(|info| {
                        !info.is_prompt_like() && info.delivered < request.line && info.operation.text() == Some(text)
                    })
                    .count();
            if count(request.messages, text) > allowed {
                reported.insert(later.op);
                let waiting = match earlier.settled {
                    Some((line, _)) => format!("settled only at line {:04}", line + 1),
                    None => "had not settled".to_string(),
                };
                violations.push(Violation::new(
                    "QUEUE-1.a",
                    &[request.line],
                    format!(
                        "{}'s run started (its prompt reached the model) while {} {waiting}: a queued prompt starts only after the previous one settled",
                        later.op, earlier.op
                    ),
                ));
            }
        }
    }
    violations
}

pub fn each_run_appends_its_own_messages(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for info in timeline.ops.iter().filter(|info| info.is_prompt_like()) {
        let succeeded = matches!(
            &info.settled,
            Some((_, Settlement::Resolved(OpValue::Run(_) | OpValue::Library { .. })))
        ) || timeline.writes.iter().any(|write| write.op == Some(info.op));
        if !succeeded {
            continue;
        }
        let appended = timeline.appended_messages(info.op);
        let Some(first) = timeline.appends_of(info.op).first().map(|append| append.line) else {
            continue;
        };
        let text = info.operation.text().unwrap_or_default();
        if !appended.first().is_some_and(|first| super::is_user_text(first, text)) {
            violations.push(Violation::new(
                "QUEUE-2.a",
                &[first],
                format!("{} did not append its own user message first", info.op),
            ));
        }
        let appended_assistants = || appended.iter().filter_map(|message| message.as_assistant());
        let responses = || {
            timeline
                .requests_of(info.op)
                .iter()
                .filter_map(|request| request.response.map(|(_, message)| message))
        };
        // As messages: each appended assistant message is its response, in order.
        let same = appended_assistants().eq(responses());
        if !same {
            violations.push(Violation::new(
                "QUEUE-2.b",
                &[first],
                format!(
                    "{} appended {}, but its run received {}: it must append exactly its own",
                    info.op,
                    super::counted(appended_assistants().count(), "assistant message", "assistant messages"),
                    super::counted(responses().count(), "model response", "model responses")
                ),
            ));
        }
    }
    violations
}
