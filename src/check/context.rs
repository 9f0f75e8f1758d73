//! CONTEXT: the budgeted projection's observable properties.

use std::collections::{HashMap, HashSet};

use crate::model::{estimate_message_tokens, estimate_text_tokens, EntryBody, Message};

use super::timeline::Timeline;
use super::Violation;

pub fn fixed_costs_first_and_budget_used(timeline: &Timeline<'_>) -> Vec<Violation> {
    let budget = timeline.scenario.config.context;
    let mut violations = Vec::new();
    // No path holds a compaction when neither the session nor an append does: then no path
    // need be walked.
    let compaction = timeline.has_compaction();
    for request in &timeline.requests {
        let summary = compaction
            .then(|| timeline.active_path_at(request.line))
            .flatten()
            .and_then(|path| latest_compaction_summary(&path));
        let mut fixed = budget.reserved_output
            + budget.safety_margin
            + request.system_prompt.map(estimate_text_tokens).unwrap_or(0);
        let mut messages: &[Message] = request.messages;
        if summary.is_some() && !messages.is_empty() {
            fixed += estimate_message_tokens(&messages[0]);
            messages = &messages[1..];
        }
        let available = budget.total.saturating_sub(fixed);
        let kept: u64 = messages.iter().map(estimate_message_tokens).sum();
        if kept > available {
            violations.push(Violation::new(
                "CONTEXT-1.a",
                &[request.line],
                format!("the messages take {kept} tokens, but only {available} remain after {fixed} of fixed costs"),
            ));
        }
        // Not fewer either: the newest interactions that fit are all kept.
        if let Some(expected) = super::project::expected_request_messages(timeline, request) {
            let ends_with_request = expected.len() >= request.messages.len()
                && expected
                    .messages()
                    .skip(expected.len() - request.messages.len())
                    .eq(request.messages);
            if request.messages.len() < expected.len() && ends_with_request {
                violations.push(Violation::new(
                    "CONTEXT-1.b",
                    &[request.line],
                    format!(
                        "the request keeps {}; {} fit the budget (an interaction that fits was dropped)",
                        super::counted(request.messages.len(), "message", "messages"),
                        expected.len()
                    ),
                ));
            }
        }
    }
    violations
}

pub fn tool_call_never_split_from_result(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for request in &timeline.requests {
        // Where the last result of each call id is, and the call ids of the messages read so
        // far: each message is judged against them, not against the whole request again.
        let mut last_result: HashMap<&str, usize> = HashMap::new();
        for (index, message) in request.messages.iter().enumerate() {
            if let Message::ToolResult(result) = message {
                last_result.insert(result.tool_call_id.as_str(), index);
            }
        }
        let mut called: HashSet<&str> = HashSet::new();
        for (index, message) in request.messages.iter().enumerate() {
            match message {
                Message::Assistant(assistant) => {
                    for call in assistant.tool_calls() {
                        let answered = last_result.get(call.id.as_str()).is_some_and(|last| *last > index);
                        if !answered {
                            violations.push(Violation::new(
                                "CONTEXT-2.a",
                                &[request.line],
                                format!("tool call {} is in the request without its result", call.id),
                            ));
                        }
                    }
                    called.extend(assistant.tool_calls().iter().map(|call| call.id.as_str()));
                }
                Message::ToolResult(result) => {
                    if !called.contains(result.tool_call_id.as_str()) {
                        violations.push(Violation::new(
                            "CONTEXT-2.b",
                            &[request.line],
                            format!(
                                "the result of {} is in the request without its call",
                                result.tool_call_id
                            ),
                        ));
                    }
                }
                Message::User(_) => {}
            }
        }
    }
    violations
}

fn latest_compaction_summary<'a>(path: &[&'a crate::model::SessionEntry]) -> Option<(&'a str, &'a str)> {
    path.iter().rev().find_map(|entry| match &entry.body {
        EntryBody::Compaction(compaction) => {
            Some((compaction.summary.as_str(), compaction.first_kept_entry_id.as_str()))
        }
        _ => None,
    })
}

pub fn compaction_is_respected(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    if !timeline.has_compaction() {
        return violations;
    }
    for request in &timeline.requests {
        let Some(path) = timeline.active_path_at(request.line) else {
            continue;
        };
        let Some((summary, first_kept)) = latest_compaction_summary(&path) else {
            continue;
        };
        let starts_with_summary = request
            .messages
            .first()
            .is_some_and(|first| first.text().contains(summary));
        if !starts_with_summary {
            violations.push(Violation::new(
                "CONTEXT-3.a",
                &[request.line],
                "the path holds a compaction, but the request does not start with its summary",
            ));
        }
        let compaction_at = path.iter().rposition(|entry| entry.kind() == "compaction").unwrap_or(0);
        let kept_at = path[..compaction_at]
            .iter()
            .position(|entry| entry.id == first_kept)
            .unwrap_or(compaction_at);
        let kept = super::Fingerprinted::of(path[kept_at..].iter().filter_map(|entry| entry.as_message()));
        let carried = super::Fingerprinted::of(request.messages);
        for entry in &path[..kept_at] {
            let Some(message) = entry.as_message() else { continue };
            if !kept.contains(message) && carried.contains(message) {
                violations.push(Violation::new(
                    "CONTEXT-3.b",
                    &[request.line],
                    format!(
                        "entry `{}` is before firstKeptEntryId `{first_kept}` but reached the model",
                        entry.id
                    ),
                ));
            }
        }
    }
    violations
}
