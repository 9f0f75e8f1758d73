#!/usr/bin/env python3
"""Turn an ``agentsim run --impl CMD --format json`` report into an expectations file
(``expectations/<impl>.json``, the format of ``--expect``): one cause per root cause, listing the
(scenario, rule) pairs of the cases it leads (a case's later violations follow from its root, so
they go with it), with the first divergent trace line and a reason to be written by you.

    agentsim run --impl "python3 my_adapter.py" scenarios/ --format json > report.json
    python3 adapters/sdk/python/record_expectations.py my-runtime-1.0 report.json > expectations/my-runtime-1.0.json

Every cause gets the reason ``TODO: ...`` (the kit requires a non-empty one), the verdict
``bug`` (a broken MUST rule is a bug, never a choice; a cause whose pairs are all SHOULD rules
may become ``choice``) and a placeholder source (``TODO/...``): replace each reason with why your runtime behaves so, add
the ``source`` in its installed code, and split or merge causes by what really causes them before
committing the file. A broken case becomes the pair ``broken:<verdict code>``. Standard library
only; works for any adapter, in any language."""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional, TextIO


def record(implementation: str, report: Dict[str, Any]) -> Dict[str, Any]:
    causes: Dict[str, Dict[str, Any]] = {}
    for case in report["results"]:
        name = case["name"]
        if case["status"] == "broken":
            code = case.get("code", "subject.malformed")
            key, rules = f"broken-{code}", [f"broken:{code}"]
        elif case["status"] == "failed":
            rules = []
            for violation in case.get("violations", []):
                if violation["rule"] not in rules:
                    rules.append(violation["rule"])
            if not rules:
                continue
            key = case.get("rootCause") or rules[0]
        else:
            continue
        cause = causes.setdefault(key, {"pairs": {}, "firstDivergence": None})
        for rule in rules:
            scenarios = cause["pairs"].setdefault(rule, [])
            if name not in scenarios:
                scenarios.append(name)
        first = case.get("firstDivergence")
        if cause["firstDivergence"] is None and isinstance(first, dict):
            cause["firstDivergence"] = first.get("implementation")
    written = []
    for key in sorted(causes, key=_rule_order):
        cause = causes[key]
        entry: Dict[str, Any] = {
            "id": "todo-" + key.lower().replace(":", "-").replace(".", "-"),
            "verdict": "bug",
            "reason": f"TODO: why {implementation} fails here, first {key}",
            # The kit requires a source; this placeholder names none of your code yet.
            "source": {"file": "TODO/the/installed/file/of/your/runtime", "function": "TODO", "line": 1},
        }
        if cause["firstDivergence"]:
            entry["firstDivergence"] = cause["firstDivergence"]
        entry["pairs"] = {rule: sorted(cause["pairs"][rule]) for rule in sorted(cause["pairs"], key=_rule_order)}
        written.append(entry)
    return {"implementation": implementation, "causes": written}


def _rule_order(rule: str) -> Any:
    family, _, number = rule.partition("-")
    return (rule.startswith("broken"), family, int(number) if number.isdigit() else 0, rule)


def main(argv: Optional[List[str]] = None, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    # The console script `record_expectations` (pip install agentsim) calls main() bare.
    if argv is None:
        argv = sys.argv
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__ or "")
        return 2
    implementation = argv[1]
    if len(argv) == 3 and argv[2] != "-":
        with open(argv[2], encoding="utf-8") as file:
            report = json.load(file)
    else:
        report = json.load(stdin)
    json.dump(record(implementation, report), stdout, ensure_ascii=False, indent=2)
    stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
