//! PERSIST: only the new suffix, one entry at a time, leaf after acceptance, resolve after all,
//! and the session the store holds at the end sound.

use crate::model::{parse_iso_timestamp, Message, SessionEntry};
use crate::runtime::{OpId, OpValue, Settlement};
use crate::store::{check_stored_entries, FindingCode, SessionFinding};
use crate::trace::{AppendAnswer, Event};

use super::timeline::{AppendInfo, OpInfo, Timeline};
use super::Violation;

mod stored;

use stored::{calls, plainly_sound, result_call};

/// Prompt-like operations that appended something, with their appends.
fn appending_ops<'t, 'a>(timeline: &'t Timeline<'a>) -> impl Iterator<Item = (&'t OpInfo<'a>, &'t [AppendInfo<'a>])> {
    timeline
        .ops
        .iter()
        .filter(|info| info.is_prompt_like())
        .map(|info| (info, timeline.appends_of(info.op)))
        .filter(|(_, appends)| !appends.is_empty())
}

pub fn only_the_new_suffix_is_appended(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let mut earlier: Vec<&Message> = timeline
        .scenario
        .session
        .iter()
        .filter_map(SessionEntry::as_message)
        .collect();
    for (info, appends) in appending_ops(timeline) {
        // The run's messages: a metadata entry a runtime writes of its own (a thinking-level
        // or model change) is no message of the transcript and repeats no history.
        let text = info.operation.text().unwrap_or_default();
        if let Some(first) = appends.iter().find(|append| append.entry.as_message().is_some()) {
            let is_own_user = first
                .entry
                .as_message()
                .is_some_and(|message| super::is_user_text(message, text));
            if !is_own_user {
                violations.push(Violation::new(
                    "PERSIST-1.a",
                    &[first.line],
                    format!(
                        "{}'s first appended message is not its own user message {}",
                        info.op,
                        super::quoted(text)
                    ),
                ));
            }
        }
        for append in appends {
            if let Some(message) = append.entry.as_message() {
                if earlier.contains(&message) {
                    violations.push(Violation::new(
                        "PERSIST-1.b",
                        &[append.line],
                        format!(
                            "entry `{}` appends {} message that was already in the session",
                            append.entry.id,
                            super::a_role(message.role())
                        ),
                    ));
                }
            }
        }
        earlier.extend(appends.iter().filter_map(|append| append.entry.as_message()));
    }
    violations
}

pub fn entries_form_a_parent_chain(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (info, appends) in appending_ops(timeline) {
        let expected_first = timeline.leaf_at(appends[0].line);
        if appends[0].entry.parent_id.as_deref() != expected_first {
            violations.push(Violation::new(
                "PERSIST-2.a",
                &[appends[0].line],
                format!(
                    "{}'s first entry has parent {}; the leaf at its start was {}",
                    info.op,
                    super::parent_name(appends[0].entry.parent_id.as_deref()),
                    super::parent_name(expected_first)
                ),
            ));
        }
        for pair in appends.windows(2) {
            if pair[1].entry.parent_id.as_deref() != Some(pair[0].entry.id.as_str()) {
                violations.push(Violation::new(
                    "PERSIST-2.b",
                    &[pair[0].line, pair[1].line],
                    format!(
                        "entry `{}` has parent {}, expected the previous entry `{}`",
                        pair[1].entry.id,
                        super::parent_name(pair[1].entry.parent_id.as_deref()),
                        pair[0].entry.id
                    ),
                ));
            }
        }
    }
    violations
}

pub fn one_append_at_a_time(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (index, append) in timeline.appends.iter().enumerate() {
        for earlier in &timeline.appends[..index] {
            let unanswered = earlier.answer.as_ref().is_none_or(|(line, _)| *line > append.line);
            if unanswered {
                violations.push(Violation::new(
                    "PERSIST-3.a",
                    &[earlier.line, append.line],
                    format!(
                        "entry `{}` was appended while `{}` was unanswered",
                        append.entry.id, earlier.entry.id
                    ),
                ));
            }
        }
    }
    violations
}

pub fn entry_ids_come_from_create_id(timeline: &Timeline<'_>) -> Vec<Violation> {
    let ids = &timeline.scenario.config.ids;
    let mut violations = Vec::new();
    // The rule's index of the last id appended, and where.
    let mut last: Option<(u64, &str, super::timeline::Line)> = None;
    for (index, append) in timeline.appends.iter().enumerate() {
        let id = append.entry.id.as_str();
        let Some(position) = ids.index_of(id) else {
            violations.push(Violation::new(
                "PERSIST-4.a",
                &[append.line],
                format!(
                    "append {} has id `{id}`, which createId never hands out: its ids are `{}`, `{}`, ...",
                    index + 1,
                    ids.nth(0),
                    ids.nth(1)
                ),
            ));
            continue;
        };
        if let Some((previous, previous_id, previous_line)) = last {
            if position == previous {
                violations.push(Violation::new(
                    "PERSIST-4.b",
                    &[previous_line, append.line],
                    format!(
                        "append {} reuses the id `{id}` of an earlier append: createId hands each id out once",
                        index + 1
                    ),
                ));
            } else if position < previous {
                violations.push(Violation::new(
                    "PERSIST-4.c",
                    &[previous_line, append.line],
                    format!(
                        "append {} has id `{id}`, which createId hands out before `{previous_id}` of an earlier append: ids must follow the order they are drawn in",
                        index + 1
                    ),
                ));
            }
        }
        if last.is_none_or(|(previous, _, _)| position > previous) {
            last = Some((position, id, append.line));
        }
    }
    violations
}

pub fn leaf_advances_only_after_acceptance(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let restored: Vec<&str> = timeline
        .initial_path
        .iter()
        .flatten()
        .map(|entry| entry.id.as_str())
        .collect();
    for append in &timeline.appends {
        let parent_ok = match append.entry.parent_id.as_deref() {
            None => restored.is_empty() && !timeline.appends.iter().any(|other| other.accepted_before(append.line)),
            Some(parent) => {
                restored.contains(&parent)
                    || timeline
                        .appends
                        .iter()
                        .any(|other| other.entry.id == parent && other.accepted_before(append.line))
            }
        };
        if !parent_ok {
            violations.push(Violation::new(
                "PERSIST-5.a",
                &[append.line],
                format!(
                    "entry `{}` has parent {}, which the store had not accepted",
                    append.entry.id,
                    super::parent_name(append.entry.parent_id.as_deref())
                ),
            ));
        }
    }
    for (info, appends) in appending_ops(timeline) {
        if let Some(failed) = appends.iter().find(|append| append.failed().is_some()) {
            let failed_at = failed.failed().map(|(line, _)| line).unwrap_or(failed.line);
            for later in appends.iter().filter(|append| append.line > failed_at) {
                violations.push(Violation::new(
                    "PERSIST-5.b",
                    &[failed_at, later.line],
                    format!(
                        "{} appended `{}` after its append of `{}` failed",
                        info.op, later.entry.id, failed.entry.id
                    ),
                ));
            }
        }
    }
    violations
}

pub fn prompt_resolves_after_its_last_append(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for info in timeline.ops.iter().filter(|info| info.is_prompt_like()) {
        // The moment the caller learns of success: a resolved settlement, or the write that
        // ends a mode's run, its result (a mode that streams its events as it goes writes
        // progress, not its result: its run ends at its settlement, `Timeline`).
        let resolved_at = match &info.settled {
            Some((line, Settlement::Resolved(_))) => Some(*line),
            _ => None,
        };
        // A write before the run asked the model anything is no result of it (a mode that
        // writes a header first): MODE-1 and MODE-2 judge such writes.
        let write_at = info.run_finished.filter(|finished| {
            timeline
                .writes
                .iter()
                .any(|write| write.line == *finished && write.op == Some(info.op))
                && timeline
                    .requests_of(info.op)
                    .first()
                    .is_some_and(|request| request.line < *finished)
        });
        let Some(success_at) = write_at.or(resolved_at) else {
            continue;
        };
        let appends = timeline.appends_of(info.op);
        if !timeline.all_appends_accepted_before(info.op, success_at) {
            let message = if appends.is_empty() {
                format!(
                    "{} succeeded, but no entry of its run was appended: it resolved before storing anything",
                    info.op
                )
            } else {
                let accepted = appends
                    .iter()
                    .filter(|append| append.accepted_before(success_at))
                    .count();
                format!(
                    "{} succeeded when the store had accepted {accepted} of its {}",
                    info.op,
                    super::counted(appends.len(), "entry", "entries")
                )
            };
            violations.push(Violation::new("PERSIST-6.a", &[success_at], message));
            continue;
        }
        if let Some((line, Settlement::Resolved(OpValue::Run(result)))) = &info.settled {
            let appended = timeline.appended_messages(info.op);
            let ends_with_appended = result.messages.len() >= appended.len()
                && super::same_messages(&result.messages[result.messages.len() - appended.len()..], appended);
            if !ends_with_appended {
                violations.push(Violation::new(
                    "PERSIST-6.b",
                    &[*line],
                    format!(
                        "{}'s resolved messages do not end with the {} it appended",
                        info.op,
                        super::counted(appended.len(), "entry", "entries")
                    ),
                ));
            }
        }
    }
    violations
}

pub fn appends_start_after_the_run(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    for (info, appends) in appending_ops(timeline) {
        let requests = timeline.requests_of(info.op);
        let Some(first) = requests.first() else { continue };
        let last_response = requests
            .iter()
            .filter_map(|request| request.response.as_ref().map(|(line, _)| *line))
            .max()
            .unwrap_or(first.line);
        if let Some(early) = appends.iter().find(|append| append.line < first.line) {
            violations.push(Violation::new(
                "PERSIST-7.b",
                &[early.line, first.line],
                format!(
                    "entry `{}` was appended before {}'s agent run sent its first model request",
                    early.entry.id, info.op
                ),
            ));
        }
        for append in appends
            .iter()
            .filter(|append| append.line > first.line && append.line < last_response)
        {
            violations.push(Violation::new(
                "PERSIST-7.a",
                &[append.line, last_response],
                format!(
                    "entry `{}` was appended while {}'s agent run was still going",
                    append.entry.id, info.op
                ),
            ));
        }
    }
    violations
}

pub fn entry_timestamps_come_from_now(timeline: &Timeline<'_>) -> Vec<Violation> {
    let clock = &timeline.scenario.config.clock;
    let mut violations = Vec::new();
    let mut previous: Option<(usize, u64)> = None;
    for append in &timeline.appends {
        let from_clock = parse_iso_timestamp(&append.entry.timestamp).filter(|ms| {
            *ms >= clock.start_ms
                && match clock.step_ms {
                    0 => *ms == clock.start_ms,
                    step => (ms - clock.start_ms).is_multiple_of(step),
                }
        });
        let Some(ms) = from_clock else {
            violations.push(Violation::new(
                "PERSIST-8.a",
                &[append.line],
                format!(
                    "entry `{}` has timestamp {}, which no reading of the clock rule gives",
                    append.entry.id,
                    super::quoted(&append.entry.timestamp)
                ),
            ));
            continue;
        };
        // Each append reads the clock afresh, so with a moving clock the stamps strictly
        // increase: a stamp equal to the previous one is a clock read once and reused.
        if let Some((line, earlier)) = previous {
            if ms < earlier || (ms == earlier && clock.step_ms > 0) {
                violations.push(Violation::new(
                    "PERSIST-8.b",
                    &[line, append.line],
                    format!(
                        "entry `{}` is not stamped later than the entry appended ahead of it: now() was not read for it",
                        append.entry.id
                    ),
                ));
            }
        }
        previous = Some((append.line, ms));
    }
    violations
}

/// PERSIST-9: the session the store holds at the end passes every check of `check-session` that
/// judges what a runtime appends. Judged are the findings of the stored entries that the initial
/// session's own entries do not give (a broken initial session is RESTORE and PATH's). Not
/// judged: the header, a malformed line and a torn tail, which the store writes or cuts off
/// (DURABLE-4); a tool call whose result its run never stored because its storing was cut short
/// (an append failed or its answer was lost, one was unanswered, or the run had not finished when
/// the trace ended: poison keeps the stored prefix, §13.3); and what an entry the store
/// acknowledged and then lost explains (DURABLE-1's).
pub fn stored_session_is_sound(timeline: &Timeline<'_>) -> Vec<Violation> {
    let initial = &timeline.scenario.session;
    if timeline.store.len() <= initial.len() || plainly_sound(timeline.store, initial.len()) {
        return Vec::new();
    }
    let end = timeline
        .end
        .map_or(timeline.events.len().saturating_sub(1), |(line, _)| line);
    let lost = lost_acknowledged(timeline);
    let mut violations = Vec::new();
    for (clause, finding) in stored_findings(timeline.store, initial) {
        // The store's file holds its header on line 1, then the stored entries in order.
        let Some(entry) = finding
            .line
            .checked_sub(2)
            .and_then(|at| timeline.store.get(at))
            .copied()
        else {
            continue;
        };
        let append = stored_by(timeline, entry);
        if not_the_runtimes(timeline, &finding, entry, append, &lost) {
            continue;
        }
        let mut lines: Vec<usize> = append.map(|append| append.line).into_iter().collect();
        lines.push(end);
        violations.push(Violation::new(
            clause,
            &lines,
            format!(
                "the session the store holds fails check-session: `{}` on line {} of the store's file (entry `{}`): {}",
                finding.code, finding.line, entry.id, finding.message
            ),
        ));
    }
    violations
}

/// The findings of `check-session` on the store's file that a clause judges and the initial
/// session's entries alone do not give, each with its clause.
fn stored_findings(store: &[&SessionEntry], initial: &[SessionEntry]) -> Vec<(&'static str, SessionFinding)> {
    let stored = check_stored_entries(store.iter().copied());
    if stored.is_empty() {
        return Vec::new();
    }
    let before: Vec<SessionFinding> = check_stored_entries(initial).findings().collect();
    stored
        .findings()
        .filter_map(|finding| Some((clause_of(finding.code)?, finding)))
        .filter(|(_, finding)| !before.contains(finding))
        .collect()
}

/// The clause a finding of `check-session` breaks; `None` for what the store writes itself (the
/// header, whole lines) or cuts off (a torn tail), which no runtime appends.
fn clause_of(code: FindingCode) -> Option<&'static str> {
    match code {
        FindingCode::EntryDuplicateId
        | FindingCode::EntryOrphan
        | FindingCode::EntryCycle
        | FindingCode::EntryExtraRoot => Some("PERSIST-9.a"),
        FindingCode::ToolUnansweredCall => Some("PERSIST-9.b"),
        FindingCode::ToolUnmatchedResult | FindingCode::ToolDuplicateResult => Some("PERSIST-9.c"),
        FindingCode::ToolInterleavedEntry => Some("PERSIST-9.d"),
        FindingCode::HeaderMissing
        | FindingCode::HeaderMisplaced
        | FindingCode::HeaderInvalid
        | FindingCode::EntryMalformed
        | FindingCode::FileTornTail => None,
    }
}

/// The append that stored `entry`: the last with its id the store applied, else the last with
/// its id; `None` for an entry of the initial session.
fn stored_by<'t, 'a>(timeline: &'t Timeline<'a>, entry: &SessionEntry) -> Option<&'t AppendInfo<'a>> {
    let with_id = || {
        timeline
            .appends
            .iter()
            .rev()
            .filter(|append| append.entry.id == entry.id)
    };
    with_id()
        .find(|append| append.answer.is_some_and(|(_, answer)| answer.applied()))
        .or_else(|| with_id().next())
}

/// The entries the store acknowledged `ok` and no longer holds (a crash without sync, in the
/// networked world): DURABLE-1's failure.
fn lost_acknowledged<'a>(timeline: &Timeline<'a>) -> Vec<&'a SessionEntry> {
    timeline
        .appends
        .iter()
        .filter(|append| matches!(append.answer, Some((_, AppendAnswer::Ok))))
        .filter(|append| !timeline.store.iter().any(|stored| stored.id == append.entry.id))
        .map(|append| append.entry)
        .collect()
}

/// Whether `op`'s storing was cut short: an append of it failed or its answer was lost, one was
/// still unanswered, or its run had not finished, when the trace ended.
fn storing_cut_short(timeline: &Timeline<'_>, op: OpId) -> bool {
    timeline
        .appends_of(op)
        .iter()
        .any(|append| !matches!(append.answer, Some((_, AppendAnswer::Ok))))
        || timeline.op(op).is_none_or(|info| info.run_finished.is_none())
}

/// Whether a finding on `entry` is not the runtime's doing: a tool call left without its result
/// by a run whose storing was cut short, or what an acknowledged entry the store lost explains
/// (an orphan whose parent it was, a call whose result it was, a result whose call it made).
fn not_the_runtimes(
    timeline: &Timeline<'_>,
    finding: &SessionFinding,
    entry: &SessionEntry,
    append: Option<&AppendInfo<'_>>,
    lost: &[&SessionEntry],
) -> bool {
    match finding.code {
        FindingCode::ToolUnansweredCall => {
            append
                .and_then(|append| append.op)
                .is_some_and(|op| storing_cut_short(timeline, op))
                || lost
                    .iter()
                    .filter_map(|lost| result_call(lost))
                    .any(|answer| calls(entry).any(|call| call == answer))
        }
        FindingCode::EntryOrphan => lost
            .iter()
            .any(|lost| entry.parent_id.as_deref() == Some(lost.id.as_str())),
        FindingCode::ToolUnmatchedResult => {
            result_call(entry).is_some_and(|answer| lost.iter().any(|lost| calls(lost).any(|call| call == answer)))
        }
        _ => false,
    }
}

/// PERSIST-10: what a subject that probes its state (`hello.probes`: `state`) reports at the end
/// of every step, against what the store accepted by then. A trace of a subject that does not
/// probe is not judged. Each step's end is judged once, by the first clause it breaks.
pub fn leaf_names_only_accepted_entries(timeline: &Timeline<'_>) -> Vec<Violation> {
    let mut violations = Vec::new();
    let Some((restored_line, restored_leaf, _)) = timeline.restored else {
        return violations;
    };
    if !timeline.probed {
        return violations;
    }
    // The store's acceptances in line order: (answer line, entry id).
    let mut accepted: Vec<(usize, &str)> = timeline
        .appends
        .iter()
        .filter_map(|append| match append.answer {
            Some((line, AppendAnswer::Ok)) => Some((line, append.entry.id.as_str())),
            _ => None,
        })
        .collect();
    accepted.sort_unstable();
    // The state in force: the restored one, then each probe's (the trace records changes only).
    let mut state: (Option<&str>, u64, Option<usize>) = (restored_leaf, 0, None);
    let mut states = timeline.states.iter().peekable();
    // A lag already reported (PERSIST-10.c), so that one lag is one violation.
    let mut lagging = false;
    let events = timeline.events;
    // Where the current step began: the restore, then each input.
    let mut step_start = restored_line;
    for (line, event) in events.iter().enumerate().skip(restored_line) {
        if is_world_input(event) {
            step_start = line;
        }
        while let Some(&&(at, leaf, persisted)) = states.peek() {
            if at > line {
                break;
            }
            state = (leaf, persisted, Some(at));
            states.next();
        }
        // A step ends where the next input comes, or the trace ends.
        // A trace cut short (a prefix, when the root cause is placed) is not judged after its
        // last complete step.
        let step_ends = match events.get(line + 1) {
            None => false,
            Some(next) => is_world_input(next) || matches!(next, Event::End { .. }),
        };
        if !step_ends || matches!(event, Event::End { .. }) {
            continue;
        }
        let so_far: Vec<(usize, &str)> = accepted.iter().copied().filter(|(at, _)| *at <= line).collect();
        let (leaf, persisted, probe_line) = state;
        let shown: Vec<usize> = probe_line
            .into_iter()
            .chain(Some(line).filter(|_| probe_line.is_none()))
            .collect();
        let accepted_leaf = leaf.is_some_and(|leaf| so_far.iter().any(|(_, id)| *id == leaf));
        if leaf != restored_leaf && !accepted_leaf {
            let issued = leaf.and_then(|leaf| timeline.appends.iter().find(|append| append.entry.id == leaf));
            violations.push(Violation::new(
                "PERSIST-10.a",
                &shown
                    .iter()
                    .copied()
                    .chain(issued.map(|append| append.line))
                    .collect::<Vec<_>>(),
                format!(
                    "the runtime's leaf is {} at the end of this step, which the store had not accepted{}",
                    leaf.map_or_else(|| "none".to_string(), |leaf| format!("`{leaf}`")),
                    match issued {
                        Some(append) => match append.answer {
                            Some((at, answer)) if at <= line => {
                                format!(" (its append was answered {})", describe_answer(answer))
                            }
                            _ if append.line > line => " (its append was issued only later)".to_string(),
                            _ => " (its append was still unanswered)".to_string(),
                        },
                        None => " (no append issued it)".to_string(),
                    }
                ),
            ));
            lagging = false;
            continue;
        }
        if persisted > so_far.len() as u64 {
            violations.push(Violation::new(
                "PERSIST-10.b",
                &shown,
                format!(
                    "the runtime counts {} as persisted, but the store had accepted {}",
                    super::counted(persisted as usize, "append", "appends"),
                    so_far.len()
                ),
            ));
            lagging = false;
            continue;
        }
        // A step that leaves an append of its own in flight ends with the runtime awaiting it
        // (or, with a synchronous store, blocked in it): (a) and (b) judge it, (c) the step
        // after the answer.
        let in_flight = timeline.appends.iter().any(|append| {
            append.line > step_start && append.line <= line && append.answer.is_none_or(|(at, _)| at > line)
        });
        let newest = so_far.last().map(|(_, id)| *id).or(restored_leaf);
        if in_flight {
            continue;
        }
        if leaf != newest || persisted != so_far.len() as u64 {
            if !lagging {
                violations.push(Violation::new(
                    "PERSIST-10.c",
                    &shown
                        .iter()
                        .copied()
                        .chain(so_far.last().map(|(at, _)| *at))
                        .collect::<Vec<_>>(),
                    format!(
                        "at the end of this step the runtime's leaf is {} with {} persisted, but the store had \
                         accepted {} (the newest: {}): the leaf advances after each accepted append",
                        leaf.map_or_else(|| "none".to_string(), |leaf| format!("`{leaf}`")),
                        persisted,
                        super::counted(so_far.len(), "append", "appends"),
                        newest.map_or_else(|| "none".to_string(), |leaf| format!("`{leaf}`")),
                    ),
                ));
            }
            lagging = true;
        } else {
            lagging = false;
        }
    }
    violations
}

/// Whether an event is the world's input to the runtime: an operation delivered, or an answer.
fn is_world_input(event: &Event) -> bool {
    matches!(
        event,
        Event::Deliver { .. }
            | Event::ModelChunk { .. }
            | Event::ModelResponse { .. }
            | Event::HookAnswer { .. }
            | Event::ToolAnswer { .. }
            | Event::AppendAnswer { .. }
            | Event::WriteAnswer { .. }
            | Event::NotifyAnswer { .. }
    )
}

fn describe_answer(answer: &AppendAnswer) -> String {
    match answer {
        AppendAnswer::Ok => "ok".to_string(),
        AppendAnswer::Rejected { cause } => format!("rejected ({})", cause.code),
        AppendAnswer::AppliedThenFailed { cause } => format!("applied then failed ({})", cause.code),
        AppendAnswer::Lost { cause } => format!("lost ({})", cause.code),
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{iso_timestamp, parse_iso_timestamp as parse_iso_ms};

    #[test]
    fn parse_iso_ms_inverts_iso_timestamp() {
        for ms in [
            0,
            1_767_225_600_000,
            1_767_225_601_234,
            951_782_400_999,
            4_102_444_800_000,
        ] {
            assert_eq!(parse_iso_ms(&iso_timestamp(ms)), Some(ms), "{}", iso_timestamp(ms));
        }
        assert_eq!(parse_iso_ms("2026-01-01T00:00:00Z"), None);
        assert_eq!(parse_iso_ms("yesterday"), None);
    }
}
