"""A broken run (``RunBroken``): an ``error`` line marked ``recoverable``, then ``idle``; the
process serves the next run after ``reset``. The fixture as a subprocess in both modes, then
the finer cases in process."""

from __future__ import annotations

import asyncio
import json
import unittest
from typing import Any, Dict, List

from harness import BREAKING_FIXTURE, IDLE, AdapterProcess, append_ok, dumps, model_chunk, model_final, operation, scenario, serve_in_process, start

import agentsim_adapter as sdk

STARTED = '{"type":"started","leaf":null,"messages":0}'
RESET = '{"type":"reset"}'
HANG = start(scenario(config={**scenario()["config"], "activeLeafId": "hang"}))
ENTRY = {"type": "message", "id": "e", "parentId": None, "timestamp": "t", "message": {"role": "user", "content": "x", "timestamp": 0}}


def broken(code: str, message: str) -> str:
    return dumps({"type": "error", "code": code, "message": message, "recoverable": True})


def model_request(effect_id: int, text: str) -> str:
    request = {"systemPrompt": None, "messages": [{"role": "user", "content": text, "timestamp": 0}], "tools": []}
    return dumps({"type": "effect", "effect": {"kind": "model_request", "id": effect_id, "signal": 0, "request": request}})


def prompt(op: int, text: str) -> str:
    return operation(op, "prompt", text=text)


class AsyncBrokenRunTest(unittest.TestCase):
    """The fixture's runs broken at start, by an operation's raise, after a request the kit
    answered and in a chunk callback; each followed by ``reset`` and a run that works, on the
    same process. Asyncio mode; the subclass below runs them in synchronous mode."""

    env: Dict[str, str] = {"MODE": "async"}

    def setUp(self) -> None:
        self.adapter = AdapterProcess(BREAKING_FIXTURE, env=self.env)
        self.addCleanup(self.adapter.kill)
        self.assertEqual(json.loads(self.adapter.read_line())["type"], "hello")

    def next_run_works(self) -> None:
        """`reset`, then a fresh run on the same process, counting effect ids from 1."""
        self.assertEqual(self.adapter.turn(RESET), [IDLE])
        self.assertEqual(self.adapter.turn(start()), [STARTED, IDLE])
        self.assertEqual(self.adapter.turn(prompt(1, "fine")), [model_request(1, "fine"), IDLE])
        self.assertEqual(self.adapter.turn(model_final(1)), [model_request(2, "second"), IDLE])
        self.assertEqual(self.adapter.turn(model_final(2)), [dumps({"type": "settled", "op": 1, "settlement": {"status": "resolved", "value": {"kind": "unit"}}}), IDLE])

    def test_broken_at_start(self) -> None:
        self.assertEqual(self.adapter.turn(HANG), [broken("fixture.hang", "the walk did not return"), IDLE])
        self.next_run_works()
        self.assertIn("broken run: fixture.hang: the walk did not return", self.adapter.stderr_text())

    def test_broken_by_an_operation_that_raises(self) -> None:
        self.assertEqual(self.adapter.turn(start()), [STARTED, IDLE])
        self.assertEqual(self.adapter.turn(prompt(1, "break")), [broken("fixture.break", "op#1 cannot go on"), IDLE])
        self.next_run_works()

    def test_broken_after_a_request_the_kit_answered(self) -> None:
        self.assertEqual(self.adapter.turn(start()), [STARTED, IDLE])
        self.assertEqual(self.adapter.turn(prompt(1, "break-later")), [model_request(1, "break-later"), IDLE])
        lines = self.adapter.turn(model_final(1), silence=0.2)
        self.assertEqual(lines[-2:], [broken("fixture.break", "op#1 cannot go on after its request"), IDLE])
        # Nothing the run does after the break is written (the async fixture's task writes
        # afterwards); what it wrote before, in the same turn, is (the sync fixture's write).
        self.assertNotIn("written by a broken run", "".join(lines))
        self.assertEqual(len(lines), 3 if self.env.get("MODE") == "sync" else 2)
        self.next_run_works()

    def test_broken_in_a_chunk_callback(self) -> None:
        self.assertEqual(self.adapter.turn(start()), [STARTED, IDLE])
        self.assertEqual(self.adapter.turn(prompt(1, "break-on-chunk")), [model_request(1, "break-on-chunk"), IDLE])
        self.assertEqual(self.adapter.turn(model_chunk(1, "a")), [broken("fixture.break", "the stream broke at chunk 'a'"), IDLE])
        self.next_run_works()

    def test_lines_for_a_broken_run_are_out_of_turn(self) -> None:
        self.assertEqual(self.adapter.turn(start()), [STARTED, IDLE])
        self.assertEqual(self.adapter.turn(prompt(1, "break")), [broken("fixture.break", "op#1 cannot go on"), IDLE])
        self.assertEqual(
            self.adapter.turn(prompt(2, "fine")),
            [dumps({"type": "error", "code": "input.out_of_turn", "message": "`operation` after the run broke (before `reset`)"})],
        )
        # A `start` while the broken run is still there resets it first, as for a live run.
        self.assertEqual(self.adapter.turn(start()), [STARTED, IDLE])
        self.assertEqual(self.adapter.turn(prompt(1, "fine")), [model_request(1, "fine"), IDLE])


class SyncBrokenRunTest(AsyncBrokenRunTest):
    env = {"MODE": "sync"}


class Protocol1BrokenRunTest(unittest.TestCase):
    """Under protocol 1 (no `reset`) a broken run ends the turn with an unmarked `error`, as the
    mapping's other errors do; the kit then stops the process."""

    def check(self, mode: str) -> None:
        adapter = AdapterProcess(BREAKING_FIXTURE, env={"AGENTSIM_PROTOCOL": "1", "MODE": mode})
        self.addCleanup(adapter.kill)
        self.assertEqual(json.loads(adapter.read_line())["protocol"], 1)
        self.assertEqual(adapter.turn(start()), [STARTED, IDLE])
        self.assertEqual(adapter.turn(prompt(1, "break")), [dumps({"type": "error", "code": "fixture.break", "message": "op#1 cannot go on"})])
        adapter.send('{"type":"shutdown"}')
        self.assertEqual(adapter.wait(), 0)

    def test_async(self) -> None:
        self.check("async")

    def test_sync(self) -> None:
        self.check("sync")


class Scripted(sdk.Adapter):
    """``operation`` runs ``self.script(op, operation)``."""

    name = "scripted"
    version = "1"

    def __init__(self, script: Any) -> None:
        self.script = script

    def start(self, scenario: sdk.Scenario) -> sdk.Started:
        return sdk.Started(None, 0)

    def operation(self, op: int, operation: sdk.Operation) -> Any:
        return self.script(self, op, operation)


def drive(script: Any, *lines: str) -> List[str]:
    output, code, _ = serve_in_process(Scripted(script), [start(), *lines])
    assert code == 0
    assert output[1:3] == [STARTED, IDLE], output
    return output[3:]


def append_line(effect_id: int) -> str:
    return dumps({"type": "effect", "effect": {"kind": "append", "id": effect_id, "entry": ENTRY}})


class InProcessTest(unittest.TestCase):
    def test_only_once_per_run(self) -> None:
        async def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            async def breaks(n: int) -> None:
                await asyncio.sleep(0)
                raise sdk.RunBroken("fixture.break", f"break {n}")

            await asyncio.gather(breaks(1), breaks(2), return_exceptions=False)

        self.assertEqual(drive(script, operation(1, "flush")), [broken("fixture.break", "break 1"), IDLE])

    def test_the_message_is_cut_at_100000_characters(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            raise sdk.RunBroken("fixture.long", "é" * 100_010)

        output = drive(script, operation(1, "flush"))
        self.assertEqual(output, [broken("fixture.long", "é" * 100_000), IDLE])

    def test_lines_before_the_break_are_written_lines_after_it_are_not(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            self.effect("append", entry=ENTRY)
            asyncio.get_running_loop().call_soon(lambda: self.effect("write", text="after"))
            raise sdk.RunBroken("fixture.break", "midway")

        self.assertEqual(drive(script, operation(1, "flush")), [append_line(1), broken("fixture.break", "midway"), IDLE])

    def test_an_effect_callback_breaks_the_run(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            def done(effect: sdk.Effect) -> None:
                raise sdk.RunBroken("fixture.break", "in a callback")

            self.effect("append", entry=ENTRY).add_done_callback(done)
            return None

        output = drive(script, operation(1, "flush"), append_ok(1))
        self.assertEqual(output, [append_line(1), IDLE, broken("fixture.break", "in a callback"), IDLE])

    def test_a_loop_callback_breaks_the_run(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            def later() -> None:
                raise sdk.RunBroken("fixture.break", "scheduled")

            asyncio.get_running_loop().call_soon(later)
            return None

        self.assertEqual(drive(script, operation(1, "flush")), [broken("fixture.break", "scheduled"), IDLE])

    def test_what_a_broken_run_raises_afterwards_is_not_an_error(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            asyncio.get_running_loop().call_soon(lambda: 1 / 0)
            raise sdk.RunBroken("fixture.break", "first")

        self.assertEqual(drive(script, operation(1, "flush")), [broken("fixture.break", "first"), IDLE])

    def test_a_turn_that_already_ends_with_an_error_keeps_it(self) -> None:
        # A bad line (adapter.malformed, the turn's error), then RunBroken: one error, the first.
        def bad_then_broken(self: Scripted, op: int, operation: sdk.Operation) -> None:
            try:
                self.effect("append", entry=ENTRY, extra=1)
            except sdk.ShapeError:
                pass
            raise sdk.RunBroken("fixture.break", "too late")

        output = drive(bad_then_broken, operation(1, "flush"))
        self.assertEqual(len(output), 1)
        self.assertEqual(json.loads(output[0])["code"], "adapter.malformed")

    def test_an_async_start_breaks_and_the_next_start_resets_it(self) -> None:
        class Starts(Scripted):
            runs = 0

            async def start(self, scenario: sdk.Scenario) -> sdk.Started:  # type: ignore[override]
                Starts.runs += 1
                await asyncio.sleep(0)
                if Starts.runs == 1:
                    raise sdk.RunBroken("fixture.hang", "first run")
                return sdk.Started(None, 0)

        output, code, _ = serve_in_process(Starts(None), [start(), start()])
        self.assertEqual(code, 0)
        self.assertEqual(output[1:], [broken("fixture.hang", "first run"), IDLE, STARTED, IDLE])


if __name__ == "__main__":
    unittest.main()
