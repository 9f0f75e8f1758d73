//! LIFE: flush and dispose.

use crate::model::Operation;
use crate::runtime::{OpValue, Settlement};
use crate::trace::Event;

use super::timeline::{OpInfo, Timeline};
use super::Violation;

fn ops_of<'t>(timeline: &'t Timeline<'_>, name: &str) -> Vec<&'t OpInfo<'t>> {
    timeline
        .ops
        .iter()
        .filter(|info| info.operation.name() == name)
        .collect()
}

fn is_valid_prompt(info: &OpInfo) -> bool {
    match &info.operation {
        Operation::Mode { mode, .. } => matches!(mode.as_str(), "interactive" | "print" | "json"),
        other => other.is_prompt_like(),
    }
}

/// Prompt-like operations delivered before `line`, whose run had not finished by then.
fn accepted_before<'t>(timeline: &'t Timeline<'_>, line: usize) -> Vec<&'t OpInfo<'t>> {
    timeline
        .ops
        .iter()
        .filter(|info| is_valid_prompt(info) && info.delivered < line)
        .filter(|info| info.run_finished.is_none_or(|finished| finished > line))
        .collect()
}

pub fn flush_waits_for_accepted_work(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for flush in ops_of(timeline, "flush") {
        let Some((settled, _)) = &flush.settled else { continue };
        for prompt in accepted_before(timeline, flush.delivered) {
            if prompt.run_finished.is_none_or(|finished| finished > *settled) {
                violations.push(Violation::new(
                    "LIFE-1.a",
                    &[flush.delivered, *settled],
                    format!(
                        "flush {} settled before {}, accepted before it, finished",
                        flush.op, prompt.op
                    ),
                ));
            }
        }
    }
    violations
}

pub fn flush_creates_no_work(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    // Work is what a prompt asked for: a model request or a tool call made while no prompt is
    // in flight (delivered, its run not finished), once a flush was delivered, is work the
    // flush created. Runs are told by the operations the protocol delivers, never by signals
    // (a runtime may give every request a signal of its own: PROJECT-5 judges that).
    if let Some(flush) = ops_of(timeline, "flush").first() {
        let first_flush = flush.delivered;
        let outside = timeline
            .requests
            .iter()
            .filter(|request| request.op.is_none())
            .map(|request| (request.line, "a model request"))
            .chain(
                timeline
                    .tool_calls
                    .iter()
                    .filter(|call| call.op.is_none())
                    .map(|call| (call.line, "a tool call")),
            )
            .filter(|(line, _)| *line > first_flush)
            .min_by_key(|(line, _)| *line);
        if let Some((line, what)) = outside {
            violations.push(Violation::new(
                "LIFE-2.a",
                &[first_flush, line],
                format!(
                    "{what} was made while no prompt was in flight, after flush {}: work no prompt asked for",
                    flush.op
                ),
            ));
        } else {
            // Runs counted by what the requests carry: the prompt in flight each one carries;
            // a request that carries none (its budget kept nothing of it) belongs to the run
            // whose requests share its signal, or else is a run no prompt accounts for.
            let carried: Vec<Option<crate::runtime::OpId>> = (0..timeline.requests.len())
                .map(|index| timeline.run_of_request(index))
                .collect();
            let mut runs: Vec<Result<crate::runtime::OpId, crate::runtime::SignalId>> = Vec::new();
            for (request, own) in timeline.requests.iter().zip(carried.iter()) {
                let by_signal = || {
                    timeline
                        .requests
                        .iter()
                        .zip(carried.iter())
                        .find_map(|(other, run)| run.filter(|_| other.signal == request.signal))
                };
                let run = own.or_else(by_signal).ok_or(request.signal);
                if !runs.contains(&run) {
                    runs.push(run);
                }
            }
            let prompts = timeline.ops.iter().filter(|info| is_valid_prompt(info)).count();
            if runs.len() > prompts {
                let line = timeline
                    .requests
                    .last()
                    .map(|request| request.line)
                    .unwrap_or(first_flush);
                violations.push(Violation::new(
                    "LIFE-2.a",
                    &[first_flush, line],
                    format!(
                        "{} for {}: something created work",
                        super::counted(runs.len(), "agent run", "agent runs"),
                        super::counted(prompts, "prompt", "prompts")
                    ),
                ));
            }
        }
    }
    for flush in ops_of(timeline, "flush") {
        if !accepted_before(timeline, flush.delivered).is_empty() {
            continue;
        }
        let next_is_settlement =
            matches!(timeline.next_event(flush.delivered), Some(Event::Settled { op, .. }) if *op == flush.op);
        if !next_is_settlement {
            violations.push(Violation::new(
                "LIFE-2.b",
                &[flush.delivered],
                format!("flush {} on an idle runtime did not settle at once", flush.op),
            ));
        }
    }
    violations
}

pub fn flush_reports_poison(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for flush in ops_of(timeline, "flush") {
        let Some((settled, settlement)) = &flush.settled else {
            continue;
        };
        let expected = match timeline.first_failure() {
            Some((failed_at, cause, _)) if failed_at < *settled => Settlement::Rejected(cause.clone()),
            _ => Settlement::Resolved(OpValue::Unit),
        };
        if **settlement != expected {
            let clause = match expected {
                Settlement::Rejected(_) => "LIFE-3.a",
                Settlement::Resolved(_) => "LIFE-3.b",
            };
            violations.push(Violation::new(
                clause,
                &[*settled],
                match (&**settlement, &expected) {
                    (Settlement::Resolved(value), Settlement::Resolved(_)) if *value != OpValue::Unit => format!(
                        "flush {} resolved with a value ({}); a flush resolves with nothing",
                        flush.op,
                        crate::trace::describe_settlement(settlement)
                    ),
                    _ => format!(
                        "flush {} settled {}, expected {}",
                        flush.op,
                        crate::trace::describe_settlement(settlement),
                        crate::trace::describe_settlement(&expected)
                    ),
                },
            ));
        }
    }
    violations
}

pub fn dispose_closes_the_entry_at_once(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some(first_dispose) = ops_of(timeline, "dispose").first().map(|info| info.delivered) else {
        return Vec::new();
    };
    let mut violations = Vec::new();
    for info in timeline
        .ops
        .iter()
        // An unknown mode is MODE-3's: it fails before any prompt, disposed or not.
        .filter(|info| is_valid_prompt(info) && info.delivered > first_dispose)
    {
        let rejected_with = match timeline.next_event(info.delivered) {
            Some(Event::Settled {
                op,
                settlement: Settlement::Rejected(cause),
            }) if *op == info.op => Some(cause),
            _ => None,
        };
        match rejected_with {
            None => violations.push(Violation::new(
                "LIFE-4.a",
                &[first_dispose, info.delivered],
                format!("{} arrived after dispose but was not rejected at once", info.op),
            )),
            Some(cause) => {
                // The poison cause takes precedence (conformance.md); otherwise the one code.
                let poisoned = timeline
                    .first_failure()
                    .is_some_and(|(failed_at, poison, _)| failed_at < info.delivered && poison == cause);
                if !poisoned && cause.code != crate::runtime::disposed_cause().code {
                    violations.push(Violation::new(
                        "LIFE-4.b",
                        &[info.delivered + 1],
                        format!(
                            "{} arrived after dispose and was rejected with `{}`, expected `{}`",
                            info.op,
                            cause.code,
                            crate::runtime::disposed_cause().code
                        ),
                    ));
                }
            }
        }
        if !timeline.requests_of(info.op).is_empty() || !timeline.appends_of(info.op).is_empty() {
            violations.push(Violation::new(
                "LIFE-4.a",
                &[info.delivered],
                format!("{} arrived after dispose and still ran", info.op),
            ));
        }
    }
    violations
}

pub fn dispose_waits_for_accepted_work(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some(dispose) = ops_of(timeline, "dispose").into_iter().next() else {
        return Vec::new();
    };
    let mut violations = Vec::new();
    for prompt in accepted_before(timeline, dispose.delivered) {
        if let Some((settled, _)) = &dispose.settled {
            if prompt.run_finished.is_none_or(|finished| finished > *settled) {
                violations.push(Violation::new(
                    "LIFE-5.a",
                    &[dispose.delivered, *settled],
                    format!(
                        "dispose {} settled before {}, accepted before it, finished",
                        dispose.op, prompt.op
                    ),
                ));
            }
        }
        // Accepted work runs: the only rejection it may get is the poison cause (an append
        // failed before it settled), never one of dispose's making, whatever its code.
        if let (Some(cause), Some((settled, _))) = (prompt.rejected_cause(), prompt.settled) {
            let poisoned = timeline
                .first_failure()
                .is_some_and(|(failed_at, poison, _)| failed_at <= settled && poison == cause);
            let write_failed = timeline.writes.iter().any(|write| {
                write.op == Some(prompt.op) && matches!(write.answer, Some((_, Some(failed))) if failed == cause)
            });
            if !poisoned && !write_failed {
                violations.push(Violation::new(
                    "LIFE-5.b",
                    &[settled],
                    format!(
                        "{} was accepted before dispose but rejected with `{}` instead of running",
                        prompt.op, cause.code
                    ),
                ));
            }
        }
    }
    violations
}

pub fn repeated_dispose_same_outcome(timeline: &Timeline<'_>) -> Vec<Violation> {
    let disposes = ops_of(timeline, "dispose");
    let Some(first) = disposes.first() else {
        return Vec::new();
    };
    let mut violations = Vec::new();
    for later in &disposes[1..] {
        match (&first.settled, &later.settled) {
            (Some((first_line, first_outcome)), Some((line, outcome))) => {
                if outcome != first_outcome {
                    violations.push(Violation::new(
                        "LIFE-6.a",
                        &[*first_line, *line],
                        format!("dispose {} settled differently from dispose {}", later.op, first.op),
                    ));
                }
                if later.delivered > *first_line {
                    let immediate = matches!(timeline.next_event(later.delivered), Some(Event::Settled { op, .. }) if *op == later.op);
                    if !immediate {
                        violations.push(Violation::new(
                            "LIFE-6.b",
                            &[later.delivered],
                            format!(
                                "dispose {} came after dispose {} settled, yet did not settle at once",
                                later.op, first.op
                            ),
                        ));
                    }
                }
            }
            (None, Some((line, _))) => violations.push(Violation::new(
                "LIFE-6.a",
                &[*line],
                format!("dispose {} settled while dispose {} never did", later.op, first.op),
            )),
            _ => {}
        }
    }
    violations
}

pub fn every_operation_settles(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some((end, pending)) = &timeline.end else {
        return Vec::new();
    };
    if !pending.is_empty() {
        return Vec::new();
    }
    timeline
        .ops
        .iter()
        .filter(|info| info.settled.is_none())
        .map(|info| {
            Violation::new(
                "LIFE-7.a",
                &[info.delivered, *end],
                format!(
                    "{} {} never settled, though nothing was pending",
                    info.operation.name(),
                    info.op
                ),
            )
        })
        .collect()
}
