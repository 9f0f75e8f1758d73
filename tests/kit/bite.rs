//! Bite tests: every rule of the catalogue is proven on a known-bad trace, the way Elle proves
//! each anomaly checker on histories that contain the anomaly.
//!
//! A bite is a scenario plus a way to make its trace wrong: a mutant of the zoo (a seam
//! decorator) run on the canonical schedule, or a hand edit of the
//! reference's own trace for the rules no runtime mutant can reach (an effect before the first
//! operation; the durable store's rules). Each bite must make its rule fire, and the reference's
//! trace of the same scenario must be clean of every rule. A bite names the clause it breaks
//! (`OBSERVE-2.b`, conformance.md's `Clauses:`), and only that clause of its rule may fire, so
//! each clause is proven on its own. `every_rule_has_a_bite` and the tidy test
//! (`tidy_every_clause_has_a_checker_branch_a_bite_and_a_scenario`) are the tidy half: a rule or
//! a clause without a bite fails them.

use std::path::Path;

use agentsim::check::RULE_IDS;
use agentsim::implementation::Implementation;
use agentsim::model::SessionEntry;
use agentsim::oracle::check_with_reference;
use agentsim::run::{CaseReport, Run};
use agentsim::scenario::LoadedScenario;
use agentsim::sim::StrategyKind;
use agentsim::suite::load_corpus;
use agentsim::trace::{Event, Trace};
use agentsim::zoo::Mutant;

use crate::clauses;

/// How a bite makes a bad trace.
enum Bad {
    /// Run the scenario's canonical schedule on a mutant of the zoo.
    Mutant(&'static str),
    /// Edit the reference's canonical trace (and final store) by hand.
    Edit(fn(&mut Trace, &mut Vec<SessionEntry>)),
}

pub(crate) struct Bite {
    /// The clause the bad trace breaks (`OBSERVE-2.b`): with `also`, the only clauses of its
    /// rule that fire.
    pub(crate) breaks: &'static str,
    /// The other clauses of the same rule the bad trace breaks too (a mutant whose bug breaks
    /// two promises); empty for a bite that proves its clause alone.
    pub(crate) also: &'static [&'static str],
    pub(crate) scenario: &'static str,
    bad: Bad,
}

const fn mutant(breaks: &'static str, scenario: &'static str, name: &'static str) -> Bite {
    Bite {
        breaks,
        also: &[],
        scenario,
        bad: Bad::Mutant(name),
    }
}

/// A mutant that breaks `breaks` and, by the same bug, the clauses `also` of the same rule.
const fn mutant_also(
    breaks: &'static str,
    also: &'static [&'static str],
    scenario: &'static str,
    name: &'static str,
) -> Bite {
    Bite {
        breaks,
        also,
        scenario,
        bad: Bad::Mutant(name),
    }
}

const fn edit(breaks: &'static str, scenario: &'static str, edit: fn(&mut Trace, &mut Vec<SessionEntry>)) -> Bite {
    Bite {
        breaks,
        also: &[],
        scenario,
        bad: Bad::Edit(edit),
    }
}

/// An append issued right after the restore, before the first operation arrives.
fn append_before_first_operation(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let append = trace
        .events
        .iter()
        .find(|event| matches!(event, Event::Append { .. }))
        .cloned()
        .expect("the scenario appends");
    trace.events.insert(1, append);
}

/// The abort signal removed: the abort was answered, the stream ran on.
fn abort_signal_removed(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    trace.events.retain(|event| !matches!(event, Event::AbortSignal { .. }));
}

/// The session file read back lost the run's first entry, which the store acknowledged.
fn acknowledged_entry_lost(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let first = trace
        .events
        .iter()
        .find_map(|event| match event {
            Event::Append { entry, .. } => Some(entry.id.clone()),
            _ => None,
        })
        .expect("the scenario appends");
    for event in &mut trace.events {
        if let Event::Reopened { stored, .. } = event {
            stored.retain(|id| *id != first);
        }
    }
}

/// The store could not read its own file back after the crash.
fn file_unreadable_after_crash(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    for event in &mut trace.events {
        if let Event::Reopened { outcome, .. } = event {
            *outcome = Err(agentsim::runtime::Cause::new(
                "session.bad_line",
                "line 3 is not JSON: a torn line merged with the next append",
            ));
        }
    }
}

/// The first message an observer is told of by message_end is not the one stored: its text
/// changed between the telling and the storing.
fn observer_told_another_message(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    use agentsim::model::Message;
    use agentsim::runtime::ObservedEvent;
    let told = trace.events.iter_mut().find_map(|event| match event {
        Event::Notify {
            agent_event: ObservedEvent::MessageEnd { message },
            ..
        } => Some(message),
        _ => None,
    });
    match told.expect("the scenario has a message_end observer") {
        Message::User(user) => user.content = agentsim::model::UserContent::Text("a different prompt".into()),
        other => panic!("the first message told is the prompt, not {other:?}"),
    }
}

/// The runs' agent_end notifications (and their answers) never happen.
fn agent_end_never_told(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    use agentsim::runtime::ObservedEvent;
    clauses::drop_notifications(trace, |event| matches!(event, ObservedEvent::AgentEnd { .. }));
}

/// The second prompt is rejected with the error the observer threw at the end of the first run.
fn observer_error_rejects_a_prompt(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    use agentsim::runtime::{Cause, NotifyOutcome, Settlement};
    let thrown = trace
        .events
        .iter()
        .filter_map(|event| match event {
            Event::NotifyAnswer {
                answer: NotifyOutcome::Threw { message },
                ..
            } => Some(message.clone()),
            _ => None,
        })
        .next_back()
        .expect("the observer throws");
    let last = trace
        .events
        .iter_mut()
        .rev()
        .find_map(|event| match event {
            Event::Settled { settlement, .. } => Some(settlement),
            _ => None,
        })
        .expect("an operation settles");
    *last = Settlement::Rejected(Cause::new("extension.error", thrown));
}

/// The runtime waits for its observer: the last append is issued only once the observer of the
/// message before it answered (moved right behind that answer).
fn append_waits_for_observer(trace: &mut Trace, _: &mut Vec<SessionEntry>) {
    let answer = trace
        .events
        .iter()
        .position(|event| matches!(event, Event::NotifyAnswer { .. }))
        .expect("an observer answers");
    let append = trace
        .events
        .iter()
        .rposition(|event| matches!(event, Event::Append { .. }))
        .expect("the scenario appends");
    let event = trace.events.remove(append);
    let answer = if append < answer { answer - 1 } else { answer };
    trace.events.insert(answer + 1, event);
}

/// One bite per rule at least; rules with several ways to break have a bite per way.
pub(crate) const BITES: &[Bite] = &[
    mutant(
        "RESTORE-1.a",
        "restore/empty-session-null-leaf",
        "null-leaf-always-rejected",
    ),
    edit(
        "RESTORE-1.b",
        "restore/empty-session-null-leaf",
        clauses::restored_one_message_more,
    ),
    edit(
        "RESTORE-1.c",
        "restore/empty-session-null-leaf",
        clauses::restored_at_another_leaf,
    ),
    mutant(
        "RESTORE-2.a",
        "lab13/lab13-1-1b-empty-session-with-leaf-rejected",
        "empty-session-ignores-leaf",
    ),
    edit(
        "RESTORE-2.b",
        "lab13/lab13-1-1b-empty-session-with-leaf-rejected",
        clauses::request_after_rejected_restore,
    ),
    mutant(
        "RESTORE-3.a",
        "lab13/lab13-1-1-non-empty-session-needs-explicit-leaf",
        "null-leaf-resumes-last",
    ),
    edit(
        "RESTORE-4.a",
        "restore/sibling-branch-left-excluded",
        clauses::restore_rejected,
    ),
    mutant(
        "RESTORE-4.b",
        "lab13/lab13-1-1d-non-empty-session-with-leaf-path-to",
        "restore-whole-file",
    ),
    edit(
        "RESTORE-4.b",
        "restore/sibling-branch-left-excluded",
        clauses::restored_one_message_more,
    ),
    edit(
        "RESTORE-4.c",
        "restore/sibling-branch-left-excluded",
        clauses::restored_at_another_leaf,
    ),
    edit(
        "RESTORE-4.d",
        "restore/sibling-branch-left-excluded",
        clauses::sibling_message_sent,
    ),
    edit("RESTORE-5.a", "wiring/walkthrough", append_before_first_operation),
    edit(
        "RESTORE-5.a",
        "lab13/lab13-1-1d-non-empty-session-with-leaf-path-to",
        append_before_first_operation,
    ),
    edit("PATH-1.a", "restore/unknown-leaf", clauses::restore_accepted),
    mutant("PATH-1.b", "restore/leaf-named-only-as-parent", "path-errors-generic"),
    mutant(
        "PATH-2.a",
        "restore/duplicate-id-off-chain",
        "restore-accepts-broken-tree",
    ),
    mutant("PATH-2.b", "restore/duplicate-id-on-chain", "path-errors-generic"),
    mutant(
        "PATH-3.a",
        "restore/missing-parent-on-chain",
        "restore-accepts-broken-tree",
    ),
    mutant("PATH-3.b", "restore/missing-parent-on-chain", "path-errors-generic"),
    mutant("PATH-4.a", "restore/cycle-on-chain", "restore-accepts-broken-tree"),
    mutant("PATH-4.b", "restore/cycle-on-chain", "path-errors-generic"),
    mutant(
        "PROJECT-1.a",
        "projection/temporary-suffix-each-request",
        "temporary-suffix-dropped",
    ),
    mutant(
        "PROJECT-1.a",
        "projection/temporary-suffix-each-request",
        "suffix-frozen-at-user",
    ),
    mutant("PROJECT-1.a", "agent/abort-mid-stream", "snapshot-captured-once"),
    // A run whose first append fails never appends a response: its first request is judged
    // from the run's user message alone.
    mutant(
        "PROJECT-1.a",
        "poison/reject-at-first-append",
        "temporary-suffix-dropped",
    ),
    // A run whose append of its last tool result fails: its second request is judged from the
    // messages it appended, the failed one included.
    mutant(
        "PROJECT-1.a",
        "poison/default-cause-middle-append",
        "suffix-frozen-at-user",
    ),
    // A run whose first append fails goes on unstored: its second request is judged with the
    // response and tool result it never appended taken from the request, found by their ids.
    mutant("PROJECT-1.a", "poison/reject-at-first-append", "suffix-frozen-at-user"),
    mutant(
        "PROJECT-2.a",
        "lab13/lab13-3-1-resources-extension-serial-commit",
        "inactive-skill-body-shown",
    ),
    mutant(
        "PROJECT-3.a",
        "agent/abort-during-before-hook",
        "temporary-entries-stored",
    ),
    mutant(
        "PROJECT-3.a",
        "projection/temporary-suffix-each-request",
        "temporary-entries-stored",
    ),
    mutant(
        "PROJECT-2.a",
        "wiring/inactive-skill-body-never-sent",
        "inactive-skill-body-shown",
    ),
    mutant(
        "PROJECT-4.a",
        "lab13/lab13-2-3b-tools-and-signal-across-two-runs",
        "tools-sorted-by-name",
    ),
    mutant("PROJECT-4.b", "wiring/walkthrough", "tool-schema-dropped"),
    mutant(
        "PROJECT-4.b",
        "projection/tools-every-request-registration-order",
        "tool-schema-dropped",
    ),
    mutant("PROJECT-5.a", "projection/one-signal-per-run", "signal-per-request"),
    edit(
        "PROJECT-5.b",
        "projection/one-signal-per-run",
        clauses::second_run_reuses_the_signal,
    ),
    mutant(
        "PROJECT-6.a",
        "projection/temporary-id-collides-with-path",
        "temporary-id-not-prefixed",
    ),
    mutant("PROJECT-7.a", "agent/abort-mid-stream", "snapshot-captured-once"),
    edit(
        "PROJECT-7.a",
        "projection/second-prompt-sees-committed-history",
        clauses::message_sent_twice,
    ),
    mutant("CONTEXT-1.b", "agent/abort-mid-stream", "projection-slices-messages"),
    edit(
        "CONTEXT-1.a",
        "projection/budget-exact-fit-keeps-all",
        clauses::request_over_budget,
    ),
    edit(
        "CONTEXT-1.b",
        "projection/budget-exact-fit-keeps-all",
        clauses::oldest_message_dropped,
    ),
    edit(
        "CONTEXT-2.a",
        "agent/tool-calls-run-in-order",
        clauses::request_lacks_a_result,
    ),
    edit(
        "CONTEXT-2.b",
        "agent/tool-calls-run-in-order",
        clauses::request_lacks_the_call,
    ),
    edit(
        "CONTEXT-3.a",
        "projection/compaction-summary-first",
        clauses::summary_left_out,
    ),
    edit(
        "CONTEXT-3.b",
        "projection/compaction-summary-first",
        clauses::compacted_message_sent,
    ),
    mutant(
        "CONTEXT-2.b",
        "agent/control-calls-settle-at-once",
        "projection-slices-messages",
    ),
    mutant_also(
        "CONTEXT-3.a",
        &["CONTEXT-3.b"],
        "projection/compaction-as-leaf",
        "projection-slices-messages",
    ),
    edit(
        "WIRE-2.b",
        "wiring/no-system-prompt-at-all",
        clauses::system_prompt_invented,
    ),
    mutant(
        "WIRE-1.a",
        "lab13/lab13-3-1-resources-extension-serial-commit",
        "resources-before-configured-prompt",
    ),
    mutant(
        "WIRE-2.a",
        "wiring/empty-catalog-no-resource-header",
        "resource-header-on-empty-catalog",
    ),
    mutant(
        "WIRE-3.a",
        "lab13/lab13-3-1-resources-extension-serial-commit",
        "inactive-skill-body-shown",
    ),
    mutant_also(
        "WIRE-4.c",
        &["WIRE-4.b"],
        "agent/tool-throws-becomes-error-result",
        "core-outside-hooks",
    ),
    edit(
        "WIRE-4.c",
        "wiring/hooks-wrap-core-in-extension-order",
        clauses::after_hook_before_core,
    ),
    mutant("WIRE-4.b", "wiring/walkthrough", "after-hooks-skipped"),
    mutant(
        "WIRE-4.b",
        "wiring/hooks-wrap-core-in-extension-order",
        "last-after-hook-skipped",
    ),
    edit(
        "WIRE-4.a",
        "wiring/hooks-wrap-core-in-extension-order",
        clauses::before_hooks_swapped,
    ),
    edit(
        "WIRE-4.d",
        "wiring/hooks-wrap-core-in-extension-order",
        clauses::hook_given_another_name,
    ),
    edit(
        "WIRE-4.e",
        "wiring/hooks-wrap-core-in-extension-order",
        clauses::after_hook_shown_another_result,
    ),
    mutant_also(
        "WIRE-5.a",
        &["WIRE-5.b", "WIRE-5.c"],
        "wiring/before-hook-denies-call",
        "deny-ignored",
    ),
    edit("WIRE-5.a", "wiring/before-hook-denies-call", clauses::core_after_block),
    edit("WIRE-5.b", "wiring/before-hook-denies-call", clauses::hook_after_block),
    mutant(
        "WIRE-5.b",
        "wiring/before-hook-denies-call",
        "after-hooks-see-blocked-call",
    ),
    edit(
        "WIRE-5.c",
        "wiring/before-hook-denies-call",
        clauses::recorded_result_not_error,
    ),
    mutant(
        "WIRE-6.a",
        "wiring/before-hook-rewrites-arguments",
        "rewritten-arguments-ignored",
    ),
    mutant_also(
        "WIRE-7.a",
        &["WIRE-7.b"],
        "wiring/invalid-arguments-error-result",
        "arguments-not-validated",
    ),
    edit(
        "WIRE-7.a",
        "wiring/unknown-tool-error-result",
        clauses::core_runs_the_call,
    ),
    edit(
        "WIRE-7.b",
        "wiring/unknown-tool-error-result",
        clauses::recorded_result_not_error,
    ),
    mutant("WIRE-8.a", "wiring/after-hook-rewrites-result", "after-rewrite-ignored"),
    mutant("WIRE-9.a", "wiring/unknown-tool-error-result", "error-texts-reworded"),
    mutant(
        "WIRE-9.b",
        "wiring/invalid-arguments-error-result",
        "error-texts-reworded",
    ),
    mutant(
        "WIRE-9.c",
        "wiring/before-hook-throws-fails-closed",
        "error-texts-reworded",
    ),
    mutant(
        "WIRE-9.d",
        "wiring/after-hook-throws-error-result",
        "error-texts-reworded",
    ),
    mutant_also(
        "PERSIST-1.b",
        &["PERSIST-1.a"],
        "agent/abort-during-before-hook",
        "restored-history-reappended",
    ),
    edit(
        "PERSIST-1.a",
        "persist/suffix-only-after-restore",
        clauses::first_user_message_changed,
    ),
    edit(
        "PERSIST-1.b",
        "persist/suffix-only-after-restore",
        clauses::restored_message_appended,
    ),
    mutant("PERSIST-2.b", "agent/abort-during-before-hook", "two-appends-in-flight"),
    edit(
        "PERSIST-2.a",
        "persist/parent-chain-across-three-prompts",
        clauses::first_entry_parent_elsewhere,
    ),
    edit(
        "PERSIST-2.b",
        "persist/parent-chain-across-three-prompts",
        clauses::second_entry_parent_skips,
    ),
    mutant("PERSIST-3.a", "agent/abort-during-before-hook", "leaf-before-accept"),
    mutant(
        "PERSIST-3.a",
        "persist/no-append-while-agent-runs",
        "leaf-before-accept",
    ),
    mutant(
        "PERSIST-4.a",
        "agent/abort-during-before-hook",
        "temporary-entries-stored",
    ),
    edit(
        "PERSIST-4.a",
        "persist/custom-id-and-clock-rule",
        clauses::id_not_from_the_rule,
    ),
    edit(
        "PERSIST-4.b",
        "persist/custom-id-and-clock-rule",
        clauses::id_appended_twice,
    ),
    edit(
        "PERSIST-4.c",
        "persist/custom-id-and-clock-rule",
        clauses::ids_out_of_order,
    ),
    mutant("PERSIST-5.a", "agent/abort-during-before-hook", "leaf-before-accept"),
    mutant("PERSIST-5.a", "poison/disk-error-on-entry-2", "leaf-before-accept"),
    edit(
        "PERSIST-5.b",
        "poison/reject-at-first-append",
        clauses::append_after_failed_append,
    ),
    mutant(
        "PERSIST-6.a",
        "agent/abort-during-before-hook",
        "resolve-before-last-append",
    ),
    mutant(
        "PERSIST-6.a",
        "persist/resolves-only-after-last-append",
        "resolve-before-last-append",
    ),
    edit(
        "PERSIST-6.b",
        "persist/resolves-only-after-last-append",
        clauses::resolved_without_last_message,
    ),
    mutant_also(
        "PERSIST-7.a",
        &["PERSIST-7.b"],
        "agent/control-calls-settle-at-once",
        "temporary-entries-stored",
    ),
    mutant_also(
        "PERSIST-7.a",
        &["PERSIST-7.b"],
        "projection/temporary-suffix-each-request",
        "temporary-entries-stored",
    ),
    edit(
        "PERSIST-7.a",
        "projection/temporary-suffix-each-request",
        clauses::prompt_appended_between_its_requests,
    ),
    mutant("PERSIST-8.a", "wiring/walkthrough", "timestamps-not-from-clock"),
    edit(
        "PERSIST-8.b",
        "persist/custom-id-and-clock-rule",
        clauses::timestamp_reused,
    ),
    edit(
        "PERSIST-9.a",
        "persist/stored-session-is-sound",
        clauses::last_user_message_stored_as_a_root,
    ),
    // The networked world: the session file read back after the run holds the second root.
    edit(
        "PERSIST-9.a",
        "durability/ack-lost-after-apply",
        clauses::last_user_message_stored_as_a_root,
    ),
    edit(
        "PERSIST-9.b",
        "persist/stored-session-is-sound",
        clauses::last_tool_result_never_stored,
    ),
    edit(
        "PERSIST-9.c",
        "persist/stored-session-is-sound",
        clauses::last_tool_result_stored_again,
    ),
    edit(
        "PERSIST-9.d",
        "persist/stored-session-is-sound",
        clauses::steer_stored_between_call_and_result,
    ),
    mutant(
        "PERSIST-9.d",
        "persist/stored-session-is-sound",
        "tool-run-logged-before-result",
    ),
    mutant("PERSIST-10.a", "wiring/walkthrough", "leaf-set-before-await"),
    mutant("PERSIST-10.a", "poison/disk-error-on-entry-2", "leaf-set-before-await"),
    edit(
        "PERSIST-10.b",
        "wiring/walkthrough",
        clauses::probe_counts_one_append_more,
    ),
    edit("PERSIST-10.c", "wiring/walkthrough", clauses::last_probe_lags),
    edit(
        "QUEUE-1.a",
        "persist/three-prompts-arrival-order",
        clauses::queue_releases_early,
    ),
    edit(
        "QUEUE-1.b",
        "persist/three-prompts-arrival-order",
        clauses::first_signal_used_in_second_run,
    ),
    edit(
        "QUEUE-1.c",
        "persist/three-prompts-arrival-order",
        clauses::later_prompt_settles_first,
    ),
    mutant_also(
        "QUEUE-1.c",
        &["QUEUE-1.a"],
        "lifecycle/dispose-waits-for-all-queued",
        "queue-lifo",
    ),
    mutant_also(
        "QUEUE-2.b",
        &["QUEUE-2.a"],
        "agent/abort-reaches-only-active-run",
        "before-count-at-call",
    ),
    edit(
        "QUEUE-2.a",
        "persist/three-prompts-arrival-order",
        clauses::first_user_message_changed,
    ),
    edit(
        "QUEUE-2.b",
        "persist/three-prompts-arrival-order",
        clauses::appended_response_changed,
    ),
    mutant(
        "POISON-1.a",
        "lab13/lab13-3-2-suffix-only-then-poison-on-second-append",
        "resolve-before-last-append",
    ),
    mutant_also(
        "POISON-2.a",
        &["POISON-2.b"],
        "lab13/lab13-3-2-suffix-only-then-poison-on-second-append",
        "poison-not-stored",
    ),
    edit(
        "POISON-2.a",
        "lab13/lab13-3-2-suffix-only-then-poison-on-second-append",
        clauses::request_after_failed_append,
    ),
    mutant(
        "POISON-2.b",
        "durability/ack-lost-after-apply",
        "retry-after-failed-append",
    ),
    mutant_also(
        "POISON-2.b",
        &["POISON-2.a"],
        "poison/reject-at-first-append",
        "retry-after-failed-append",
    ),
    edit(
        "POISON-2.b",
        "poison/reject-at-first-append",
        clauses::append_after_failed_append,
    ),
    mutant(
        "POISON-3.a",
        "lifecycle/dispose-twice-while-poisoned",
        "queued-run-after-poison",
    ),
    mutant(
        "POISON-4.a",
        "lab13/lab13-3-2-suffix-only-then-poison-on-second-append",
        "poison-not-stored",
    ),
    mutant(
        "POISON-5.c",
        "poison/applied-then-fail-at-first-append",
        "poison-not-stored",
    ),
    edit(
        "POISON-5.a",
        "poison/applied-then-fail-at-first-append",
        clauses::stored_id_twice,
    ),
    edit(
        "POISON-5.b",
        "poison/applied-then-fail-at-first-append",
        clauses::stored_orphan,
    ),
    edit(
        "POISON-5.c",
        "poison/applied-then-fail-at-first-append",
        clauses::stored_second_copy,
    ),
    mutant("LIFE-1.a", "lifecycle/flush-after-dispose", "flush-creates-work"),
    mutant(
        "LIFE-2.a",
        "lifecycle/flush-ignores-later-prompts",
        "flush-creates-work",
    ),
    edit(
        "LIFE-2.b",
        "lifecycle/flush-on-idle-settles-at-once",
        clauses::flush_settles_late,
    ),
    mutant(
        "LIFE-3.a",
        "lab13/lab13-3-2-suffix-only-then-poison-on-second-append",
        "poison-not-stored",
    ),
    edit(
        "LIFE-3.b",
        "modes/json-write-error-after-commit",
        clauses::healthy_flush_rejected,
    ),
    mutant(
        "LIFE-4.a",
        "lab13/lab13-3-3-flush-waits-dispose-closes",
        "dispose-closes-late",
    ),
    mutant(
        "LIFE-4.b",
        "lab13/lab13-3-3-flush-waits-dispose-closes",
        "disposed-code-renamed",
    ),
    mutant(
        "LIFE-5.a",
        "lab13/lab13-3-3-flush-waits-dispose-closes",
        "dispose-drops-queued",
    ),
    mutant(
        "LIFE-5.b",
        "lab13/lab13-3-3-flush-waits-dispose-closes",
        "dispose-rejects-queued",
    ),
    mutant(
        "LIFE-6.a",
        "lab13/lab13-3-3-flush-waits-dispose-closes",
        "dispose-not-idempotent",
    ),
    edit(
        "LIFE-6.b",
        "lifecycle/dispose-twice-same-outcome",
        clauses::second_dispose_settles_late,
    ),
    mutant(
        "LIFE-7.a",
        "lab13/lab13-3-3-flush-waits-dispose-closes",
        "dispose-drops-queued",
    ),
    mutant(
        "LIFE-7.a",
        "lifecycle/dispose-while-committing-with-queued-prompt",
        "dispose-drops-queued",
    ),
    // A queue that starts the next run only once the previous one settled: behind a mode, it
    // waits for the sink's answer.
    mutant("QUEUE-1.d", "modes/modes-share-one-queue", "dispose-drops-queued"),
    edit(
        "SETTLE-1.a",
        "persist/two-prompts-near-simultaneous",
        clauses::prompt_resolves_with_nothing,
    ),
    edit(
        "SETTLE-1.b",
        "lifecycle/every-operation-settles",
        clauses::healthy_flush_rejected,
    ),
    mutant(
        "SETTLE-1.b",
        "observers/observer-throws-is-contained",
        "observer-error-rejects-prompt",
    ),
    mutant(
        "SETTLE-1.a",
        "interleaving/operations-during-after-hook",
        "mode-resolves-with-nothing",
    ),
    mutant(
        "SETTLE-1.b",
        "poison/poison-takes-precedence-over-dispose",
        "dispose-rejects-with-poison",
    ),
    mutant(
        "SETTLE-1.b",
        "lifecycle/control-calls-after-dispose",
        "control-rejected-after-dispose",
    ),
    mutant(
        "SETTLE-1.b",
        "lifecycle/flush-after-dispose",
        "flush-rejected-after-dispose",
    ),
    // SETTLE-2, one seam mutant per row of the table's last column.
    mutant(
        "SETTLE-2.a",
        "lifecycle/dispose-twice-same-outcome",
        "prompt-settles-late",
    ),
    edit(
        "SETTLE-2.a",
        "persist/parent-chain-across-three-prompts",
        clauses::prompt_settles_one_step_late,
    ),
    mutant(
        "SETTLE-2.a",
        "modes/library-settles-when-stored",
        "library-settles-late",
    ),
    mutant(
        "SETTLE-2.b",
        "interleaving/operations-during-mode-write",
        "mode-settles-late",
    ),
    mutant(
        "SETTLE-2.c",
        "modes/unknown-mode-while-busy",
        "unknown-mode-settles-late",
    ),
    mutant("SETTLE-2.c", "lifecycle/dispose-mid-stream", "refusal-settles-late"),
    mutant(
        "SETTLE-2.d",
        "lifecycle/flush-ignores-later-prompts",
        "flush-settles-late",
    ),
    mutant(
        "SETTLE-2.e",
        "lifecycle/dispose-during-mode-write",
        "dispose-settles-late",
    ),
    edit(
        "MODE-1.a",
        "modes/print-writes-final-assistant-text",
        clauses::write_text_changed,
    ),
    mutant(
        "MODE-1.b",
        "lab13/lab13-4-1b-json-mode-on-restored-session",
        "json-messages-suffix-only",
    ),
    mutant(
        "MODE-2.b",
        "lab13/lab13-4-1-modes-encode-one-result",
        "resolve-before-last-append",
    ),
    edit(
        "MODE-2.a",
        "modes/write-error-returned-unchanged",
        clauses::mode_prompted_twice,
    ),
    edit(
        "MODE-2.b",
        "modes/print-writes-final-assistant-text",
        clauses::write_removed,
    ),
    mutant(
        "MODE-3.a",
        "lab13/lab13-4-2-unknown-mode-and-sink-error",
        "unknown-mode-falls-back-to-print",
    ),
    mutant(
        "MODE-4.a",
        "lab13/lab13-4-2-unknown-mode-and-sink-error",
        "write-error-wrapped",
    ),
    edit(
        "MODE-4.b",
        "modes/write-error-returned-unchanged",
        clauses::first_entry_rolled_back,
    ),
    edit(
        "MODE-5.a",
        "modes/library-returns-last-assistant-text",
        clauses::library_writes,
    ),
    mutant("MODE-5.b", "modes/library-error-reason", "library-reason-always-stop"),
    edit(
        "MODE-5.c",
        "modes/library-returns-last-assistant-text",
        clauses::library_text_changed,
    ),
    edit(
        "MODE-5.d",
        "modes/library-returns-last-assistant-text",
        clauses::library_rejected,
    ),
    mutant(
        "MODE-6.a",
        "lab13/lab13-4-1-modes-encode-one-result",
        "mode-settles-before-write",
    ),
    mutant("AGENT-1.a", "agent/max-steps-ends-run", "max-steps-off-by-one"),
    edit(
        "AGENT-1.b",
        "agent/max-steps-ends-run",
        clauses::max_steps_reported_as_stop,
    ),
    edit(
        "AGENT-1.c",
        "agent/max-steps-not-reached",
        clauses::stop_reported_as_max_steps,
    ),
    edit("AGENT-1.d", "agent/max-steps-not-reached", clauses::steps_miscounted),
    mutant("AGENT-1.d", "agent/max-steps-not-reached", "steps-counted-from-one"),
    mutant("AGENT-2.a", "agent/control-calls-settle-at-once", "steer-as-follow-up"),
    edit(
        "AGENT-2.b",
        "agent/steer-joins-before-next-request",
        clauses::steer_never_sent,
    ),
    mutant("AGENT-3.a", "agent/control-calls-settle-at-once", "follow-up-as-steer"),
    edit(
        "AGENT-3.b",
        "agent/follow-up-continues-run",
        clauses::follow_up_never_sent,
    ),
    edit(
        "AGENT-3.c",
        "agent/follow-up-before-prompt",
        clauses::follow_up_never_sent,
    ),
    edit("AGENT-4.a", "agent/abort-mid-tool", clauses::request_after_abort),
    mutant("AGENT-4.a", "agent/abort-mid-tool", "request-after-abort"),
    mutant("AGENT-4.b", "agent/abort-during-before-hook", "tool-starts-after-abort"),
    edit("AGENT-4.c", "agent/abort-mid-tool", clauses::aborted_run_resolves_stop),
    mutant("AGENT-4.c", "agent/abort-mid-tool", "aborted-run-reports-stop"),
    edit("AGENT-4.d", "agent/abort-mid-tool", clauses::abort_signal_never_fired),
    mutant(
        "AGENT-4.d",
        "agent/abort-reaches-only-active-run",
        "aborted-flag-never-cleared",
    ),
    mutant(
        "AGENT-5.b",
        "agent/control-calls-settle-at-once",
        "temporary-entries-stored",
    ),
    edit(
        "AGENT-5.a",
        "agent/tool-calls-run-in-order",
        clauses::tool_calls_swapped,
    ),
    edit(
        "AGENT-5.b",
        "agent/tool-calls-run-in-order",
        clauses::tool_result_stored_twice,
    ),
    edit("AGENT-6.a", "agent/model-error-ends-run", clauses::request_after_error),
    mutant("AGENT-6.a", "agent/model-error-ends-run", "request-after-error"),
    mutant("AGENT-6.b", "modes/library-error-reason", "library-reason-always-stop"),
    edit(
        "AGENT-6.b",
        "agent/model-error-ends-run",
        clauses::error_run_resolves_stop,
    ),
    mutant("AGENT-7.a", "agent/abort-during-before-hook", "control-settles-late"),
    mutant(
        "AGENT-7.a",
        "agent/control-calls-settle-at-once",
        "control-settles-late",
    ),
    mutant("AGENT-8.a", "agent/abort-mid-stream", "abort-ignored"),
    mutant("AGENT-8.a", "agent/abort-mid-tool", "abort-ignored"),
    edit("AGENT-8.a", "agent/abort-mid-stream", abort_signal_removed),
    edit("AGENT-8.b", "agent/abort-mid-tool", clauses::request_before_signal),
    edit(
        "OBSERVE-1.b",
        "observers/slow-observer-changes-nothing",
        observer_told_another_message,
    ),
    edit(
        "OBSERVE-1.a",
        "observers/slow-observer-changes-nothing",
        clauses::message_ends_never_told,
    ),
    edit(
        "OBSERVE-2.a",
        "observers/two-observers-steer-and-queue",
        agent_end_never_told,
    ),
    edit(
        "OBSERVE-2.b",
        "observers/slow-observer-and-failed-append",
        clauses::agent_end_without_prompt,
    ),
    edit(
        "OBSERVE-2.c",
        "observers/slow-observer-changes-nothing",
        clauses::agent_end_lacks_last_message,
    ),
    edit(
        "OBSERVE-2.d",
        "observers/slow-observer-changes-nothing",
        clauses::turn_ends_swapped,
    ),
    edit(
        "OBSERVE-2.e",
        "observers/slow-observer-changes-nothing",
        clauses::turn_end_without_tool_results,
    ),
    edit(
        "OBSERVE-3.a",
        "observers/observer-throws-is-contained",
        observer_error_rejects_a_prompt,
    ),
    edit(
        "OBSERVE-4.a",
        "observers/slow-observer-changes-nothing",
        append_waits_for_observer,
    ),
    mutant(
        "OBSERVE-2.a",
        "observers/two-observers-steer-and-queue",
        "agent-end-told-once",
    ),
    mutant(
        "OBSERVE-3.a",
        "observers/observer-throws-is-contained",
        "observer-error-rejects-prompt",
    ),
    mutant(
        "OBSERVE-4.a",
        "observers/slow-observer-changes-nothing",
        "appends-wait-for-observers",
    ),
    edit(
        "DURABLE-1.a",
        "durability/crash-after-two-acks",
        acknowledged_entry_lost,
    ),
    mutant("DURABLE-2.b", "durability/ack-lost-after-apply", "leaf-before-accept"),
    edit(
        "DURABLE-2.a",
        "durability/crash-after-two-acks",
        clauses::reopened_restore_fails,
    ),
    edit(
        "DURABLE-2.b",
        "durability/crash-after-two-acks",
        clauses::reopened_chain_short,
    ),
    edit(
        "DURABLE-3.a",
        "durability/ack-lost-after-apply",
        clauses::lost_answer_rejects_otherwise,
    ),
    mutant_also(
        "DURABLE-3.b",
        &["DURABLE-3.a"],
        "durability/ack-lost-after-apply",
        "retry-after-failed-append",
    ),
    edit(
        "DURABLE-3.b",
        "durability/ack-lost-after-apply",
        clauses::append_after_failed_append,
    ),
    edit(
        "DURABLE-4.a",
        "durability/torn-tail-after-crash",
        file_unreadable_after_crash,
    ),
    edit(
        "PERSIST-7.b",
        "persist/no-append-while-agent-runs",
        clauses::prompt_appended_before_its_first_request,
    ),
    edit(
        "REF-1.a",
        "observers/turn-end-observer-told-each-turn",
        clauses::last_turn_end_never_told,
    ),
    edit(
        "REF-1.b",
        "persist/parent-chain-across-three-prompts",
        clauses::stray_abort_signal,
    ),
    mutant(
        "REF-1.c",
        "observers/slow-observer-and-failed-append",
        "turn-end-drops-tool-results",
    ),
];

fn corpus() -> Vec<LoadedScenario> {
    load_corpus(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")]).expect("the corpus loads")
}

fn scenario<'c>(corpus: &'c [LoadedScenario], name: &str) -> &'c LoadedScenario {
    corpus
        .iter()
        .find(|loaded| loaded.name == name)
        .unwrap_or_else(|| panic!("no scenario named {name}"))
}

/// The canonical run of `loaded` on `subject`.
fn canonical(loaded: &LoadedScenario, implementation: &Implementation) -> CaseReport {
    Run::of(loaded)
        .seeded(StrategyKind::Scripted, 0)
        .on(implementation)
        .execute(loaded)
}

/// What a bite's bad trace breaks: (rule, clause) of every violation of a catalogue rule.
fn broken_by(loaded: &LoadedScenario, bad: &Bad) -> Vec<(String, Option<&'static str>)> {
    let violations = match bad {
        Bad::Mutant(name) => {
            let mutant = Mutant::from_name(name).unwrap_or_else(|| panic!("no mutant named {name}"));
            canonical(loaded, &Implementation::mutant(mutant)).violations
        }
        Bad::Edit(edit) => {
            let case = canonical(loaded, &Implementation::reference());
            let outcome = case.outcome.expect("the reference runs the scenario");
            let mut store: Vec<SessionEntry> = outcome.stored(&loaded.scenario).into_iter().cloned().collect();
            let mut trace = outcome.trace;
            edit(&mut trace, &mut store);
            check_with_reference(&loaded.scenario, &trace, &store.iter().collect::<Vec<_>>())
        }
    };
    violations
        .into_iter()
        .filter(|violation| RULE_IDS.contains(&violation.rule.as_str()))
        .map(|violation| (violation.rule, violation.clause))
        .collect()
}

/// Every bite breaks what it names and the reference's trace of its scenario is clean: exactly
/// its clause of its rule fires (the rule's other clauses hold; with `also`, exactly those), and
/// every violation of a catalogue rule names one of its clauses.
#[test]
fn every_bite_breaks_its_clause_and_the_reference_is_clean() {
    let corpus = corpus();
    let split = crate::tidy::clauses_by_rule();
    let mut failures = Vec::new();
    for bite in BITES {
        let loaded = scenario(&corpus, bite.scenario);
        let reference = canonical(loaded, &Implementation::reference());
        let reference_rules: Vec<&str> = reference
            .violations
            .iter()
            .map(|violation| violation.rule.as_str())
            .collect();
        if !reference_rules.is_empty() {
            failures.push(format!(
                "{} on {}: the reference itself breaks {reference_rules:?}",
                bite.breaks, bite.scenario
            ));
            continue;
        }
        let broken = broken_by(loaded, &bite.bad);
        let how = match bite.bad {
            Bad::Mutant(name) => format!("mutant {name}"),
            Bad::Edit(_) => "the hand edit".to_string(),
        };
        let unnamed: Vec<&str> = broken
            .iter()
            .filter(|(rule, clause)| {
                clause.is_none_or(|clause| !split.get(rule).is_some_and(|ids| ids.iter().any(|id| id == clause)))
            })
            .map(|(rule, _)| rule.as_str())
            .collect();
        if !unnamed.is_empty() {
            failures.push(format!(
                "{} on {} with {how}: violations of {unnamed:?} name no clause of conformance.md",
                bite.breaks, bite.scenario
            ));
        }
        let rule = bite.breaks.split_once('.').map_or(bite.breaks, |(rule, _)| rule);
        let mut clauses: Vec<&str> = broken
            .iter()
            .filter(|(broken_rule, _)| broken_rule == rule)
            .map(|(_, clause)| clause.unwrap_or(rule))
            .collect();
        clauses.sort();
        clauses.dedup();
        let mut expected: Vec<&str> = bite.also.iter().copied().chain([bite.breaks]).collect();
        expected.sort();
        let bit = clauses == expected;
        if !bit {
            failures.push(format!(
                "{} on {} with {how}: broke {clauses:?} of {rule} (all rules broken: {:?})",
                bite.breaks,
                bite.scenario,
                broken
                    .iter()
                    .map(|(rule, clause)| clause.unwrap_or(rule))
                    .collect::<Vec<_>>()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "bites that did not bite as named:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_rule_has_a_bite() {
    let rule_of = |breaks: &'static str| breaks.split_once('.').map_or(breaks, |(rule, _)| rule);
    let missing: Vec<&str> = RULE_IDS
        .iter()
        .copied()
        .filter(|rule| !BITES.iter().any(|bite| rule_of(bite.breaks) == *rule))
        .collect();
    assert!(missing.is_empty(), "rules without a bite test: {missing:?}");
    let unknown: Vec<&str> = BITES
        .iter()
        .map(|bite| rule_of(bite.breaks))
        .filter(|rule| !RULE_IDS.contains(rule))
        .collect();
    assert!(unknown.is_empty(), "bites name rules the catalogue lacks: {unknown:?}");
}

#[test]
fn every_rule_names_a_situation() {
    let situations = agentsim::check::situations::situations();
    let missing: Vec<&str> = RULE_IDS
        .iter()
        .copied()
        .filter(|rule| !situations.iter().any(|situation| situation.rule == *rule))
        .collect();
    assert!(missing.is_empty(), "rules without a situation: {missing:?}");
    let unknown: Vec<&str> = situations
        .iter()
        .map(|situation| situation.rule)
        .filter(|rule| !RULE_IDS.contains(rule))
        .collect();
    assert!(
        unknown.is_empty(),
        "situations of rules the catalogue lacks: {unknown:?}"
    );
}

/// Each situation is reached by the canonical run of at least one scenario, or is one only
/// exploration reaches: either way its detector can fire (a detector that never fires would
/// make the coverage check vacuous). Here: the canonical corpus, plus the windows only
/// other schedules open, found by a few random and pct seeds of their scenarios. The same runs
/// reach every interleaving pair (`check::pairs`) but the answer orders the contract rules
/// out, which no trace of the reference may reach.
#[test]
fn every_situation_detector_fires_on_some_trace() {
    use agentsim::check::pairs::{self, pairs};
    use agentsim::check::situations::{reached, situations};
    use agentsim::check::Timeline;
    let corpus = corpus();
    let mut seen = vec![false; situations().len()];
    let mut pairs_seen = vec![false; pairs::PAIRS];
    for loaded in &corpus {
        for (strategy, seeds) in [
            (StrategyKind::Scripted, 1),
            (StrategyKind::Random, 40),
            (StrategyKind::Pct { depth: 3 }, 40),
        ] {
            for seed in 0..seeds {
                let case = Run::of(loaded)
                    .seeded(strategy, seed)
                    .on(&Implementation::reference())
                    .execute(loaded);
                let Some(outcome) = case.outcome else { continue };
                let stored = outcome.stored(&loaded.scenario);
                let timeline = Timeline::new(&loaded.scenario, &outcome.trace, &stored);
                for index in reached(&timeline) {
                    seen[index] = true;
                }
                for index in pairs::reached(&timeline) {
                    pairs_seen[index] = true;
                }
            }
        }
    }
    // The interleaving pairs likewise: every pair the contract allows is reached, and none it
    // rules out.
    let wrong: Vec<String> = pairs()
        .iter()
        .zip(&pairs_seen)
        .filter(|(pair, seen)| **seen == pair.excluded().is_some())
        .map(|(pair, seen)| match seen {
            true => format!("reached, though the contract rules it out: {pair}"),
            false => format!("no trace reached: {pair}"),
        })
        .collect();
    assert!(wrong.is_empty(), "interleaving pairs: {wrong:#?}");
    let never: Vec<String> = situations()
        .iter()
        .zip(&seen)
        .filter(|(_, seen)| !**seen)
        .map(|(situation, _)| format!("{}: {}", situation.rule, situation.name))
        .collect();
    assert!(never.is_empty(), "situations no trace reached: {never:?}");
}
