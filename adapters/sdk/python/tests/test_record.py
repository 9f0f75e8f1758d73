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
            "rootCause": "PERSIST-7",
            "violations": [{"rule": "PERSIST-7"}, {"rule": "WIRE-1"}, {"rule": "PERSIST-7"}],
            "firstDivergence": {"line": 11, "reference": "r", "implementation": "0011 fx#7 append"},
        },
        {"name": "persist/c", "status": "failed", "rootCause": "AGENT-5", "violations": [{"rule": "AGENT-5"}, {"rule": "PERSIST-10"}]},
        {"name": "persist/d", "status": "failed", "rootCause": "PERSIST-7", "violations": [{"rule": "PERSIST-7"}]},
        {"name": "restore/d", "status": "broken", "violations": [], "code": "subject.timeout"},
        {"name": "modes/e", "status": "not-applicable", "violations": []},
    ]
}


class RecordTest(unittest.TestCase):
    def test_one_cause_per_root_cause_with_the_pairs_of_its_cases(self) -> None:
        recorded = record_expectations.record("toy-1", REPORT)
        self.assertEqual(recorded["implementation"], "toy-1")
        self.assertEqual(
            [(c["id"], c["pairs"]) for c in recorded["causes"]],
            [
                ("todo-agent-5", {"AGENT-5": ["persist/c"], "PERSIST-10": ["persist/c"]}),
                ("todo-persist-7", {"PERSIST-7": ["persist/d", "wiring/b"], "WIRE-1": ["wiring/b"]}),
                ("todo-broken-subject-timeout", {"broken:subject.timeout": ["restore/d"]}),
            ],
        )
        persist = recorded["causes"][1]
        self.assertEqual(persist["firstDivergence"], "0011 fx#7 append")
        self.assertTrue(all(c["reason"].startswith("TODO") and c["verdict"] == "bug" for c in recorded["causes"]))

    def test_main_reads_stdin(self) -> None:
        out = io.StringIO()
        self.assertEqual(record_expectations.main(["record", "toy-1"], io.StringIO(json.dumps(REPORT)), out), 0)
        self.assertEqual(json.loads(out.getvalue())["causes"][0]["id"], "todo-agent-5")


if __name__ == "__main__":
    unittest.main()
