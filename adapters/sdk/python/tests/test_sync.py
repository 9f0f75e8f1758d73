"""The synchronous mode (``effect_sync``), with the fixture adapter as a subprocess."""

from __future__ import annotations

import json
import unittest
from typing import Any, Dict

from harness import IDLE, SYNC_FIXTURE, AdapterProcess, append_ok, dumps, model_chunk, model_final, operation, start

STARTED = '{"type":"started","leaf":null,"messages":0}'
USER = {"role": "user", "content": "hi", "timestamp": 1767225600000}


def kinds(lines: Any) -> Any:
    return [(json.loads(line)["type"], json.loads(line).get("effect", {}).get("id")) for line in lines]


class SyncTest(unittest.TestCase):
    def setUp(self) -> None:
        self.adapter = AdapterProcess(SYNC_FIXTURE)
        self.addCleanup(self.adapter.kill)
        hello = json.loads(self.adapter.read_line())
        self.assertEqual(hello["type"], "hello")
        # The fixture prints, writes to sys.stdout and fd 1, and runs a child that writes to
        # its stdout: none of it reaches the protocol stream.
        self.assertEqual(self.adapter.turn(start()), [STARTED, IDLE])

    def test_prints_go_to_stderr(self) -> None:
        self.adapter.send('{"type":"shutdown"}')
        self.assertEqual(self.adapter.wait(), 0)
        stderr = self.adapter.stderr_text()
        for text in ("starting a run", "a child process writing to its stdout", "sys.stdout.write", "os.write to fd 1"):
            self.assertIn(text, stderr)

    def test_a_blocking_call_writes_idle_and_waits(self) -> None:
        request = {"systemPrompt": "SYS", "messages": [USER], "tools": []}
        model = dumps({"type": "effect", "effect": {"kind": "model_request", "id": 1, "signal": 1, "request": request}})
        self.assertEqual(self.adapter.turn(operation(1, "prompt", text="hi")), [model, IDLE])
        self.assertEqual(self.adapter.turn(model_chunk(1, "o")), [IDLE])
        self.assertEqual(kinds(self.adapter.turn(model_final(1))), [("effect", 2), ("idle", None)])
        self.assertEqual(kinds(self.adapter.turn(append_ok(2))), [("effect", 3), ("idle", None)])
        self.assertEqual(kinds(self.adapter.turn(append_ok(3))), [("settled", None), ("idle", None)])

    def test_lines_arriving_while_blocked_are_acknowledged_then_applied_in_order(self) -> None:
        self.assertEqual(kinds(self.adapter.turn(operation(1, "prompt", text="hi"))), [("effect", 1), ("idle", None)])
        # The runtime is blocked in the model call: a flush and a second prompt are only
        # acknowledged.
        self.assertEqual(self.adapter.turn(operation(2, "flush")), [IDLE])
        self.assertEqual(self.adapter.turn(operation(3, "prompt", text="two")), [IDLE])
        self.assertEqual(kinds(self.adapter.turn(model_final(1))), [("effect", 2), ("idle", None)])
        self.assertEqual(kinds(self.adapter.turn(append_ok(2))), [("effect", 3), ("idle", None)])
        # The first prompt resolves; then the flush (resolves at once) and the second prompt,
        # which blocks in its model call: all in the same turn.
        lines = self.adapter.turn(append_ok(3))
        self.assertEqual(kinds(lines), [("settled", None), ("settled", None), ("effect", 4), ("idle", None)])
        self.assertEqual([json.loads(line).get("op") for line in lines[:2]], [1, 2])
        # A wrong answer while blocked is still an error.
        self.assertEqual(json.loads(self.adapter.turn(append_ok(4))[0])["code"], "input.wrong_completion")
        self.assertEqual(json.loads(self.adapter.turn(append_ok(9))[0])["code"], "input.unknown_effect")

    def test_reset_while_blocked_discards_the_run(self) -> None:
        self.assertEqual(kinds(self.adapter.turn(operation(1, "prompt", text="hi"))), [("effect", 1), ("idle", None)])
        self.assertEqual(self.adapter.turn(operation(2, "flush")), [IDLE])
        self.assertEqual(self.adapter.turn('{"type":"reset"}'), [IDLE])
        self.assertEqual(self.adapter.turn(start()), [STARTED, IDLE])
        self.assertEqual(kinds(self.adapter.turn(operation(1, "prompt", text="hi"))), [("effect", 1), ("idle", None)])

    def test_start_while_blocked_resets_then_starts(self) -> None:
        first = self.adapter.turn(operation(1, "prompt", text="hi"))
        self.assertEqual(self.adapter.turn(start()), [STARTED, IDLE])
        self.assertEqual(self.adapter.turn(operation(1, "prompt", text="hi")), first)

    def test_shutdown_while_blocked_exits_0(self) -> None:
        self.adapter.turn(operation(1, "prompt", text="hi"))
        self.adapter.send('{"type":"shutdown"}')
        self.assertEqual(self.adapter.wait(), 0)
        self.assertEqual(self.adapter.proc.stdout.read(), b"")  # type: ignore[union-attr]

    def test_end_of_input_while_blocked_exits_0(self) -> None:
        self.adapter.turn(operation(1, "prompt", text="hi"))
        self.adapter.close_stdin()
        self.assertEqual(self.adapter.wait(), 0)


if __name__ == "__main__":
    unittest.main()
