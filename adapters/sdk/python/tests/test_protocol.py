"""The template adapter as a subprocess, driven by scripted kit lines: exact output lines."""

from __future__ import annotations

import json
import unittest
from typing import Any, Dict, List

from harness import (
    IDLE,
    AdapterProcess,
    append_failed,
    append_ok,
    assistant,
    complete,
    dumps,
    model_chunk,
    model_final,
    operation,
    scenario,
    start,
)

HELLO = (
    '{"type":"hello","protocol":2,"implementation":{"name":"toy-runtime","version":"0.1.0"},'
    '"features":["chunks"],"unsupported":{"steer":"the toy runtime has no steering queue",'
    '"followUp":"the toy runtime has no follow-up queue","abort":"the toy runtime cannot abort a run",'
    '"mode":"the toy runtime has no output modes","library":"the toy runtime has no library adapter",'
    '"observers":"the toy runtime has no extension event observers"}}'
)

STARTED_EMPTY = '{"type":"started","leaf":null,"messages":0}'
USER_HI = {"role": "user", "content": "hi", "timestamp": 1767225600000}


def model_request(effect_id: int, signal: int, messages: List[Dict[str, Any]]) -> str:
    request = {"systemPrompt": "SYS", "messages": messages, "tools": []}
    return dumps({"type": "effect", "effect": {"kind": "model_request", "id": effect_id, "signal": signal, "request": request}})


def append(effect_id: int, entry_id: str, parent: Any, timestamp: str, message: Dict[str, Any]) -> str:
    entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": timestamp, "message": message}
    return dumps({"type": "effect", "effect": {"kind": "append", "id": effect_id, "entry": entry}})


def error(code: str, message: str) -> str:
    return dumps({"type": "error", "code": code, "message": message})


def settled_run(op: int, messages: List[Dict[str, Any]]) -> str:
    value = {"kind": "run", "reason": "stop", "steps": 1, "messages": messages}
    return dumps({"type": "settled", "op": op, "settlement": {"status": "resolved", "value": value}})


def settled_unit(op: int) -> str:
    return dumps({"type": "settled", "op": op, "settlement": {"status": "resolved", "value": {"kind": "unit"}}})


def settled_rejected(op: int, code: str, message: str) -> str:
    return dumps({"type": "settled", "op": op, "settlement": {"status": "rejected", "cause": {"code": code, "message": message}}})


class TemplateCase(unittest.TestCase):
    env: Dict[str, str] = {}

    def setUp(self) -> None:
        self.adapter = AdapterProcess(env=self.env)
        self.addCleanup(self.adapter.kill)

    def hello(self) -> str:
        line = self.adapter.read_line()
        self.adapter.assert_silent()
        return line

    def started(self) -> None:
        self.assertEqual(self.hello(), HELLO)
        self.assertEqual(self.adapter.turn(start()), [STARTED_EMPTY, IDLE])

    def first_prompt(self) -> None:
        """prompt "hi" up to its first append, with exact lines."""
        self.assertEqual(self.adapter.turn(operation(1, "prompt", text="hi")), [model_request(1, 1, [USER_HI]), IDLE])
        self.assertEqual(
            self.adapter.turn(model_final(1)),
            [append(2, "entry-1", None, "2026-01-01T00:00:01.000Z", USER_HI), IDLE],
        )


class HandshakeTest(TemplateCase):
    def test_hello_then_silence_until_the_kit_writes(self) -> None:
        self.assertEqual(self.hello(), HELLO)
        self.adapter.assert_silent(0.3)

    def test_idle_after_start(self) -> None:
        self.started()
        self.adapter.assert_silent(0.3)

    def test_shutdown_exits_0(self) -> None:
        self.started()
        self.adapter.send('{"type":"shutdown"}')
        self.assertEqual(self.adapter.wait(), 0)
        self.assertEqual(self.adapter.proc.stdout.read(), b"")  # type: ignore[union-attr]

    def test_end_of_input_exits_0(self) -> None:
        self.started()
        self.first_prompt()  # an effect is pending: the end of input still exits 0
        self.adapter.close_stdin()
        self.assertEqual(self.adapter.wait(), 0)
        self.assertEqual(self.adapter.proc.stdout.read(), b"")  # type: ignore[union-attr]

    def test_end_of_input_before_start_exits_0(self) -> None:
        self.hello()
        self.adapter.close_stdin()
        self.assertEqual(self.adapter.wait(), 0)


class ProtocolOneTest(TemplateCase):
    env = {"AGENTSIM_PROTOCOL": "1"}

    def test_hello_states_protocol_1(self) -> None:
        self.assertEqual(self.hello(), HELLO.replace('"protocol":2', '"protocol":1'))

    def test_version_2_messages_are_unknown(self) -> None:
        self.hello()
        self.assertEqual(self.adapter.turn('{"type":"reset"}'), [error("input.unknown_type", 'unknown message type "reset" (protocol 1)')])
        observed = start(scenario(observers=[{"name": "audit", "events": ["agent_end"]}]))
        self.assertEqual(self.adapter.turn(observed), [error("input.malformed", "`start.scenario.observers`: unknown field")])
        self.assertEqual(self.adapter.turn(start()), [STARTED_EMPTY, IDLE])
        self.assertEqual(self.adapter.turn(operation(1, "prompt", text="hi")), [model_request(1, 1, [USER_HI]), IDLE])
        notify = complete(1, {"kind": "notify", "outcome": {"kind": "ok"}})
        self.assertEqual(
            self.adapter.turn(notify),
            [error("input.malformed", "`complete.completion.kind`: \"notify\" is not one of model_chunk, model_final, tool, hook, append, write")],
        )


class RunTest(TemplateCase):
    def test_a_queued_prompt_starts_only_after_the_prompt_before_it_has_settled(self) -> None:
        self.started()
        self.first_prompt()
        self.assertEqual(self.adapter.turn(operation(2, "prompt", text="two")), [IDLE])
        self.assertIn('"kind":"append","id":3,', self.adapter.turn(append_ok(2))[0])
        settled, request, idle = self.adapter.turn(append_ok(3))
        self.assertTrue(settled.startswith('{"type":"settled","op":1,'), settled)
        self.assertIn('"kind":"model_request","id":4,', request)
        self.assertEqual(idle, IDLE)

    def test_a_prompt_appends_one_entry_at_a_time_and_resolves_after_the_last(self) -> None:
        self.started()
        self.first_prompt()
        reply = assistant("ok")
        self.assertEqual(
            self.adapter.turn(append_ok(2)),
            [append(3, "entry-2", "entry-1", "2026-01-01T00:00:02.000Z", reply), IDLE],
        )
        self.assertEqual(self.adapter.turn(append_ok(3)), [settled_run(1, [USER_HI, reply]), IDLE])
        self.assertEqual(self.adapter.turn(operation(2, "flush")), [settled_unit(2), IDLE])
        self.assertEqual(self.adapter.turn(operation(3, "dispose")), [settled_unit(3), IDLE])
        self.assertEqual(
            self.adapter.turn(operation(4, "prompt", text="again")),
            [settled_rejected(4, "runtime.disposed", "the runtime is disposed"), IDLE],
        )

    def test_chunks_keep_the_request_pending(self) -> None:
        self.started()
        self.assertEqual(self.adapter.turn(operation(1, "prompt", text="hi")), [model_request(1, 1, [USER_HI]), IDLE])
        self.assertEqual(self.adapter.turn(model_chunk(1, "o")), [IDLE])
        self.assertEqual(self.adapter.turn(model_chunk(1, "k")), [IDLE])
        self.assertEqual(
            self.adapter.turn(model_final(1)),
            [append(2, "entry-1", None, "2026-01-01T00:00:01.000Z", USER_HI), IDLE],
        )

    def test_a_failed_append_poisons(self) -> None:
        self.started()
        self.first_prompt()
        # A second prompt queues behind the first: nothing happens yet.
        self.assertEqual(self.adapter.turn(operation(2, "prompt", text="queued")), [IDLE])
        self.assertEqual(
            self.adapter.turn(append_failed(2)),
            [settled_rejected(1, "diskError", "disk full"), settled_rejected(2, "diskError", "disk full"), IDLE],
        )
        self.assertEqual(self.adapter.turn(operation(3, "flush")), [settled_rejected(3, "diskError", "disk full"), IDLE])

    def test_restore_failed(self) -> None:
        self.hello()
        session = [
            {
                "type": "message",
                "id": "a",
                "parentId": None,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": "x", "timestamp": 1},
            }
        ]
        line = start(scenario(session=session))
        self.assertEqual(
            self.adapter.turn(line),
            ['{"type":"restore_failed","cause":{"code":"restore.leaf_required","message":"the session is not empty: choose a leaf"}}', IDLE],
        )
        self.assertEqual(
            self.adapter.turn(operation(1, "prompt", text="hi")),
            [error("input.out_of_turn", "`operation` after `restore_failed`")],
        )


class ResetTest(TemplateCase):
    def test_effect_ids_and_rules_restart_after_reset(self) -> None:
        self.started()
        self.first_prompt()
        self.assertEqual(self.adapter.turn('{"type":"reset"}'), [IDLE])
        self.assertEqual(self.adapter.turn(start()), [STARTED_EMPTY, IDLE])
        self.first_prompt()  # the same bytes: effect 1, signal 1, entry-1, the clock's first readings

    def test_a_completion_of_the_previous_run_is_unknown_after_reset(self) -> None:
        self.started()
        self.first_prompt()
        self.assertEqual(self.adapter.turn('{"type":"reset"}'), [IDLE])
        self.assertEqual(self.adapter.turn(start()), [STARTED_EMPTY, IDLE])
        self.assertEqual(self.adapter.turn(append_ok(2)), [error("input.unknown_effect", "fx#2 is not a pending effect")])

    def test_start_without_reset_acts_as_reset(self) -> None:
        self.started()
        self.first_prompt()
        self.assertEqual(self.adapter.turn(start()), [STARTED_EMPTY, IDLE])
        self.first_prompt()

    def test_reset_without_a_run(self) -> None:
        self.hello()
        self.assertEqual(self.adapter.turn('{"type":"reset"}'), [IDLE])
        self.assertEqual(self.adapter.turn(start()), [STARTED_EMPTY, IDLE])


class ErrorTest(TemplateCase):
    def test_unknown_type(self) -> None:
        self.started()
        self.assertEqual(self.adapter.turn('{"type":"telemetry"}'), [error("input.unknown_type", 'unknown message type "telemetry" (protocol 2)')])
        self.assertEqual(self.adapter.turn('{"kind":"idle"}'), [error("input.unknown_type", "unknown message type null (protocol 2)")])

    def test_unknown_field(self) -> None:
        self.started()
        self.assertEqual(
            self.adapter.turn('{"type":"reset","extra":1}'),
            [error("input.malformed", "`reset.extra`: unknown field")],
        )
        self.assertEqual(
            self.adapter.turn('{"type":"operation","op":1,"operation":{"op":"flush","extra":true}}'),
            [error("input.malformed", "`operation.operation.extra`: unknown field")],
        )

    def test_missing_and_mistyped_fields(self) -> None:
        self.started()
        self.assertEqual(
            self.adapter.turn('{"type":"operation","op":1,"operation":{"op":"prompt"}}'),
            [error("input.malformed", "`operation.operation.text`: missing field")],
        )
        self.assertEqual(
            self.adapter.turn('{"type":"operation","op":"1","operation":{"op":"flush"}}'),
            [error("input.malformed", "`operation.op`: expected an integer, got a string")],
        )
        self.assertEqual(
            self.adapter.turn('{"type":"operation","op":1,"operation":{"op":"teleport"}}'),
            [
                error(
                    "input.malformed",
                    '`operation.operation.op`: "teleport" is not one of prompt, flush, dispose, steer, followUp, abort, mode, library',
                )
            ],
        )
        bad_start = start(scenario(ids={"prefix": "e-", "start": -1}))
        self.assertEqual(
            self.adapter.turn(bad_start),
            [error("input.malformed", "`start.scenario.ids.start`: -1 is out of range 0..=18446744073709551615")],
        )

    def test_garbage(self) -> None:
        self.started()
        self.assertEqual(json.loads(self.adapter.turn("this is not json")[0])["code"], "input.garbage")
        self.assertEqual(self.adapter.turn("[1,2]"), [error("input.garbage", "not a JSON object: \"[1,2]\"")])
        self.assertEqual(json.loads(self.adapter.turn(b'{"type":"\xff"}')[0])["code"], "input.garbage")
        self.assertEqual(
            self.adapter.turn('{"type":"reset","type":"reset"}'),
            [error("input.malformed", 'duplicate key "type"')],
        )

    def test_unknown_effect_id(self) -> None:
        self.started()
        self.assertEqual(self.adapter.turn(append_ok(9)), [error("input.unknown_effect", "fx#9 is not a pending effect")])
        self.first_prompt()
        self.assertEqual(self.adapter.turn(model_final(1)), [error("input.unknown_effect", "fx#1 is not a pending effect")])

    def test_wrong_completion_kind(self) -> None:
        self.started()
        self.assertEqual(self.adapter.turn(operation(1, "prompt", text="hi")), [model_request(1, 1, [USER_HI]), IDLE])
        self.assertEqual(
            self.adapter.turn(append_ok(1)),
            [error("input.wrong_completion", "fx#1 is a `model_request` effect; a completion of kind `append` cannot answer it")],
        )
        # The effect is still pending: its right answer works.
        self.assertEqual(
            self.adapter.turn(model_final(1)),
            [append(2, "entry-1", None, "2026-01-01T00:00:01.000Z", USER_HI), IDLE],
        )
        self.assertEqual(
            self.adapter.turn(complete(2, {"kind": "tool", "outcome": {"kind": "aborted"}})),
            [error("input.wrong_completion", "fx#2 is a `append` effect; a completion of kind `tool` cannot answer it")],
        )

    def test_out_of_turn_and_duplicates(self) -> None:
        self.hello()
        self.assertEqual(self.adapter.turn(operation(1, "flush")), [error("input.out_of_turn", "`operation` before `start`")])
        self.assertEqual(self.adapter.turn(start()), [STARTED_EMPTY, IDLE])
        self.assertEqual(self.adapter.turn(operation(1, "flush")), [settled_unit(1), IDLE])
        self.assertEqual(self.adapter.turn(operation(1, "flush")), [error("input.malformed", "operation 1 was already delivered")])

    def test_an_unsupported_operation(self) -> None:
        self.started()
        self.assertEqual(
            self.adapter.turn(operation(1, "steer", text="x")),
            [error("input.unsupported", "`steer` was declared unsupported: the toy runtime has no steering queue")],
        )

    def test_oversize_line(self) -> None:
        self.started()
        limit = 4 * 1024 * 1024
        self.assertEqual(
            self.adapter.turn(b"x" * (limit + 1)),
            [error("input.oversize", f"a line of {limit + 1} bytes; the limit is {limit}")],
        )
        # A line of exactly the limit is read.
        padded = b'{"type":"reset"}' + b" " * (limit - len(b'{"type":"reset"}'))
        self.assertEqual(len(padded), limit)
        self.assertEqual(self.adapter.turn(padded), [IDLE])
        self.adapter.send('{"type":"shutdown"}')
        self.assertEqual(self.adapter.wait(), 0)

    def test_the_adapter_goes_on_after_an_error(self) -> None:
        self.started()
        self.assertEqual(self.adapter.turn("{}")[0], error("input.unknown_type", "unknown message type null (protocol 2)"))
        self.first_prompt()


if __name__ == "__main__":
    unittest.main()
