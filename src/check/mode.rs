//! MODE: output modes and the library adapter.

use serde_json::Value;

use crate::model::{Message, Operation};
use crate::runtime::{OpValue, Settlement};
use crate::trace::Event;

use super::timeline::{OpInfo, Timeline};
use super::Violation;

fn mode_ops<'t>(timeline: &'t Timeline<'_>) -> Vec<(&'t OpInfo<'t>, &'t str)> {
    timeline
        .ops
        .iter()
        .filter_map(|info| match &info.operation {
            Operation::Mode { mode, .. } => Some((info, mode.as_str())),
            _ => None,
        })
        .collect()
}

fn known(mode: &str) -> bool {
    matches!(mode, "interactive" | "print" | "json")
}

fn last_assistant_text(messages: &[&Message]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find_map(|message| message.as_assistant())
        .map(|assistant| assistant.text())
}

pub fn modes_encode_the_result(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (info, mode) in mode_ops(timeline) {
        let Some(write) = timeline.writes.iter().find(|write| write.op == Some(info.op)) else {
            continue;
        };
        let appended = timeline.appended_messages(info.op);
        match mode {
            "interactive" | "print" => {
                if let Some(expected) = last_assistant_text(appended) {
                    if write.text != expected {
                        violations.push(Violation::new(
                            "MODE-1.a",
                            &[write.line],
                            format!(
                                "{mode} wrote {}, the final assistant text is {}",
                                super::quoted(write.text),
                                super::quoted(&expected)
                            ),
                        ));
                    }
                }
            }
            "json" => {
                let expected = JsonExpected {
                    reason: timeline.run_reason_of(info.op).map(|reason| reason.as_str()),
                    steps: timeline.requests_of(info.op).len(),
                    transcript: timeline.transcript_at(write.line),
                };
                let problem = json_problem(write.text, appended, &expected);
                if let Some(problem) = problem {
                    violations.push(Violation::new(
                        "MODE-1.b",
                        &[write.line],
                        format!("json mode: {problem}"),
                    ));
                }
            }
            _ => {}
        }
    }
    violations
}

/// What the json line must say, as far as the trace shows it.
struct JsonExpected {
    reason: Option<&'static str>,
    steps: usize,
    /// The whole transcript when the run's messages were accepted (restored path, then every
    /// accepted message, this run's included).
    transcript: Option<Vec<Message>>,
}

fn json_problem(text: &str, appended: &[&Message], expected_json: &JsonExpected) -> Option<String> {
    let Some(body) = text.strip_suffix('\n') else {
        return Some("the output does not end with a newline".into());
    };
    if body.contains('\n') {
        return Some("the output is more than one line".into());
    }
    let value: Value = match serde_json::from_str(body) {
        Ok(value) => value,
        Err(error) => return Some(format!("the output is not JSON: {error}")),
    };
    let Some(object) = value.as_object() else {
        return Some("the output is not an object".into());
    };
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    if keys != ["reason", "steps", "messages"] {
        return Some(format!(
            "keys are [{}], expected [reason,steps,messages]",
            keys.join(",")
        ));
    }
    if !object["reason"].is_string() || !object["steps"].is_u64() {
        return Some("reason must be a string and steps a number".into());
    }
    let Some(messages) = object["messages"].as_array() else {
        return Some("messages is not an array".into());
    };
    let expected: Vec<Value> = appended
        .iter()
        .map(|message| serde_json::to_value(message).expect("messages serialize"))
        .collect();
    if !messages.ends_with(&expected) {
        return Some("messages do not end with the messages the run appended".into());
    }
    if let Some(reason) = expected_json.reason {
        if object["reason"] != reason {
            return Some(format!("reason is {}, the run ended with {reason:?}", object["reason"]));
        }
    }
    if object["steps"] != expected_json.steps {
        return Some(format!(
            "steps is {}, the run made {} model requests",
            object["steps"], expected_json.steps
        ));
    }
    if let Some(transcript) = &expected_json.transcript {
        let transcript: Vec<Value> = transcript
            .iter()
            .map(|message| serde_json::to_value(message).expect("messages serialize"))
            .collect();
        if *messages != transcript {
            return Some(format!(
                "messages hold {} entries; the transcript (restored path and every accepted message) has {}",
                messages.len(),
                transcript.len()
            ));
        }
    }
    None
}

pub fn mode_prompts_and_writes_once(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (info, mode) in mode_ops(timeline) {
        if !known(mode) {
            continue;
        }
        let writes = timeline.writes.iter().filter(|write| write.op == Some(info.op)).count();
        let text = info.operation.text().unwrap_or_default();
        let prompts = timeline
            .appended_messages(info.op)
            .iter()
            .filter(|message| matches!(message, Message::User(_)) && message.text() == text)
            .count();
        // A mode that resolved prompted and wrote exactly once. One rejected because the
        // runtime was poisoned or disposed, or because its sink failed, at most once each:
        // whether that rejection was right is for the POISON, LIFE and MODE-4 rules to say.
        // Rejected on a healthy runtime, it still owes its one prompt and its one write.
        let times = |count: usize| match count {
            1 => "once".to_string(),
            count => format!("{count} times"),
        };
        let Some((settled, settlement)) = info.settled else {
            continue;
        };
        let excused = matches!(settlement, Settlement::Rejected(_))
            && (timeline.first_failure().is_some_and(|(failed, _, _)| failed < settled)
                || timeline
                    .ops
                    .iter()
                    .any(|other| other.operation.name() == "dispose" && other.delivered < info.delivered)
                || timeline
                    .writes
                    .iter()
                    .any(|write| write.op == Some(info.op) && matches!(write.answer, Some((_, Some(_))))));
        let verb = match settlement {
            Settlement::Resolved(_) => "resolved".to_string(),
            Settlement::Rejected(cause) => format!("was rejected with `{}`", cause.code),
        };
        if excused && (writes > 1 || prompts > 1) {
            violations.push(Violation::new(
                "MODE-2.a",
                &[info.delivered],
                format!(
                    "mode {} {verb} after it prompted {} and wrote {}; at most once each",
                    info.op,
                    times(prompts),
                    times(writes)
                ),
            ));
        } else if !excused && (writes != 1 || prompts != 1) {
            let healthy = if matches!(settlement, Settlement::Rejected(_)) {
                " on a healthy runtime"
            } else {
                ""
            };
            violations.push(Violation::new(
                "MODE-2.b",
                &[info.delivered],
                format!(
                    "mode {} {verb}{healthy} after it prompted {} and wrote {}; expected once each",
                    info.op,
                    times(prompts),
                    times(writes)
                ),
            ));
        }
    }
    violations
}

pub fn unknown_mode_fails_before_prompt(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (info, mode) in mode_ops(timeline) {
        if known(mode) {
            continue;
        }
        let immediate = matches!(timeline.next_event(info.delivered), Some(Event::Settled { op, settlement: Settlement::Rejected(cause) }) if *op == info.op && cause.code == "mode.unknown");
        if !immediate {
            // The delivery, and the settlement that was not the rejection (when it came).
            let mut lines = vec![info.delivered];
            lines.extend(info.settled.map(|(line, _)| line));
            violations.push(Violation::new(
                "MODE-3.a",
                &lines,
                format!("unknown mode `{mode}` was not rejected at once with `mode.unknown`"),
            ));
        }
        if !timeline.requests_of(info.op).is_empty() || !timeline.appends_of(info.op).is_empty() {
            violations.push(Violation::new(
                "MODE-3.a",
                &[info.delivered],
                format!("unknown mode `{mode}` still prompted"),
            ));
        }
    }
    violations
}

pub fn output_error_returned_unchanged(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for write in &timeline.writes {
        let Some((answered, Some(cause))) = &write.answer else {
            continue;
        };
        let Some(info) = write.op.and_then(|op| timeline.op(op)) else {
            continue;
        };
        match &info.settled {
            Some((_, Settlement::Rejected(got))) if got == *cause => {}
            Some((line, settlement)) => violations.push(Violation::new(
                "MODE-4.a",
                &[*answered, *line],
                format!(
                    "the write failed with {cause}, but {} settled {}",
                    info.op,
                    crate::trace::describe_settlement(settlement)
                ),
            )),
            None => {}
        }
        for append in timeline
            .appends_of(info.op)
            .iter()
            .filter(|append| append.accepted_before(*answered))
        {
            if !timeline.store.iter().any(|entry| entry.id == append.entry.id) {
                violations.push(Violation::new(
                    "MODE-4.b",
                    &[append.line, *answered],
                    format!("entry `{}` was rolled back after the output error", append.entry.id),
                ));
            }
        }
    }
    violations
}

pub fn library_returns_reason_and_text(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for info in timeline
        .ops
        .iter()
        .filter(|info| matches!(info.operation, Operation::Library { .. }))
    {
        if timeline.writes.iter().any(|write| write.op == Some(info.op)) {
            violations.push(Violation::new(
                "MODE-5.a",
                &[info.delivered],
                format!("library call {} wrote output", info.op),
            ));
        }
        let Some((line, settlement)) = &info.settled else {
            continue;
        };
        match settlement {
            Settlement::Resolved(OpValue::Library { text, reason }) => {
                if let Some(expected) = timeline.run_reason_of(info.op) {
                    if expected != *reason {
                        violations.push(Violation::new(
                            "MODE-5.b",
                            &[*line],
                            format!(
                                "library reason {}, the run ended with {}",
                                reason.as_str(),
                                expected.as_str()
                            ),
                        ));
                    }
                }
                let expected = last_assistant_text(timeline.appended_messages(info.op));
                if expected.as_ref().is_some_and(|expected| expected != text) {
                    violations.push(Violation::new(
                        "MODE-5.c",
                        &[*line],
                        format!(
                            "library text {}, the last assistant text is {}",
                            super::quoted(text),
                            super::quoted(&expected.unwrap_or_default())
                        ),
                    ));
                }
            }
            Settlement::Resolved(other) => violations.push(Violation::new(
                "MODE-5.b",
                &[*line],
                format!(
                    "library call resolved with {}, expected {{reason, text}}",
                    match other {
                        OpValue::Run(_) => "a whole run result",
                        OpValue::Unit => "nothing",
                        OpValue::Library { .. } => "a library value",
                    }
                ),
            )),
            Settlement::Rejected(cause) => {
                // The library adapter passes prompt()'s error on unchanged: the poison cause, or
                // the disposed rejection.
                let poison = timeline.first_failure().map(|(_, poison, _)| poison);
                if poison != Some(cause) && cause.code != crate::runtime::disposed_cause().code {
                    violations.push(Violation::new(
                        "MODE-5.d",
                        &[*line],
                        format!("library call rejected with `{}`, not prompt()'s own error", cause.code),
                    ));
                }
            }
        }
    }
    violations
}

pub fn mode_settles_after_its_write(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (info, _) in mode_ops(timeline) {
        let Some((settled, _)) = info.settled else { continue };
        for write in timeline.writes.iter().filter(|write| write.op == Some(info.op)) {
            if write.answer.is_none_or(|(answered, _)| answered > settled) {
                violations.push(Violation::new(
                    "MODE-6.a",
                    &[write.line, settled],
                    format!("mode {} settled before the sink answered its write", info.op),
                ));
            }
        }
    }
    violations
}
