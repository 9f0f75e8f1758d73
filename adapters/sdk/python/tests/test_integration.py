"""The template (and the synchronous fixture) under the real kit: no case may be `broken`.

Runs when the kit's binary exists: ``$AGENTSIM_BIN``, else ``target/release/agentsim`` of this
repository; skipped otherwise. Works with a kit that speaks protocol 1 only (its ``serve`` says
``"protocol":1``; then the adapter is told ``AGENTSIM_PROTOCOL=1``) and with one that speaks 2.
Flags the kit may not have yet (``--jobs``, ``run --check-determinism``) are used when its
``run --help`` lists them."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
import unittest
from typing import Any, Dict, List, Optional

from harness import REPO, SDK

if SDK not in sys.path:
    sys.path.insert(0, SDK)

BINARY = os.environ.get("AGENTSIM_BIN") or os.path.join(REPO, "target", "release", "agentsim")
TEMPLATE_COMMAND = "python3 adapters/sdk/python/template_adapter.py"
SYNC_COMMAND = "python3 adapters/sdk/python/tests/fixtures/sync_adapter.py"


def kit_protocol() -> int:
    """What the kit's own reference adapter says in `hello`: the newest version it speaks."""
    process = subprocess.Popen([BINARY, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 10)
        if not ready:
            raise AssertionError("`agentsim serve` wrote no hello within 10 s")
        hello = json.loads(process.stdout.readline())
        return int(hello["protocol"])
    finally:
        process.kill()
        process.communicate()


def run_help() -> str:
    return subprocess.run([BINARY, "run", "--help"], capture_output=True, text=True, timeout=30).stdout


@unittest.skipUnless(os.path.exists(BINARY), f"no agentsim binary at {BINARY} (set AGENTSIM_BIN)")
class KitTest(unittest.TestCase):
    protocol: int = 1
    help_text: str = ""

    @classmethod
    def setUpClass(cls) -> None:
        cls.protocol = kit_protocol()
        cls.help_text = run_help()

    def environment(self, protocol: Optional[int]) -> Dict[str, str]:
        env = dict(os.environ)
        env.pop("AGENTSIM_PROTOCOL", None)
        protocol = min(protocol or self.protocol, self.protocol)
        if protocol < 2:
            env["AGENTSIM_PROTOCOL"] = "1"
        return env

    def run_kit(
        self, command: str, paths: List[str], extra: Optional[List[str]] = None, protocol: Optional[int] = None
    ) -> Dict[str, Any]:
        argv = [BINARY, "run", "--impl", command, *paths, "--format", "json", *(extra or [])]
        began = time.monotonic()
        env = self.environment(protocol)
        result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        elapsed = time.monotonic() - began
        self.assertIn(
            result.returncode,
            (0, 1),
            f"{' '.join(argv)} exited {result.returncode} after {elapsed:.1f} s\nstdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-4000:]}",
        )
        report = json.loads(result.stdout)
        broken = [(case["name"], case.get("detail")) for case in report["results"] if case["status"] == "broken"]
        self.assertEqual(broken, [], f"{' '.join(argv)}: broken cases")
        self.assertGreater(len(report["results"]), 0)
        return report

    def test_template_on_the_wiring_scenarios(self) -> None:
        report = self.run_kit(TEMPLATE_COMMAND, ["scenarios/wiring"])
        statuses = {case["name"]: case["status"] for case in report["results"]}
        # The toy does no resources or tools, but a scenario without them passes.
        self.assertEqual(statuses.get("empty-catalog-no-resource-header"), "passed", statuses)

    def test_template_settles_each_prompt_before_the_next_queued_run_starts(self) -> None:
        scenarios = ["scenarios/persist/two-prompts-near-simultaneous.json", "scenarios/persist/three-prompts-arrival-order.json"]
        report = self.run_kit(TEMPLATE_COMMAND, scenarios)
        statuses = {case["name"]: case["status"] for case in report["results"]}
        self.assertEqual(statuses, {"two-prompts-near-simultaneous": "passed", "three-prompts-arrival-order": "passed"})

    def test_template_on_the_whole_corpus(self) -> None:
        report = self.run_kit(TEMPLATE_COMMAND, ["scenarios/"])
        self.assertGreater(report["notApplicable"], 0)  # steer, abort, mode ... are declared unsupported

    def test_template_speaking_protocol_1(self) -> None:
        # One process per scenario; the same report as with protocol 2.
        one = self.run_kit(TEMPLATE_COMMAND, ["scenarios/wiring", "scenarios/persist"], protocol=1)
        if self.protocol >= 2:
            two = self.run_kit(TEMPLATE_COMMAND, ["scenarios/wiring", "scenarios/persist"], protocol=2)
            self.assertEqual(one, two)

    def test_sync_fixture_on_the_whole_corpus(self) -> None:
        self.run_kit(SYNC_COMMAND, ["scenarios/"])

    def test_recorded_expectations_make_the_run_exit_0(self) -> None:
        import tempfile

        import record_expectations

        report = self.run_kit(TEMPLATE_COMMAND, ["scenarios/wiring", "scenarios/poison"])
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "toy.json")
            with open(path, "w", encoding="utf-8") as file:
                json.dump(record_expectations.record("toy-runtime-0.1.0", report), file)
            argv = [BINARY, "run", "--impl", TEMPLATE_COMMAND, "scenarios/wiring", "scenarios/poison", "--expect", path]
            result = subprocess.run(argv, cwd=REPO, env=self.environment(None), capture_output=True, text=True, timeout=900)
        self.assertEqual(result.returncode, 0, result.stdout[-3000:] + result.stderr[-3000:])
        self.assertIn("0 unexpected, 0 stale", result.stdout)

    def test_parallel_jobs(self) -> None:
        if "--jobs" not in self.help_text:
            self.skipTest("this kit's `run` has no --jobs yet")
        self.run_kit(TEMPLATE_COMMAND, ["scenarios/"], ["--jobs", "3"])

    def test_check_determinism(self) -> None:
        if "--check-determinism" not in self.help_text:
            self.skipTest("this kit's `run` has no --check-determinism yet")
        self.run_kit(TEMPLATE_COMMAND, ["scenarios/wiring", "scenarios/persist"], ["--check-determinism"])


if __name__ == "__main__":
    unittest.main()
