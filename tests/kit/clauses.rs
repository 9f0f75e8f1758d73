//! Hand edits of the reference's traces that break one clause of a rule each (issue 21): the
//! bad traces of the bites in `bite.rs` that no mutant of the zoo makes alone. Each edit is a bug
//! an implementation could have, written on the trace it would leave.

use agentsim::model::{EntryBody, Message, Operation, SessionEntry, StopReason, UserContent};
use agentsim::runtime::{
    Cause, EffectId, HookPhase, ObservedEvent, OpValue, RunReason, RunResult, Settlement, SignalId,
};
use agentsim::trace::{Event, Trace};

/// The observed events of one kind, in trace order.
fn told(trace: &mut Trace, keep: fn(&ObservedEvent) -> bool) -> Vec<&mut ObservedEvent> {
    trace
        .events
        .iter_mut()
        .filter_map(|event| match event {
            Event::Notify { agent_event, .. } if keep(agent_event) => Some(agent_event),
            _ => None,
        })
        .collect()
}

/// OBSERVE-2.b: the last run's `agent_end` (a run that did not resolve) carries its messages
/// without its prompt.
pub(crate) fn agent_end_without_prompt(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut ends = told(trace, |event| matches!(event, ObservedEvent::AgentEnd { .. }));
    match ends.last_mut().expect("an agent_end") {
        ObservedEvent::AgentEnd { messages } => {
            messages.remove(0);
        }
        _ => unreachable!(),
    }
}

/// OBSERVE-2.c: a resolved run's `agent_end` lacks the run's last message.
pub(crate) fn agent_end_lacks_last_message(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut ends = told(trace, |event| matches!(event, ObservedEvent::AgentEnd { .. }));
    match ends.first_mut().expect("an agent_end") {
        ObservedEvent::AgentEnd { messages } => {
            messages.pop();
        }
        _ => unreachable!(),
    }
}

/// OBSERVE-2.d: the first two `turn_end`s carry each other's response (and tool results).
pub(crate) fn turn_ends_swapped(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let turns = told(trace, |event| matches!(event, ObservedEvent::TurnEnd { .. }));
    let [first, second, ..] = turns.as_slice() else {
        panic!("two turn_ends");
    };
    let (first, second) = ((*first).clone(), (*second).clone());
    let mut turns = told(trace, |event| matches!(event, ObservedEvent::TurnEnd { .. }));
    *turns[0] = second;
    *turns[1] = first;
}

/// OBSERVE-2.e: the first `turn_end` carries its response but none of its tool results.
pub(crate) fn turn_end_without_tool_results(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut turns = told(trace, |event| matches!(event, ObservedEvent::TurnEnd { .. }));
    match turns.first_mut().expect("a turn_end") {
        ObservedEvent::TurnEnd { tool_results, .. } => {
            assert!(!tool_results.is_empty(), "the first turn calls a tool");
            tool_results.clear();
        }
        _ => unreachable!(),
    }
}

/// The run results the trace's prompts resolved with, in trace order.
fn run_results(trace: &mut Trace) -> Vec<&mut RunResult> {
    trace
        .events
        .iter_mut()
        .filter_map(|event| match event {
            Event::Settled {
                settlement: Settlement::Resolved(OpValue::Run(result)),
                ..
            } => Some(result),
            _ => None,
        })
        .collect()
}

/// AGENT-1.b: the run the bound cut says it stopped.
pub(crate) fn max_steps_reported_as_stop(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut results = run_results(trace);
    let result = results.first_mut().expect("a prompt resolves");
    assert_eq!(result.reason, RunReason::MaxSteps);
    result.reason = RunReason::Stop;
}

/// AGENT-1.c: a run that stopped on its own says the bound cut it.
pub(crate) fn stop_reported_as_max_steps(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut results = run_results(trace);
    let result = results.first_mut().expect("a prompt resolves");
    assert_eq!(result.reason, RunReason::Stop);
    result.reason = RunReason::MaxSteps;
}

/// AGENT-1.d: a prompt's result counts one step more than its run made.
pub(crate) fn steps_miscounted(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut results = run_results(trace);
    results.first_mut().expect("a prompt resolves").steps += 1;
}

/// The text of the trace's first steer.
fn steer_text(trace: &Trace) -> String {
    trace
        .events
        .iter()
        .find_map(|event| match event {
            Event::Deliver {
                operation: Operation::Steer { text },
                ..
            } => Some(text.clone()),
            _ => None,
        })
        .expect("the scenario steers")
}

/// AGENT-2.b: the steer never reaches the model: no request carries it.
pub(crate) fn steer_never_sent(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let text = steer_text(trace);
    for event in &mut trace.events {
        if let Event::ModelRequest { messages, .. } = event {
            messages.retain(|message| !(matches!(message, Message::User(_)) && message.text().contains(&text)));
        }
    }
}

/// Where the first abort signal fires, and which.
fn first_abort(trace: &Trace) -> (usize, SignalId) {
    trace
        .events
        .iter()
        .enumerate()
        .find_map(|(index, event)| match event {
            Event::AbortSignal { signal } => Some((index, *signal)),
            _ => None,
        })
        .expect("an abort signal fires")
}

/// A copy of the last model request made with `signal` before `before`, as a new effect.
fn request_copy(trace: &Trace, signal: SignalId, before: usize) -> Event {
    let mut copy = trace.events[..before]
        .iter()
        .rfind(|event| matches!(event, Event::ModelRequest { signal: made, .. } if *made == signal))
        .cloned()
        .expect("the aborted run made a request");
    if let Event::ModelRequest { effect, .. } = &mut copy {
        *effect = EffectId(10_000);
    }
    copy
}

/// AGENT-4.a: the run makes one more model request after its signal fired (left unanswered).
pub(crate) fn request_after_abort(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (fired, signal) = first_abort(trace);
    let copy = request_copy(trace, signal, fired);
    trace.events.insert(fired + 1, copy);
}

/// AGENT-4.c: the aborted run resolves as if it had stopped.
pub(crate) fn aborted_run_resolves_stop(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut results = run_results(trace);
    let result = results.first_mut().expect("a prompt resolves");
    assert_eq!(result.reason, RunReason::Aborted);
    result.reason = RunReason::Stop;
}

/// AGENT-4.d: the run resolves `aborted` though its signal never fired.
pub(crate) fn abort_signal_never_fired(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    trace.events.retain(|event| !matches!(event, Event::AbortSignal { .. }));
}

/// AGENT-8.b: the runtime's answer to the abort makes one more model request before the signal.
pub(crate) fn request_before_signal(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (fired, signal) = first_abort(trace);
    let copy = request_copy(trace, signal, fired);
    trace.events.insert(fired, copy);
}

/// The trace's restore.
fn restored(trace: &mut Trace) -> (&mut Option<String>, &mut usize) {
    trace
        .events
        .iter_mut()
        .find_map(|event| match event {
            Event::Restored { leaf, messages, .. } => Some((leaf, messages)),
            _ => None,
        })
        .expect("the session restored")
}

/// RESTORE-1.b, RESTORE-4.b: one message more restored than the path holds.
pub(crate) fn restored_one_message_more(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    *restored(trace).1 += 1;
}

/// RESTORE-1.c, RESTORE-4.c: the restore reports another leaf than the chosen one.
pub(crate) fn restored_at_another_leaf(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    *restored(trace).0 = Some("another-leaf".into());
}

/// RESTORE-4.a, PATH-1.a: the restore is rejected (or accepted) the other way round.
pub(crate) fn restore_rejected(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    for event in &mut trace.events {
        if matches!(event, Event::Restored { .. }) {
            *event = Event::RestoreFailed {
                cause: Cause::new("restore.failed", "the restore gave up"),
            };
        }
    }
}

/// PATH-1.a: a restore that guessed around an unknown leaf: accepted, empty.
pub(crate) fn restore_accepted(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    for event in &mut trace.events {
        if matches!(event, Event::RestoreFailed { .. }) {
            *event = Event::Restored {
                leaf: None,
                messages: 0,
                probed: false,
            };
        }
    }
}

/// RESTORE-2.b: after a rejected restore, the runtime still asks the model (before the trace's
/// end).
pub(crate) fn request_after_rejected_restore(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let end = trace.events.len() - 1;
    trace.events.insert(
        end,
        Event::ModelRequest {
            effect: EffectId(10_000),
            signal: SignalId(10_000),
            system_prompt: None,
            messages: Vec::new(),
            tools: Vec::new().into(),
        },
    );
}

/// RESTORE-4.d: the first request carries the message of the sibling branch `left` as well.
// The signature is every edit's (bite.rs's `Bad::Edit`), which may grow the store.
#[allow(clippy::ptr_arg)]
pub(crate) fn sibling_message_sent(trace: &mut Trace, store: &mut Vec<SessionEntry>) {
    let sibling = store
        .iter()
        .find(|entry| entry.id == "left")
        .and_then(SessionEntry::as_message)
        .cloned()
        .expect("the session has the branch `left`");
    let messages = trace
        .events
        .iter_mut()
        .find_map(|event| match event {
            Event::ModelRequest { messages, .. } => Some(messages),
            _ => None,
        })
        .expect("a model request");
    messages.insert(1, sibling);
}

/// POISON-2.a: after the append failure the runtime asks the model once more (a copy of the last
/// request, left unanswered, right after the failure's answer).
pub(crate) fn request_after_failed_append(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let failed = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::AppendAnswer { answer, .. } if answer.cause().is_some()))
        .expect("an append fails");
    let mut copy = trace.events[..failed]
        .iter()
        .rfind(|event| matches!(event, Event::ModelRequest { .. }))
        .cloned()
        .expect("a model request before the failure");
    if let Event::ModelRequest { effect, .. } = &mut copy {
        *effect = EffectId(10_000);
    }
    trace.events.insert(failed + 1, copy);
}

/// The last entry the runtime stored.
fn last_stored(store: &[SessionEntry]) -> SessionEntry {
    store.last().cloned().expect("the runtime stored an entry")
}

/// POISON-5.a: a second entry with the last one's id, below it.
pub(crate) fn stored_id_twice(_: &mut Trace, store: &mut Vec<SessionEntry>) {
    let mut copy = last_stored(store);
    copy.parent_id = Some(copy.id.clone());
    store.push(copy);
}

/// POISON-5.b: an entry whose parent the store does not hold.
pub(crate) fn stored_orphan(_: &mut Trace, store: &mut Vec<SessionEntry>) {
    let mut copy = last_stored(store);
    copy.id = "orphan".into();
    copy.parent_id = Some("nowhere".into());
    store.push(copy);
}

/// POISON-5.c: a second copy of the last entry, under a fresh id, beside it.
pub(crate) fn stored_second_copy(_: &mut Trace, store: &mut Vec<SessionEntry>) {
    let mut copy = last_stored(store);
    copy.id = "retry-copy".into();
    store.push(copy);
}

/// Where an operation of `name` is delivered, the `nth` of them, and its id.
fn delivery(trace: &Trace, name: &str, nth: usize) -> (usize, agentsim::runtime::OpId) {
    trace
        .events
        .iter()
        .enumerate()
        .filter_map(|(index, event)| match event {
            Event::Deliver { op, operation } if operation.name() == name => Some((index, *op)),
            _ => None,
        })
        .nth(nth)
        .unwrap_or_else(|| panic!("the scenario delivers {} {name}", nth + 1))
}

/// Moves the settlement of `op` one event later (behind the event that followed it).
fn settle_one_event_later(trace: &mut Trace, op: agentsim::runtime::OpId) {
    let at = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::Settled { op: settled, .. } if *settled == op))
        .expect("the operation settles");
    assert!(at + 2 < trace.events.len(), "an event follows the settlement");
    // A state probe at the end of the step is no later event: it moves past the next one.
    let next = (at + 1..trace.events.len())
        .find(|index| !matches!(trace.events[*index], Event::State { .. }))
        .expect("an event follows the settlement");
    let settled = trace.events.remove(at);
    trace.events.insert(next, settled);
}

/// LIFE-2.b: a flush on an idle runtime settles only after the next event.
pub(crate) fn flush_settles_late(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (_, op) = delivery(trace, "flush", 0);
    settle_one_event_later(trace, op);
}

/// LIFE-6.b: a dispose after the first one settled waits one event more.
pub(crate) fn second_dispose_settles_late(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (_, op) = delivery(trace, "dispose", 1);
    settle_one_event_later(trace, op);
}

/// LIFE-3.b: a flush on a runtime no append failed on rejects.
pub(crate) fn healthy_flush_rejected(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (_, op) = delivery(trace, "flush", 0);
    for event in &mut trace.events {
        if let Event::Settled {
            op: settled,
            settlement,
        } = event
        {
            if *settled == op {
                *settlement = Settlement::Rejected(Cause::new("runtime.busy", "the runtime was busy"));
            }
        }
    }
}

/// The entries of the trace's appends, in order.
fn appended(trace: &mut Trace) -> Vec<&mut SessionEntry> {
    trace
        .events
        .iter_mut()
        .filter_map(|event| match event {
            Event::Append { entry, .. } => Some(entry),
            _ => None,
        })
        .collect()
}

/// PERSIST-1.a: the run's first appended message is not its user message as given (its text
/// changed on the way to the store).
pub(crate) fn first_user_message_changed(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut entries = appended(trace);
    let first = entries.first_mut().expect("the run appends");
    match &mut first.body {
        EntryBody::Message {
            message: Message::User(user),
        } => user.content = UserContent::Text("another prompt".into()),
        other => panic!("the first entry is the user message, not {other:?}"),
    }
}

/// PERSIST-1.b: the run's last append stores the restored path's first message again.
// The signature is every edit's (bite.rs's `Bad::Edit`), which may grow the store.
#[allow(clippy::ptr_arg)]
pub(crate) fn restored_message_appended(trace: &mut Trace, store: &mut Vec<SessionEntry>) {
    let restored = store
        .first()
        .and_then(SessionEntry::as_message)
        .cloned()
        .expect("the session had a message");
    let mut entries = appended(trace);
    assert!(entries.len() > 1, "the run appends more than its user message");
    let last = entries.last_mut().expect("the run appends");
    last.body = EntryBody::Message { message: restored };
}

/// PERSIST-2.a: the first entry hangs below another parent than the leaf.
pub(crate) fn first_entry_parent_elsewhere(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut entries = appended(trace);
    let second_id = entries[1].id.clone();
    // Its parent is an entry the store accepted later: a leaf read from the wrong place.
    entries[0].parent_id = Some(second_id);
}

/// PERSIST-2.b: the second entry has its predecessor's parent, not its predecessor.
pub(crate) fn second_entry_parent_skips(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut entries = appended(trace);
    entries[1].parent_id = entries[0].parent_id.clone();
}

/// PERSIST-4.a: an entry whose id no createId reading gives.
pub(crate) fn id_not_from_the_rule(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut entries = appended(trace);
    let old = entries[1].id.clone();
    entries[1].id = "made-up-id".into();
    if let Some(child) = entries
        .iter_mut()
        .find(|entry| entry.parent_id.as_deref() == Some(old.as_str()))
    {
        child.parent_id = Some("made-up-id".into());
    }
}

/// PERSIST-4.b: the second entry reuses the first one's id.
pub(crate) fn id_appended_twice(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut entries = appended(trace);
    entries[1].id = entries[0].id.clone();
}

/// PERSIST-4.c: the first two entries carry each other's id.
pub(crate) fn ids_out_of_order(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut entries = appended(trace);
    let (first, second) = (entries[0].id.clone(), entries[1].id.clone());
    entries[0].id = second;
    entries[1].id = first;
}

/// PERSIST-5.b: after its first append failed, the run appends the failed entry again under a
/// fresh id (a retry), right after the failure's answer.
pub(crate) fn append_after_failed_append(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let failed = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::AppendAnswer { answer, .. } if answer.cause().is_some()))
        .expect("an append fails");
    let mut copy = trace.events[..failed]
        .iter()
        .rfind(|event| matches!(event, Event::Append { .. }))
        .cloned()
        .expect("the failed append");
    if let Event::Append { effect, entry } = &mut copy {
        *effect = EffectId(10_000);
        entry.id = format!("{}-retry", entry.id);
    }
    trace.events.insert(failed + 1, copy);
}

/// PERSIST-10.b: the runtime's first probed state after an accepted append counts one append
/// more than the store accepted.
pub(crate) fn probe_counts_one_append_more(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let persisted = trace
        .events
        .iter_mut()
        .find_map(|event| match event {
            Event::State { persisted, .. } => Some(persisted),
            _ => None,
        })
        .expect("a probed state");
    *persisted += 1;
}

/// PERSIST-10.c: the runtime's last probed state is missing: its leaf stays one entry behind
/// the store's last acceptance.
pub(crate) fn last_probe_lags(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let last = trace
        .events
        .iter()
        .rposition(|event| matches!(event, Event::State { .. }))
        .expect("a probed state");
    trace.events.remove(last);
}

/// PERSIST-6.b: the prompt resolves with messages that lack its last appended one.
pub(crate) fn resolved_without_last_message(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut results = run_results(trace);
    results.first_mut().expect("a prompt resolves").messages.pop();
}

/// PERSIST-8.b: the second entry reuses the first one's timestamp (the clock read once).
pub(crate) fn timestamp_reused(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut entries = appended(trace);
    entries[1].timestamp = entries[0].timestamp.clone();
}

/// QUEUE-2.b: the first run's last appended response is not the one the model sent (its stop
/// reason rewritten).
pub(crate) fn appended_response_changed(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut entries = appended(trace);
    let response = entries
        .iter_mut()
        .find_map(|entry| match &mut entry.body {
            EntryBody::Message {
                message: Message::Assistant(assistant),
            } => Some(assistant),
            _ => None,
        })
        .expect("a run appends its response");
    response.stop_reason = match response.stop_reason {
        StopReason::Length => StopReason::Stop,
        _ => StopReason::Length,
    };
}

/// MODE-1.a: the mode writes another text than the final assistant text.
pub(crate) fn write_text_changed(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let text = trace
        .events
        .iter_mut()
        .find_map(|event| match event {
            Event::Write { text, .. } => Some(text),
            _ => None,
        })
        .expect("the mode writes");
    text.push_str(" (and more)");
}

/// MODE-2.b: the mode never writes (its write and the answer to it are gone).
pub(crate) fn write_removed(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    trace
        .events
        .retain(|event| !matches!(event, Event::Write { .. } | Event::WriteAnswer { .. }));
}

/// Where the library call settles, and its settlement.
fn library_settlement(trace: &mut Trace) -> (usize, &mut Settlement) {
    let (_, op) = delivery(trace, "library", 0);
    trace
        .events
        .iter_mut()
        .enumerate()
        .find_map(|(index, event)| match event {
            Event::Settled {
                op: settled,
                settlement,
            } if *settled == op => Some((index, settlement)),
            _ => None,
        })
        .expect("the library call settles")
}

/// MODE-5.a: the library call writes output just before it settles.
pub(crate) fn library_writes(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (at, _) = library_settlement(trace);
    trace.events.insert(
        at,
        Event::Write {
            effect: EffectId(10_000),
            text: "library output".into(),
        },
    );
}

/// MODE-5.c: the library call resolves with another text than the last assistant text.
pub(crate) fn library_text_changed(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    match library_settlement(trace).1 {
        Settlement::Resolved(OpValue::Library { text, .. }) => text.push_str(" (and more)"),
        other => panic!("the library call resolves, not {other:?}"),
    }
}

/// MODE-5.d: the library call rejects with an error prompt() never gave.
pub(crate) fn library_rejected(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    *library_settlement(trace).1 = Settlement::Rejected(Cause::new("library.failed", "the adapter failed"));
}

/// The model requests of the trace: (index, signal).
fn requests(trace: &Trace) -> Vec<(usize, SignalId)> {
    trace
        .events
        .iter()
        .enumerate()
        .filter_map(|(index, event)| match event {
            Event::ModelRequest { signal, .. } => Some((index, *signal)),
            _ => None,
        })
        .collect()
}

/// The first request of the second run (the first request with another signal than the first).
fn second_run_start(trace: &Trace) -> (usize, SignalId, SignalId) {
    let requests = requests(trace);
    let first = requests.first().expect("a model request").1;
    let (at, second) = requests
        .iter()
        .copied()
        .find(|(_, signal)| *signal != first)
        .expect("a second run");
    (at, first, second)
}

/// QUEUE-1.a: the queue releases the second prompt before it resolves the first (the first
/// prompt's settlement moved right behind the second run's first request).
pub(crate) fn queue_releases_early(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (_, first_op) = delivery(trace, "prompt", 0);
    let settled = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::Settled { op, .. } if *op == first_op))
        .expect("the first prompt settles");
    let event = trace.events.remove(settled);
    let (start, _, _) = second_run_start(trace);
    trace.events.insert(start + 1, event);
}

/// QUEUE-1.b: the first run's signal is used again once the second run has started (a copy of
/// its request, left unanswered).
pub(crate) fn first_signal_used_in_second_run(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (start, first, _) = second_run_start(trace);
    let copy = request_copy(trace, first, start);
    trace.events.insert(start + 1, copy);
}

/// MODE-4.b: the run's first entry is gone from the store after the output error.
pub(crate) fn first_entry_rolled_back(trace: &mut Trace, store: &mut Vec<SessionEntry>) {
    let first = appended(trace)
        .first()
        .map(|entry| entry.id.clone())
        .expect("the run appends");
    store.retain(|entry| entry.id != first);
}

/// MODE-2.a: the mode whose write failed prompted twice (its run, the trace's first, stores its
/// prompt a second time, in place of its response).
pub(crate) fn mode_prompted_twice(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut entries = appended(trace);
    assert!(entries.len() > 1, "the mode's run stores its prompt and a response");
    let prompt = entries[0].body.clone();
    entries[1].body = prompt;
}

/// QUEUE-1.c: the second prompt resolves before the first (its settlement moved right before
/// the first one's).
pub(crate) fn later_prompt_settles_first(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (_, first) = delivery(trace, "prompt", 0);
    let (_, second) = delivery(trace, "prompt", 1);
    let settled_at = |trace: &Trace, op| {
        trace
            .events
            .iter()
            .position(|event| matches!(event, Event::Settled { op: settled, .. } if *settled == op))
            .expect("the prompt settles")
    };
    let event = trace.events.remove(settled_at(trace, second));
    let at = settled_at(trace, first);
    trace.events.insert(at, event);
}

/// OBSERVE-1.a: the observers are never told of `message_end` (the notifications and their
/// answers are gone).
pub(crate) fn message_ends_never_told(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    drop_notifications(trace, |event| matches!(event, ObservedEvent::MessageEnd { .. }));
}

/// Removes the notifications of the agent events `which` picks, and their answers.
pub(crate) fn drop_notifications(trace: &mut Trace, which: fn(&ObservedEvent) -> bool) {
    let dropped: Vec<EffectId> = trace
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Notify {
                effect, agent_event, ..
            } if which(agent_event) => Some(*effect),
            _ => None,
        })
        .collect();
    trace.events.retain(|event| match event {
        Event::Notify { effect, .. } | Event::NotifyAnswer { effect, .. } => !dropped.contains(effect),
        _ => true,
    });
}

/// AGENT-3.b, AGENT-3.c: the follow-up never reaches the model: no request carries it.
pub(crate) fn follow_up_never_sent(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let text = trace
        .events
        .iter()
        .find_map(|event| match event {
            Event::Deliver {
                operation: Operation::FollowUp { text },
                ..
            } => Some(text.clone()),
            _ => None,
        })
        .expect("the scenario sends a follow-up");
    for event in &mut trace.events {
        if let Event::ModelRequest { messages, .. } = event {
            messages.retain(|message| !(matches!(message, Message::User(_)) && message.text().contains(&text)));
        }
    }
}

/// AGENT-5.a: the core tool runs the message's first two calls in the reverse order (the two
/// tool-call effects swapped, each with its answer where it was).
pub(crate) fn tool_calls_swapped(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let calls: Vec<usize> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, event)| matches!(event, Event::ToolCall { .. }))
        .map(|(index, _)| index)
        .collect();
    let [first, second, ..] = calls.as_slice() else {
        panic!("two tool calls");
    };
    let (first, second) = (*first, *second);
    let swap = |event: &mut Event, other: &Event| {
        if let (Event::ToolCall { call, .. }, Event::ToolCall { call: other_call, .. }) = (event, other) {
            *call = other_call.clone();
        }
    };
    let (a, b) = (trace.events[first].clone(), trace.events[second].clone());
    swap(&mut trace.events[first], &b);
    swap(&mut trace.events[second], &a);
}

/// AGENT-5.b: the first call's result is stored twice, the second call's never (the second
/// result's entry holds a copy of the first's).
pub(crate) fn tool_result_stored_twice(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut entries = appended(trace);
    let results: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, entry)| matches!(entry.as_message(), Some(Message::ToolResult(_))))
        .map(|(index, _)| index)
        .collect();
    let [first, second, ..] = results.as_slice() else {
        panic!("two stored tool results");
    };
    let body = entries[*first].body.clone();
    entries[*second].body = body;
}

/// AGENT-6.a: the run asks the model again after the response with stopReason `error` (a copy
/// of its last request, left unanswered, right behind that response).
pub(crate) fn request_after_error(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let answered = trace
        .events
        .iter()
        .position(
            |event| matches!(event, Event::ModelResponse { message, .. } if message.stop_reason == StopReason::Error),
        )
        .expect("the model answers with an error");
    let signal = requests(trace).first().expect("a request").1;
    let copy = request_copy(trace, signal, answered);
    trace.events.insert(answered + 1, copy);
}

/// AGENT-6.b: the run that ended in an error resolves as if it had stopped.
pub(crate) fn error_run_resolves_stop(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut results = run_results(trace);
    let result = results.first_mut().expect("a prompt resolves");
    assert_eq!(result.reason, RunReason::Error);
    result.reason = RunReason::Stop;
}

/// SETTLE-1.a: the first prompt resolves with nothing, not with its run's result.
pub(crate) fn prompt_resolves_with_nothing(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (_, op) = delivery(trace, "prompt", 0);
    for event in &mut trace.events {
        if let Event::Settled {
            op: settled,
            settlement,
        } = event
        {
            if *settled == op {
                assert!(
                    matches!(settlement, Settlement::Resolved(OpValue::Run(_))),
                    "the prompt resolves"
                );
                *settlement = Settlement::Resolved(OpValue::Unit);
            }
        }
    }
}

/// The outcome of restoring a new runtime from the file read back.
fn reopened_outcome(trace: &mut Trace) -> &mut Result<Vec<String>, Cause> {
    trace
        .events
        .iter_mut()
        .find_map(|event| match event {
            Event::Reopened { outcome, .. } => Some(outcome),
            _ => None,
        })
        .expect("the world reopened the session")
}

/// DURABLE-2.a: the new runtime cannot be restored at the last acknowledged leaf.
pub(crate) fn reopened_restore_fails(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    *reopened_outcome(trace) = Err(Cause::new("path.unknown_leaf", "the leaf is not in the file"));
}

/// DURABLE-2.b: the new runtime's chain lacks the last acknowledged entry.
pub(crate) fn reopened_chain_short(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    match reopened_outcome(trace) {
        Ok(path) => {
            path.pop().expect("the chain has entries");
        }
        Err(cause) => panic!("the reference's reopen fails: {cause}"),
    }
}

/// DURABLE-3.a: the operation whose append's answer was lost rejects with another cause.
pub(crate) fn lost_answer_rejects_otherwise(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    use agentsim::trace::AppendAnswer;
    let cause = trace
        .events
        .iter()
        .find_map(|event| match event {
            Event::AppendAnswer {
                answer: AppendAnswer::Lost { cause },
                ..
            } => Some(cause.clone()),
            _ => None,
        })
        .expect("an append's answer was lost");
    for event in &mut trace.events {
        if let Event::Settled {
            settlement: Settlement::Rejected(got),
            ..
        } = event
        {
            if *got == cause {
                *got = Cause::new("store.failed", "the store failed");
            }
        }
    }
}

/// WIRE-2.b: a request carries a system prompt though nothing was configured.
pub(crate) fn system_prompt_invented(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    for event in &mut trace.events {
        if let Event::ModelRequest { system_prompt, .. } = event {
            *system_prompt = Some("You are a helpful assistant.".into());
        }
    }
}

/// The hook events of the trace: (index, phase).
fn hooks(trace: &Trace) -> Vec<(usize, HookPhase)> {
    trace
        .events
        .iter()
        .enumerate()
        .filter_map(|(index, event)| match event {
            Event::Hook { phase, .. } => Some((index, *phase)),
            _ => None,
        })
        .collect()
}

/// WIRE-4.a: the first call's two before hooks run in the reverse extension order (their
/// extensions swapped).
pub(crate) fn before_hooks_swapped(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let befores: Vec<usize> = hooks(trace)
        .into_iter()
        .filter(|(_, phase)| *phase == HookPhase::Before)
        .map(|(index, _)| index)
        .collect();
    let [first, second, ..] = befores.as_slice() else {
        panic!("two before hooks");
    };
    let name = |event: &Event| match event {
        Event::Hook { extension, .. } => extension.clone(),
        _ => unreachable!(),
    };
    let (first_name, second_name) = (name(&trace.events[*first]), name(&trace.events[*second]));
    assert_ne!(first_name, second_name, "two extensions");
    for (index, extension) in [(*first, second_name), (*second, first_name)] {
        if let Event::Hook { extension: named, .. } = &mut trace.events[index] {
            *named = extension;
        }
    }
}

/// WIRE-4.d: the first hook is given the call under another tool's name.
pub(crate) fn hook_given_another_name(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (first, _) = hooks(trace).first().copied().expect("a hook");
    if let Event::Hook { call, .. } = &mut trace.events[first] {
        call.name = format!("{}_renamed", call.name);
    }
}

/// WIRE-4.e: the first after hook is shown the result of another call.
pub(crate) fn after_hook_shown_another_result(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (first, _) = hooks(trace)
        .into_iter()
        .find(|(_, phase)| *phase == HookPhase::After)
        .expect("an after hook");
    if let Event::Hook {
        result: Some(result), ..
    } = &mut trace.events[first]
    {
        result.tool_call_id = "another-call".into();
    }
}

/// WIRE-5.b: after the before hook blocked the call, a hook runs for it once more (a copy of
/// the blocking hook, left unanswered, right behind its answer).
pub(crate) fn hook_after_block(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (blocking, effect) = trace
        .events
        .iter()
        .enumerate()
        .find_map(|(index, event)| match event {
            Event::Hook {
                effect,
                phase: HookPhase::Before,
                ..
            } => Some((index, *effect)),
            _ => None,
        })
        .expect("a before hook");
    let answered = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::HookAnswer { effect: answered, .. } if *answered == effect))
        .expect("the hook answers");
    let mut copy = trace.events[blocking].clone();
    if let Event::Hook { effect, .. } = &mut copy {
        *effect = EffectId(10_000);
    }
    trace.events.insert(answered + 1, copy);
}

/// WIRE-5.c, WIRE-7.b: the first call's result, as after hooks are shown it and as the run
/// stores it, is no error.
pub(crate) fn recorded_result_not_error(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    for event in &mut trace.events {
        match event {
            Event::Hook {
                result: Some(result), ..
            } => result.is_error = false,
            Event::Append { entry, .. } => {
                if let EntryBody::Message {
                    message: Message::ToolResult(result),
                } = &mut entry.body
                {
                    result.is_error = false;
                }
            }
            _ => {}
        }
    }
}

/// WIRE-7.a: the core tool runs the model's first call (an unknown tool), right after the
/// response that made it.
pub(crate) fn core_runs_the_call(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (at, call) = trace
        .events
        .iter()
        .enumerate()
        .find_map(|(index, event)| match event {
            Event::ModelResponse { message, .. } => message.tool_calls().first().map(|call| (index, (*call).clone())),
            _ => None,
        })
        .expect("the model calls a tool");
    let signal = requests(trace).first().expect("a request").1;
    trace.events.insert(
        at + 1,
        Event::ToolCall {
            effect: EffectId(10_000),
            signal,
            call,
        },
    );
}

/// WIRE-4.c: the first after hook runs before the core tool (moved right in front of it).
pub(crate) fn after_hook_before_core(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (after, _) = hooks(trace)
        .into_iter()
        .find(|(_, phase)| *phase == HookPhase::After)
        .expect("an after hook");
    let core = trace.events[..after]
        .iter()
        .rposition(|event| matches!(event, Event::ToolCall { .. }))
        .expect("the core tool ran before it");
    let hook = trace.events.remove(after);
    trace.events.insert(core, hook);
}

/// WIRE-5.a: the core tool runs the call the before hook denied, right after the deny.
pub(crate) fn core_after_block(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (effect, call) = trace
        .events
        .iter()
        .find_map(|event| match event {
            Event::Hook {
                effect,
                phase: HookPhase::Before,
                call,
                ..
            } => Some((*effect, call.clone())),
            _ => None,
        })
        .expect("a before hook");
    let answered = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::HookAnswer { effect: answered, .. } if *answered == effect))
        .expect("the hook answers");
    let signal = requests(trace).first().expect("a request").1;
    trace.events.insert(
        answered + 1,
        Event::ToolCall {
            effect: EffectId(10_000),
            signal,
            call,
        },
    );
}

/// PROJECT-5.b: the second run's requests and tool calls carry the first run's signal.
pub(crate) fn second_run_reuses_the_signal(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (_, first, second) = second_run_start(trace);
    for event in &mut trace.events {
        match event {
            Event::ModelRequest { signal, .. } | Event::ToolCall { signal, .. } if *signal == second => *signal = first,
            _ => {}
        }
    }
}

/// The messages of every model request.
fn request_messages(trace: &mut Trace) -> Vec<&mut Vec<Message>> {
    trace
        .events
        .iter_mut()
        .filter_map(|event| match event {
            Event::ModelRequest { messages, .. } => Some(messages),
            _ => None,
        })
        .collect()
}

/// CONTEXT-1.a: the first request carries one more, large, message than the budget leaves room
/// for.
pub(crate) fn request_over_budget(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut requests = request_messages(trace);
    let messages = requests.first_mut().expect("a request");
    let mut large = messages.first().cloned().expect("the request carries a message");
    if let Message::User(user) = &mut large {
        user.content = UserContent::Text("padding ".repeat(10_000));
    } else {
        panic!("the first message is a user message");
    }
    messages.insert(0, large);
}

/// CONTEXT-1.b: the last request drops its oldest message, though everything fit.
pub(crate) fn oldest_message_dropped(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut requests = request_messages(trace);
    let messages = requests.last_mut().expect("a request");
    assert!(messages.len() > 1, "the request carries more than one message");
    messages.remove(0);
}

/// The request whose messages hold a tool call, and where that call's message is.
fn request_with_call(trace: &mut Trace) -> (&mut Vec<Message>, usize) {
    request_messages(trace)
        .into_iter()
        .find_map(|messages| {
            let at = messages.iter().position(|message| {
                message
                    .as_assistant()
                    .is_some_and(|assistant| !assistant.tool_calls().is_empty())
            })?;
            Some((messages, at))
        })
        .expect("a request carries a tool call")
}

/// CONTEXT-2.a: a request carries a tool call without its result.
pub(crate) fn request_lacks_a_result(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (messages, at) = request_with_call(trace);
    let result = messages[at..]
        .iter()
        .position(|message| matches!(message, Message::ToolResult(_)))
        .expect("the call's result follows it");
    messages.remove(at + result);
}

/// CONTEXT-2.b: a request carries tool results without the call that made them.
pub(crate) fn request_lacks_the_call(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (messages, at) = request_with_call(trace);
    messages.remove(at);
}

/// CONTEXT-3.a: the requests leave the compaction summary out.
pub(crate) fn summary_left_out(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    for messages in request_messages(trace) {
        messages.remove(0);
    }
}

// The signature is every edit's (bite.rs's `Bad::Edit`), which may grow the store.
#[allow(clippy::ptr_arg)]
/// CONTEXT-3.b: the requests carry the session's first message, from before `firstKeptEntryId`,
/// right after the summary.
pub(crate) fn compacted_message_sent(trace: &mut Trace, store: &mut Vec<SessionEntry>) {
    let compacted = store
        .iter()
        .find_map(SessionEntry::as_message)
        .cloned()
        .expect("the session had a message");
    for messages in request_messages(trace) {
        assert!(!messages.contains(&compacted), "the message was compacted away");
        messages.insert(1, compacted.clone());
    }
}

/// PROJECT-7.a: the last request carries its first message a second time, at its end.
pub(crate) fn message_sent_twice(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let mut requests = request_messages(trace);
    let messages = requests.last_mut().expect("a request");
    let first = messages.first().cloned().expect("the request carries a message");
    messages.push(first);
}

/// The trace's append of the entry `id` and its answer, as lines of the trace.
fn append_and_answer(trace: &Trace, id: &str) -> (usize, usize) {
    let (append, effect) = trace
        .events
        .iter()
        .enumerate()
        .find_map(|(line, event)| match event {
            Event::Append { effect, entry } if entry.id == id => Some((line, *effect)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("entry `{id}` is appended"));
    let answer = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::AppendAnswer { effect: answered, .. } if *answered == effect))
        .unwrap_or_else(|| panic!("the append of `{id}` is answered"));
    (append, answer)
}

/// The entry `id` as the trace appended it and as the store holds it, changed alike.
fn change_entry(trace: &mut Trace, store: &mut [SessionEntry], id: &str, change: impl Fn(&mut SessionEntry)) {
    for entry in appended(trace).into_iter().filter(|entry| entry.id == id) {
        change(entry);
    }
    for entry in store.iter_mut().filter(|entry| entry.id == id) {
        change(entry);
    }
}

/// The appended entries of one role, in order, by id.
fn appended_ids(trace: &mut Trace, role: &str) -> Vec<String> {
    appended(trace)
        .into_iter()
        .filter(|entry| entry.as_message().is_some_and(|message| message.role() == role))
        .map(|entry| entry.id.clone())
        .collect()
}

/// The id of the entry the runtime appended below `parent`.
fn child_of(trace: &mut Trace, parent: &str) -> String {
    appended(trace)
        .into_iter()
        .find(|entry| entry.parent_id.as_deref() == Some(parent))
        .map(|entry| entry.id.clone())
        .unwrap_or_else(|| panic!("an entry below `{parent}`"))
}

/// PERSIST-9.a: the runtime appends its last user message as a root (it read its leaf as none):
/// the stored session has two roots.
// The signature is every edit's (bite.rs's `Bad::Edit`), which may grow the store.
#[allow(clippy::ptr_arg)]
pub(crate) fn last_user_message_stored_as_a_root(trace: &mut Trace, store: &mut Vec<SessionEntry>) {
    let last = appended_ids(trace, "user")
        .pop()
        .expect("the runtime appends a user message");
    change_entry(trace, store, &last, |entry| entry.parent_id = None);
}

/// PERSIST-9.b: the last tool result is never stored: the run appends its last response below
/// the call.
pub(crate) fn last_tool_result_never_stored(trace: &mut Trace, store: &mut Vec<SessionEntry>) {
    let result = appended_ids(trace, "toolResult").pop().expect("a stored tool result");
    let call = store
        .iter()
        .find(|entry| entry.id == result)
        .and_then(|entry| entry.parent_id.clone())
        .expect("the result hangs below its call");
    let next = child_of(trace, &result);
    change_entry(trace, store, &next, |entry| entry.parent_id = Some(call.clone()));
    let (append, answer) = append_and_answer(trace, &result);
    trace.events.remove(answer);
    trace.events.remove(append);
    store.retain(|entry| entry.id != result);
}

/// PERSIST-9.c: the last tool result is stored a second time, under an id of its own, right
/// below the first (a retry the store had already applied once).
pub(crate) fn last_tool_result_stored_again(trace: &mut Trace, store: &mut Vec<SessionEntry>) {
    let result = appended_ids(trace, "toolResult").pop().expect("a stored tool result");
    let next = child_of(trace, &result);
    let again = format!("{result}-again");
    change_entry(trace, store, &next, |entry| entry.parent_id = Some(again.clone()));
    let mut copy = store
        .iter()
        .find(|entry| entry.id == result)
        .cloned()
        .expect("the store holds the result");
    copy.id = again;
    copy.parent_id = Some(result.clone());
    let (_, answer) = append_and_answer(trace, &result);
    let effect = agentsim::runtime::EffectId(9_999);
    trace.events.splice(
        answer + 1..answer + 1,
        [
            Event::Append {
                effect,
                entry: copy.clone(),
            },
            Event::AppendAnswer {
                effect,
                answer: agentsim::trace::AppendAnswer::Ok,
            },
        ],
    );
    let at = store.iter().position(|entry| entry.id == result).expect("stored") + 1;
    store.insert(at, copy);
}

/// PERSIST-9.d: the steer is stored between the first tool call and its result (appended as it
/// arrived, while the tool ran), not after the results.
pub(crate) fn steer_stored_between_call_and_result(trace: &mut Trace, store: &mut Vec<SessionEntry>) {
    let steer = appended_ids(trace, "user")
        .get(1)
        .cloned()
        .expect("the steer is stored");
    let result = appended_ids(trace, "toolResult")
        .first()
        .cloned()
        .expect("a stored tool result");
    let call = store
        .iter()
        .find(|entry| entry.id == result)
        .and_then(|entry| entry.parent_id.clone())
        .expect("the result hangs below its call");
    let steer_parent = store
        .iter()
        .find(|entry| entry.id == steer)
        .and_then(|entry| entry.parent_id.clone())
        .expect("the steer hangs below the last result");
    let after_steer = child_of(trace, &steer);
    change_entry(trace, store, &after_steer, |entry| {
        entry.parent_id = Some(steer_parent.clone())
    });
    change_entry(trace, store, &result, |entry| entry.parent_id = Some(steer.clone()));
    change_entry(trace, store, &steer, |entry| entry.parent_id = Some(call.clone()));
    // Appended in that order too: the steer's append moves in front of the result's.
    let (append, answer) = append_and_answer(trace, &steer);
    let answer_event = trace.events.remove(answer);
    let append_event = trace.events.remove(append);
    let (result_append, _) = append_and_answer(trace, &result);
    trace
        .events
        .splice(result_append..result_append, [append_event, answer_event]);
    let moved = store.iter().position(|entry| entry.id == steer).expect("stored");
    let entry = store.remove(moved);
    let at = store.iter().position(|entry| entry.id == result).expect("stored");
    store.insert(at, entry);
}

/// SETTLE-2.a: the first prompt settles one step late: behind the input that followed its
/// settlement, as a runtime that resolves on a later tick would.
pub(crate) fn prompt_settles_one_step_late(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (_, op) = delivery(trace, "prompt", 0);
    let at = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::Settled { op: settled, .. } if *settled == op))
        .expect("the prompt settles");
    let settled = trace.events.remove(at);
    let next_input = trace.events[at..]
        .iter()
        .position(Event::is_input)
        .expect("an input follows the prompt's settlement");
    trace.events.insert(at + next_input + 1, settled);
}

/// REF-1.b: an abort signal no effect carried fires after the first operation settled.
pub(crate) fn stray_abort_signal(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let at = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::Settled { .. }))
        .expect("an operation settles");
    trace
        .events
        .insert(at + 1, Event::AbortSignal { signal: SignalId(999) });
}

/// PERSIST-7.b: the first prompt's first entry is appended (and accepted) before its run's
/// first model request, as a runtime that persists each message as it ends does.
pub(crate) fn prompt_appended_before_its_first_request(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (append, answer) = first_append_and_answer(trace);
    let request = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::ModelRequest { .. }))
        .expect("a model request");
    trace.events.insert(request, answer);
    trace.events.insert(request, append);
}

/// PERSIST-7.a: the first prompt's first entry is appended (and accepted) right after its run's
/// first model response, while the run goes on to its next request.
pub(crate) fn prompt_appended_between_its_requests(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let (append, answer) = first_append_and_answer(trace);
    let response = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::ModelResponse { .. }))
        .expect("a model response");
    trace.events.insert(response + 1, answer);
    trace.events.insert(response + 1, append);
}

/// The first append and its answer, taken out of the trace.
fn first_append_and_answer(trace: &mut Trace) -> (Event, Event) {
    let append = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::Append { .. }))
        .expect("an append");
    let Event::Append { effect, .. } = trace.events[append] else {
        unreachable!("found as an append")
    };
    let answer = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::AppendAnswer { effect: answered, .. } if *answered == effect))
        .expect("the append is answered");
    let answer = trace.events.remove(answer);
    (trace.events.remove(append), answer)
}

/// REF-1.a: the observer of turns is never told of the run's last turn (its `turn_end` and the
/// answer to it are gone): no rule counts an observer's turns, the reference tells it.
pub(crate) fn last_turn_end_never_told(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let at = trace
        .events
        .iter()
        .rposition(|event| {
            matches!(
                event,
                Event::Notify {
                    agent_event: ObservedEvent::TurnEnd { .. },
                    ..
                }
            )
        })
        .expect("the observer is told of turns");
    let Event::Notify { effect, .. } = trace.events.remove(at) else {
        unreachable!("found above")
    };
    trace
        .events
        .retain(|event| !matches!(event, Event::NotifyAnswer { effect: answered, .. } if *answered == effect));
}
