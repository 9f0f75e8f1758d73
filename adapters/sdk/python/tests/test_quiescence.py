"""Quiescence, effect handles, settlement and the mapping's mistakes, in process (``run``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
import time
import unittest
from typing import Any, Callable, Dict, List, Optional

from harness import IDLE, append_ok, complete, dumps, model_chunk, model_final, operation, serve_in_process, start

import agentsim_adapter as sdk

REQUEST: Dict[str, Any] = {"systemPrompt": None, "messages": [], "tools": []}
ENTRY = {"type": "message", "id": "e", "parentId": None, "timestamp": "t", "message": {"role": "user", "content": "x", "timestamp": 0}}
STARTED = '{"type":"started","leaf":null,"messages":0}'


def effect_line(kind: str, effect_id: int, **fields: Any) -> str:
    return dumps({"type": "effect", "effect": {"kind": kind, "id": effect_id, **fields}})


def append_line(effect_id: int) -> str:
    return effect_line("append", effect_id, entry=ENTRY)


def unit(op: int) -> str:
    return dumps({"type": "settled", "op": op, "settlement": {"status": "resolved", "value": {"kind": "unit"}}})


class Scripted(sdk.Adapter):
    """``operation`` runs ``self.script(op, operation)``: each test supplies its own."""

    name = "scripted"
    version = "1"

    def __init__(self, script: Callable[["Scripted", int, sdk.Operation], Any], **attributes: Any) -> None:
        self.script = script
        self.log: List[str] = []
        for key, value in attributes.items():
            setattr(self, key, value)

    def start(self, scenario: sdk.Scenario) -> sdk.Started:
        return sdk.Started(None, 0)

    def operation(self, op: int, operation: sdk.Operation) -> Any:
        return self.script(self, op, operation)


def drive(adapter: sdk.Adapter, *lines: str) -> List[str]:
    output, code, _ = serve_in_process(adapter, [start(), *lines])
    assert code == 0
    assert output[1:3] == [STARTED, IDLE], output
    return output[3:]


class QuiescenceTest(unittest.TestCase):
    def test_tasks_chained_through_events_and_sleep0_run_before_idle(self) -> None:
        async def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            event = asyncio.Event()

            async def producer() -> None:
                for _ in range(50):
                    await asyncio.sleep(0)
                event.set()

            async def consumer() -> None:
                await event.wait()
                await asyncio.sleep(0)
                await self.effect("append", entry=ENTRY)

            asyncio.ensure_future(producer())
            await asyncio.ensure_future(consumer())
            return sdk.UNIT

        self.assertEqual(drive(Scripted(script), operation(1, "flush"), append_ok(1)), [append_line(1), IDLE, unit(1), IDLE])

    def test_a_timer_within_the_horizon_is_waited_for(self) -> None:
        async def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            await asyncio.sleep(0.05)
            await self.effect("append", entry=ENTRY)
            return sdk.UNIT

        self.assertEqual(drive(Scripted(script), operation(1, "flush"), append_ok(1)), [append_line(1), IDLE, unit(1), IDLE])

    def test_a_timer_beyond_the_horizon_counts_as_waiting(self) -> None:
        async def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            await asyncio.sleep(30)
            return sdk.UNIT

        began = time.monotonic()
        output, code, stderr = serve_in_process(Scripted(script, timer_horizon=0.05), [start(), operation(1, "flush")])
        self.assertLess(time.monotonic() - began, 5)
        self.assertEqual(output[3:], [IDLE])
        self.assertIn("timers due later than the timer horizon", stderr)

    def test_the_horizon_bounds_a_periodic_timer(self) -> None:
        async def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            async def heartbeat() -> None:
                while True:
                    await asyncio.sleep(0.01)

            asyncio.ensure_future(heartbeat())
            return None

        began = time.monotonic()
        output, _, _ = serve_in_process(Scripted(script, timer_horizon=0.1), [start(), operation(1, "flush")])
        self.assertLess(time.monotonic() - began, 5)
        self.assertEqual(output[3:], [IDLE])

    def test_executor_jobs_are_runnable_work(self) -> None:
        async def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, time.sleep, 0.05)
            await asyncio.to_thread(time.sleep, 0.05)  # type: ignore[attr-defined]
            await self.effect("append", entry=ENTRY)
            return sdk.UNIT

        self.assertEqual(drive(Scripted(script), operation(1, "flush"), append_ok(1)), [append_line(1), IDLE, unit(1), IDLE])

    def test_tracked_thread_work_is_runnable_work(self) -> None:
        pool = concurrent.futures.ThreadPoolExecutor(1)
        self.addCleanup(pool.shutdown)

        async def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            await self.track(pool.submit(time.sleep, 0.05))
            await self.effect("append", entry=ENTRY)
            return sdk.UNIT

        self.assertEqual(drive(Scripted(script), operation(1, "flush"), append_ok(1)), [append_line(1), IDLE, unit(1), IDLE])

    def test_call_soon_threadsafe_from_a_tracked_thread(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            loop = asyncio.get_running_loop()
            done: "concurrent.futures.Future[None]" = concurrent.futures.Future()

            def worker() -> None:
                time.sleep(0.05)
                loop.call_soon_threadsafe(self.resolve, op, sdk.UNIT)
                done.set_result(None)

            threading.Thread(target=worker).start()
            self.track(done)
            return None

        self.assertEqual(drive(Scripted(script), operation(1, "flush")), [unit(1), IDLE])


class EffectTest(unittest.TestCase):
    def test_callback_style(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            effect = self.effect("append", entry=ENTRY)
            effect.add_done_callback(lambda done: self.resolve(op, sdk.UNIT) if done.result()["outcome"]["kind"] == "ok" else None)
            return None

        self.assertEqual(drive(Scripted(script), operation(1, "flush"), append_ok(1)), [append_line(1), IDLE, unit(1), IDLE])

    def test_stream_and_on_chunk(self) -> None:
        seen: List[str] = []

        async def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            effect = self.effect("model_request", signal=self.new_signal(), request=REQUEST)
            effect.on_chunk(lambda text: seen.append("cb:" + text))
            async for text in effect.stream():
                seen.append(text)
            final = await effect
            return sdk.library_result("stop", "".join(effect.chunks) + "|" + final["message"]["content"][0]["text"])

        output = drive(Scripted(script), operation(1, "library", text="x"), model_chunk(1, "a"), model_chunk(1, "b"), model_final(1, "ab"))
        request = effect_line("model_request", 1, signal=1, request=REQUEST)
        settled = dumps({"type": "settled", "op": 1, "settlement": {"status": "resolved", "value": {"kind": "library", "reason": "stop", "text": "ab|ab"}}})
        self.assertEqual(output, [request, IDLE, IDLE, IDLE, settled, IDLE])
        self.assertEqual(seen, ["cb:a", "a", "cb:b", "b"])

    def test_effects_settlements_and_signals_keep_their_order(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            signal = self.new_signal()
            self.effect("model_request", signal=signal, request=REQUEST)
            self.abort_signal(signal)
            self.resolve(op)
            self.effect("write", text="w")
            return None

        output = drive(Scripted(script), operation(1, "abort"))
        self.assertEqual(
            output,
            [
                effect_line("model_request", 1, signal=1, request=REQUEST),
                '{"type":"abort_signal","signal":1}',
                unit(1),
                effect_line("write", 2, text="w"),
                IDLE,
            ],
        )

    def test_notify_needs_protocol_2(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            self.effect("notify", observer="audit", event={"type": "agent_end", "messages": []})
            return None

        ok = drive(Scripted(script), operation(1, "flush"), complete(1, {"kind": "notify", "outcome": {"kind": "threw", "message": "m"}}))
        self.assertEqual(ok, [effect_line("notify", 1, observer="audit", event={"type": "agent_end", "messages": []}), IDLE, IDLE])
        refused = drive(Scripted(script, protocol=1), operation(1, "flush"))
        self.assertEqual(json.loads(refused[0])["code"], "adapter.exception")
        self.assertIn("needs protocol 2", json.loads(refused[0])["message"])

    def test_hook_result_defaults_to_null(self) -> None:
        call = {"id": "c", "name": "n", "arguments": {}}

        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            self.effect("hook", extension="x", phase="before", call=call)
            return None

        self.assertEqual(
            drive(Scripted(script), operation(1, "flush")),
            [effect_line("hook", 1, extension="x", phase="before", call=call, result=None), IDLE],
        )


class SettlementOrderTest(unittest.TestCase):
    """An async operation settles in the step it returns, so a natural asyncio queue (a lock
    released when the first prompt's work ends) wakes the next prompt only after the first one's
    `settled` is written: a prompt settles before the next queued run starts."""

    def test_a_lock_queue_settles_before_the_next_run_starts(self) -> None:
        locks: List[asyncio.Lock] = []

        async def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            if not locks:
                locks.append(asyncio.Lock())
            async with locks[0]:
                await self.effect("append", entry=ENTRY)
            return sdk.UNIT

        output = drive(Scripted(script), operation(1, "flush"), operation(2, "flush"), append_ok(1))
        self.assertEqual(output, [append_line(1), IDLE, IDLE, unit(1), append_line(2), IDLE])

    def test_a_future_released_in_finally_settles_before_the_next_run_starts(self) -> None:
        tail: List[Optional["asyncio.Future[None]"]] = [None]

        async def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            previous, done = tail[0], asyncio.get_running_loop().create_future()
            tail[0] = done
            try:
                if previous is not None:
                    await previous
                await self.effect("append", entry=ENTRY)
                return sdk.UNIT
            finally:
                done.set_result(None)

        output = drive(Scripted(script), operation(1, "flush"), operation(2, "flush"), append_ok(1))
        self.assertEqual(output, [append_line(1), IDLE, IDLE, unit(1), append_line(2), IDLE])


class MistakeTest(unittest.TestCase):
    """The mapping's mistakes end the turn with an `error` line (never a malformed line)."""

    def assert_error(self, script: Callable[..., Any], code: str, fragment: str, *lines: str) -> str:
        output = drive(Scripted(script), operation(1, "flush"), *lines)
        last = json.loads(output[-1])
        self.assertEqual(last["type"], "error", output)
        self.assertEqual(last["code"], code)
        self.assertIn(fragment, last["message"])
        return output[-1]

    def test_an_exception_in_an_operation(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            raise ValueError("boom")

        self.assert_error(script, "adapter.exception", "ValueError: boom")

    def test_an_exception_in_an_async_operation(self) -> None:
        async def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            await asyncio.sleep(0)
            raise KeyError("k")

        self.assert_error(script, "adapter.exception", "KeyError")

    def test_an_exception_in_a_callback(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            asyncio.get_running_loop().call_soon(lambda: 1 / 0)
            return None

        self.assert_error(script, "adapter.exception", "ZeroDivisionError")

    def test_an_unknown_effect_kind(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            self.effect("teleport", to="moon")

        self.assert_error(script, "adapter.exception", "unknown effect kind 'teleport'")

    def test_wrong_effect_fields(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            self.effect("append", entry=ENTRY, extra=1)

        self.assert_error(
            script, "adapter.malformed", "bad effect append fx#1, not written: `effect.extra`: expected no such field (fields: kind, id, entry)"
        )

        def script2(self: Scripted, op: int, operation: sdk.Operation) -> None:
            self.effect("model_request", signal=-1, request=REQUEST)

        self.assert_error(script2, "adapter.malformed", "`effect.signal`: expected an integer from 0 to 4294967295, got -1")

    def test_settling_twice(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            self.resolve(op)
            return sdk.UNIT

        output = drive(Scripted(script), operation(1, "flush"))
        self.assertEqual(output[0], unit(1))
        self.assertIn("already settled", json.loads(output[1])["message"])

    def test_a_bad_value(self) -> None:
        def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            return {"kind": "run", "reason": "done", "steps": 1, "messages": []}

        self.assert_error(
            script,
            "adapter.malformed",
            'bad settlement of op#1, not written: `settlement.value.reason`: expected one of "stop", "length", "error", "aborted", "max_steps", got "done"',
        )

    def test_rejected(self) -> None:
        async def script(self: Scripted, op: int, operation: sdk.Operation) -> None:
            raise sdk.Rejected("runtime.disposed", "gone")

        rejected = dumps({"type": "settled", "op": 1, "settlement": {"status": "rejected", "cause": {"code": "runtime.disposed", "message": "gone"}}})
        self.assertEqual(drive(Scripted(script), operation(1, "flush")), [rejected, IDLE])

    def test_start_without_an_answer(self) -> None:
        class Silent(Scripted):
            def start(self, scenario: sdk.Scenario) -> None:  # type: ignore[override]
                return None

        output, code, _ = serve_in_process(Silent(lambda *a: None), [start()])
        self.assertEqual(code, 0)
        self.assertEqual(json.loads(output[1])["code"], "adapter.no_start_result")

    def test_async_start(self) -> None:
        class Async(Scripted):
            async def start(self, scenario: sdk.Scenario) -> sdk.Started:  # type: ignore[override]
                await asyncio.sleep(0)
                self.ids.next()  # the rules are available while starting
                return sdk.Started("leaf", 3)

        output, _, _ = serve_in_process(Async(lambda *a: None), [start()])
        self.assertEqual(output[1:], ['{"type":"started","leaf":"leaf","messages":3}', IDLE])

    def test_hello_fails(self) -> None:
        class Broken(Scripted):
            def hello(self) -> sdk.Hello:
                raise RuntimeError("no hello")

        output, code, stderr = serve_in_process(Broken(lambda *a: None), [])
        self.assertEqual((output, code), ([], 1))
        self.assertIn("no hello", stderr)


class RulesTest(unittest.TestCase):
    def test_ids_and_clock(self) -> None:
        ids = sdk.IdRule("entry-", 7)
        self.assertEqual([ids.next(), ids(), ids.next()], ["entry-7", "entry-8", "entry-9"])
        clock = sdk.ClockRule(1767225600000, 1000)
        self.assertEqual([clock.now(), clock(), clock.now_iso()], [1767225600000, 1767225601000, "2026-01-01T00:00:02.000Z"])
        self.assertEqual(sdk.iso_timestamp(1767225601234), "2026-01-01T00:00:01.234Z")
        self.assertEqual(sdk.iso_timestamp(0), "1970-01-01T00:00:00.000Z")

    def test_rules_restart_per_run(self) -> None:
        readings: List[Any] = []

        def script(self: Scripted, op: int, operation: sdk.Operation) -> sdk.Value:
            readings.append((self.ids.next(), self.clock.now(), self.new_signal()))
            return sdk.UNIT

        serve_in_process(
            Scripted(script),
            [start(), operation(1, "flush"), operation(2, "flush"), '{"type":"reset"}', start(), operation(1, "flush")],
        )
        self.assertEqual(
            readings,
            [("entry-1", 1767225600000, 1), ("entry-2", 1767225601000, 2), ("entry-1", 1767225600000, 1)],
        )


class ParseTest(unittest.TestCase):
    def code(self, line: str) -> str:
        with self.assertRaises(sdk.InputError) as caught:
            sdk.parse_kit_line(line)
        return caught.exception.code

    def test_every_documented_kit_line_parses(self) -> None:
        for line in [
            start(),
            operation(1, "prompt", text="检查 parser"),
            operation(2, "mode", mode="json", text="t"),
            operation(3, "followUp", text="t"),
            complete(3, {"kind": "model_final", "message": {"role": "assistant", "content": []}}),
            complete(4, {"kind": "tool", "outcome": {"kind": "ok", "content": [{"type": "text", "text": "ok"}], "details": None, "isError": False}}),
            complete(4, {"kind": "tool", "outcome": {"kind": "threw", "message": "m"}}),
            complete(5, {"kind": "hook", "answer": {"kind": "rewrite_arguments", "arguments": {"a": 1}}}),
            complete(5, {"kind": "hook", "answer": {"kind": "rewrite_result", "content": [], "isError": True}}),
            complete(6, {"kind": "write", "outcome": {"kind": "failed", "cause": {"code": "c", "message": "m"}}}),
            complete(7, {"kind": "notify", "outcome": {"kind": "ok"}}),
            '{"type":"reset"}',
            '{"type":"shutdown"}',
        ]:
            sdk.parse_kit_line(line)

    def test_observers_and_faults(self) -> None:
        from harness import scenario

        value = scenario(
            observers=[{"name": "audit", "events": ["message_end", "turn_end", "agent_end"]}],
            faults={
                "appends": [
                    {"at": 2, "fault": "reject", "error": {"code": "diskError", "message": "disk full"}},
                    {"at": 3, "fault": "late", "until": {"settled": 2}},
                ],
                "writes": [{"at": 1, "error": {"code": "EPIPE", "message": "closed"}}],
            },
        )
        sdk.parse_kit_line(start(value))
        with self.assertRaises(sdk.InputError):
            sdk.parse_kit_line(start(value), protocol=1)
        value["observers"][0]["extra"] = 1
        self.assertEqual(self.code(start(value)), "input.malformed")

    def test_bad_lines(self) -> None:
        self.assertEqual(self.code("NaN"), "input.garbage")
        self.assertEqual(self.code('{"type":"reset","x":NaN}'), "input.garbage")
        self.assertEqual(self.code('{"type":7}'), "input.unknown_type")
        self.assertEqual(self.code(complete(1, {"kind": "model_final", "message": {"role": "user"}})), "input.malformed")
        self.assertEqual(self.code(complete(1, {"kind": "tool", "outcome": {"kind": "ok", "content": [], "isError": 1}})), "input.malformed")
        self.assertEqual(self.code('{"type":"operation","op":true,"operation":{"op":"flush"}}'), "input.malformed")
        self.assertEqual(self.code('{"type":"operation","op":4294967296,"operation":{"op":"flush"}}'), "input.malformed")


if __name__ == "__main__":
    unittest.main()
