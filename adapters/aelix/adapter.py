#!/usr/bin/env python3
"""agentsim adapter for aelix 0.1.0b2 (PyPI aelix-coding-agent, aelix-agent-core): the launcher.

Run it with any Python 3: ``agentsim run --impl "python3 adapters/aelix/adapter.py" scenarios/``.
It finds the venv that ``adapters/aelix/install.sh`` made next to it, checks that the install
finished (``.venv/agentsim-installed`` holds the sha256 of ``requirements.txt``), and replaces
itself with the venv's interpreter running ``aelix_adapter.py``, the mapping onto aelix.

When the venv is missing, unfinished or stale, or aelix does not import, the kit must get a
clear verdict and not a hang or a traceback: :func:`fail_setup` answers ``hello`` and then the
kit's ``start`` with an ``error`` line of code ``adapter.setup`` naming what is missing and the
command that installs it, and exits 1. The kit reports every scenario broken (exit code 3) with
that message. Standard library only, so that it runs before anything is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, ".venv")
VENV_PYTHON = os.path.join(VENV, "bin", "python")
MARKER = os.path.join(VENV, "agentsim-installed")
REQUIREMENTS = os.path.join(HERE, "requirements.txt")
INSTALL_COMMAND = "adapters/aelix/install.sh"
#: What hello says when aelix cannot be loaded (the kit prints it with the verdict).
PINNED_VERSION = "0.1.0b2"


def _protocol() -> int:
    return 1 if os.environ.get("AGENTSIM_PROTOCOL") == "1" else 2


def fail_setup(problem: str) -> None:
    """Speak just enough protocol to report ``problem`` as ``adapter.setup``, then exit 1.

    ``hello`` first (the kit reads nothing else first), then, to the kit's ``start``, one
    ``error`` line; ``reset`` is acknowledged, ``shutdown`` and end of input exit 0."""
    message = f"{problem}; install it with: {INSTALL_COMMAND}"
    sys.stderr.write(f"[aelix-adapter] adapter.setup: {message}\n")
    sys.stderr.flush()
    out = sys.__stdout__.buffer if sys.__stdout__ is not None else os.fdopen(1, "wb")
    hello = {
        "type": "hello",
        "protocol": _protocol(),
        "implementation": {"name": "aelix", "version": f"{PINNED_VERSION} (not loaded)"},
        "features": [],
        "unsupported": {},
    }

    def write(line: dict) -> None:
        out.write(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n")
        out.flush()

    write(hello)
    for raw in sys.stdin.buffer:
        try:
            kind = json.loads(raw).get("type")
        except (ValueError, AttributeError):
            kind = None
        if kind == "start":
            write({"type": "error", "code": "adapter.setup", "message": message})
            sys.exit(1)
        if kind == "shutdown":
            sys.exit(0)
        write({"type": "idle"})
    sys.exit(0)


def requirements_digest() -> str:
    with open(REQUIREMENTS, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def installed_problem() -> str | None:
    """What is wrong with the venv, or None when ``install.sh`` finished on these pins."""
    if not os.path.isfile(VENV_PYTHON):
        return f"the aelix venv is missing ({VENV_PYTHON} does not exist)"
    try:
        with open(MARKER, encoding="utf-8") as file:
            recorded = file.read().strip()
    except OSError:
        return f"the aelix install in {VENV} did not finish ({MARKER} is missing)"
    if recorded != requirements_digest():
        return f"the aelix install in {VENV} is for other pins than {REQUIREMENTS}"
    return None


def main() -> None:
    problem = installed_problem()
    if problem is not None:
        fail_setup(problem)
    mapping = os.path.join(HERE, "aelix_adapter.py")
    try:
        os.execv(VENV_PYTHON, [VENV_PYTHON, mapping, *sys.argv[1:]])
    except OSError as error:
        fail_setup(f"the venv's interpreter {VENV_PYTHON} cannot be started ({error})")


if __name__ == "__main__":
    main()
