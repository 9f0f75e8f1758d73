#!/usr/bin/env python3
"""Writes expectations/aelix-0.1.0b2.json from a JSON report of the aelix adapter's run.

    agentsim run --impl "python3 adapters/aelix/adapter.py" scenarios/ --format json > report.json
    python3 adapters/aelix/expectations.py report.json > expectations/aelix-0.1.0b2.json

Every failing (scenario, rule) pair is given its cause in aelix: CAUSES says what aelix does,
where (the installed file, function and line, each confirmed by reading it) and whether it is
a bug or a choice; RULE_CAUSES says, per rule, which causes can explain a failure, in order; a
pair takes the first of them that the scenario exhibits (FEATURES). One entry is written per
cause, with its one label and its pairs by rule, so the same report gives the same bytes. A pair
the file cannot hold is left out and named on stderr, and the script exits 1 (the file is
written all the same; a run with it reports those pairs UNEXPECTED): a pair of a MUST rule under
a cause labelled choice (a broken MUST rule is a bug: relabel the cause, or argue in
conformance.md that the rule is SHOULD), and a pair that no listed cause explains, which is
either a new finding (add its cause here, after reading the source) or an adapter or kit
mistake (fix it, do not list it). Standard library only; run it again after the kit or aelix
changes.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional, Set

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SITE = ".venv/lib/python3.11/site-packages/"
CORE = SITE + "aelix_agent_core/harness/core.py"
STORAGE = SITE + "aelix_agent_core/session/jsonl_storage.py"
PRINT = SITE + "aelix_coding_agent/modes/print_mode.py"


def source(file: str, function: str, line: int) -> Dict[str, Any]:
    return {"file": file, "function": function, "line": line}


CAUSES: Dict[str, Dict[str, Any]] = {
    "system-prompt": {
        "reason": "aelix composes the system prompt itself (its CLI's _resolve_system_prompt and "
        "_resolve_append_chunks): the configured prompt, or with none its default coding-agent prompt "
        "('You are Aelix, ...', with the working directory and date); then the AGENTS.md files it "
        "discovers from the working directory up, in a <project_context> fence (other instruction "
        "paths are never read); a skills catalog only when a `read` tool is active. No '# Pi resources' "
        "header.",
        "source": source(SITE + "aelix_coding_agent/cli/entry.py", "_resolve_append_chunks", 1298),
        "verdict": "choice",
    },
    "persist-per-message": {
        "reason": "aelix persists every message at its message_end, inside the agent run "
        "(AgentHarness._run's emit calls Session.append_message), not after the run: Pi's design.",
        "source": source(CORE, "AgentHarness._run", 4443),
        "verdict": "choice",
    },
    "append-failure-swallowed": {
        "reason": "A failed append does not poison aelix: Session.append_message raises inside "
        "AgentHarness._run's message_end handler, which logs it at debug level and goes on. "
        "JsonlSessionStorage did not record the entry, so the leaf stays put: the run goes on "
        "appending children of the previous entry, the next model request is built from the store "
        "(Session.build_context) without the lost message, the prompt resolves, and later prompts "
        "and flushes succeed. The message is in the agent's transcript and not in the store.",
        "source": source(CORE, "AgentHarness._run", 4444),
        "verdict": "bug",
    },
    "observers-awaited": {
        "reason": "aelix awaits the message_end hook handlers (the observers) before it persists "
        "the message: AgentHarness._run's emit runs the hook reduction first, then "
        "Session.append_message; turn_end and agent_end handlers are awaited inside the run too, so "
        "a slow observer delays the store and the prompt.",
        "source": source(CORE, "AgentHarness._run", 4423),
        "verdict": "bug",
    },
    "no-queue": {
        "reason": "aelix has no operation queue: AgentHarness.prompt() while a turn runs raises "
        "AgentHarnessError('busy', 'AgentHarness is busy ...') instead of waiting its turn.",
        "source": source(CORE, "AgentHarness.prompt", 1226),
        "verdict": "bug",
    },
    "dispose-aborts": {
        "reason": "AgentSessionRuntime.dispose() ends in AgentHarness.dispose(), which aborts the "
        "turn in flight (abort() cancels its asyncio task) instead of waiting for it: an append or "
        "model request the turn was awaiting is abandoned (the store may still apply it while aelix "
        "forgets it), the prompt resolves `aborted` before its entries were stored, and the "
        "aborted response is never stored. A model request abandoned so may be answered only after "
        "the next run has started (QUEUE-1.b counts its signal in use until then). A run cut before "
        "its first model request reports the one turn its loop had started (`steps`: aelix's "
        "turn_start events) with no request.",
        "source": source(CORE, "AgentHarness.dispose", 3108),
        "verdict": "bug",
    },
    "no-closed-state": {
        "reason": "aelix has no closed state after dispose: AgentHarness.prompt() checks only "
        "that no turn runs, so a prompt after dispose runs (without the extensions' hooks, which "
        "dispose cleared) instead of being rejected with runtime.disposed.",
        "source": source(CORE, "AgentHarness.prompt", 1225),
        "verdict": "bug",
    },
    "abort-cancels": {
        "reason": "aelix's abort cancels the turn's asyncio task (AgentHarness.abort: "
        "turn_task.cancel()); there is no abort signal. Cancelled during its first append, before "
        "any model request, the run resolves `aborted` (the kit learns a run's signal only from a "
        "model request or tool call carrying it, so it cannot see the adapter's abort_signal "
        "belong to this run) and the append it was awaiting is abandoned. Whatever the cancelled "
        "turn awaited is abandoned the same way: an append the store then applies (the next run "
        "appends a second child of the same parent, PERSIST-3 and POISON-5), or a model request the "
        "model answers only after the next run has started (QUEUE-1.b counts its signal in use "
        "until then). A run cut before its first model request had already started its turn "
        "(agent_loop emits turn_start before the prompt's message_end, which stores the prompt): it "
        "reports that one turn as its one step (`steps`: aelix's turn_start events) with no request.",
        "source": source(CORE, "AgentHarness.abort", 1518),
        "verdict": "bug",
    },
    "abort-drops": {
        "reason": "An aborted turn stores nothing of what it was doing: the cancelled stream's "
        "partial response, the tool calls' results, and the `aborted` marker message that "
        "AgentHarness._run appends to the in-memory transcript only (its comment: it 'keeps abort "
        "off the session write path'). The transcript and the store disagree; a tool call of the "
        "aborted response has no result.",
        "source": source(CORE, "AgentHarness._run", 4586),
        "verdict": "bug",
    },
    "leaf-entry": {
        "reason": "aelix chooses a branch by writing: Session.move_to -> "
        "JsonlSessionStorage.set_leaf_id appends a `leaf` entry, which takes the id generator's "
        "first id, so every later entry's id is one further along the rule. (The adapter writes "
        "that entry into aelix's file while restoring: the protocol has no effect during start, "
        "and the kit's entry type has no `leaf`.)",
        "source": source(STORAGE, "JsonlSessionStorage.set_leaf_id", 546),
        "verdict": "choice",
    },
    "null-leaf": {
        "reason": "With no leaf chosen aelix does not reject: its loader (_load_jsonl_storage) "
        "leaves the leaf at the physically last entry and restores that branch.",
        "source": source(STORAGE, "_load_jsonl_storage", 368),
        "verdict": "bug",
    },
    "duplicate-ids": {
        "reason": "aelix's session has no duplicate-id diagnostic: JsonlSessionStorage indexes "
        "entries by id, last one wins, and restore succeeds.",
        "source": source(STORAGE, "JsonlSessionStorage.__init__", 443),
        "verdict": "bug",
    },
    "cycle-hang": {
        "reason": "A parent cycle on the chosen chain hangs aelix: "
        "JsonlSessionStorage.get_path_to_root follows parent_id with no visited set, never returns "
        "and grows its path list without bound. The adapter stops the walk after 0.5 s (a SIGALRM "
        "timer) and ends the run with a recoverable `aelix.hang` error naming the hang (the SDK's "
        "RunBroken): the run is broken and the process serves the next run.",
        "source": source(STORAGE, "JsonlSessionStorage.get_path_to_root", 580),
        "verdict": "bug",
    },
    "compaction-summary": {
        "reason": "aelix restores a compaction as a user message with the summary, then the kept "
        "entries from firstKeptEntryId and the entries after it (build_session_context): the "
        "transcript's length and first message differ from the path's message entries. The summary "
        "message carries the compaction entry's time in milliseconds (create_compaction_summary_message: "
        "_iso_to_unix_ms), not the 0 of the contract's stand-in.",
        "source": source(SITE + "aelix_agent_core/session/context.py", "build_session_context", 299),
        "verdict": "bug",
    },
    "no-budget": {
        "reason": "aelix has no per-request context budget: every turn's context is the whole "
        "branch (AgentHarness._run builds it from Session.build_context()); its only context "
        "management is compaction, a summarizing model call, off for the kit's scripted model.",
        "source": source(CORE, "AgentHarness._run", 4334),
        "verdict": "choice",
    },
    "no-max-steps": {
        "reason": "aelix has no step bound: the agent loop runs while the model calls tools.",
        "source": source(SITE + "aelix_agent_core/loop.py", "_run_loop", 192),
        "verdict": "bug",
    },
    "hook-throws": {
        "reason": "A hook handler that raises (error_mode 'throw', the default) fails the whole "
        "run: the tool_call / tool_result bridge raises AgentHarnessError('hook'), AgentHarness._run "
        "records an '[error] ...' assistant message no model sent and the prompt rejects with code "
        "`hook`, instead of denying the call or making its result an error.",
        "source": source(CORE, "AgentHarness._before_tool_call_bridge", 4007),
        "verdict": "bug",
    },
    "unknown-tool-text": {
        "reason": "aelix answers a call to a tool it does not have with the error result 'Unknown tool: NAME' "
        "(_prepare_tool_call), not 'Tool NAME not found' (the kit's and Pi's text); like every aelix tool "
        "result it carries an empty toolName, since _to_tool_result_message sets no tool_name.",
        "source": source(SITE + "aelix_agent_core/loop.py", "_prepare_tool_call", 500),
        "verdict": "choice",
    },
    "coerce-arguments": {
        "reason": "aelix coerces tool arguments to the schema before validating (validate_tool_arguments: "
        "42 becomes '42'), and validates before the tool_call hooks run, so arguments a hook "
        "rewrote are never validated: the core tool runs.",
        "source": source(SITE + "aelix_agent_core/loop.py", "_prepare_tool_call", 506),
        "verdict": "bug",
    },
    "error-texts": {
        "reason": "aelix words the core executor's refusals its own way: an unknown tool's result "
        "reads 'Tool <name> not found' only in the course; aelix's loop writes its own text, and an "
        "argument that fails the schema gets aelix's validation message (validate_tool_arguments), "
        "not 'Invalid arguments for <name>: <path>: <problem>'.",
        "source": source(SITE + "aelix_agent_core/loop.py", "_prepare_tool_call", 500),
        "verdict": "choice",
    },
    "json-mode": {
        "reason": "aelix's json mode (run_print_mode mode 'json', `aelix --mode json`) writes the "
        "session metadata line, then one JSON line per harness event, each a separate write, the "
        "first before the prompt; not one {reason, steps, messages} line.",
        "source": source(PRINT, "run_print_mode", 273),
        "verdict": "bug",
    },
    "print-newline": {
        "reason": "aelix's print mode (run_print_mode mode 'text', `aelix -p`) writes each text "
        "block of the last assistant message followed by a newline.",
        "source": source(PRINT, "run_print_mode", 337),
        "verdict": "choice",
    },
    "print-write-synchronous": {
        "reason": "aelix's print mode writes its result with _write_raw_stdout, a blocking "
        "sys.stdout.write and flush called from the event loop without an await (the adapter "
        "answers it as one write effect): nothing else in the loop runs until the write returns, "
        "so a flush or a control call delivered while the mode's write is out settles only after it.",
        "source": source(PRINT, "_write_raw_stdout", 72),
        "verdict": "choice",
    },
    "abort-clears-queues": {
        "reason": "AgentHarness.abort clears the steering and follow-up queues whether or not a "
        "turn runs (Pi parity: the harness's abort reports clearedSteer/clearedFollowUp), so a "
        "steer or followUp waiting for the next run is dropped by an abort on an idle harness, and "
        "by a dispose (AgentHarness.dispose awaits abort()); the contract's abort acts on the active "
        "run only, and a steer or a follow-up no run took joins the next run.",
        "source": source(CORE, "AgentHarness.abort", 1513),
        "verdict": "bug",
    },
    "turn-end-drops-tool-results": {
        "reason": "aelix tells extensions of a turn's end without its tool results: _to_hook_event "
        "maps the harness's TurnEndEvent(message, tool_results) to TurnEndHookEvent(message) only, so "
        "an observer of turn_end never sees the results its turn stored (the hook event has no tool "
        "results at all; the adapter writes the empty list the protocol's turn_end requires).",
        "source": source(CORE, "_to_hook_event", 4702),
        "verdict": "bug",
    },
    "unknown-mode": {
        "reason": "aelix refuses a mode name it does not know on its command line, at once and "
        "before any prompt, but as a failed launch: parse_args records 'Invalid --mode value: NAME' "
        "and _async_main prints 'Error: Invalid --mode value: NAME' and returns exit code 1 (the "
        "adapter rejects with exitCode.1 and that text), not the code mode.unknown.",
        "source": source(SITE + "aelix_coding_agent/cli/args.py", "parse_args", 373),
        "verdict": "bug",
    },
    "sink-error": {
        "reason": "A failed output write other than a broken pipe never reaches aelix's caller: "
        "json mode's event writer swallows it (run_print_mode's _emit: 'except Exception: pass') "
        "and the run resolves; text mode prints it to stderr and returns exit code 1 (the adapter "
        "rejects with exitCode.1 and the printed text). A broken pipe (EPIPE, BrokenPipeError) is "
        "let out unchanged.",
        "source": source(PRINT, "run_print_mode", 256),
        "verdict": "bug",
    },
    "mode-disposes-host": {
        "reason": "run_print_mode is single-shot: its finally disposes the runtime host "
        "(AgentSessionRuntime.dispose) even when it failed, so a mode ends the harness's turn in "
        "flight (dispose aborts it) and clears the extensions' hooks for what follows.",
        "source": source(PRINT, "run_print_mode", 377),
        "verdict": "bug",
    },
    "interactive": {
        "reason": "Not aelix's behaviour but the adapter's limit: aelix's interactive mode is its "
        "terminal UI (run_tui), which the adapter cannot drive in process. It declares "
        "`mode:interactive` unsupported in hello and rejects the mode with adapter.unsupported; a kit "
        "that reads either (docs/protocol.md) reports the case not applicable, and these pairs go.",
        "source": source(SITE + "aelix_coding_agent/tui/shell.py", "run_tui", 452),
        "verdict": "choice",
    },
}

#: Per rule, the causes that can explain a failure, most specific first.
RULE_CAUSES: Dict[str, List[str]] = {
    "PERSIST-9": ["append-failure-swallowed", "abort-drops", "dispose-aborts", "hook-throws", "mode-disposes-host"],
    "PROJECT-2": ["system-prompt"],
    "WIRE-1": ["system-prompt"],
    "WIRE-2": ["system-prompt"],
    "PERSIST-7": ["persist-per-message"],
    "OBSERVE-4": ["observers-awaited"],
    "RESTORE-3": ["null-leaf"],
    "RESTORE-4": ["compaction-summary"],
    "PATH-2": ["duplicate-ids"],
    "PERSIST-4": ["leaf-entry"],
    "AGENT-1": ["no-max-steps", "abort-cancels", "abort-drops", "dispose-aborts", "mode-disposes-host"],
    "WIRE-9": ["error-texts"],
    "OBSERVE-2": ["turn-end-drops-tool-results"],
    "CONTEXT-1": ["no-budget"],
    "WIRE-7": ["coerce-arguments"],
    "PROJECT-6": ["hook-throws"],
    "MODE-3": ["unknown-mode"],
    "MODE-4": ["sink-error"],
    "POISON-1": ["append-failure-swallowed"],
    "POISON-2": ["append-failure-swallowed"],
    "POISON-4": ["append-failure-swallowed"],
    "LIFE-3": ["append-failure-swallowed"],
    "DURABLE-2": ["append-failure-swallowed"],
    "DURABLE-3": ["append-failure-swallowed"],
    "POISON-3": ["no-queue"],
    "LIFE-4": ["no-closed-state"],
    "LIFE-5": ["mode-disposes-host"],
    "LIFE-2": ["unknown-mode", "print-write-synchronous"],
    "AGENT-7": ["print-write-synchronous"],
    "AGENT-2": ["abort-clears-queues"],
    "AGENT-3": ["abort-clears-queues"],
    "PERSIST-1": ["unknown-mode"],
    "PROJECT-7": ["unknown-mode"],
    "PERSIST-2": ["null-leaf", "append-failure-swallowed", "dispose-aborts", "abort-cancels"],
    "PERSIST-5": ["null-leaf", "duplicate-ids", "append-failure-swallowed", "dispose-aborts"],
    "PROJECT-1": ["compaction-summary", "no-budget", "append-failure-swallowed"],
    "CONTEXT-2": ["append-failure-swallowed", "abort-drops"],
    "AGENT-4": ["mode-disposes-host", "dispose-aborts", "abort-cancels"],
    "AGENT-5": ["abort-drops", "dispose-aborts", "mode-disposes-host"],
    "QUEUE-2": ["abort-drops", "dispose-aborts", "mode-disposes-host"],
    "QUEUE-1": ["dispose-aborts", "abort-cancels"],
    "PERSIST-3": ["mode-disposes-host", "dispose-aborts", "abort-cancels"],
    "POISON-5": ["append-failure-swallowed", "mode-disposes-host", "dispose-aborts", "abort-cancels"],
    "PERSIST-6": [
        "append-failure-swallowed",
        "observers-awaited",
        "json-mode",
        "mode-disposes-host",
        "dispose-aborts",
        "abort-cancels",
        "abort-drops",
    ],
    "MODE-1": ["json-mode", "print-newline"],
    # The state probe: the store accepted an append that a cancelled turn was awaiting, so
    # aelix's JsonlSessionStorage.append_entry never reached `_current_leaf_id = ...`.
    "PERSIST-10": ["mode-disposes-host", "dispose-aborts", "abort-cancels"],
    "MODE-2": ["json-mode", "interactive", "unknown-mode", "mode-disposes-host", "no-queue"],
    "SETTLE-1": [
        "unknown-mode",
        "hook-throws",
        "append-failure-swallowed",
        "no-closed-state",
        "interactive",
        "sink-error",
        "dispose-aborts",
        "no-queue",
    ],
    "SETTLE-2": ["observers-awaited", "append-failure-swallowed", "no-closed-state", "unknown-mode"],
    "model[0].expect": ["system-prompt", "no-budget"],
    "model[1].expect": ["system-prompt", "no-budget", "unknown-tool-text", "coerce-arguments", "abort-drops"],
    "model[2].expect": ["coerce-arguments"],
    "broken:subject.malformed": ["cycle-hang"],
    # A scenario's own expect block: the cause that changes the canonical outcome first.
    "expect": [
        "leaf-entry",
        "null-leaf",
        "duplicate-ids",
        "append-failure-swallowed",
        "interactive",
        "unknown-mode",
        "mode-disposes-host",
        "json-mode",
        "sink-error",
        "print-newline",
        "dispose-aborts",
        "abort-cancels",
        "abort-drops",
        "no-queue",
        "no-max-steps",
        "hook-throws",
        "coerce-arguments",
        "observers-awaited",
    ],
}


#: A (rule, cause) that applies only when the rule's violations say one of these.
SYSTEM_PROMPT_SAID = ("system prompt was", "Review code carefully", "Cut a release")
MESSAGE_HINTS: Dict[tuple, tuple] = {
    # The session aelix leaves: a result under the entry before a rejected assistant message
    # (a failed append swallowed), a call whose result an aborted turn or a raising hook never
    # stored, a prompt after dispose appended as a second root.
    ("PERSIST-9", "append-failure-swallowed"): ("tool.unmatched_result", "entry.orphan"),
    ("PERSIST-9", "abort-drops"): ("tool.unanswered_call",),
    ("PERSIST-9", "dispose-aborts"): ("entry.extra_root",),
    ("PERSIST-9", "hook-throws"): ("tool.unanswered_call",),
    ("PERSIST-9", "mode-disposes-host"): ("tool.unanswered_call",),
    ("PERSIST-6", "abort-cancels"): ("when the store had accepted", "no entry of its run was appended"),
    ("PERSIST-6", "abort-drops"): ("do not end with",),
    ("LIFE-2", "print-write-synchronous"): ("did not settle at once",),
    ("AGENT-1", "no-max-steps"): ("maxSteps", "max_steps"),
    ("AGENT-1", "abort-cancels"): ("reported 0 steps", "but its run made 0 model requests"),
    ("AGENT-1", "abort-drops"): ("reported 0 steps", "but its run made 0 model requests"),
    ("AGENT-1", "dispose-aborts"): (
        "reported 0 steps",
        "but its run made 0 model requests",
        "reported 3 steps, but its run made 2 model requests",
    ),
    ("AGENT-1", "mode-disposes-host"): ("reported 0 steps", "but its run made 0 model requests"),
    ("OBSERVE-2", "turn-end-drops-tool-results"): ("with 0 tool results",),
    ("AGENT-7", "print-write-synchronous"): ("did not settle at once",),
    ("SETTLE-1", "unknown-mode"): ("a mode name it does not know",),
    ("SETTLE-1", "hook-throws"): ("hook handler raised",),
    ("SETTLE-1", "append-failure-swallowed"): (
        "poisoned runtime and settled resolved",
        "poisoned and disposed runtime and settled resolved",
        "poisoned before it settled and settled resolved",
    ),
    ("SETTLE-1", "no-closed-state"): ("disposed runtime and settled resolved",),
    ("SETTLE-1", "interactive"): ("adapter.unsupported: aelix's interactive mode",),
    ("SETTLE-1", "sink-error"): ("exitCode.1: EPIPE",),
    ("SETTLE-1", "dispose-aborts"): ("exitCode.1: Request aborted",),
    ("SETTLE-1", "no-queue"): ("AgentHarness is busy",),
    # By when: a prompt whose observers' handlers aelix awaits settles after their answers; a
    # call it should have refused at once (poisoned, disposed, an unknown mode) runs first.
    ("SETTLE-2", "observers-awaited"): ("after the answer to",),
    ("SETTLE-2", "append-failure-swallowed"): ("after its delivery",),
    ("SETTLE-2", "no-closed-state"): ("after its delivery",),
    ("SETTLE-2", "unknown-mode"): ("after its delivery",),
    ("model[0].expect", "system-prompt"): SYSTEM_PROMPT_SAID,
    ("model[1].expect", "system-prompt"): SYSTEM_PROMPT_SAID,
}

#: Where a rule's failure is worse than its cause's usual verdict.
VERDICTS: Dict[tuple, str] = {}


#: Failing (scenario, rule) pairs that show only under exploration (`agentsim explore scenarios/
#: --strategy pct --seeds 12 --impl "python3 adapters/aelix/adapter.py" --expect ...`, and the
#: default guided search with `--seeds 12`, which CI runs), each with the message the exploration printed for it. They are classified like
#: the pairs of the report (RULE_CAUSES, features, MESSAGE_HINTS) and written under `explored`,
#: which `run` allows and `explore --expect` counts as listed. A pair exploration newly finds is
#: reported UNEXPECTED there: add it here with its message.
EXPLORED: List[tuple] = [
    ('lab13/lab13-3-2b-queued-prompt-shares-the-poison', 'SETTLE-2', 'prompt op#3 had to settle by the step after its delivery (prompt op#3, line 12), before the world answered fx#4 (line 14); it did so only at line 19'),
    ('lifecycle/dispose-twice-while-poisoned', 'SETTLE-2', 'prompt op#2 had to settle by the step after its delivery (prompt op#2, line 10), before dispose op#3 was delivered (line 12); it did so only at line 14'),
    ('poison/applied-then-fail-at-first-append', 'SETTLE-2', 'prompt op#2 had to settle by the step after its delivery (prompt op#2, line 10), before the world answered fx#4 (line 12); it did so only at line 17'),
    ('poison/failure-in-second-prompt', 'SETTLE-2', 'prompt op#3 had to settle by the step after its delivery (prompt op#3, line 18), before the world answered fx#7 (line 20); it did so only at line 25'),
    ('poison/prompt-queued-while-append-pending', 'SETTLE-2', 'prompt op#2 had to settle by the step after its delivery (prompt op#2, line 18), before the world answered fx#8 (line 20); it did so only at line 25'),
    ('poison/queued-mode-rejected-without-write', 'SETTLE-2', 'mode op#2 had to settle by the step after its delivery (mode op#2, line 10), before the world answered fx#4 (line 12); it did so only at line 35'),
    ('poison/queued-prompts-never-reach-model', 'SETTLE-2', 'prompt op#2 had to settle by the step after its delivery (prompt op#2, line 10), before the world answered fx#4 (line 12); it did so only at line 17'),
    ('poison/two-prompts-dispose-failing-append', 'SETTLE-2', 'prompt op#2 had to settle by the step after its delivery (prompt op#2, line 10), before the world answered fx#4 (line 12); it did so only at line 17'),
    ('agent/abort-after-last-chunk-closes-tool-calls', 'PERSIST-10', "at the end of this step the runtime's leaf is `entry-2` with 2 persisted, but the store had accepted 3 appends (the newest: `entry-3`): the leaf advances after each accepted append"),
    ('agent/abort-during-before-hook', 'PERSIST-10', "at the end of this step the runtime's leaf is `entry-4` with 4 persisted, but the store had accepted 5 appends (the newest: `entry-5`): the leaf advances after each accepted append"),
    ('agent/abort-mid-stream', 'PERSIST-10', "at the end of this step the runtime's leaf is `entry-4` with 3 persisted, but the store had accepted 4 appends (the newest: `entry-2`): the leaf advances after each accepted append"),
    ('agent/abort-reaches-only-active-run', 'PERSIST-10', "at the end of this step the runtime's leaf is `entry-2` with 2 persisted, but the store had accepted 3 appends (the newest: `entry-3`): the leaf advances after each accepted append"),
    ('lifecycle/dispose-mid-stream', 'PERSIST-10', "at the end of this step the runtime's leaf is `entry-1` with 1 persisted, but the store had accepted 2 appends (the newest: `entry-2`): the leaf advances after each accepted append"),
    ('lifecycle/dispose-twice-across-queue', 'PERSIST-10', "at the end of this step the runtime's leaf is `entry-4` with 3 persisted, but the store had accepted 4 appends (the newest: `entry-3`): the leaf advances after each accepted append"),
    ('lifecycle/every-operation-settles', 'PERSIST-10', "at the end of this step the runtime's leaf is `entry-4` with 3 persisted, but the store had accepted 4 appends (the newest: `entry-3`): the leaf advances after each accepted append"),
    ('poison/queued-mode-rejected-without-write', 'PERSIST-10', "at the end of this step the runtime's leaf is `old-assistant` with 0 persisted, but the store had accepted 1 append (the newest: `entry-2`): the leaf advances after each accepted append"),
    ('agent/abort-during-persist-changes-nothing', 'PERSIST-7', "entry `entry-1` was appended before op#1's agent run sent its first model request"),
    ('lifecycle/dispose-twice-same-outcome', 'PERSIST-7', "entry `entry-1` was appended before op#1's agent run sent its first model request"),
    ('lifecycle/dispose-twice-while-poisoned', 'PERSIST-7', "entry `entry-1` was appended before op#1's agent run sent its first model request"),
    ('lifecycle/every-operation-settles', 'AGENT-1', "op#1 reported 3 steps, but its run made 2 model requests"),
    ('lifecycle/flush-after-dispose', 'PERSIST-7', "entry `entry-1` was appended before op#1's agent run sent its first model request"),
    ('poison/queued-mode-rejected-without-write', 'PERSIST-7', "entry `entry-1` was appended before op#1's agent run sent its first model request"),
    ('poison/two-prompts-dispose-failing-append', 'PERSIST-7', "entry `entry-1` was appended before op#1's agent run sent its first model request"),
    ('lab13/lab13-4-1b-json-mode-on-restored-session', 'AGENT-5', 'tool call call-1 has 0 results in the transcript, expected 1'),
    ('lab13/lab13-4-1b-json-mode-on-restored-session', 'PERSIST-7', "entry `entry-2` was appended while op#1's agent run was still going"),
    ('lab13/lab13-4-1b-json-mode-on-restored-session', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('agent/abort-after-last-chunk-closes-tool-calls', 'AGENT-5', 'tool call call-1 has 0 results in the transcript, expected 1'),
    ('agent/abort-after-last-chunk-closes-tool-calls', 'PERSIST-7', "entry `entry-2` was appended while op#1's agent run was still going"),
    ('agent/abort-during-before-hook', 'PERSIST-7', "entry `entry-2` was appended while op#1's agent run was still going"),
    ('agent/abort-during-before-hook', 'QUEUE-2', 'op#1 appended 1 assistant message, but its run received 2 model responses: it must append exactly its own'),
    ('agent/abort-during-persist-changes-nothing', 'AGENT-1', 'op#1 reported 0 steps, but its run made 1 model request'),
    ('agent/abort-during-persist-changes-nothing', 'PROJECT-2', 'system prompt "You are Aelix, an interactive CLI coding…", expected none'),
    ('agent/abort-during-persist-changes-nothing', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('agent/abort-during-persist-changes-nothing', 'WIRE-2', 'no configured prompt and no resources, yet the request has a system prompt'),
    ('agent/abort-mid-stream', 'PERSIST-3', 'entry `entry-3` was appended while `entry-2` was unanswered'),
    ('agent/abort-mid-stream', 'POISON-5', 'entry `entry-1` gained 2 appended children [entry-2,entry-3]: a retry wrote a second copy'),
    ('agent/abort-mid-stream', 'QUEUE-1', 'the runs of sig#1 and sig#2 overlap: prompts must run one at a time'),
    ('agent/steer-during-persist-joins-next-run', 'PERSIST-7', "entry `entry-2` was appended while op#1's agent run was still going"),
    ('lab13/lab13-3-2b-queued-prompt-shares-the-poison', 'POISON-2', 'an append after the append failure (diskError: disk full): a poisoned runtime does nothing more'),
    ('lab13/lab13-3-2b-queued-prompt-shares-the-poison', 'POISON-4', 'prompt op#3 came after the failure (diskError: disk full) but settled resolved reason=stop steps=1 messages=6'),
    ('lab13/lab13-3-3-flush-waits-dispose-closes', 'AGENT-1', 'op#1 reported 0 steps, but its run made 1 model request'),
    ('lab13/lab13-3-3-flush-waits-dispose-closes', 'QUEUE-1', 'the runs of sig#1 and sig#2 overlap: prompts must run one at a time'),
    ('lab13/lab13-3-3-flush-waits-dispose-closes', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('lab13/lab13-4-1-modes-encode-one-result', 'PROJECT-2', 'system prompt "You are Aelix, an interactive CLI coding…", expected none'),
    ('lab13/lab13-4-1-modes-encode-one-result', 'WIRE-2', 'no configured prompt and no resources, yet the request has a system prompt'),
    ('lifecycle/dispose-during-mode-write', 'PERSIST-2', "op#3's first entry has parent `old-assistant`; the leaf at its start was `entry-1`"),
    ('lifecycle/dispose-during-mode-write', 'QUEUE-1', 'the runs of sig#1 and sig#2 overlap: prompts must run one at a time'),
    ('lifecycle/dispose-mid-stream', 'PERSIST-3', 'entry `entry-3` was appended while `entry-2` was unanswered'),
    ('lifecycle/dispose-mid-stream', 'POISON-5', 'entry `entry-1` gained 2 appended children [entry-2,entry-3]: a retry wrote a second copy'),
    ('lifecycle/dispose-mid-stream', 'QUEUE-1', 'the runs of sig#1 and sig#2 overlap: prompts must run one at a time'),
    ('lifecycle/dispose-twice-across-queue', 'AGENT-5', 'tool call call-1 has 0 results in the transcript, expected 1'),
    ('lifecycle/dispose-twice-across-queue', 'PERSIST-3', 'entry `entry-3` was appended while `entry-2` was unanswered'),
    ('lifecycle/dispose-twice-across-queue', 'PERSIST-7', "entry `entry-2` was appended while op#1's agent run was still going"),
    ('lifecycle/dispose-twice-across-queue', 'POISON-5', 'entry `entry-1` gained 2 appended children [entry-2,entry-3]: a retry wrote a second copy'),
    ('lifecycle/dispose-twice-across-queue', 'QUEUE-1', 'the runs of sig#1 and sig#2 overlap: prompts must run one at a time'),
    ('lifecycle/dispose-twice-same-outcome', 'AGENT-1', 'op#1 reported 0 steps, but its run made 1 model request'),
    ('lifecycle/dispose-twice-same-outcome', 'PROJECT-2', 'system prompt "You are Aelix, an interactive CLI coding…", expected none'),
    ('lifecycle/dispose-twice-same-outcome', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('lifecycle/dispose-twice-same-outcome', 'WIRE-2', 'no configured prompt and no resources, yet the request has a system prompt'),
    ('lifecycle/dispose-twice-while-poisoned', 'AGENT-1', 'op#1 reported 0 steps, but its run made 1 model request'),
    ('lifecycle/dispose-twice-while-poisoned', 'LIFE-3', 'flush op#5 settled resolved, expected rejected diskError: disk full'),
    ('lifecycle/dispose-twice-while-poisoned', 'POISON-1', "op#1's append failed with diskError: disk full, but it settled resolved reason=stop steps=1 messages=4"),
    ('lifecycle/dispose-twice-while-poisoned', 'POISON-2', 'an append after the append failure (diskError: disk full): a poisoned runtime does nothing more'),
    ('lifecycle/dispose-twice-while-poisoned', 'POISON-4', 'flush op#5 came after the failure (diskError: disk full) but settled resolved'),
    ('lifecycle/dispose-twice-while-poisoned', 'PROJECT-2', 'system prompt "You are Aelix, an interactive CLI coding…", expected none'),
    ('lifecycle/dispose-twice-while-poisoned', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('lifecycle/dispose-twice-while-poisoned', 'WIRE-2', 'no configured prompt and no resources, yet the request has a system prompt'),
    ('lifecycle/dispose-waits-for-all-queued', 'AGENT-1', 'op#1 reported 0 steps, but its run made 1 model request'),
    ('lifecycle/dispose-waits-for-all-queued', 'QUEUE-1', 'the runs of sig#1 and sig#2 overlap: prompts must run one at a time'),
    ('lifecycle/dispose-waits-for-all-queued', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('lifecycle/dispose-while-committing-with-queued-prompt', 'AGENT-1', 'op#1 reported 0 steps, but its run made 1 model request'),
    ('lifecycle/dispose-while-committing-with-queued-prompt', 'QUEUE-1', 'the runs of sig#1 and sig#2 overlap: prompts must run one at a time'),
    ('lifecycle/dispose-while-committing-with-queued-prompt', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('lifecycle/every-operation-settles', 'PERSIST-3', 'entry `entry-4` was appended while `entry-3` was unanswered'),
    ('lifecycle/every-operation-settles', 'PERSIST-7', "entry `entry-2` was appended while op#1's agent run was still going"),
    ('lifecycle/every-operation-settles', 'POISON-5', 'entry `entry-2` gained 2 appended children [entry-3,entry-4]: a retry wrote a second copy'),
    ('lifecycle/every-operation-settles', 'QUEUE-1', 'the runs of sig#1 and sig#2 overlap: prompts must run one at a time'),
    ('lifecycle/every-operation-settles', 'QUEUE-2', 'op#1 appended 1 assistant message, but its run received 2 model responses: it must append exactly its own'),
    ('lifecycle/flush-after-dispose', 'AGENT-1', 'op#1 reported 0 steps, but its run made 1 model request'),
    ('lifecycle/flush-after-dispose', 'PROJECT-2', 'system prompt "You are Aelix, an interactive CLI coding…", expected none'),
    ('lifecycle/flush-after-dispose', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('lifecycle/flush-after-dispose', 'WIRE-2', 'no configured prompt and no resources, yet the request has a system prompt'),
    ('modes/unknown-mode-after-dispose', 'LIFE-2', '2 agent runs for 1 prompt: something created work'),
    ('modes/unknown-mode-after-dispose', 'MODE-1', 'json mode: keys are [id,created_at,cwd,path,parent_session_path], expected [reason,steps,messages]'),
    ('modes/unknown-mode-after-dispose', 'MODE-2', 'mode op#3 resolved after it prompted 0 times and wrote once; expected once each'),
    ('modes/unknown-mode-after-dispose', 'PROJECT-2', 'system prompt "You are Aelix, an interactive CLI coding…", expected none'),
    ('modes/unknown-mode-after-dispose', 'PROJECT-7', 'message 5 (user) appears twice: a persisted message was sent again as temporary'),
    ('modes/unknown-mode-after-dispose', 'QUEUE-2', 'op#2 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('modes/unknown-mode-after-dispose', 'WIRE-2', 'no configured prompt and no resources, yet the request has a system prompt'),
    ('modes/unknown-mode-while-busy', 'AGENT-1', 'op#1 reported 0 steps, but its run made 1 model request'),
    ('modes/unknown-mode-while-busy', 'LIFE-2', '2 agent runs for 1 prompt: something created work'),
    ('modes/unknown-mode-while-busy', 'PROJECT-2', 'system prompt "You are Aelix, an interactive CLI coding…", expected none'),
    ('modes/unknown-mode-while-busy', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('modes/unknown-mode-while-busy', 'WIRE-2', 'no configured prompt and no resources, yet the request has a system prompt'),
    ('observers/slow-observer-and-failed-append', 'CONTEXT-2', 'the result of call-1 is in the request without its call'),
    ('observers/slow-observer-and-failed-append', 'POISON-4', 'prompt op#2 came after the failure (diskError: disk full) but settled resolved reason=stop steps=1 messages=8'),
    ('poison/applied-then-fail-at-first-append', 'POISON-4', "prompt op#2 came after the failure (ackLost: connection reset after write) but settled rejected busy: AgentHarness is busy (phase='turn'); use steer()/follow_up() while in a turn."),
    ('poison/failure-in-second-prompt', 'LIFE-3', 'flush op#4 settled resolved, expected rejected diskError: disk full'),
    ('poison/failure-in-second-prompt', 'PERSIST-2', 'entry `entry-4` has parent `entry-2`, expected the previous entry `entry-3`'),
    ('poison/failure-in-second-prompt', 'PERSIST-5', 'op#3 appended `entry-4` after its append of `entry-3` failed'),
    ('poison/failure-in-second-prompt', 'PERSIST-6', 'op#3 succeeded when the store had accepted 1 of its 2 entries'),
    ('poison/failure-in-second-prompt', 'POISON-1', "op#3's append failed with diskError: disk full, but it settled resolved reason=stop steps=1 messages=6"),
    ('poison/failure-in-second-prompt', 'POISON-2', 'a model request after the append failure (diskError: disk full): a poisoned runtime does nothing more'),
    ('poison/failure-in-second-prompt', 'POISON-4', 'flush op#4 came after the failure (diskError: disk full) but settled resolved'),
    ('poison/flush-before-failure', 'POISON-4', 'flush op#3 came after the failure (diskError: disk full) but settled resolved'),
    ('poison/prompt-queued-while-append-pending', 'CONTEXT-2', 'the result of call-1 is in the request without its call'),
    ('poison/prompt-queued-while-append-pending', 'POISON-4', "prompt op#2 came after the failure (diskError: disk full) but settled rejected busy: AgentHarness is busy (phase='turn'); use steer()/follow_up() while in a turn."),
    ('poison/queued-mode-rejected-without-write', 'AGENT-1', 'op#1 reported 0 steps, but its run made 1 model request'),
    ('poison/queued-mode-rejected-without-write', 'MODE-1', 'json mode: keys are [id,created_at,cwd,path,parent_session_path], expected [reason,steps,messages]'),
    ('poison/queued-mode-rejected-without-write', 'MODE-2', 'mode op#2 was rejected with `exitCode.1` on a healthy runtime after it prompted 0 times and wrote 0 times; expected once each'),
    ('poison/queued-mode-rejected-without-write', 'PERSIST-2', 'entry `entry-2` has parent `old-assistant`, expected the previous entry `entry-1`'),
    ('poison/queued-mode-rejected-without-write', 'PERSIST-5', 'op#1 appended `entry-2` after its append of `entry-1` failed'),
    ('poison/queued-mode-rejected-without-write', 'POISON-2', 'a model request after the append failure (diskError: disk full): a poisoned runtime does nothing more'),
    ('poison/queued-mode-rejected-without-write', 'POISON-4', "mode op#2 came after the failure (diskError: disk full) but settled rejected exitCode.1: AgentHarness is busy (phase='turn'); use steer()/follow_up() while in a turn."),
    ('poison/queued-mode-rejected-without-write', 'PROJECT-2', 'system prompt "You are Aelix, an interactive CLI coding…", expected none'),
    ('poison/queued-mode-rejected-without-write', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('poison/queued-mode-rejected-without-write', 'WIRE-2', 'no configured prompt and no resources, yet the request has a system prompt'),
    ('poison/queued-prompts-never-reach-model', 'POISON-4', "prompt op#2 came after the failure (diskError: disk full) but settled rejected busy: AgentHarness is busy (phase='turn'); use steer()/follow_up() while in a turn."),
    ('poison/two-prompts-dispose-failing-append', 'AGENT-1', 'op#1 reported 0 steps, but its run made 1 model request'),
    ('poison/two-prompts-dispose-failing-append', 'POISON-1', "op#1's append failed with diskError: disk full, but it settled resolved reason=stop steps=1 messages=2"),
    ('poison/two-prompts-dispose-failing-append', 'POISON-2', 'an append after the append failure (diskError: disk full): a poisoned runtime does nothing more'),
    ('poison/two-prompts-dispose-failing-append', 'POISON-4', 'prompt op#2 came after the failure (diskError: disk full) but settled resolved reason=stop steps=1 messages=4'),
    ('poison/two-prompts-dispose-failing-append', 'PROJECT-2', 'system prompt "You are Aelix, an interactive CLI coding…", expected none'),
    ('poison/two-prompts-dispose-failing-append', 'QUEUE-2', 'op#1 appended 0 assistant messages, but its run received 1 model response: it must append exactly its own'),
    ('poison/two-prompts-dispose-failing-append', 'WIRE-2', 'no configured prompt and no resources, yet the request has a system prompt'),
    # Found by the guided search (`explore --impl ...` with its default strategy, seeds 0 to 11).
    ('agent/abort-mid-tool-results-reach-next-run', 'QUEUE-1', 'the runs of sig#1 and sig#2 overlap: prompts must run one at a time'),
    ('agent/abort-reaches-only-active-run', 'AGENT-1', 'op#2 reported 1 step, but its run made 0 model requests'),
    ('lab13/lab13-3-3-flush-waits-dispose-closes', 'PERSIST-2', "op#6's first entry has parent `old-assistant`; the leaf at its start was `entry-1`"),
    ('lifecycle/dispose-twice-across-queue', 'AGENT-1', 'op#2 reported 1 step, but its run made 0 model requests'),
    ('lifecycle/dispose-twice-across-queue', 'CONTEXT-2', 'tool call call-1 is in the request without its result'),
    ('lifecycle/dispose-twice-across-queue', 'PERSIST-2', "op#5's first entry has parent `entry-2`; the leaf at its start was `entry-3`"),
    ('lifecycle/dispose-waits-for-all-queued', 'PERSIST-2', "op#5's first entry has parent `entry-4`; the leaf at its start was `entry-5`"),
    ('lifecycle/dispose-while-committing-with-queued-prompt', 'PERSIST-2', "op#4's first entry has parent `entry-2`; the leaf at its start was `entry-3`"),
    ('agent/abort-mid-stream', 'PERSIST-2', "op#3's first entry has parent `entry-1`; the leaf at its start was `entry-2`"),
    ('lifecycle/dispose-mid-stream', 'PERSIST-2', "op#3's first entry has parent `entry-1`; the leaf at its start was `entry-2`"),
    ('lifecycle/every-operation-settles', 'PERSIST-2', "op#5's first entry has parent `entry-2`; the leaf at its start was `entry-3`"),
    ('agent/abort-after-last-chunk-closes-tool-calls', 'PERSIST-9', "the session the store holds fails check-session: `tool.unanswered_call` on line 5 of the store's file (entry `entry-2`): tool call `call-1` has no toolResult anywhere in the file"),
    ('lab13/lab13-4-1b-json-mode-on-restored-session', 'PERSIST-9', "the session the store holds fails check-session: `tool.unanswered_call` on line 5 of the store's file (entry `entry-2`): tool call `call-1` has no toolResult anywhere in the file"),
    ('lifecycle/dispose-twice-across-queue', 'PERSIST-9', "the session the store holds fails check-session: `tool.unanswered_call` on line 5 of the store's file (entry `entry-2`): tool call `call-1` has no toolResult anywhere in the file"),
    ('lifecycle/dispose-waits-for-all-queued', 'PERSIST-5', 'entry `entry-2` has parent none (a root entry), which the store had not accepted'),
]


def features(scenario: Dict[str, Any], case: Dict[str, Any]) -> Set[str]:
    """The causes a scenario can exhibit, read off the scenario file and its report."""
    found: Set[str] = {"system-prompt", "persist-per-message"}
    session = scenario.get("session", [])
    config = scenario.get("config", {})
    leaf = config.get("activeLeafId")
    ids = [entry.get("id") for entry in session]
    operations = scenario.get("operations", [])
    kinds = [operation.get("op") for operation in operations]
    modes = [operation.get("mode") for operation in operations if operation.get("op") == "mode"]
    messages = " ".join(violation["message"] for violation in case.get("violations", []))
    if session and leaf is None:
        found.add("null-leaf")
    if session and leaf is not None and leaf in ids and ids[-1] != leaf:
        found.add("leaf-entry")
    if len(ids) != len(set(ids)):
        found.add("duplicate-ids")
    if any(entry.get("type") == "compaction" for entry in session):
        found.add("compaction-summary")
    if any(fault.get("fault") in ("reject", "appliedThenFail") for fault in scenario.get("faults", {}).get("appends", [])):
        found.add("append-failure-swallowed")
    if "net" in scenario:
        found.add("append-failure-swallowed")
    if scenario.get("observers"):
        found.update({"observers-awaited", "turn-end-drops-tool-results"})
    if "dispose" in kinds:
        found.update({"dispose-aborts", "no-closed-state"})
    if "abort" in kinds:
        found.update({"abort-cancels", "abort-drops"})
    if "dispose" in kinds:
        found.add("abort-drops")
    if "busy" in messages:
        found.add("no-queue")
    if "json" in modes:
        found.add("json-mode")
    if "print" in modes:
        found.add("print-newline")
    if "interactive" in modes:
        found.add("interactive")
    if any(mode not in ("print", "json", "interactive") for mode in modes):
        found.add("unknown-mode")
    if modes and (len(operations) > 1):
        found.add("mode-disposes-host")
    if modes:
        found.add("sink-error")
    if any(mode in ("print", "json") for mode in modes):
        found.add("print-write-synchronous")
    # dispose() awaits the harness's abort(), which clears the queues too.
    if ("abort" in kinds or "dispose" in kinds) and ("steer" in kinds or "followUp" in kinds):
        found.add("abort-clears-queues")
    if config.get("maxSteps") is not None and "max steps" in json.dumps(scenario).lower() or "max_steps" in json.dumps(scenario.get("expect", {})):
        found.add("no-max-steps")
    context = config.get("context")
    if context and context.get("total", 10**9) < 10**5:
        found.add("no-budget")
    text = json.dumps(scenario)
    if '"throw"' in text:
        found.add("hook-throws")
    tool_names = {tool.get("name") for tool in scenario.get("tools", [])}
    if any(call.get("name") not in tool_names for response in scenario.get("model", []) for call in response.get("toolCalls", [])):
        found.add("unknown-tool-text")
    if "rewrite" in text or "invalid" in text or "Invalid arguments" in text or "schema rejects" in text:
        found.add("coerce-arguments")
    if "WIRE-9" in scenario.get("rules", []) or found & {"coerce-arguments", "unknown-tool-text"}:
        found.add("error-texts")
    return found


def cause_of(rule: str, present: Set[str], said: str) -> Any:
    """The first cause RULE_CAUSES lists for `rule` that the scenario exhibits and its message says."""
    return next(
        (
            key
            for key in RULE_CAUSES.get(rule, [])
            if key in present and any(hint in said for hint in MESSAGE_HINTS.get((rule, key), ("",)))
        ),
        None,
    )


def scenario_file(path: str) -> Dict[str, Any]:
    with open(os.path.join(ROOT, path), encoding="utf-8") as file:
        return json.load(file)


def must_rules() -> Set[str]:
    """The MUST rules, as conformance.md's `### ID` headings and their `- Level:` lines say (the
    kit's `tidy` test keeps them the catalogue's)."""
    rules: Set[str] = set()
    rule = None
    with open(os.path.join(ROOT, "conformance.md"), encoding="utf-8") as file:
        for line in file:
            line = line.rstrip("\n")
            if line.startswith("### ") and line[4:].strip().replace("-", "").isalnum():
                rule = line[4:].strip()
            elif rule and line.startswith("- Level: "):
                if line[len("- Level: "):].startswith("MUST"):
                    rules.add(rule)
                rule = None
    return rules


def record(report: Dict[str, Any], refused: Optional[List[str]] = None) -> Dict[str, Any]:
    """The expectations file: one entry per cause (CAUSES' order), with its one label, reason and
    source and its pairs by rule (RULE_CAUSES' order, scenarios sorted). A pair of a MUST rule
    under a cause labelled `choice` is left out and named in `refused`: a broken MUST rule is a
    bug, never a choice (relabel the cause in CAUSES, or argue in conformance.md that the rule is
    SHOULD); a run with the file reports it UNEXPECTED."""
    refused = [] if refused is None else refused
    by_cause: Dict[tuple, List[str]] = {}
    explored: Dict[tuple, List[str]] = {}
    unexplained: List[str] = []
    for case in report["results"]:
        rules: List[str] = []
        if case["status"] == "broken":
            rules.append(f"broken:{case.get('code', 'subject.malformed')}")
        elif case["status"] == "failed":
            for violation in case.get("violations", []):
                if violation["rule"] not in rules:
                    rules.append(violation["rule"])
        if not rules:
            continue
        scenario = scenario_file(case["path"])
        present = features(scenario, case)
        if case["status"] == "broken" and "no cycle detection" in case.get("detail", ""):
            present.add("cycle-hang")
        for rule in rules:
            said = " ".join(v["message"] for v in case.get("violations", []) if v["rule"] == rule)
            cause = cause_of(rule, present, said)
            if cause is None:
                unexplained.append(f"{case['name']} {rule}")
                continue
            by_cause.setdefault((rule, cause), []).append(case["name"])
    for name, rule, said in EXPLORED:
        case = {"violations": [{"rule": rule, "message": said}]}
        cause = cause_of(rule, features(scenario_file(f"scenarios/{name}.json"), case), said)
        if cause is None:
            unexplained.append(f"{name} {rule} (explored)")
            continue
        explored.setdefault((rule, cause), []).append(name)
    # Left out and named: a run with the file reports them UNEXPECTED.
    refused.extend(f"no cause explains {pair}: left out" for pair in unexplained)
    must = must_rules()
    order = {rule: index for index, rule in enumerate(RULE_CAUSES)}
    # A (scenario, rule) pair has one cause: canonical pairs first, then the explored ones.
    owner: Dict[tuple, str] = {}
    for (rule, cause), scenarios in by_cause.items():
        for scenario in scenarios:
            owner[(scenario, rule)] = cause
    causes = []
    for cause, entry in CAUSES.items():
        verdict = entry["verdict"]
        pairs: Dict[str, List[str]] = {}
        allowed: Dict[str, List[str]] = {}
        for rule in sorted({rule for rule, key in set(by_cause) | set(explored) if key == cause}, key=lambda rule: order[rule]):
            if VERDICTS.get((rule, cause), verdict) != verdict:
                sys.stderr.write(f"expectations: VERDICTS labels {rule} of `{cause}` {VERDICTS[(rule, cause)]}, "
                                 f"but a cause has one label: `{cause}` is written {verdict}\n")
            scenarios = sorted(by_cause.get((rule, cause), []))
            extra = []
            for scenario in sorted(set(explored.get((rule, cause), [])) - set(scenarios)):
                if owner.setdefault((scenario, rule), cause) != cause:
                    refused.append(f"cause `{cause}`: explored {rule} in {scenario} is listed by cause "
                                   f"`{owner[(scenario, rule)]}`: left out (a pair has one cause)")
                    continue
                extra.append(scenario)
            if verdict == "choice" and rule in must:
                refused.append(f"cause `{cause}` is labelled choice but explains MUST rule {rule}: left out "
                               f"{rule} on {', '.join(scenarios + extra)}")
                continue
            if scenarios:
                pairs[rule] = scenarios
            if extra:
                allowed[rule] = extra
        if not pairs and not allowed:
            continue
        written: Dict[str, Any] = {"id": cause, "verdict": verdict, "reason": entry["reason"], "source": entry["source"]}
        if pairs:
            written["pairs"] = pairs
        if allowed:
            written["explored"] = allowed
        causes.append(written)
    return {"implementation": "aelix-0.1.0b2", "causes": causes}


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write(__doc__ or "")
        return 2
    with open(argv[1], encoding="utf-8") as file:
        report = json.load(file)
    refused: List[str] = []
    json.dump(record(report, refused), sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    for problem in refused:
        sys.stderr.write(f"expectations: {problem}\n")
    if any("is labelled choice but explains MUST rule" in problem for problem in refused):
        sys.stderr.write("expectations: a broken MUST rule is a bug, never a choice: label the cause bug, "
                         "or argue in conformance.md that the rule is SHOULD\n")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
