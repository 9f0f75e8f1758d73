//! RESTORE and PATH: choosing the branch the agent starts from.

use crate::model::{PathError, SessionEntry};
use crate::trace::Event;

use super::timeline::Timeline;
use super::Violation;

fn session_is_empty(timeline: &Timeline<'_>) -> bool {
    timeline.scenario.session.is_empty()
}

fn leaf<'s>(timeline: &Timeline<'s>) -> Option<&'s str> {
    timeline.scenario.config.active_leaf_id.as_deref()
}

/// A restore that should have been rejected was accepted (clause `rejected`), or was rejected
/// with another code than `code` (clause `coded`, with `code`).
fn expect_rejected(
    rejected: &'static str,
    coded: Option<(&'static str, &str)>,
    timeline: &Timeline<'_>,
    why: &str,
) -> Vec<Violation> {
    match (&timeline.restore_failed, &timeline.restored) {
        (Some((line, cause)), _) => match coded {
            Some((coded, code)) if cause.code != code => {
                vec![Violation::new(
                    coded,
                    &[*line],
                    format!("{why}: rejected with `{}`, expected `{code}`", cause.code),
                )]
            }
            _ => Vec::new(),
        },
        (None, Some((line, _, _))) => vec![Violation::new(
            rejected,
            &[*line],
            format!("{why}, but restore succeeded"),
        )],
        (None, None) => Vec::new(),
    }
}

pub fn empty_session_null_leaf_restores_empty(timeline: &Timeline<'_>) -> Vec<Violation> {
    if !session_is_empty(timeline) || leaf(timeline).is_some() {
        return Vec::new();
    }
    match (&timeline.restore_failed, &timeline.restored) {
        (Some((line, cause)), _) => vec![Violation::new(
            "RESTORE-1.a",
            &[*line],
            format!("an empty session with a null leaf must restore, but was rejected: {cause}"),
        )],
        (None, Some((line, _, messages))) if *messages != 0 => vec![Violation::new(
            "RESTORE-1.b",
            &[*line],
            format!("an empty session restored {messages} messages"),
        )],
        (None, Some((line, Some(reported), _))) => vec![Violation::new(
            "RESTORE-1.c",
            &[*line],
            format!("an empty session restored with a null leaf reported leaf `{reported}`"),
        )],
        _ => Vec::new(),
    }
}

pub fn empty_session_with_leaf_is_rejected(timeline: &Timeline<'_>) -> Vec<Violation> {
    if !session_is_empty(timeline) || leaf(timeline).is_none() {
        return Vec::new();
    }
    let mut violations = expect_rejected(
        "RESTORE-2.a",
        None,
        timeline,
        "an empty session with a leaf id must be rejected (no such leaf)",
    );
    violations.extend(effects_after_failed_restore("RESTORE-2.b", timeline));
    violations
}

pub fn non_empty_session_needs_a_leaf(timeline: &Timeline<'_>) -> Vec<Violation> {
    if session_is_empty(timeline) || leaf(timeline).is_some() {
        return Vec::new();
    }
    expect_rejected(
        "RESTORE-3.a",
        None,
        timeline,
        "a non-empty session with a null leaf must be rejected (no branch chosen)",
    )
}

pub fn restores_exactly_the_chosen_path(timeline: &Timeline<'_>) -> Vec<Violation> {
    let Some(leaf) = leaf(timeline) else { return Vec::new() };
    // With a leaf configured, the initial path is `path_to(session, leaf)` when it exists.
    let Some(path) = &timeline.initial_path else {
        return Vec::new();
    };
    let mut violations = Vec::new();
    let expected = path.iter().filter(|entry| entry.as_message().is_some()).count();
    match (&timeline.restore_failed, &timeline.restored) {
        (Some((line, cause)), _) => {
            violations.push(Violation::new(
                "RESTORE-4.a",
                &[*line],
                format!("leaf `{leaf}` has a valid path, but restore was rejected: {cause}"),
            ));
            return violations;
        }
        (None, Some((line, reported, messages))) => {
            if *messages != expected {
                violations.push(Violation::new(
                    "RESTORE-4.b",
                    &[*line],
                    format!("restored {messages} messages; the path to `{leaf}` holds {expected} message entries"),
                ));
            }
            if *reported != Some(leaf) {
                violations.push(Violation::new(
                    "RESTORE-4.c",
                    &[*line],
                    match reported {
                        Some(reported) => format!("restored at leaf `{reported}`, but the chosen leaf is `{leaf}`"),
                        None => format!("restored at no leaf, but the chosen leaf is `{leaf}`"),
                    },
                ));
            }
        }
        _ => {}
    }
    // No message that exists only off the chosen path may reach the model.
    // Looked up by id and by fingerprint: a long session is read once, not once per entry.
    let on_path_ids: std::collections::HashSet<&str> = path.iter().map(|kept| kept.id.as_str()).collect();
    let on_path = super::Fingerprinted::of(path.iter().filter_map(|kept| kept.as_message()));
    let off_path = super::Fingerprinted::of(
        timeline
            .scenario
            .session
            .iter()
            .filter(|entry| !on_path_ids.contains(entry.id.as_str()))
            .filter_map(SessionEntry::as_message)
            .filter(|message| !on_path.contains(message)),
    );
    for request in &timeline.requests {
        if let Some(leaked) = request.messages.iter().find(|message| off_path.contains(message)) {
            violations.push(Violation::new(
                "RESTORE-4.d",
                &[request.line],
                format!(
                    "the request carries a {} message from outside the path to `{leaf}`: {}",
                    leaked.role(),
                    super::quoted(&leaked.text())
                ),
            ));
        }
    }
    violations
}

pub fn restore_issues_no_effect(timeline: &Timeline<'_>) -> Vec<Violation> {
    let first_delivery = timeline
        .ops
        .first()
        .map(|op| op.delivered)
        .unwrap_or(timeline.events.len());
    timeline.events[..first_delivery]
        .iter()
        .enumerate()
        .filter(|(_, event)| {
            matches!(
                event,
                Event::ModelRequest { .. }
                    | Event::Append { .. }
                    | Event::ToolCall { .. }
                    | Event::Hook { .. }
                    | Event::Write { .. }
            )
        })
        .map(|(line, _)| Violation::new("RESTORE-5.a", &[line], "an effect was issued before any operation"))
        .collect()
}

fn effects_after_failed_restore(rule: &'static str, timeline: &Timeline<'_>) -> Vec<Violation> {
    if timeline.restore_failed.is_none() {
        return Vec::new();
    }
    timeline
        .requests
        .iter()
        .map(|request| request.line)
        .chain(timeline.appends.iter().map(|append| append.line))
        .map(|line| Violation::new(rule, &[line], "an effect after a rejected restore"))
        .collect()
}

/// The PATH rules: when `path_to` diagnoses `kind`, restore is rejected with its code.
fn path_rule(
    rejected: &'static str,
    coded: &'static str,
    timeline: &Timeline<'_>,
    matches: fn(&PathError) -> bool,
) -> Vec<Violation> {
    if leaf(timeline).is_none() {
        return Vec::new();
    }
    match &timeline.leaf_path_error {
        Some(error) if matches(error) => expect_rejected(
            rejected,
            Some((coded, error.code())),
            timeline,
            &format!("the session has a broken tree ({error})"),
        ),
        _ => Vec::new(),
    }
}

pub fn unknown_leaf_is_diagnosed(timeline: &Timeline<'_>) -> Vec<Violation> {
    if session_is_empty(timeline) {
        return Vec::new();
    }
    path_rule("PATH-1.a", "PATH-1.b", timeline, |error| {
        matches!(error, PathError::UnknownLeaf { .. })
    })
}

pub fn duplicate_id_is_diagnosed(timeline: &Timeline<'_>) -> Vec<Violation> {
    path_rule("PATH-2.a", "PATH-2.b", timeline, |error| {
        matches!(error, PathError::DuplicateId { .. })
    })
}

pub fn missing_parent_is_diagnosed(timeline: &Timeline<'_>) -> Vec<Violation> {
    path_rule("PATH-3.a", "PATH-3.b", timeline, |error| {
        matches!(error, PathError::MissingParent { .. })
    })
}

pub fn cycle_is_diagnosed(timeline: &Timeline<'_>) -> Vec<Violation> {
    path_rule("PATH-4.a", "PATH-4.b", timeline, |error| {
        matches!(error, PathError::Cycle { .. })
    })
}
