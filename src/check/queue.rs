//! QUEUE: one operation queue, beforeCount at operation start.

use std::collections::{BTreeMap, HashMap};

use crate::model::Message;
use crate::runtime::{OpValue, Settlement, SignalId};

use super::settle::{latest, Kind, Latest, State};
use super::timeline::{EffectKind, Line, Timeline};
use super::Violation;

pub fn prompts_run_one_at_a_time_in_order(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = started_before_previous_finished(timeline);
    violations.extend(started_when_its_turn_came(timeline));
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
    for (index, other) in overlapping_pairs(&spans) {
        let (signal, (start, _, first)) = &spans[index];
        let (other, (other_start, _, other_first)) = &spans[other];
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

/// The pairs `(i, j)`, `i < j`, of `spans` (each a start and an end line) that overlap, in order:
/// found by a sweep in the order of their starts that keeps only the spans still open, so a
/// conforming trace, whose runs follow one another, costs its number of runs.
fn overlapping_pairs<K, T>(spans: &[(K, (usize, usize, T))]) -> Vec<(usize, usize)> {
    let overlap = |a: usize, b: usize| {
        let (_, (a_start, a_end, _)) = &spans[a];
        let (_, (b_start, b_end, _)) = &spans[b];
        a_start < b_end && b_start < a_end
    };
    let mut by_start: Vec<usize> = (0..spans.len()).collect();
    by_start.sort_by_key(|index| spans[*index].1 .0);
    let mut open: Vec<usize> = Vec::new();
    let mut pairs = Vec::new();
    for index in by_start {
        let start = spans[index].1 .0;
        // A span that ended by this start overlaps neither this span nor any later one.
        open.retain(|other| spans[*other].1 .1 > start);
        pairs.extend(
            open.iter()
                .filter(|other| overlap(index, **other))
                .map(|other| (index.min(*other), index.max(*other))),
        );
        open.push(index);
    }
    pairs.sort_unstable();
    pairs
}

/// A run starts only after the previous one finished: a model request that already carries the
/// prompt of a later operation, while an earlier prompt-like operation has not finished
/// (settled, or for a mode, written), means the later run started first. The prompt's text
/// is what shows it: it enters the transcript only when its run starts.
///
/// Each request is read once: its user texts are counted, and only the later operations whose
/// prompt is among them are judged, so the cost is the size of what the requests carry.
fn started_before_previous_finished(timeline: &Timeline<'_>) -> Vec<Violation> {
    // The prompt-like operations by their text (positions in `ops`), and the delivery lines of
    // the others (steer, followUp) by theirs, in trace order.
    let mut prompts_by_text: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut others_by_text: HashMap<&str, Vec<Line>> = HashMap::new();
    for (position, info) in timeline.ops.iter().enumerate() {
        let Some(text) = info.operation.text() else { continue };
        if info.is_prompt_like() {
            prompts_by_text.entry(text).or_default().push(position);
        } else {
            others_by_text.entry(text).or_default().push(info.delivered);
        }
    }
    let mut violations = Vec::new();
    let mut reported = std::collections::BTreeSet::new();
    for request in &timeline.requests {
        let Some(earlier) = request.op.and_then(|op| timeline.op(op)) else {
            continue;
        };
        if earlier.run_finished.is_some_and(|finished| finished < request.line) {
            continue;
        }
        let carried = count_user_texts(request.messages);
        // The later prompt-like operations delivered before the request whose prompt it
        // carries, in order.
        let mut later: Vec<usize> = carried
            .keys()
            .filter_map(|text| prompts_by_text.get(text.as_ref()))
            .flatten()
            .copied()
            .filter(|position| {
                let info = &timeline.ops[*position];
                info.op > earlier.op && info.delivered < request.line && !reported.contains(&info.op)
            })
            .collect();
        if later.is_empty() {
            continue;
        }
        later.sort_unstable();
        // The transcript at the request, derived only when a later operation is there to judge.
        let Some(history) = timeline.transcript_at(request.line) else {
            continue;
        };
        let in_history = count_user_texts(&history);
        for position in later {
            let later = &timeline.ops[position];
            let Some(text) = later.operation.text() else { continue };
            // What may carry the same text legitimately: the history, the earlier run's own
            // prompt, and steering or follow-up messages delivered before the request.
            let steered = others_by_text
                .get(text)
                .map_or(0, |lines| lines.partition_point(|line| *line < request.line));
            let allowed = in_history.get(text).copied().unwrap_or(0)
                + usize::from(earlier.operation.text() == Some(text))
                + steered;
            if carried.get(text).copied().unwrap_or(0) > allowed {
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

/// QUEUE-1.d: an accepted prompt, mode or library call starts (its first output: an effect of
/// its run, or its settlement) in the step its turn comes: its delivery, or the previous run's
/// finish (settled, or for a mode, written) if that came later. A queue that waits for one more
/// input (the sink's answer to a mode's write, a timer, the next call) starts it late.
fn started_when_its_turn_came(timeline: &Timeline<'_>) -> Vec<Violation> {
    let failure = timeline.first_failure().map(|(line, _, _)| line);
    let mut violations = Vec::new();
    let mut disposed = false;
    // The previous accepted run's finish: `Some(None)` before the first, `None` once one never
    // finished (what follows it is not judged).
    let mut previous: Option<Option<Line>> = Some(None);
    for info in &timeline.ops {
        let kind = Kind::of(info.operation);
        let state = State {
            poisoned: failure.is_some_and(|failed| failed < info.delivered),
            disposed,
            ..State::default()
        };
        disposed |= kind == Kind::Dispose;
        // Only a run the runtime accepts queues: a call it refuses at once is SETTLE-2.c's.
        if !matches!(latest(kind, state), Latest::Run | Latest::Write) {
            continue;
        }
        let Some(previous_finish) = previous else { break };
        let turn = previous_finish.map_or(info.delivered, |finished| finished.max(info.delivered));
        let text = info.operation.text();
        let start = (timeline.effects_of(info.op).map(|(_, issued, _)| issued))
            .chain(info.settled.map(|(line, _)| line))
            // A request that carries its prompt is its run's, whatever it is attributed to.
            .chain(
                (timeline.requests.iter())
                    .filter(|request| request.line > info.delivered)
                    .filter(|request| {
                        text.is_some() && request.messages.iter().any(|m| super::user_text(m).as_deref() == text)
                    })
                    .map(|request| request.line),
            )
            .min();
        if let Some(next) = timeline.next_input_after(turn) {
            if start.is_none_or(|start| start > next) {
                violations.push(Violation::new(
                    "QUEUE-1.d",
                    &[info.delivered, turn, next],
                    format!(
                        "{} {}'s turn came at line {} ({}), but it had not started when the world's next input came (line {}): a queued run starts when the previous one finishes",
                        info.operation.name(),
                        info.op,
                        turn + 1,
                        match previous_finish {
                            Some(finished) if finished > info.delivered => "the previous run finished",
                            _ => "its delivery",
                        },
                        next + 1
                    ),
                ));
            }
        }
        // Its finish as its own outputs show it: its settlement, or a mode's one write (one
        // that writes more than once streams, and finishes when it settles).
        let writes: Vec<Line> = (timeline.effects_of(info.op))
            .filter(|(kind, _, _)| *kind == EffectKind::Write)
            .map(|(_, issued, _)| issued)
            .collect();
        let settled = info.settled.map(|(line, _)| line);
        let finished = match (kind, writes.as_slice()) {
            (Kind::Mode, [write]) => Some(settled.map_or(*write, |settled| settled.min(*write))),
            _ => settled,
        };
        previous = finished.map(Some);
    }
    violations
}

/// How many user messages of `messages` hold each text.
fn count_user_texts(messages: &[Message]) -> HashMap<std::borrow::Cow<'_, str>, usize> {
    let mut counts: HashMap<std::borrow::Cow<'_, str>, usize> = HashMap::new();
    for text in messages.iter().filter_map(super::user_text) {
        *counts.entry(text).or_default() += 1;
    }
    counts
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
