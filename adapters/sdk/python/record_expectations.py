#!/usr/bin/env python3
"""Turn an ``agentsim run --impl CMD --format json`` report into an expectations file
(``expectations/<impl>.json``, the format of ``--expect``): one deviation per rule, listing the
scenarios that fail it, with the first divergent trace line and a reason to be written by you.

    agentsim run --impl "python3 my_adapter.py" scenarios/ --format json > report.json
    python3 adapters/sdk/python/record_expectations.py my-runtime-1.0 report.json > expectations/my-runtime-1.0.json

Every deviation gets the reason ``TODO: ...`` (the kit requires a non-empty one): replace each
with why your runtime behaves so before committing the file. A broken case becomes
``broken:<verdict code>``. Standard library only; works for any adapter, in any language."""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional, TextIO


def record(implementation: str, report: Dict[str, Any]) -> Dict[str, Any]:
    by_rule: Dict[str, List[str]] = {}
    divergence: Dict[str, Optional[str]] = {}
    for case in report["results"]:
        name = case["name"]
        rules: List[str] = []
        if case["status"] == "broken":
            rules.append(f"broken:{case.get('code', 'subject.malformed')}")
        elif case["status"] == "failed":
            for violation in case.get("violations", []):
                if violation["rule"] not in rules:
                    rules.append(violation["rule"])
        for rule in rules:
            by_rule.setdefault(rule, [])
            if name not in by_rule[rule]:
                by_rule[rule].append(name)
            if rule not in divergence:
                first = case.get("firstDivergence")
                divergence[rule] = first.get("implementation") if isinstance(first, dict) else None
    deviations = []
    for rule in sorted(by_rule, key=_rule_order):
        deviation: Dict[str, Any] = {
            "rule": rule,
            "scenarios": sorted(by_rule[rule]),
            "reason": f"TODO: why {implementation} fails {rule} here",
        }
        if divergence.get(rule):
            deviation["firstDivergence"] = divergence[rule]
        deviations.append(deviation)
    return {"implementation": implementation, "deviations": deviations}


def _rule_order(rule: str) -> Any:
    family, _, number = rule.partition("-")
    return (rule.startswith("broken:"), family, int(number) if number.isdigit() else 0, rule)


def main(argv: List[str], stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
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
