"""record_expectations.py: a report becomes a valid expectations skeleton."""

from __future__ import annotations

import io
import json
import os
import sys
import unittest

from harness import SDK

sys.path.insert(0, SDK)

import record_expectations  # noqa: E402

REPORT = {
    "results": [
        {"name": "wiring/a", "status": "passed", "violations": []},
        {
            "name": "wiring/b",
            "status": "failed",
            "violations": [{"rule": "PERSIST-7"}, {"rule": "expect"}, {"rule": "PERSIST-7"}],
            "firstDivergence": {"line": 11, "reference": "r", "implementation": "0011 fx#7 append"},
        },
        {"name": "persist/c", "status": "failed", "violations": [{"rule": "PERSIST-10"}, {"rule": "AGENT-5"}]},
        {"name": "restore/d", "status": "broken", "violations": [], "code": "subject.timeout"},
        {"name": "modes/e", "status": "not-applicable", "violations": []},
    ]
}


class RecordTest(unittest.TestCase):
    def test_one_deviation_per_rule_with_its_scenarios(self) -> None:
        recorded = record_expectations.record("toy-1", REPORT)
        self.assertEqual(recorded["implementation"], "toy-1")
        self.assertEqual(
            [(d["rule"], d["scenarios"]) for d in recorded["deviations"]],
            [
                ("AGENT-5", ["persist/c"]),
                ("PERSIST-7", ["wiring/b"]),
                ("PERSIST-10", ["persist/c"]),
                ("expect", ["wiring/b"]),
                ("broken:subject.timeout", ["restore/d"]),
            ],
        )
        persist = recorded["deviations"][1]
        self.assertEqual(persist["firstDivergence"], "0011 fx#7 append")
        self.assertTrue(all(d["reason"].startswith("TODO") for d in recorded["deviations"]))

    def test_main_reads_stdin(self) -> None:
        out = io.StringIO()
        self.assertEqual(record_expectations.main(["record", "toy-1"], io.StringIO(json.dumps(REPORT)), out), 0)
        self.assertEqual(json.loads(out.getvalue())["deviations"][0]["rule"], "AGENT-5")


if __name__ == "__main__":
    unittest.main()
