"""The SDK checks every line it writes against the kit's shapes: the shared fixtures of
``tests/fixtures/protocol/lines.json`` (which the kit's and the JavaScript SDK's tests read too)
give the same code, path and expectation here as in the kit, and a mapping that asks for a bad
line ends its turn with ``adapter.malformed`` naming the field; the line is never written."""

from __future__ import annotations

import json
import os
import unittest
from typing import Any, Dict, List

from harness import IDLE, REPO, assistant, model_final, operation, serve_in_process, start

import agentsim_adapter as sdk

with open(os.path.join(REPO, "tests", "fixtures", "protocol", "lines.json"), encoding="utf-8") as fixtures:
    LINES: Dict[str, List[Dict[str, Any]]] = json.load(fixtures)

STARTED = '{"type":"started","leaf":null,"messages":0}'


class SharedFixturesTest(unittest.TestCase):
    def test_every_valid_line_fits(self) -> None:
        self.assertGreaterEqual(len(LINES["valid"]), 30)
        for entry in LINES["valid"]:
            self.assertIsNone(sdk.check_adapter_message(entry["line"]), entry["name"])

    def test_every_invalid_line_gives_the_kits_code_path_and_expectation(self) -> None:
        objects = [entry for entry in LINES["invalid"] if "line" in entry]
        self.assertGreaterEqual(len(objects), 60)
        for entry in objects:
            problem = sdk.check_adapter_message(entry["line"])
            self.assertIsNotNone(problem, entry["name"])
            assert problem is not None
            self.assertEqual(
                (problem.code, problem.path, problem.expected), (entry["code"], entry["path"], entry["expected"]), entry["name"]
            )

    def test_a_line_is_described_as_the_kit_describes_it(self) -> None:
        self.assertEqual(sdk.describe_message({"type": "effect", "effect": {"kind": "append", "id": 6}}), "effect append fx#6")
        self.assertEqual(sdk.describe_message({"type": "settled", "op": 1}), "settlement of op#1")
        self.assertEqual(sdk.describe_message({"type": "started"}), "`started`")


class Mistaken(sdk.Adapter):
    """A mapping with bugs in the shapes it writes, chosen by the prompt's text."""

    name = "mistaken"
    version = "1"

    def __init__(self) -> None:
        self.caught: List[str] = []

    def start(self, scenario: sdk.Scenario) -> sdk.Started:
        return sdk.Started(None, 0)

    async def operation(self, op: int, operation: sdk.Operation) -> sdk.Value:
        user = {"role": "user", "content": "hi", "timestamp": 0}
        text = operation["text"]
        if text == "assistant without role":
            final = await self.effect("model_request", signal=1, request={"systemPrompt": None, "messages": [user], "tools": []})
            message = {key: value for key, value in final["message"].items() if key != "role"}
            entry = {"type": "message", "id": "entry-1", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z", "message": message}
            try:
                await self.effect("append", entry=entry)
            except sdk.ShapeError as error:
                # A runtime that swallows the error does not hide it: the turn still ends in `error`.
                self.caught.append(error.problem.path)
            return sdk.UNIT
        if text == "tool result with string content":
            result = {"role": "toolResult", "toolCallId": "c", "toolName": "n", "content": "ok", "isError": False, "timestamp": 0}
            await self.effect("model_request", signal=1, request={"systemPrompt": None, "messages": [user, result], "tools": []})
            return sdk.UNIT
        return sdk.run_result("toolUse", 1, [])


def answer(adapter: sdk.Adapter, *lines: str) -> List[str]:
    output, code, _ = serve_in_process(adapter, [start(), *lines])
    assert code == 0
    assert output[1:3] == [STARTED, IDLE], output
    return output[3:]


class MistakeTest(unittest.TestCase):
    def assert_stopped(self, output: List[str], message: str) -> None:
        last = json.loads(output[-1])
        self.assertEqual((last["type"], last["code"], last["message"]), ("error", "adapter.malformed", message))
        # The bad line itself was never written.
        self.assertFalse(any('"type":"idle"' in line for line in output[-1:]))

    def test_an_assistant_message_without_role_in_an_append(self) -> None:
        adapter = Mistaken()
        output = answer(adapter, operation(1, "prompt", text="assistant without role"), model_final(1))
        self.assertIn('"kind":"model_request"', output[0])
        self.assertEqual(output[1], IDLE)
        self.assertEqual(len(output), 3, output)
        self.assert_stopped(
            output,
            'bad effect append fx#2, not written: `effect.entry.message.role`: expected one of "user", "assistant", '
            '"toolResult", got nothing (the field is missing)',
        )
        self.assertEqual(adapter.caught, ["effect.entry.message.role"])

    def test_a_tool_result_whose_content_is_a_string(self) -> None:
        output = answer(Mistaken(), operation(1, "prompt", text="tool result with string content"))
        self.assertEqual(len(output), 1, output)
        self.assert_stopped(
            output, 'bad effect model_request fx#1, not written: `effect.request.messages[1].content`: expected an array, got "ok"'
        )

    def test_a_run_result_with_a_reason_of_pi_ais(self) -> None:
        output = answer(Mistaken(), operation(1, "prompt", text="run result"))
        self.assertEqual(len(output), 1, output)
        self.assert_stopped(
            output,
            'bad settlement of op#1, not written: `settlement.value.reason`: expected one of "stop", "length", "error", '
            '"aborted", "max_steps", got "toolUse"',
        )

    def test_the_model_final_the_kit_sends_fits(self) -> None:
        # The harness's assistant message is the kit's shape: appending it as is is fine.
        self.assertIsNone(
            sdk.check_adapter_message(
                {"type": "effect", "effect": {"kind": "append", "id": 1, "entry": {"type": "message", "id": "e", "parentId": None, "timestamp": "t", "message": assistant("x")}}}
            )
        )


if __name__ == "__main__":
    unittest.main()
