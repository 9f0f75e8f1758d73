//! POISON: the first failed append poisons the runtime for good, with that cause.

use crate::model::Operation;
use crate::runtime::Settlement;
use crate::trace::Event;

use super::timeline::Timeline;
use super::Violation;

pub fn failing_prompt_rejects_with_the_cause(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some((line, cause, append)) = timeline.first_failure() else {
        return Vec::new();
    };
    let Some(op) = append.op.and_then(|op| timeline.op(op)) else {
        return Vec::new();
    };
    match &op.settled {
        Some((_, Settlement::Rejected(got))) if got == cause => Vec::new(),
        Some((settled, settlement)) => vec![Violation::new(
            "POISON-1.a",
            &[line, *settled],
            format!(
                "{}'s append failed with {cause}, but it settled {}",
                op.op,
                crate::trace::describe_settlement(settlement)
            ),
        )],
        None => Vec::new(),
    }
}

pub fn nothing_runs_after_a_failed_append(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some((failed_at, cause, _)) = timeline.first_failure() else {
        return Vec::new();
    };
    timeline.events[failed_at + 1..]
        .iter()
        .enumerate()
        .filter(|(_, event)| matches!(event, Event::ModelRequest { .. } | Event::Append { .. }))
        .map(|(offset, event)| {
            let (clause, what) = if matches!(event, Event::Append { .. }) {
                ("POISON-2.b", "an append")
            } else {
                ("POISON-2.a", "a model request")
            };
            Violation::new(
                clause,
                &[failed_at, failed_at + 1 + offset],
                format!("{what} after the append failure ({cause}): a poisoned runtime does nothing more"),
            )
        })
        .collect()
}

pub fn queued_prompts_reject_with_the_cause(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some((failed_at, cause, append)) = timeline.first_failure() else {
        return Vec::new();
    };
    let mut violations = Vec::new();
    for info in timeline
        .ops
        .iter()
        .filter(|info| info.is_prompt_like() && info.delivered < failed_at)
    {
        if Some(info.op) == append.op || info.run_finished.is_some_and(|finished| finished < failed_at) {
            continue;
        }
        if let Some((line, settlement)) = &info.settled {
            if **settlement != Settlement::Rejected(cause.clone()) && !is_unknown_mode(info.operation) {
                violations.push(Violation::new(
                    "POISON-3.a",
                    &[failed_at, *line],
                    format!(
                        "{} was queued at the failure but settled {}",
                        info.op,
                        crate::trace::describe_settlement(settlement)
                    ),
                ));
            }
        }
    }
    violations
}

/// A mode operation with a name no runtime knows fails before any prompt (MODE-3).
fn is_unknown_mode(operation: &Operation) -> bool {
    matches!(operation, Operation::Mode { mode, .. } if !matches!(mode.as_str(), "interactive" | "print" | "json"))
}

pub fn later_calls_reject_with_the_cause(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some((failed_at, cause, _)) = timeline.first_failure() else {
        return Vec::new();
    };
    let mut violations = Vec::new();
    for info in timeline.ops.iter().filter(|info| info.delivered > failed_at) {
        let poisonable = info.is_prompt_like() || matches!(info.operation, Operation::Flush);
        if !poisonable || is_unknown_mode(info.operation) {
            continue;
        }
        if let Some((line, settlement)) = &info.settled {
            if **settlement != Settlement::Rejected(cause.clone()) {
                violations.push(Violation::new(
                    "POISON-4.a",
                    &[failed_at, *line],
                    format!(
                        "{} {} came after the failure ({cause}) but settled {}",
                        info.operation.name(),
                        info.op,
                        crate::trace::describe_settlement(settlement)
                    ),
                ));
            }
        }
    }
    violations
}

pub fn stored_tree_stays_valid(timeline: &Timeline<'_>) -> Vec<Violation> {
    // Judge only what the runtime added: a broken initial session is RESTORE/PATH's business.
    let mut violations = Vec::new();
    let end = timeline
        .end
        .as_ref()
        .map(|(line, _)| *line)
        .unwrap_or(timeline.events.len().saturating_sub(1));
    let initial = timeline.scenario.session.len();
    let added = timeline.store.get(initial..).unwrap_or_default();
    // The store's ids, sorted: an id's count is a binary search. The store is read once per
    // run, and maps of it cost more than the rest of the rule.
    let mut stored_ids: Vec<&str> = timeline.store.iter().map(|entry| entry.id.as_str()).collect();
    stored_ids.sort_unstable();
    let count_of = |id: &str| {
        let first = stored_ids.partition_point(|other| *other < id);
        stored_ids[first..].iter().take_while(|other| **other == id).count()
    };
    let acknowledged = |id: &str| {
        timeline
            .appends
            .iter()
            .any(|append| matches!(append.answer, Some((_, crate::trace::AppendAnswer::Ok))) && append.entry.id == id)
    };
    for entry in added {
        let count = count_of(&entry.id);
        if count > 1 {
            violations.push(Violation::new(
                "POISON-5.a",
                &[end],
                format!("the store holds {count} entries with id `{}`", entry.id),
            ));
        }
        if let Some(parent) = &entry.parent_id {
            // A parent the store acknowledged and then lost (a crash without sync, in the
            // networked world) is the store's failure, judged by DURABLE-1, not a retry's.
            if count_of(parent) == 0 && !acknowledged(parent) {
                violations.push(Violation::new(
                    "POISON-5.b",
                    &[end],
                    format!(
                        "stored entry `{}` names parent `{parent}`, which the store does not hold",
                        entry.id
                    ),
                ));
            }
        }
    }
    // The added entries grouped by parent, parents in order (the root first), each group's
    // children in store order (the sort is stable).
    let mut children: Vec<(Option<&str>, &str)> = added
        .iter()
        .map(|entry| (entry.parent_id.as_deref(), entry.id.as_str()))
        .collect();
    children.sort_by_key(|(parent, _)| *parent);
    for siblings in children.chunk_by(|(parent, _), (other, _)| parent == other) {
        if siblings.len() > 1 {
            let ids: Vec<&str> = siblings.iter().map(|(_, id)| *id).collect();
            violations.push(Violation::new(
                "POISON-5.c",
                &[end],
                format!(
                    "{} gained {} appended children [{}]: a retry wrote a second copy",
                    match siblings[0].0 {
                        Some(parent) => format!("entry `{parent}`"),
                        None => "the root (no parent)".to_string(),
                    },
                    ids.len(),
                    ids.join(",")
                ),
            ));
        }
    }
    violations
}
