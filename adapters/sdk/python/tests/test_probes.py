"""The state probe (``probes = ("state",)``): every ``idle`` of a started run carries the
runtime's own leaf and persisted count from ``Adapter.state``; none after a refused restore or a
reset; an adapter that declares the probe without ``state`` never says hello."""

from __future__ import annotations

import json
import unittest

from harness import IDLE, AdapterProcess, append_ok, dumps, model_final, operation, scenario, start

import agentsim_adapter

PROBES = {"AGENTSIM_TEMPLATE_PROBES": "1"}


def idle_with(leaf, persisted) -> str:
    return dumps({"type": "idle", "state": {"leaf": leaf, "persisted": persisted}})


class StateProbeTest(unittest.TestCase):
    def adapter(self, env=PROBES) -> AdapterProcess:
        process = AdapterProcess(env=env)
        self.addCleanup(process.kill)
        return process

    def test_hello_declares_it(self) -> None:
        kit = self.adapter()
        self.assertEqual(json.loads(kit.read_line())["probes"], ["state"])

    def test_every_idle_of_a_run_carries_the_runtime_state(self) -> None:
        kit = self.adapter()
        kit.read_line()
        self.assertEqual(kit.turn(start())[-1], idle_with(None, 0))
        self.assertEqual(kit.turn(operation(1, "prompt", text="hi"))[-1], idle_with(None, 0))
        lines = kit.turn(model_final(1, "hello"))
        self.assertIn('"kind":"append"', lines[0])
        self.assertEqual(lines[-1], idle_with(None, 0), "the leaf waits for the store")
        self.assertEqual(kit.turn(append_ok(2))[-1], idle_with("entry-1", 1))
        self.assertEqual(kit.turn(append_ok(3))[-1], idle_with("entry-2", 2))
        self.assertEqual(kit.turn('{"type":"reset"}'), [IDLE], "no runtime after reset: no state")

    def test_a_refused_restore_has_no_state(self) -> None:
        kit = self.adapter()
        kit.read_line()
        lines = kit.turn(start(scenario(config={**scenario()["config"], "activeLeafId": "nowhere"})))
        self.assertEqual(lines[-1], IDLE)

    def test_without_the_probe_idle_carries_nothing(self) -> None:
        kit = self.adapter(env={})
        self.assertNotIn("probes", json.loads(kit.read_line()))
        self.assertEqual(kit.turn(start())[-1], IDLE)

    def test_declaring_the_probe_without_state_is_refused(self) -> None:
        class NoState(agentsim_adapter.Adapter):
            probes = ("state",)

        lines, code, stderr = __import__("harness").serve_in_process(NoState(), [])
        self.assertEqual(code, 1)
        self.assertEqual(lines, [])
        self.assertIn("does not implement state()", stderr)

    def test_the_shapes_know_the_probe(self) -> None:
        check = agentsim_adapter.check_adapter_message
        self.assertIsNone(check({"type": "idle", "state": {"leaf": None, "persisted": 0}}))
        self.assertIsNotNone(check({"type": "idle", "state": {"leaf": "a"}}))
        self.assertIsNotNone(check({"type": "hello", "protocol": 2, "implementation": {"name": "a", "version": "1"}, "probes": ["leaf"]}))


if __name__ == "__main__":
    unittest.main()
