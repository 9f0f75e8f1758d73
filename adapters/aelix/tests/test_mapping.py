"""What the adapter reports is aelix's, not the adapter's: the mapping's own choices, each on
the real aelix of ``adapters/aelix/.venv``, driven line by line as the kit drives it.

    python3 -m unittest discover -s adapters/aelix/tests

- ``steps`` is the number of turns aelix's loop started (its ``turn_start`` events), the same
  for a prompt and a mode, also for a run an abort cut short;
- a mode name aelix's command line refuses (``--mode yaml``) is refused at once, before any
  prompt, with what aelix prints;
- a write that fails with ``EPIPE`` is a ``BrokenPipeError``, which aelix's print mode lets out:
  the mode rejects with the kit's cause unchanged;
- a message aelix builds from a compaction entry carries milliseconds already: its timestamp
  leaves as it is.

Skipped when the venv is not installed (``adapters/aelix/install.sh``); ``test_setup.py``
covers that case. Standard library only (the SDK's test harness drives the process).
"""

from __future__ import annotations

import json
import os
import sys
import unittest
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER_DIR = os.path.dirname(HERE)
SDK_TESTS = os.path.join(ADAPTER_DIR, "..", "sdk", "python", "tests")
sys.path.insert(0, ADAPTER_DIR)
sys.path.insert(0, SDK_TESTS)

import adapter as launcher  # noqa: E402
from harness import (  # noqa: E402
    AdapterProcess,
    USAGE,
    append_ok,
    complete,
    model_chunk,
    operation,
    scenario,
    start,
)

ADAPTER = os.path.join(ADAPTER_DIR, "adapter.py")
INSTALLED = launcher.installed_problem() is None


def assistant(content: List[Dict[str, Any]], stop: str = "stop", timestamp: int = 1767226100000) -> Dict[str, Any]:
    return {
        "role": "assistant",
        "content": content,
        "api": "agentsim",
        "provider": "agentsim",
        "model": "scripted",
        "usage": USAGE,
        "stopReason": stop,
        "timestamp": timestamp,
    }


def final(effect: int, message: Dict[str, Any]) -> str:
    return complete(effect, {"kind": "model_final", "message": message})


@unittest.skipUnless(INSTALLED, "the aelix venv is not installed (adapters/aelix/install.sh)")
class Mapping(unittest.TestCase):
    def setUp(self) -> None:
        self.adapter = AdapterProcess(ADAPTER)
        hello = json.loads(self.adapter.read_line(timeout=30))
        self.assertEqual(hello["type"], "hello")

    def tearDown(self) -> None:
        self.adapter.kill()
        self.adapter.wait()

    def turn(self, line: str) -> List[Dict[str, Any]]:
        return [json.loads(text) for text in self.adapter.turn(line)]

    def effects(self, lines: List[Dict[str, Any]], kind: str) -> List[Dict[str, Any]]:
        return [line["effect"] for line in lines if line["type"] == "effect" and line["effect"]["kind"] == kind]

    def settled(self, lines: List[Dict[str, Any]], op: int) -> Dict[str, Any]:
        found = [line["settlement"] for line in lines if line["type"] == "settled" and line["op"] == op]
        self.assertEqual(len(found), 1, lines)
        return found[0]

    def begin(self, **changes: Any) -> None:
        lines = self.turn(start(scenario(**changes)))
        self.assertEqual(lines[0]["type"], "started", lines)

    def run_to_first_request(self, first: str) -> Dict[str, Any]:
        """Delivers `first` (a prompt or a mode) and answers the user message's append: the
        turn's model request follows."""
        lines = self.turn(first)
        (append,) = self.effects(lines, "append")
        (request,) = self.effects(self.turn(append_ok(append["id"])), "model_request")
        return request

    def test_steps_count_the_turns_of_a_tool_round(self) -> None:
        tool = {"name": "note", "description": "takes a note", "parameters": {"type": "object"}}
        self.begin(tools=[tool])
        request = self.run_to_first_request(operation(1, "prompt", text="take a note"))
        call = {"type": "toolCall", "id": "call-1", "name": "note", "arguments": {}}
        lines = self.turn(final(request["id"], assistant([call], stop="toolUse")))
        while not self.effects(lines, "tool_call"):
            (append,) = self.effects(lines, "append")
            lines = self.turn(append_ok(append["id"]))
        (tool_call,) = self.effects(lines, "tool_call")
        outcome = {"kind": "ok", "content": [{"type": "text", "text": "noted"}], "details": None, "isError": False}
        lines = self.turn(complete(tool_call["id"], {"kind": "tool", "outcome": outcome}))
        while not self.effects(lines, "model_request"):
            (append,) = self.effects(lines, "append")
            lines = self.turn(append_ok(append["id"]))
        (second,) = self.effects(lines, "model_request")
        lines = self.turn(final(second["id"], assistant([{"type": "text", "text": "done"}])))
        (append,) = self.effects(lines, "append")
        value = self.settled(self.turn(append_ok(append["id"])), 1)["value"]
        self.assertEqual((value["reason"], value["steps"]), ("stop", 2))

    def test_an_aborted_turn_counts_as_the_turn_it_started(self) -> None:
        self.begin()
        request = self.run_to_first_request(operation(1, "prompt", text="hello"))
        self.turn(model_chunk(request["id"], "par"))
        lines = self.turn(operation(2, "abort"))
        value = self.settled(lines, 1)["value"]
        # aelix's AgentHarness.prompt returns [] for an aborted turn; its loop did start one turn.
        self.assertEqual((value["reason"], value["steps"]), ("aborted", 1))

    def test_a_mode_counts_steps_as_a_prompt_does(self) -> None:
        self.begin()
        request = self.run_to_first_request(operation(1, "mode", mode="print", text="hello"))
        lines = self.turn(final(request["id"], assistant([{"type": "text", "text": "hi"}])))
        (append,) = self.effects(lines, "append")
        (write,) = self.effects(self.turn(append_ok(append["id"])), "write")
        self.assertEqual(write["text"], "hi\n")
        lines = self.turn(complete(write["id"], {"kind": "write", "outcome": {"kind": "ok"}}))
        value = self.settled(lines, 1)["value"]
        self.assertEqual((value["reason"], value["steps"]), ("stop", 1))

    def test_a_mode_name_aelix_refuses_runs_nothing(self) -> None:
        self.begin()
        lines = self.turn(operation(1, "mode", mode="yaml", text="hello"))
        self.assertEqual([line["type"] for line in lines], ["settled", "idle"], lines)
        self.assertEqual(
            self.settled(lines, 1),
            {"status": "rejected", "cause": {"code": "exitCode.1", "message": "Error: Invalid --mode value: yaml"}},
        )

    def test_a_broken_pipe_reaches_the_caller_unchanged(self) -> None:
        self.begin()
        request = self.run_to_first_request(operation(1, "mode", mode="print", text="hello"))
        lines = self.turn(final(request["id"], assistant([{"type": "text", "text": "hi"}])))
        (append,) = self.effects(lines, "append")
        (write,) = self.effects(self.turn(append_ok(append["id"])), "write")
        cause = {"code": "EPIPE", "message": "broken pipe"}
        lines = self.turn(complete(write["id"], {"kind": "write", "outcome": {"kind": "failed", "cause": cause}}))
        self.assertEqual(self.settled(lines, 1), {"status": "rejected", "cause": cause})

    def test_a_compaction_summary_keeps_its_milliseconds(self) -> None:
        user = {"role": "user", "content": "kept", "timestamp": 1767139380000}
        session = [
            {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-12-31T00:03:00.000Z", "message": user},
            {"type": "compaction", "id": "cmp", "parentId": "u1", "timestamp": "2025-12-31T00:05:00.000Z",
             "summary": "earlier", "firstKeptEntryId": "u1", "tokensBefore": 10},
        ]
        self.begin(session=session, config=dict(scenario()["config"], activeLeafId="cmp"))
        request = self.run_to_first_request(operation(1, "prompt", text="go on"))
        messages = request["request"]["messages"]
        # session/context.py create_compaction_summary_message: the entry's time in milliseconds.
        self.assertEqual(messages[0]["timestamp"], 1767139500000)
        self.assertEqual(messages[1], user)


if __name__ == "__main__":
    unittest.main()
