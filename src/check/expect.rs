//! A scenario's own expectations (`expect`), checked on the canonical schedule only: other
//! schedules may legitimately settle differently, and are judged by the rules alone.
//!
//! An `expect` block states what the rules allow, never a value the seed leaves open, so two
//! things are compared up to the implementation's choices:
//!
//! - **Appended ids** are compared by their append order: the implementation's k-th distinct
//!   appended id stands for the id rule's k-th (`entry-1`, `entry-2`, ... by default), since a
//!   runtime may draw ids for other purposes too (PERSIST-4 judges the ids themselves).
//! - **Timestamps** inside a json mode's output (`writes`) are not compared: when a runtime
//!   reads its clock is its own (PERSIST-8 judges entry stamps; MODE-1 judges that the output
//!   is the transcript the runtime stored).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::runtime::{OpValue, Settlement};

use super::timeline::Timeline;
use super::Violation;

pub fn check_expectations(timeline: &Timeline<'_>) -> Vec<Violation> {
    let expect = &timeline.scenario.expect;
    let end = timeline.events.len().saturating_sub(1);
    let renamed = canonical_ids(timeline);
    let canonical = |id: &str| renamed.get(id).cloned().unwrap_or_else(|| id.to_string());
    let mut violations = Vec::new();
    let mut fail = |lines: &[usize], message: String| violations.push(Violation::new("expect", lines, message));
    if let Some(restore) = &expect.restore {
        let got = match (&timeline.restored, &timeline.restore_failed) {
            (_, Some((_, cause))) => cause.code.clone(),
            (Some(_), None) => "ok".to_string(),
            (None, None) => "none".to_string(),
        };
        if &got != restore {
            fail(&[0], format!("restore: expected {restore}, got {got}"));
        }
    }
    if let Some(settlements) = &expect.settlements {
        for (index, expected) in settlements.iter().enumerate() {
            let op = crate::runtime::OpId(index as u32 + 1);
            let info = timeline.op(op);
            let (line, got) = match info.and_then(|info| info.settled.as_ref()) {
                None => (info.map(|info| info.delivered).unwrap_or(end), "pending".to_string()),
                Some((line, settlement)) => (*line, settlement_word(settlement, expected)),
            };
            if &got != expected {
                fail(&[line], format!("{op}: expected {expected}, got {got}"));
            }
        }
    }
    if let Some(leaf) = &expect.leaf {
        // The leaf as the store's acknowledged chain shows it. A runtime's own leaf is not
        // observable at the seam until it appends again: the parent of its next append, which
        // PERSIST-2 and PERSIST-5 judge on every schedule.
        let got = timeline.leaf_at(timeline.events.len()).map(canonical);
        if got.as_deref() != Some(leaf.as_str()) {
            fail(
                &[end],
                format!("leaf: expected {leaf}, got {}", got.unwrap_or_else(|| "null".into())),
            );
        }
    }
    if let Some(appended) = &expect.appended {
        let initial: Vec<&str> = timeline
            .scenario
            .session
            .iter()
            .map(|entry| entry.id.as_str())
            .collect();
        let got: Vec<String> = timeline
            .store
            .iter()
            .map(|entry| entry.id.as_str())
            .filter(|id| !initial.contains(id))
            .map(canonical)
            .collect();
        if got != *appended {
            fail(
                &[end],
                format!(
                    "stored entries: expected [{}], got [{}]",
                    appended.join(","),
                    got.join(",")
                ),
            );
        }
    }
    let counts = [
        ("model requests", expect.model_requests, timeline.requests.len()),
        ("appends", expect.appends, timeline.appends.len()),
        ("tool calls", expect.tool_calls, timeline.tool_calls.len()),
    ];
    for (what, expected, got) in counts {
        if let Some(expected) = expected {
            if expected != got {
                fail(&[end], format!("{what}: expected {expected}, got {got}"));
            }
        }
    }
    if let Some(writes) = &expect.writes {
        let got: Vec<&str> = timeline.writes.iter().map(|write| write.text).collect();
        let same =
            got.len() == writes.len() && got.iter().zip(writes).all(|(got, expected)| same_output(got, expected));
        if !same {
            fail(
                &[end],
                format!(
                    "writes: expected {}, got {}",
                    super::quoted_list(writes.iter().map(String::as_str)),
                    super::quoted_list(got)
                ),
            );
        }
    }
    violations
}

/// The implementation's appended ids, each mapped to the id rule's id of the same append
/// order (its first append's id to the rule's first id, and so on).
fn canonical_ids(timeline: &Timeline<'_>) -> BTreeMap<String, String> {
    let ids = &timeline.scenario.config.ids;
    let mut renamed = BTreeMap::new();
    for append in &timeline.appends {
        let next = ids.nth(renamed.len() as u64);
        renamed.entry(append.entry.id.clone()).or_insert(next);
    }
    renamed
}

/// Two outputs agree: the same text, or, for a json mode's line, the same JSON but for the
/// messages' timestamps, and both ending in the same way.
fn same_output(got: &str, expected: &str) -> bool {
    if got == expected {
        return true;
    }
    let parse = |text: &str| serde_json::from_str::<Value>(text).ok().map(without_timestamps);
    got.ends_with('\n') == expected.ends_with('\n')
        && matches!((parse(got), parse(expected)), (Some(a), Some(b)) if a == b)
}

fn without_timestamps(mut value: Value) -> Value {
    if let Some(messages) = value.get_mut("messages").and_then(Value::as_array_mut) {
        for message in messages {
            if let Some(object) = message.as_object_mut() {
                object.remove("timestamp");
            }
        }
    }
    value
}

/// The settlement in the vocabulary of the expectation it is compared with.
fn settlement_word(settlement: &Settlement, expected: &str) -> String {
    match settlement {
        Settlement::Rejected(cause) => format!("rejected:{}", cause.code),
        Settlement::Resolved(value) => {
            let reason = match value {
                OpValue::Run(result) => Some(result.reason.as_str()),
                OpValue::Library { reason, .. } => Some(reason.as_str()),
                OpValue::Unit => None,
            };
            match reason {
                Some(reason) if expected.starts_with("resolved:") => format!("resolved:{reason}"),
                _ => "resolved".to_string(),
            }
        }
    }
}
