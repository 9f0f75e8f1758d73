"""Shared test helpers: a scripted kit for an adapter subprocess, and kit lines."""

from __future__ import annotations

import copy
import io
import json
import os
import select
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple, Union

TESTS = os.path.dirname(os.path.abspath(__file__))
SDK = os.path.dirname(TESTS)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(SDK)))
TEMPLATE = os.path.join(SDK, "template_adapter.py")
SYNC_FIXTURE = os.path.join(TESTS, "fixtures", "sync_adapter.py")
BREAKING_FIXTURE = os.path.join(TESTS, "fixtures", "breaking_adapter.py")

if SDK not in sys.path:
    sys.path.insert(0, SDK)

import agentsim_adapter  # noqa: E402


def dumps(message: Any) -> str:
    """A line as the SDK writes it."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


IDLE = '{"type":"idle"}'

SCENARIO: Dict[str, Any] = {
    "config": {
        "activeLeafId": None,
        "systemPrompt": "SYS",
        "maxSteps": 8,
        "context": {"total": 100000, "reservedOutput": 0, "safetyMargin": 0},
    },
    "session": [],
    "resources": {"instructions": [], "skills": []},
    "tools": [],
    "extensions": [],
    "ids": {"prefix": "entry-", "start": 1},
    "clock": {"startMs": 1767225600000, "stepMs": 1000},
    "faults": {"appends": [], "writes": []},
}

USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def scenario(**changes: Any) -> Dict[str, Any]:
    value = copy.deepcopy(SCENARIO)
    value.update(changes)
    return value


def start(value: Optional[Dict[str, Any]] = None) -> str:
    return dumps({"type": "start", "scenario": value if value is not None else SCENARIO})


def operation(op: int, name: str, **fields: Any) -> str:
    return dumps({"type": "operation", "op": op, "operation": {"op": name, **fields}})


def assistant(text: str, timestamp: int = 5) -> Dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "agentsim",
        "provider": "agentsim",
        "model": "scripted",
        "usage": USAGE,
        "stopReason": "stop",
        "timestamp": timestamp,
    }


def complete(effect: int, completion: Dict[str, Any]) -> str:
    return dumps({"type": "complete", "effect": effect, "completion": completion})


def model_final(effect: int, text: str = "ok") -> str:
    return complete(effect, {"kind": "model_final", "message": assistant(text)})


def model_chunk(effect: int, text: str) -> str:
    return complete(effect, {"kind": "model_chunk", "text": text})


def append_ok(effect: int) -> str:
    return complete(effect, {"kind": "append", "outcome": {"kind": "ok"}})


def append_failed(effect: int, code: str = "diskError", message: str = "disk full") -> str:
    return complete(effect, {"kind": "append", "outcome": {"kind": "failed", "cause": {"code": code, "message": message}}})


class AdapterProcess:
    """An adapter subprocess driven line by line, as the kit drives it."""

    def __init__(self, script: str = TEMPLATE, env: Optional[Dict[str, str]] = None) -> None:
        environment = dict(os.environ)
        environment.pop("AGENTSIM_PROTOCOL", None)
        environment.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            bufsize=0,
        )
        self.buffer = b""
        self.stderr = io.BytesIO()
        self._stderr_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._stderr_thread.start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read(4096), b""):  # type: ignore[union-attr]
            self.stderr.write(chunk)

    def stderr_text(self) -> str:
        return self.stderr.getvalue().decode("utf-8", "replace")

    def send(self, line: Union[str, bytes]) -> None:
        data = line if isinstance(line, bytes) else line.encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def read_line(self, timeout: float = 10.0) -> str:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no line within {timeout} s; stderr:\n{self.stderr_text()}")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise AssertionError(f"stdout closed (buffer {self.buffer!r}); stderr:\n{self.stderr_text()}")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode("utf-8")

    def assert_silent(self, seconds: float = 0.05) -> None:
        """Nothing more is written (the kit has not written since the last `idle`)."""
        assert self.proc.stdout is not None
        if self.buffer:
            raise AssertionError(f"unsolicited output after idle: {self.buffer!r}")
        ready, _, _ = select.select([self.proc.stdout.fileno()], [], [], seconds)
        if ready:
            extra = os.read(self.proc.stdout.fileno(), 1 << 16)
            if extra:
                raise AssertionError(f"unsolicited output after idle: {extra!r}")

    def read_turn(self, silence: float = 0.05) -> List[str]:
        """Lines up to and including `idle` or `error` (an `error` marked `recoverable` is
        followed by `idle`); then checks that nothing follows."""
        lines = []
        while True:
            line = self.read_line()
            lines.append(line)
            message = json.loads(line)
            if message["type"] == "idle" or (message["type"] == "error" and message.get("recoverable") is not True):
                break
        self.assert_silent(silence)
        return lines

    def turn(self, line: Union[str, bytes], silence: float = 0.05) -> List[str]:
        self.send(line)
        return self.read_turn(silence)

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout: float = 10.0) -> int:
        code = self.proc.wait(timeout)
        self._stderr_thread.join(timeout)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


def serve_in_process(adapter: "agentsim_adapter.Adapter", lines: List[str]) -> Tuple[List[str], int, str]:
    """Runs ``adapter`` in this process on scripted input (all at once: the SDK reads one line
    at a time, so its output is the same as with a live kit)."""
    stdin = io.BytesIO("".join(line + "\n" for line in lines).encode("utf-8"))
    stdout = io.BytesIO()
    stderr = io.StringIO()
    saved = os.environ.pop("AGENTSIM_PROTOCOL", None)
    try:
        code = agentsim_adapter.run(adapter, stdin, stdout, stderr)
    finally:
        if saved is not None:
            os.environ["AGENTSIM_PROTOCOL"] = saved
    output = stdout.getvalue().decode("utf-8").splitlines()
    return output, code, stderr.getvalue()
