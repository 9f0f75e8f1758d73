//! A scenario's own expectations (`expect`), checked on the canonical schedule only: other
//! schedules may legitimately settle differently, and are judged by the rules alone.

use crate::runtime::{OpValue, Settlement};

use super::timeline::Timeline;
use super::Violation;

pub fn check_expectations(timeline: &Timeline<'_>) -> Vec<Violation> {
    let expect = &timeline.scenario.expect;
    let end = timeline.events.len().saturating_sub(1);
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
        let got = timeline.leaf_at(timeline.events.len());
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
        let got: Vec<&str> = timeline
            .store
            .iter()
            .map(|entry| entry.id.as_str())
            .filter(|id| !initial.contains(id))
            .collect();
        if got != appended.iter().map(String::as_str).collect::<Vec<_>>() {
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
        if got != writes.iter().map(String::as_str).collect::<Vec<_>>() {
            fail(&[end], format!("writes: expected {writes:?}, got {got:?}"));
        }
    }
    violations
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
