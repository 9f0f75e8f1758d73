//! The cause first: which violation of a failing run comes first, and what follows from it.
//!
//! A checker reports the trace lines that show a violation, and those may lie before the point
//! where the trace broke the rule (QUEUE-2 points at a run's first append, though the run goes
//! wrong only later). So each violated rule is placed where it becomes **evident**: the shortest
//! prefix of the trace on which its checker already reports it, found by bisection (a safety
//! rule, once broken, stays broken on every longer prefix; a rule about how a run ends is
//! evident only at the end). The prefix's store is the session plus the appends applied in it.
//!
//! The root is chosen by importance, then position. A MUST rule comes before a SHOULD rule
//! (the commit contract before the course's encodings). When the implementation's first
//! divergence from the reference is known, a violation cited only on lines before it (lines
//! identical to the reference's; the line right before it counts as at it, since what should
//! have followed a line at once shows on the next) comes after those that show on or after it:
//! it cannot be where the trace went wrong. Then the violation evident first; at one line, a rule about
//! order (which run may start, whether an append may be issued, whether the entry is closed)
//! comes before the rules that attribute effects to runs: once runs overlap, those rules
//! misread what follows. Every scenario's own check (`expect`, a request check of the
//! scripted model) comes after every rule's.

use std::collections::BTreeMap;

use crate::model::SessionEntry;
use crate::scenario::Scenario;
use crate::trace::Trace;

use super::{catalogue, Timeline, Violation};

/// Rules that decide when something may happen at all. At one line they come first: a breach
/// of one of them makes the attribution other rules rely on unreliable.
const ORDER_RULES: &[&str] = &[
    "RESTORE-5",
    "QUEUE-1",
    "PERSIST-3",
    "PERSIST-7",
    "POISON-2",
    "LIFE-2",
    "LIFE-4",
    "AGENT-8",
    "AGENT-4",
    "OBSERVE-4",
];

/// How a rule ranks at one line: order rules, the other catalogue rules, then scenario checks.
fn rank(rule: &str) -> (u8, usize) {
    let position = catalogue().iter().position(|entry| entry.id == rule);
    match position {
        Some(index) if ORDER_RULES.contains(&rule) => (0, index),
        Some(index) => (1, index),
        None => (2, 0),
    }
}

/// `violations` ordered root cause first, each with the 1-based line where it became evident.
pub fn order_by_cause(
    scenario: &Scenario,
    trace: &Trace,
    store: &[&SessionEntry],
    violations: Vec<Violation>,
) -> Vec<Violation> {
    let mut evident: BTreeMap<String, usize> = BTreeMap::new();
    for violation in &violations {
        if evident.contains_key(&violation.rule) {
            continue;
        }
        let line = match catalogue().iter().find(|rule| rule.id == violation.rule) {
            // The oracle's difference is evident at its line: a prefix has no replay of its own.
            Some(rule) if rule.id == super::REFERENCE_RULE => {
                violation.lines.iter().copied().min().unwrap_or(trace.events.len())
            }
            Some(rule) => evident_line(scenario, trace, store, rule.checker),
            // A scenario's own check is placed at the line it names.
            None => violation.lines.iter().copied().min().unwrap_or(trace.events.len()),
        };
        evident.insert(violation.rule.clone(), line);
    }
    // A rule's first violation is evident where the rule is; a later one of the same rule no
    // earlier than the first line it names.
    let mut placed = std::collections::BTreeSet::new();
    let mut ordered: Vec<Violation> = violations
        .into_iter()
        .map(|mut violation| {
            let rule_line = evident.get(&violation.rule).copied();
            violation.evident_at = if placed.insert(violation.rule.clone()) {
                rule_line
            } else {
                rule_line.map(|line| line.max(violation.lines.iter().copied().min().unwrap_or(line)))
            };
            violation
        })
        .collect();
    rank_by_importance(&mut ordered, None);
    ordered
}

/// Orders violations (whose `evident_at` is set) root cause first: scenario checks last, then
/// those cited only before `divergence` (the 1-based line of the first divergence from the
/// reference, when known) after the rest, MUST before SHOULD, then by the line where each
/// became evident (order rules first at one line). See the module documentation.
pub fn rank_by_importance(violations: &mut [Violation], divergence: Option<usize>) {
    violations.sort_by_key(|violation| {
        let evident = violation.evident_at.unwrap_or(usize::MAX);
        let (class, index) = rank(&violation.rule);
        let level = match super::level_of(&violation.rule) {
            Some(super::Level::Must) => 0,
            Some(super::Level::Should) => 1,
            None => 2,
        };
        // Shown only where the traces agree: every line it cites, and the line where it became
        // evident, come before the line just before the first divergence (a violation of
        // something that should have followed a line at once shows on the next line).
        let before_divergence =
            divergence.is_some_and(|line| evident + 1 < line && violation.lines.iter().all(|cited| cited + 1 < line));
        // Scenario checks follow every rule, whatever their lines.
        (
            class == 2,
            before_divergence,
            level,
            evident,
            class,
            index,
            violation.lines.clone(),
        )
    });
}

/// The shortest prefix (as a 1-based line count) on which `checker` reports a violation; the
/// whole trace when it fires only there.
fn evident_line(scenario: &Scenario, trace: &Trace, store: &[&SessionEntry], checker: super::Checker) -> usize {
    let fires = |length: usize| {
        if length >= trace.events.len() {
            return !checker(&Timeline::new(scenario, trace, store)).is_empty();
        }
        let prefix = Trace {
            events: trace.events[..length].to_vec(),
        };
        let stored = prefix.applied_store(&scenario.session);
        !checker(&Timeline::new(scenario, &prefix, &stored)).is_empty()
    };
    let (mut low, mut high) = (0, trace.events.len());
    if !fires(high) {
        return high;
    }
    // `fires(high)` holds and `fires(low)` does not (an empty trace breaks no rule).
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if fires(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    high
}
