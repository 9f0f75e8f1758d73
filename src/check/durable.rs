//! DURABLE: what survives the network and a crash (the networked world, `net`).
//!
//! These rules read the world's own events: `reopened` (the session file read back after the
//! run and a new runtime restored from it at the last acknowledged leaf), `store_opened` and
//! `net`. A trace without them (the in-process scheduler) holds every DURABLE rule trivially.

use std::collections::BTreeSet;

use crate::runtime::{Cause, Settlement};
use crate::store::SyncPolicy;
use crate::trace::{AppendAnswer, Event};

use super::timeline::{Line, Timeline};
use super::Violation;

/// The `reopened` event: its line, the leaf, the stored ids and the restore's outcome.
type ReopenedRef<'a> = (Line, Option<&'a str>, &'a [String], &'a Result<Vec<String>, Cause>);

fn reopened<'a>(timeline: &Timeline<'a>) -> Option<ReopenedRef<'a>> {
    timeline
        .events
        .iter()
        .enumerate()
        .find_map(|(line, event)| match event {
            Event::Reopened { leaf, stored, outcome } => Some((line, leaf.as_deref(), stored.as_slice(), outcome)),
            _ => None,
        })
}

/// Whether the store syncs before it acknowledges: the premise of DURABLE-1 and DURABLE-2.
fn syncs_every_append(timeline: &Timeline<'_>) -> bool {
    timeline
        .scenario
        .net
        .as_ref()
        .is_some_and(|net| net.sync == SyncPolicy::EveryAppend)
}

/// DURABLE-1: with sync on, no acknowledged entry is lost, whatever crashed.
pub fn acknowledged_entries_survive(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some((line, _, stored, _)) = reopened(timeline) else {
        return Vec::new();
    };
    if !syncs_every_append(timeline) {
        return Vec::new();
    }
    let stored: BTreeSet<&str> = stored.iter().map(String::as_str).collect();
    timeline
        .appends
        .iter()
        .filter_map(|append| match append.answer {
            Some((acked, AppendAnswer::Ok)) if !stored.contains(append.entry.id.as_str()) => Some(Violation::new(
                "DURABLE-1.a",
                &[append.line, acked, line],
                format!(
                    "entry `{}` was acknowledged but the session file read back does not hold it",
                    append.entry.id
                ),
            )),
            _ => None,
        })
        .collect()
}

/// DURABLE-2: a new runtime restored from the file at the last acknowledged leaf gets exactly
/// the acknowledged chain.
pub fn nothing_below_an_unknown_fate(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some((line, leaf, _, outcome)) = reopened(timeline) else {
        return Vec::new();
    };
    if !syncs_every_append(timeline) {
        return Vec::new();
    }
    // The chain a caller expects: the session's tree plus every acknowledged append, from the
    // last acknowledged leaf.
    let expected: Vec<String> = timeline
        .active_path_at(line)
        .unwrap_or_default()
        .iter()
        .map(|entry| entry.id.clone())
        .collect();
    let leaf = leaf.unwrap_or("null");
    match outcome {
        Err(cause) => vec![Violation::new(
            "DURABLE-2.a",
            &[line],
            format!("a new runtime could not be restored from the file at leaf `{leaf}`: {cause}"),
        )],
        Ok(path) if *path != expected => vec![Violation::new(
            "DURABLE-2.b",
            &[line],
            format!(
                "restored at `{leaf}`, the file gives the chain [{}]; the acknowledged chain is [{}]",
                path.join(","),
                expected.join(",")
            ),
        )],
        Ok(_) => Vec::new(),
    }
}

/// DURABLE-3: an append whose answer was lost poisons the runtime with that cause and nothing is
/// appended after it. (That the file read back is still a valid tree is POISON-5, which in the
/// networked world judges the file.)
pub fn reopened_session_is_the_acknowledged_one(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for append in &timeline.appends {
        let Some((answered, AppendAnswer::Lost { cause })) = append.answer else {
            continue;
        };
        let Some(info) = append.op.and_then(|op| timeline.op(op)) else {
            continue;
        };
        match info.settled {
            Some((_, Settlement::Rejected(got))) if got == cause => {}
            Some((settled, settlement)) => violations.push(Violation::new(
                "DURABLE-3.a",
                &[answered, settled],
                format!(
                    "the answer to `{}` was lost ({cause}), but {} settled {}",
                    append.entry.id,
                    info.op,
                    crate::trace::describe_settlement(settlement)
                ),
            )),
            None => {}
        }
        for later in timeline.appends.iter().filter(|later| later.line > answered) {
            violations.push(Violation::new(
                "DURABLE-3.b",
                &[answered, later.line],
                format!(
                    "append of `{}` after the answer to `{}` was lost: an ambiguous append must not be retried or followed",
                    later.entry.id, append.entry.id
                ),
            ));
        }
    }
    violations
}

/// DURABLE-4: the file stays readable across crashes: a torn last line is excluded when the
/// store reopens it, never merged with the next append, and the file read back parses.
pub fn torn_tail_is_cut_off(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some((line, _, _, outcome)) = reopened(timeline) else {
        return Vec::new();
    };
    match outcome {
        Err(cause) if cause.code.starts_with("session.") || cause.code.starts_with("store.") => {
            let torn: Vec<Line> = timeline
                .events
                .iter()
                .enumerate()
                .filter(|(_, event)| {
                    matches!(
                        event,
                        Event::StoreOpened {
                            torn_bytes: Some(_),
                            ..
                        }
                    )
                })
                .map(|(at, _)| at)
                .collect();
            let mut lines = torn;
            lines.push(line);
            vec![Violation::new(
                "DURABLE-4.a",
                &lines,
                format!("the session file could not be read back: {cause}"),
            )]
        }
        _ => Vec::new(),
    }
}
