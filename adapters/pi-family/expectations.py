#!/usr/bin/env python3
"""Write an implementation's expectations file (``expectations/<impl>.json``, the format of
``agentsim run --expect``) from a JSON report of a run and the implementation's causes file.

    agentsim run --impl CMD scenarios/ --format json > report.json
    python3 adapters/pi-family/expectations.py adapters/oh-my-pi/causes.json report.json \\
        --implementation oh-my-pi-18.2.3 --adapter adapters/oh-my-pi > expectations/oh-my-pi-18.2.3.json

The causes file is where the reasons live, so that the (rule, scenario) pairs can be
regenerated whenever the kit's verdicts change. It is a JSON list of causes, in order; each is

    {"id": "persist-at-message-end",
     "verdict": "choice",                      # or "bug"
     "reason": "why the implementation's trace differs",
     "source": {"file": "node_modules/pkg/src/session.ts", "function": "Session.persist",
                "anchor": "a text on the line that makes the trace differ",
                "occurrence": 1},                # optional: the n-th line with the anchor
     "match": [{"rule": "PERSIST-7"},          # every failing pair of the rule not claimed yet
               {"rule": "expect", "scenarios": ["wiring/walkthrough"]},
               {"rule": "POISON-2", "message": "a regular expression on a violation's message"},
               {"rule": "QUEUE-2", "scenarioPattern": "^poison/"}],
     "explored": {"PERSIST-6": ["wiring/walkthrough"]},   # optional: schedule-only pairs
     "unsteady": {"broken:subject.crashed": ["modes/x"]}} # optional: pairs whose outcome varies
                                                          # from run to run (written as explored)

A cause with ``"kitFault": "why"`` claims the pairs that are the kit's fault (a rule stricter than
the seed, a checker's wrong inference): they are never written as deviations, only listed on
stderr, so that a run with the file reports them as unexpected until the kit is fixed.

A failing (scenario, rule) pair of the report goes to the first cause with a matching entry
(within a cause, the first matching entry). The source's line is found in the installed file
(below ``--adapter``, with ``--prefix`` in front of the file for a release installed elsewhere):
the first line containing the anchor after the line that defines the function's last name part
(``persist`` of ``Session.persist``), so a moved line moves with its code and a changed one is
an error. The output has one entry per cause, in the causes file's order, with its label, reason
and source, the first divergence of its first pair, and its pairs by rule (``pairs``, and
``explored``), rules in the catalogue's order and scenarios sorted, so the same report gives the
same bytes:

    {"implementation": "pi-0.73.1",
     "causes": [{"id": "...", "verdict": "bug", "reason": "...", "source": {"file": ..., "function": ..., "line": 120},
                 "firstDivergence": "...", "pairs": {"PERSIST-6": ["wiring/walkthrough"]},
                 "explored": {"POISON-2": ["..."]}}]}

A pair the file cannot hold is left out and named on stderr: a pair no cause explains, a pair of
a MUST rule (conformance.md's levels) under a cause labelled ``choice`` (a broken MUST rule is a
bug: relabel the cause, or argue in conformance.md that the rule is SHOULD), an explored pair
another cause lists. Exit 1 when a pair was left out, an anchor is not found, or a cause matches
nothing; the output is written all the same. Standard library only."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple


def _rule_order(rule: str) -> Any:
    family, _, number = rule.partition("-")
    return (rule.startswith("broken:"), rule.startswith("model["), rule == "expect", family, int(number) if number.isdigit() else 0, rule)


def failing_pairs(report: Dict[str, Any]) -> Dict[Tuple[str, str], Dict[str, Any]]:
    """(scenario, rule) -> {"messages": [...], "case": case} for every failure of the report."""
    pairs: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for case in report["results"]:
        name = case["name"]
        if case["status"] == "broken":
            rule = f"broken:{case.get('code') or _broken_code(case)}"
            pairs[(name, rule)] = {"messages": [case.get("detail") or ""], "case": case}
        elif case["status"] == "failed":
            for violation in case.get("violations", []):
                entry = pairs.setdefault((name, violation["rule"]), {"messages": [], "case": case})
                entry["messages"].append(violation.get("message", ""))
    return pairs


def _broken_code(case: Dict[str, Any]) -> str:
    match = re.search(r"\((subject\.[a-z_]+)\)\s*$", case.get("detail") or "")
    return match.group(1) if match else "subject.malformed"


def _entry_matches(entry: Dict[str, Any], scenario: str, rule: str, messages: List[str]) -> bool:
    if entry["rule"] != rule:
        return False
    if "scenarios" in entry and scenario not in entry["scenarios"]:
        return False
    if "scenarioPattern" in entry and not re.search(entry["scenarioPattern"], scenario):
        return False
    if "message" in entry and not any(re.search(entry["message"], message) for message in messages):
        return False
    return True


def locate(source: Dict[str, Any], adapter: Path, prefix: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """The source reference with its line, or an error saying what was not found."""
    relative = f"{prefix}{source['file']}"
    path = adapter / relative
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        return None, f"{path}: {error.strerror or error}"
    name = re.escape(source["function"].split(".")[-1].lstrip("#"))
    # A function declaration, a method (`name(`, `async #name(`, `static name<T>(`) or an arrow
    # function assigned to a field or a constant.
    definition = re.compile(
        rf"\bfunction\*?\s+{name}\b"
        rf"|^\s*(?:export\s+)?(?:public\s+|private\s+|protected\s+)?(?:static\s+)?(?:async\s+)?(?:get\s+|set\s+)?#?{name}\s*(?:<[^>]*>)?\("
        rf"|(?:^|[\s.])#?{name}\s*=\s*(?:async\s*)?(?:\([^)]*\)|\w+)\s*(?::[^=]*)?=>"
        rf"|(?:const|let|var)\s+{name}\s*=\s*(?:async\s*)?\("
        rf"|\bclass\s+{name}\b"
    )
    start = next((index for index, line in enumerate(lines) if definition.search(line)), None)
    if start is None:
        return None, f"{relative}: no definition of `{source['function']}`"
    anchor = source["anchor"]
    wanted = source.get("occurrence", 1)
    for index in range(start, len(lines)):
        if anchor in lines[index]:
            wanted -= 1
            if wanted == 0:
                return {"file": relative, "function": source["function"], "line": index + 1}, None
    return None, f"{relative}: `{anchor}` (occurrence {source.get('occurrence', 1)}) not found after `{name}` (line {start + 1})"


def must_rules(conformance: Path) -> Set[str]:
    """The MUST rules, as conformance.md's `### ID` headings and their `- Level:` lines say (the
    kit's `tidy` test keeps them the catalogue's)."""
    rules: Set[str] = set()
    rule = None
    for line in conformance.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^### ([A-Z]+-\d+)\s*$", line)
        if heading:
            rule = heading.group(1)
        elif rule and line.startswith("- Level: "):
            if line[len("- Level: "):].startswith("MUST"):
                rules.add(rule)
            rule = None
    return rules


def build(causes: List[Dict[str, Any]], report: Dict[str, Any], implementation: str, adapter: Path, prefix: str,
          must: Set[str]) -> Tuple[Dict[str, Any], List[str], List[str]]:
    """The expectations file (one entry per cause, its pairs by rule), the problems (exit 1) and
    the notes. A pair the file cannot hold is left out and named: a pair no cause explains, a
    pair of a MUST rule under a cause labelled `choice` (a broken MUST rule is a bug), an explored
    pair another cause lists. A run with the file reports those UNEXPECTED."""
    problems: List[str] = []
    notes: List[str] = []
    pairs = failing_pairs(report)
    claimed: Dict[Tuple[str, str], int] = {}
    for key in sorted(pairs):
        scenario, rule = key
        for index, cause in enumerate(causes):
            if any(_entry_matches(entry, scenario, rule, pairs[key]["messages"]) for entry in cause["match"]):
                claimed[key] = index
                break
        else:
            first = pairs[key]["messages"][0] if pairs[key]["messages"] else ""
            problems.append(f"no cause for {rule} in {scenario}: {first[:200]}")
    # Every pair a cause lists, canonical first: a pair has one cause.
    listed: Dict[Tuple[str, str], str] = {
        key: causes[owner]["id"] for key, owner in claimed.items() if not causes[owner].get("kitFault")
    }
    entries = []
    for index, cause in enumerate(causes):
        by_rule: Dict[str, List[str]] = {}
        for (scenario, rule), owner in claimed.items():
            if owner == index:
                by_rule.setdefault(rule, []).append(scenario)
        explored = cause.get("explored", {})
        if not by_rule and not explored:
            problems.append(f"cause `{cause['id']}` matches no failing pair")
            continue
        if cause.get("kitFault"):
            # The kit's fault, not the implementation's: never an expected deviation (report it).
            for rule in sorted(by_rule, key=_rule_order):
                notes.append(f"kit's fault ({cause['id']}): {rule} in {len(by_rule[rule])} scenarios: {', '.join(sorted(by_rule[rule]))}")
            for rule in sorted(explored, key=_rule_order):
                notes.append(f"kit's fault ({cause['id']}), under exploration: {rule} in {', '.join(sorted(explored[rule]))}")
            continue
        source, error = locate(cause["source"], adapter, prefix)
        if error:
            problems.append(f"cause `{cause['id']}`: {error}")
        canonical: Dict[str, List[str]] = {}
        allowed: Dict[str, List[str]] = {}
        refused = False
        # Pairs whose outcome varies from run to run of the same schedule (a crash point that
        # moves): allowed, never required, whether they show or not.
        unsteady = cause.get("unsteady", {})
        explored = {rule: sorted(set(explored.get(rule, [])) | set(unsteady.get(rule, []))) for rule in set(explored) | set(unsteady)}
        for rule in sorted(set(by_rule) | set(explored), key=_rule_order):
            scenarios = sorted(set(by_rule.get(rule, [])) - set(unsteady.get(rule, [])))
            extra = []
            for scenario in sorted(set(explored.get(rule, [])) - set(scenarios)):
                owner = listed.setdefault((scenario, rule), cause["id"])
                if owner != cause["id"]:
                    problems.append(f"cause `{cause['id']}`: explored {rule} in {scenario} is listed by cause `{owner}`: left out (a pair has one cause)")
                    continue
                extra.append(scenario)
            if cause["verdict"] == "choice" and rule in must:
                refused = True
                problems.append(f"cause `{cause['id']}` is labelled choice but explains MUST rule {rule}: left out "
                                f"{rule} on {', '.join(scenarios + extra)}")
                continue
            if scenarios:
                canonical[rule] = scenarios
            if extra:
                allowed[rule] = extra
        if not canonical and not allowed:
            if not refused:
                problems.append(f"cause `{cause['id']}`: no pair left to write")
            continue
        entry: Dict[str, Any] = {"id": cause["id"], "verdict": cause["verdict"], "reason": cause["reason"]}
        if source:
            entry["source"] = source
        divergence = None
        if canonical:
            rule = next(iter(canonical))
            first = pairs[(canonical[rule][0], rule)]["case"].get("firstDivergence")
            divergence = first.get("implementation") if isinstance(first, dict) else None
        if divergence:
            entry["firstDivergence"] = divergence
        if canonical:
            entry["pairs"] = canonical
        if allowed:
            entry["explored"] = allowed
        entries.append(entry)
    return {"implementation": implementation, "causes": entries}, problems, notes


def main(argv: List[str], stdout=sys.stdout, stderr=sys.stderr) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("causes")
    parser.add_argument("report")
    parser.add_argument("--implementation", required=True)
    parser.add_argument("--adapter", required=True, help="the adapter's folder: source files are relative to it")
    parser.add_argument("--prefix", default="", help="prepended to every source file (a release installed in a subfolder)")
    parser.add_argument("--conformance", help="conformance.md, for the rules' levels (default: the repository's)")
    args = parser.parse_args(argv[1:])
    causes = json.loads(Path(args.causes).read_text(encoding="utf-8"))
    report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    conformance = Path(args.conformance) if args.conformance else Path(__file__).resolve().parents[2] / "conformance.md"
    expectations, problems, notes = build(causes, report, args.implementation, Path(args.adapter), args.prefix,
                                          must_rules(conformance))
    json.dump(expectations, stdout, ensure_ascii=False, indent=2)
    stdout.write("\n")
    for note in notes:
        stderr.write(f"expectations: {note}\n")
    for problem in problems:
        stderr.write(f"expectations: {problem}\n")
    if any("is labelled choice but explains MUST rule" in problem for problem in problems):
        stderr.write("expectations: a broken MUST rule is a bug, never a choice: label the cause bug, "
                     "or argue in conformance.md that the rule is SHOULD\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
