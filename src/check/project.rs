//! PROJECT: one projection before every model request.

use std::collections::BTreeMap;

use crate::model::{build_context_over, merge_system_prompt, Message};
use crate::runtime::{OpId, SignalId};
use crate::trace::quote_short;

use super::timeline::Timeline;
use super::Violation;

/// The system prompt every request must carry.
pub fn expected_system_prompt(timeline: &Timeline<'_>) -> Option<String> {
    merge_system_prompt(
        timeline.scenario.config.system_prompt.as_deref(),
        &timeline.scenario.resources,
    )
}

pub fn project_1(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let system_prompt = expected_system_prompt(timeline);
    let budget = timeline.scenario.config.context;
    for request in &timeline.requests {
        let Some(op) = request.op else { continue };
        let appends = timeline.appends_of(op);
        let run_messages: Vec<&Message> = appends.iter().filter_map(|append| append.entry.as_message()).collect();
        let persisted = appends
            .iter()
            .filter(|append| append.accepted_before(request.line))
            .count();
        if persisted > run_messages.len() {
            continue;
        }
        let unpersisted = &run_messages[persisted..];
        // The active path: the restored path plus the accepted chain (materialized only when
        // the accepted entries do not simply extend the restored leaf).
        let matches = match (&timeline.initial_path, timeline.accepted_chain_before(request.line)) {
            (Some(initial), Some(accepted)) => (0..=unpersisted.len()).any(|end| {
                let suffix = accepted.iter().chain(&unpersisted[..end]).copied();
                build_context_over(initial, suffix, system_prompt.as_deref(), &budget).messages == request.messages
            }),
            _ => {
                let Some(path) = timeline.active_path_at(request.line) else {
                    continue;
                };
                (0..=unpersisted.len()).any(|end| {
                    let suffix = unpersisted[..end].iter().copied();
                    build_context_over(&path, suffix, system_prompt.as_deref(), &budget).messages == request.messages
                })
            }
        };
        let complete = timeline
            .op(op)
            .and_then(|info| info.settled)
            .is_some_and(|(line, _)| timeline.all_appends_accepted_before(op, line + 1));
        if !matches && complete {
            let roles: Vec<&str> = request.messages.iter().map(Message::role).collect();
            violations.push(Violation::new(
                "PROJECT-1",
                &[request.line],
                format!(
                    "the request's messages [{}] are not build_context(active path + unpersisted suffix) for any prefix of the run's {} messages",
                    roles.join(","),
                    run_messages.len()
                ),
            ));
        }
    }
    violations
}

pub fn project_2(timeline: &Timeline<'_>) -> Vec<Violation> {
    let expected = expected_system_prompt(timeline);
    timeline
        .requests
        .iter()
        .filter(|request| request.system_prompt != expected.as_deref())
        .map(|request| {
            Violation::new(
                "PROJECT-2",
                &[request.line],
                format!(
                    "system prompt {}, expected {}",
                    request.system_prompt.map(quote_short).unwrap_or_else(|| "none".into()),
                    expected.as_deref().map(quote_short).unwrap_or_else(|| "none".into())
                ),
            )
        })
        .collect()
}

pub fn project_3(timeline: &Timeline<'_>) -> Vec<Violation> {
    timeline
        .appends
        .iter()
        .filter(|append| append.entry.id.contains("runtime_context_"))
        .map(|append| {
            Violation::new(
                "PROJECT-3",
                &[append.line],
                format!("temporary entry `{}` was appended to the store", append.entry.id),
            )
        })
        .collect()
}

pub fn project_4(timeline: &Timeline<'_>) -> Vec<Violation> {
    let expected: Vec<&str> = timeline.scenario.tools.iter().map(|tool| tool.name.as_str()).collect();
    timeline
        .requests
        .iter()
        .filter(|request| request.tools.iter().map(String::as_str).collect::<Vec<_>>() != expected)
        .map(|request| {
            Violation::new(
                "PROJECT-4",
                &[request.line],
                format!(
                    "tools [{}], expected the registry's [{}]",
                    request.tools.join(","),
                    expected.join(",")
                ),
            )
        })
        .collect()
}

pub fn project_5(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut signal_of_op: BTreeMap<OpId, SignalId> = BTreeMap::new();
    let mut op_of_signal: BTreeMap<SignalId, OpId> = BTreeMap::new();
    let mut uses: Vec<(usize, Option<OpId>, SignalId)> = timeline
        .requests
        .iter()
        .map(|request| (request.line, request.op, request.signal))
        .chain(timeline.tool_calls.iter().map(|call| (call.line, call.op, call.signal)))
        .collect();
    uses.sort_by_key(|(line, _, _)| *line);
    // Runs are serial, so the effects between two operations' starts belong to one operation:
    // attribute by the unfinished operation at each line rather than by signal.
    for (line, _, signal) in uses {
        let Some(op) = operation_running_at(timeline, line) else {
            continue;
        };
        match signal_of_op.get(&op) {
            Some(first) if *first != signal => violations.push(Violation::new(
                "PROJECT-5",
                &[line],
                format!("{op}'s run used {first} and now {signal}: one run, one signal"),
            )),
            Some(_) => {}
            None => {
                if let Some(other) = op_of_signal.get(&signal) {
                    violations.push(Violation::new(
                        "PROJECT-5",
                        &[line],
                        format!("{signal} was already the signal of {other}'s run"),
                    ));
                }
                signal_of_op.insert(op, signal);
                op_of_signal.insert(signal, op);
            }
        }
    }
    violations
}

/// The earliest delivered prompt-like operation whose run had not finished at `line`.
pub fn operation_running_at(timeline: &Timeline<'_>, line: usize) -> Option<OpId> {
    timeline
        .ops
        .iter()
        .filter(|info| info.is_prompt_like() && info.delivered < line)
        .find(|info| info.run_finished.is_none_or(|finished| finished > line))
        .map(|info| info.op)
}
