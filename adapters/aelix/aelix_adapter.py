#!/usr/bin/env python3
"""agentsim adapter for aelix 0.1.0b2: the mapping of the protocol onto aelix's own classes.

Started by ``adapter.py`` with the interpreter of ``adapters/aelix/.venv``. It speaks protocol 2
through the Python adapter SDK (``../sdk/python``) and drives aelix in process, the way
``adapters/pi`` drives Pi:

- the runtime is aelix's ``AgentHarness`` (``aelix_agent_core.harness.core``) inside its
  ``AgentSessionRuntime`` host, over a ``Session`` on aelix's ``JsonlSessionStorage``, opened by
  ``JsonlSessionRepo.open`` from a session file the adapter writes from the scenario;
- the model is a provider registered in aelix's API registry (``aelix_ai.api_registry``) under
  the api ``agentsim``: every call is a ``model_request`` effect;
- the tools are ``AgentTool``s whose ``execute`` is a ``tool_call`` effect;
- the scenario's extensions and observers are aelix ``Extension``s made by factories through
  ``load_extension_from_factory``; their ``tool_call``/``tool_result`` handlers are ``hook``
  effects and their ``message_end``/``turn_end``/``agent_end`` handlers ``notify`` effects;
- the store is the session's ``FileSystem``: ``JsonlSessionStorage`` hands every entry to
  ``FileSystem.append_file`` (its only write), and that call is the ``append`` effect;
- ids and time: aelix's entry-id generator (``uuid.uuid4`` in ``jsonl_storage``) and clock
  readings (``datetime.now`` in ``session``/``jsonl_storage``/``agent_context``, ``time.time`` in
  ``loop``) read the scenario's ``ids`` and ``clock`` rules.

Nothing of aelix is re-implemented: where aelix differs from the contract, the kit sees it.
README.md next to this file has the mapping table and every choice the adapter makes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import errno
import datetime as _datetime
import fcntl
import importlib.metadata
import io
import json
import logging
import os
import signal as _signal
import sys
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "sdk", "python"))
sys.path.insert(0, HERE)

from adapter import PINNED_VERSION, fail_setup  # noqa: E402

from agentsim_adapter import (  # noqa: E402
    UNIT,
    Adapter,
    ProtocolUsageError,
    Rejected,
    RestoreFailed,
    RunBroken,
    Started,
    State,
    run_result,
    serve,
)

PACKAGES = ("aelix-agent-core", "aelix-coding-agent", "aelix-ai")


def _returned(coroutine: Any) -> Any:
    """What a coroutine that awaits nothing returns (aelix's storage getters): an accessor that
    would wait is a mapping error, not a value."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise ProtocolUsageError("an aelix accessor read for the state probe awaited something")


def _load_aelix() -> Dict[str, Any]:
    """Imports everything the mapping uses; any failure is ``adapter.setup`` (adapter.py)."""
    for package in PACKAGES:
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            fail_setup(f"the Python package {package} is not installed in the aelix venv")
        if version != PINNED_VERSION:
            fail_setup(f"{package} is {version} in the aelix venv, the adapter is pinned to {PINNED_VERSION}")
    try:
        import aelix_agent_core.loop as loop_module
        import aelix_agent_core.session.jsonl_storage as jsonl_storage_module
        import aelix_agent_core.session.session as session_module
        import aelix_coding_agent.cli.agent_context as agent_context_module
        from aelix_agent_core.harness import AgentHarness, AgentHarnessOptions, ToolCallResult, ToolResultPatch
        from aelix_agent_core.harness.skills import Skill
        from aelix_agent_core.runtime import create_agent_session_runtime
        from aelix_agent_core.session import (
            JsonlSessionRepo,
            LocalFileSystem,
            SessionError,
            build_session_context,
            load_jsonl_session_metadata,
        )
        from aelix_agent_core.types import AgentTool
        from aelix_ai import api_registry
        from aelix_ai.messages import (
            AssistantMessage,
            ImageContent,
            TextContent,
            ThinkingContent,
            ToolCallContent,
        )
        from aelix_ai.streaming import (
            AssistantDoneEvent,
            AssistantErrorEvent,
            AssistantStartEvent,
            Model,
            TextDeltaEvent,
            TextEndEvent,
            TextStartEvent,
        )
        from aelix_ai.tools import ToolResult
        from aelix_coding_agent.cli.args import Args, parse_args
        from aelix_coding_agent.cli.entry import (
            _async_main,
            _resolve_append_chunks,
            _resolve_system_prompt,
            resolve_app_mode,
            to_print_output_mode,
        )
        from aelix_coding_agent.extensions import _ExtensionRuntime, load_extension_from_factory
        from aelix_coding_agent.modes.print_mode import run_print_mode
    except Exception as error:  # noqa: BLE001 - every import failure is the same verdict
        fail_setup(f"aelix does not import: {type(error).__name__}: {error}")
    return dict(locals())


A = _load_aelix()

# ---------------------------------------------------------------------------------------------
# The environment aelix sees. The working directory aelix is told about is fixed, so that it
# reads the same in every run and process (aelix prints it in its default system prompt); it
# is a real directory because aelix reads AGENTS.md files from the disk (discover_context_files).
# ---------------------------------------------------------------------------------------------

os.environ["TZ"] = "UTC"
AELIX_CWD = "/tmp/agentsim-aelix/project"
AELIX_CWD_LOCK = "/tmp/agentsim-aelix/project.lock"
#: The session file lives in the adapter's in-memory file system (KitFileSystem), at a fixed
#: path: aelix prints the path in json mode's header line.
SESSION_DIR = "/agentsim/sessions"
SESSION_FILE = SESSION_DIR + "/session.jsonl"
SESSION_ID = "agentsim-session"
API = "agentsim"
PROVIDER = "agentsim"
MODEL_ID = "scripted"
LOG_PREFIX = "[aelix-adapter]"

# aelix logs what it swallows (a failed append, a raising hook) at debug level; the adapter
# shows it on stderr, where the kit keeps the tail for its verdicts.
logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="[aelix] %(name)s: %(message)s")
for _name in ("aelix_agent_core.harness.core", "aelix_agent_core.harness.hooks"):
    logging.getLogger(_name).setLevel(logging.DEBUG)


def log(text: str) -> None:
    sys.stderr.write(f"{LOG_PREFIX} {text}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# Determinism: aelix's id generator and clock read the current run's `ids` and `clock` rules.
# Readings outside a run (between runs) follow the default rules from a counter every `start`
# rewinds, as in a fresh process.
# ---------------------------------------------------------------------------------------------

ADAPTER: Optional["AelixAdapter"] = None
_outside = {"ids": 0, "clock": 0}


def rule_id() -> str:
    try:
        return ADAPTER.ids.next()  # type: ignore[union-attr]
    except (AttributeError, ProtocolUsageError):
        pass
    _outside["ids"] += 1
    return f"entry-{_outside['ids']}"


def rule_now_ms() -> int:
    try:
        return ADAPTER.clock.now()  # type: ignore[union-attr]
    except (AttributeError, ProtocolUsageError):
        pass
    reading = 1767225600000 + _outside["clock"] * 1000
    _outside["clock"] += 1
    return reading


class _WholeId(str):
    """aelix's ``_generate_entry_id`` takes ``uuid4().hex[:8]``; a rule id may be longer than
    eight characters, so the slice keeps it whole (the same trick as the Pi adapter's)."""

    def __getitem__(self, key: Any) -> str:
        if isinstance(key, slice) and key.start is None and key.stop == 8 and key.step is None:
            return str(self)
        return str.__getitem__(self, key)


class _RuleUuid:
    """Stands in for ``uuid.uuid4`` in ``aelix_agent_core.session.jsonl_storage`` (entry ids)."""

    class _Value:
        def __init__(self, text: str) -> None:
            self.hex = _WholeId(text)

        def __str__(self) -> str:
            return str(self.hex)

    def uuid4(self) -> "_RuleUuid._Value":
        return self._Value(rule_id())


class _RuleDatetime(_datetime.datetime):
    """Stands in for ``datetime`` where aelix reads the wall clock (``datetime.now``)."""

    @classmethod
    def now(cls, tz: Any = None) -> "_RuleDatetime":  # type: ignore[override]
        moment = _datetime.datetime.fromtimestamp(rule_now_ms() / 1000, _datetime.timezone.utc)
        if tz is None:
            moment = moment.replace(tzinfo=None)
        return cls(*moment.timetuple()[:6], moment.microsecond, tzinfo=moment.tzinfo)


class _RuleTime:
    """Stands in for ``time`` in ``aelix_agent_core.loop``: ``time.time()`` stamps tool results."""

    def time(self) -> float:
        return rule_now_ms() / 1000


A["jsonl_storage_module"].uuid = _RuleUuid()
A["jsonl_storage_module"].datetime = _RuleDatetime
A["session_module"].datetime = _RuleDatetime
A["agent_context_module"].datetime = _RuleDatetime
A["loop_module"].time = _RuleTime()

# ---------------------------------------------------------------------------------------------
# Messages: aelix's dataclasses (``aelix_ai.messages``, on disk as ``dataclasses.asdict``) and
# pi-ai's JSON shapes (the protocol's) translated both ways, field by field. Two encodings:
# - time: aelix stamps the messages of its loop with ``time.time()``, seconds; pi-ai with
#   milliseconds. A pi-ai timestamp enters aelix divided by 1000 and leaves multiplied by 1000
#   (exact for integral milliseconds). But the messages aelix makes from a session's non-message
#   entries (a compaction's or a branch's summary, a custom message: ``session/context.py``
#   ``_iso_to_unix_ms``) carry milliseconds already: a value of 10^11 or more leaves as it is
#   (as seconds it would be a time after the year 5000; as milliseconds, after 1973).
#   aelix stamps no time on a user message it creates (None): it leaves as 0.
# - user content: pi-ai's is a string or blocks, aelix's always blocks. One text block leaves as
#   the string, pi-ai's plain form; the corpus writes every user message that way.
# ---------------------------------------------------------------------------------------------

ZERO_USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def _seconds(ms: Any) -> Optional[float]:
    return None if ms is None else ms / 1000


#: At or above this an aelix timestamp is milliseconds (see "Messages" above).
_MS_FROM = 10**11


def _ms(stamp: Any) -> int:
    if stamp is None:
        return 0
    return int(round(stamp if stamp >= _MS_FROM else stamp * 1000))


def _pi_blocks_to_aelix(blocks: Any) -> List[Any]:
    out: List[Any] = []
    for block in blocks:
        if block.get("type") == "image":
            out.append(A["ImageContent"](mime_type=block.get("mimeType", ""), data=block.get("data", "")))
        else:
            out.append(A["TextContent"](text=block.get("text", "")))
    return out


def pi_to_aelix(message: Dict[str, Any]) -> Any:
    """A pi-ai message (the kit's) as the aelix dataclass."""
    role = message.get("role")
    if role == "user":
        content = message["content"]
        blocks = [A["TextContent"](text=content)] if isinstance(content, str) else _pi_blocks_to_aelix(content)
        return dataclasses.replace(_user(blocks), timestamp=_seconds(message.get("timestamp")))
    if role == "toolResult":
        from aelix_ai.messages import ToolResultMessage

        return ToolResultMessage(
            tool_call_id=message["toolCallId"],
            content=_pi_blocks_to_aelix(message.get("content", [])),
            is_error=bool(message.get("isError", False)),
            timestamp=_seconds(message.get("timestamp")),
            tool_name=message.get("toolName", ""),
        )
    content: List[Any] = []
    for block in message.get("content", []):
        kind = block.get("type")
        if kind == "toolCall":
            content.append(A["ToolCallContent"](tool_call_id=block["id"], tool_name=block["name"], input=dict(block.get("arguments") or {})))
        elif kind == "thinking":
            content.append(A["ThinkingContent"](thinking=block.get("thinking", "")))
        else:
            content.append(A["TextContent"](text=block.get("text", "")))
    return A["AssistantMessage"](
        content=content,
        stop_reason=message.get("stopReason"),
        error_message=message.get("errorMessage"),
        usage=message.get("usage"),
        timestamp=_seconds(message.get("timestamp")),
        api=message.get("api"),
        provider=message.get("provider"),
        model=message.get("model"),
    )


def _user(blocks: List[Any]) -> Any:
    from aelix_ai.messages import UserMessage

    return UserMessage(content=blocks)


def _aelix_blocks_to_pi(blocks: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "image":
            out.append({"type": "image", "data": block.get("data", ""), "mimeType": block.get("mime_type", "")})
        else:
            out.append({"type": "text", "text": block.get("text", "")})
    return out


def aelix_dict_to_pi(message: Dict[str, Any]) -> Dict[str, Any]:
    """An aelix message in its on-disk form (``dataclasses.asdict``) as a pi-ai message."""
    role = message.get("role")
    if role == "user":
        blocks = _aelix_blocks_to_pi(message.get("content", []))
        content: Any = blocks[0]["text"] if len(blocks) == 1 and blocks[0]["type"] == "text" else blocks
        return {"role": "user", "content": content, "timestamp": _ms(message.get("timestamp"))}
    if role == "toolResult":
        return {
            "role": "toolResult",
            "toolCallId": message.get("tool_call_id", ""),
            "toolName": message.get("tool_name", ""),
            "content": _aelix_blocks_to_pi(message.get("content", [])),
            "isError": bool(message.get("is_error", False)),
            "timestamp": _ms(message.get("timestamp")),
        }
    content = []
    for block in message.get("content", []):
        kind = block.get("type")
        if kind == "toolCall":
            content.append({"type": "toolCall", "id": block.get("tool_call_id", ""), "name": block.get("tool_name", ""), "arguments": block.get("input", {})})
        elif kind == "thinking":
            content.append({"type": "thinking", "thinking": block.get("thinking", "")})
        else:
            content.append({"type": "text", "text": block.get("text", "")})
    # aelix's own assistant messages (an abort marker, the "[error] ..." message it makes when a
    # run fails) carry no provenance and no usage; pi-ai requires them: empty strings and zeros.
    out: Dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": message.get("api") or "",
        "provider": message.get("provider") or "",
        "model": message.get("model") or "",
        "usage": message.get("usage") or ZERO_USAGE,
        "stopReason": message.get("stop_reason") or "stop",
        "timestamp": _ms(message.get("timestamp")),
    }
    if message.get("error_message") is not None:
        out["errorMessage"] = message["error_message"]
    return out


def aelix_to_pi(message: Any) -> Dict[str, Any]:
    return aelix_dict_to_pi(dataclasses.asdict(message))


def entry_to_aelix_line(entry: Dict[str, Any]) -> str:
    """A kit session entry as a line of aelix's session file: the entry verbatim (aelix's entry
    keys are Pi's), its message in aelix's on-disk form."""
    if entry.get("type") == "message" and isinstance(entry.get("message"), dict):
        entry = dict(entry, message=dataclasses.asdict(pi_to_aelix(entry["message"])))
    return json.dumps(entry, ensure_ascii=False)


def aelix_line_to_entry(line: str) -> Dict[str, Any]:
    entry = json.loads(line)
    if entry.get("type") == "message" and isinstance(entry.get("message"), dict):
        entry["message"] = aelix_dict_to_pi(entry["message"])
    return entry


def text_of(blocks: List[Dict[str, Any]]) -> str:
    return "".join(block.get("text", "") for block in blocks if block.get("type") == "text")


# ---------------------------------------------------------------------------------------------
# The store: the session's FileSystem. JsonlSessionStorage writes each entry as one line with
# FileSystem.append_file (after which it advances its leaf); that call is the `append` effect.
# The session file itself is kept in memory at a fixed path; every other path is the disk's.
# ---------------------------------------------------------------------------------------------


def kit_os_error(cause: Dict[str, str]) -> OSError:
    """The kit's `failed` answer to an append or a write, as the ``OSError`` a failing write
    raises (aelix's ``FileSystem`` protocol documents ``OSError`` as its failure, and its print
    mode writes to ``sys.stdout``). A code that names an errno (``EPIPE``) is raised with that
    errno, so Python gives it the class the OS's error has (``OSError(errno.EPIPE, ...)`` is a
    ``BrokenPipeError``, which aelix's print mode treats apart); any other code is a plain
    ``OSError`` with the cause's message. The error carries the kit's cause, so that a rejection
    that passes it on passes it on unchanged (``AelixAdapter.operation``)."""
    code, message = cause["code"], cause["message"]
    number = getattr(errno, code, None) if code.isupper() and code.startswith("E") else None
    error = OSError(number, message) if isinstance(number, int) else OSError(message)
    error.agentsim_cause = (code, message)  # type: ignore[attr-defined]
    return error


class KitFileSystem(A["LocalFileSystem"]):  # type: ignore[misc]
    def __init__(self, adapter: "AelixAdapter") -> None:
        super().__init__(cwd=AELIX_CWD)
        self.adapter = adapter
        self.files: Dict[str, str] = {}
        #: While restoring (``start``) nothing may be an effect: writes stay in the file.
        self.restoring = True

    def _virtual(self, path: str) -> bool:
        return path == SESSION_DIR or path.startswith(SESSION_DIR + "/")

    async def absolute_path(self, path: str) -> str:
        return path if self._virtual(path) else await super().absolute_path(path)

    async def exists(self, path: str) -> bool:
        if self._virtual(path):
            return path == SESSION_DIR or path in self.files
        return await super().exists(path)

    async def read_text_file(self, path: str) -> str:
        if self._virtual(path):
            return self._read(path)
        return await super().read_text_file(path)

    async def read_text_lines(self, path: str, *, max_lines: Optional[int] = None) -> List[str]:
        if self._virtual(path):
            lines = [line for line in self._read(path).split("\n")]
            if lines and lines[-1] == "":
                lines.pop()
            return lines if max_lines is None else lines[:max_lines]
        return await super().read_text_lines(path, max_lines=max_lines)

    def _read(self, path: str) -> str:
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    async def write_file(self, path: str, content: str) -> None:
        if not self._virtual(path):
            raise PermissionError(f"the adapter's file system writes only {SESSION_DIR}, not {path}")
        self.files[path] = content

    async def create_dir(self, path: str, *, recursive: bool = True) -> None:
        if not self._virtual(path):
            raise PermissionError(f"the adapter's file system writes only {SESSION_DIR}, not {path}")

    async def append_file(self, path: str, content: str) -> None:
        if not self._virtual(path):
            raise PermissionError(f"the adapter's file system writes only {SESSION_DIR}, not {path}")
        if self.restoring:
            for line in content.split("\n"):
                if line.strip():
                    log(f"while restoring, aelix wrote to its session file (not an append effect: the protocol has no effect during start): {line}")
            self.files[path] = self.files.get(path, "") + content
            return
        entries = [aelix_line_to_entry(line) for line in content.split("\n") if line.strip()]
        for entry in entries:
            completion = await self.adapter.awaited(self.adapter.effect("append", entry=entry))
            outcome = completion["outcome"]
            if outcome["kind"] == "failed":
                raise kit_os_error(outcome["cause"])
        self.files[path] = self.files.get(path, "") + content


# ---------------------------------------------------------------------------------------------
# Signals. aelix's harness passes no abort signal to the loop (``agent_loop(..., signal=None)``);
# its abort cancels the turn's asyncio task (``AgentHarness.abort``: ``turn_task.cancel()``). So a
# run's signal is its turn task: a listener on ``agent_start`` (emitted inside that task) gives it
# the next signal id in a context variable every request and tool call of the turn inherits, and
# when the cancellation reaches an effect the adapter is awaiting, the signal has fired.
# ---------------------------------------------------------------------------------------------

_current_signal: contextvars.ContextVar[Optional[int]] = contextvars.ContextVar("agentsim_signal", default=None)

# ---------------------------------------------------------------------------------------------
# Steps. aelix reports no step count: ``AgentHarness.prompt`` returns the run's new messages
# (``[]`` for an aborted turn), ``run_print_mode`` an exit code, and its json mode writes the
# harness's events, no ``steps``. What it does expose is its loop's turn: ``agent_loop`` /
# ``_run_loop`` (``aelix_agent_core/loop.py``) emit ``TurnStartEvent`` once per turn, one turn
# being one ``_stream_assistant_response`` (one model request) and the tool round it asks for,
# to every ``AgentHarness.subscribe`` listener (and, as a ``turn_start`` line, to its json mode's
# output). A run's ``steps`` is the number of those events, counted by the adapter's listener
# the same way for a prompt and for a mode: each operation that runs a prompt puts a counter in
# a context variable, which the turn's task (created inside ``AgentHarness._run``) inherits.
# ---------------------------------------------------------------------------------------------

_run_turns: contextvars.ContextVar[Optional[List[int]]] = contextvars.ContextVar("agentsim_turns", default=None)


# ---------------------------------------------------------------------------------------------
# The adapter
# ---------------------------------------------------------------------------------------------

RUN_REASONS = {"stop": "stop", "length": "length", "error": "error", "aborted": "aborted", "toolUse": "stop"}


#: While a mode runs, what aelix prints to stderr in that mode's task (and the tasks it starts,
#: which inherit the variable) is kept for the mode's rejection.
_mode_stderr: contextvars.ContextVar[Optional[List[str]]] = contextvars.ContextVar("agentsim_mode_stderr", default=None)


class ModeSink(io.TextIOBase):
    """``sys.stdout`` while any output mode runs: every non-empty write is a `write` effect,
    answered before ``write`` returns (aelix's print mode writes synchronously, with
    ``_write_raw_stdout``). aelix has one ``sys.stdout`` for the process, not one per mode: two
    modes that run at once write to the same sink, as they would to one terminal."""

    def __init__(self, adapter: "AelixAdapter") -> None:
        self.adapter = adapter

    def write(self, text: str) -> int:
        if text:
            completion = self.adapter.effect_sync("write", text=text)
            outcome = completion["outcome"]
            if outcome["kind"] == "failed":
                raise kit_os_error(outcome["cause"])
        return len(text)

    def flush(self) -> None:
        pass


class StderrTee(io.TextIOBase):
    """``sys.stderr`` while any output mode runs: what aelix prints there reaches the real
    stderr and is kept for the mode that printed it (``_mode_stderr``)."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def write(self, text: str) -> int:
        kept = _mode_stderr.get()
        if kept is not None:
            kept.append(text)
        return self.real.write(text)

    def flush(self) -> None:
        self.real.flush()


#: The protocol's mode names as aelix's command line spells them (``aelix --help``: ``--print,
#: -p`` one-shot print mode, ``--mode json`` the JSON event stream, no flag the interactive
#: terminal UI). Any other name is given to ``--mode``, the one flag that takes a mode name.
MODE_FLAGS: Dict[str, List[str]] = {"print": ["-p"], "json": ["--mode", "json"], "interactive": []}
INTERACTIVE_UNSUPPORTED = (
    "aelix's interactive mode is its terminal UI (modes run_tui, on prompt_toolkit): the adapter "
    "cannot drive it in process"
)


class AelixAdapter(Adapter):
    name = "aelix"
    version = PINNED_VERSION
    features = ["steer", "followUp", "abort", "flush", "dispose", "mode", "chunks", "observers", "sync-sink"]
    unsupported = {
        "library": "aelix has no library adapter returning {reason, text}; its SDK is AgentHarness itself",
        # docs/protocol.md: `mode:<name>` declares one output mode unsupported.
        "mode:interactive": INTERACTIVE_UNSUPPORTED,
    }
    # The state probe: aelix's own leaf (JsonlSessionStorage.get_leaf_id) and entries
    # (get_entries), read at every `idle` (state below).
    probes = ("state",)

    def __init__(self) -> None:
        self.fresh_run_state()

    def fresh_run_state(self) -> None:
        self.fs: Optional[KitFileSystem] = None
        self.session: Any = None
        self.harness: Any = None
        self.host: Any = None
        self.restore_failure: Optional[Dict[str, str]] = None
        self.fired: set = set()
        if getattr(self, "saved_streams", None) is not None:
            self.restore_streams()
        self.modes_running = 0
        self.saved_streams: Optional[tuple] = None

    # -- restore ---------------------------------------------------------------------------

    async def start(self, scenario: Dict[str, Any]) -> Any:
        global ADAPTER
        ADAPTER = self
        _outside["ids"] = 0
        _outside["clock"] = 0
        self.fresh_run_state()
        config = scenario["config"]
        leaf = config.get("activeLeafId")
        session_entries = scenario["session"]
        self.fs = KitFileSystem(self)
        header = {
            "type": "session",
            "version": 3,
            "id": SESSION_ID,
            # The header is the adapter's, with fixed values: no clock reading.
            "timestamp": _datetime.datetime.fromtimestamp(scenario["clock"]["startMs"] / 1000, _datetime.timezone.utc)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "cwd": AELIX_CWD,
        }
        lines = [json.dumps(header)] + [entry_to_aelix_line(entry) for entry in session_entries]
        self.fs.files[SESSION_FILE] = "\n".join(lines) + "\n"
        os.makedirs(AELIX_CWD, exist_ok=True)

        # aelix's own session loading: the repo opens the file (JsonlSessionStorage.open).
        repo = A["JsonlSessionRepo"](fs=self.fs, sessions_root=SESSION_DIR)
        metadata = await A["load_jsonl_session_metadata"](self.fs, SESSION_FILE)
        session = await repo.open(metadata)
        storage = session.get_storage()
        try:
            with _walk_time_limit():
                if leaf is not None:
                    # aelix's only way to choose the branch: Session.move_to, which appends a
                    # `leaf` entry (written into the file while restoring; see README).
                    if leaf != await storage.get_leaf_id():
                        await session.move_to(leaf)
                    branch = await session.get_branch(leaf)
                else:
                    # With no leaf chosen aelix keeps the leaf its loader chose: the last entry.
                    branch = await session.get_branch()
        except A["SessionError"] as error:
            return self._restore_failed(error, session_entries)
        except _WalkTimeout:
            # The timer's exception unwound the walk: nothing of it runs on, so only this run is
            # broken and the process serves the next one (protocol 2's recoverable error).
            raise RunBroken(
                "aelix.hang",
                f"Session.get_branch({leaf!r}) did not return within {WALK_SECONDS} s: aelix's "
                "JsonlSessionStorage.get_path_to_root follows parent_id with no cycle detection",
            ) from None
        self.fs.restoring = False
        self.session = session
        self.repo = repo
        # The state probe's baseline: the entries aelix's storage holds once restored (a `leaf`
        # entry its move_to wrote included).
        self.restored_entries = len(await storage.get_entries())
        restored = A["build_session_context"](branch)
        await self.build_runtime(scenario, restored.messages)
        return Started(await storage.get_leaf_id(), len(restored.messages))

    def state(self) -> State:
        """aelix's own leaf and the entries its storage took since the restore. Both are
        ``async def`` methods of JsonlSessionStorage that await nothing (they read its
        ``_current_leaf_id`` and ``_entries``): each is run to its return here, outside the
        run's event loop, without a loop of its own."""
        storage = self.session.get_storage()
        leaf = _returned(storage.get_leaf_id())
        entries = _returned(storage.get_entries())
        return State(leaf, len(entries) - self.restored_entries)

    def _restore_failed(self, error: Any, session_entries: List[Any]) -> RestoreFailed:
        # aelix's tree walk has two diagnostics: a leaf no entry has (`not_found`) and a parent
        # no entry has (`invalid_session`, "Entry <parent> not found").
        if error.code == "not_found":
            code = "restore.unknown_leaf" if not session_entries else "path.unknown_leaf"
        elif error.code == "invalid_session":
            code = "path.missing_parent"
        else:
            code = f"aelix.{error.code}"
        self.restore_failure = {"code": code, "message": str(error)}
        return RestoreFailed(code, str(error))

    async def build_runtime(self, scenario: Dict[str, Any], restored_messages: List[Any]) -> None:
        config = scenario["config"]
        tools = [self.kit_tool(spec) for spec in scenario["tools"]]
        runtime = A["_ExtensionRuntime"]()
        # The scenario's extensions in order, then one extension per observer.
        extensions = [
            await A["load_extension_from_factory"](self.hook_factory(name), name=name, runtime=runtime)
            for name in scenario["extensions"]
        ]
        for observer in scenario.get("observers", []):
            factory = self.observer_factory(observer)
            extensions.append(await A["load_extension_from_factory"](factory, name=observer["name"], runtime=runtime))
        model = A["Model"](
            id=MODEL_ID,
            name=MODEL_ID,
            api=API,
            provider=PROVIDER,
            input=["text", "image"],
            context_window=config.get("context", {}).get("total", 0),
            max_tokens=16384,
        )
        system_prompt, append = compose_system_prompt(config.get("systemPrompt"), scenario["resources"], tools)
        options = A["AgentHarnessOptions"](
            model=model,
            session=self.session,
            cwd=AELIX_CWD,
            tools=tools,
            system_prompt=system_prompt,
            append_system_prompt=append,
            extensions=extensions,
            runtime=runtime,
            # The product seeds the live transcript from the restored branch the same way
            # (cli/entry.py _seed_startup_state); AgentHarnessOptions.initial_messages is the seam.
            initial_messages=list(restored_messages),
        )
        harness = A["AgentHarness"](options)
        # The kit's scripted model cannot answer compaction's summarizing call, and a retry
        # sleeps 2 s: both off, as `aelix` offers (rpc set_auto_compaction / set_auto_retry).
        harness.set_auto_compaction_enabled(False)
        harness.set_auto_retry_enabled(False)
        harness.subscribe(self.on_agent_event)
        self.harness = harness

    # -- the host (AgentSessionRuntime) is made at the first operation that needs it ---------

    async def runtime_host(self) -> Any:
        if self.host is None:
            self.host = await A["create_agent_session_runtime"](
                self.harness, self.no_replacement, repo=self.repo, fs=self.fs
            )
        return self.host

    @staticmethod
    async def no_replacement(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("the adapter does not replace sessions (new/resume/fork)")

    # -- extensions, observers, tools, model -------------------------------------------------

    def hook_factory(self, name: str) -> Any:
        adapter = self

        def factory(api: Any) -> None:
            async def before(event: Any, _ctx: Any) -> Any:
                completion = await adapter.awaited(
                    adapter.effect(
                        "hook",
                        extension=name,
                        phase="before",
                        call={"id": event.tool_call_id, "name": event.tool_name, "arguments": event.args},
                        result=None,
                    )
                )
                answer = completion["answer"]
                kind = answer["kind"]
                if kind == "deny":
                    return A["ToolCallResult"](block=True, reason=answer["reason"])
                if kind == "rewrite_arguments":
                    # aelix's documented way (D.1.5): the args dict is shared with the tool.
                    event.args.clear()
                    event.args.update(json.loads(json.dumps(answer["arguments"])))
                    return None
                if kind == "threw":
                    raise Exception(answer["message"])
                return None

            async def after(event: Any, _ctx: Any) -> Any:
                completion = await adapter.awaited(
                    adapter.effect(
                        "hook",
                        extension=name,
                        phase="after",
                        call={"id": event.tool_call_id, "name": event.tool_name, "arguments": event.args},
                        # aelix's tool_result event carries no message timestamp.
                        result={
                            "role": "toolResult",
                            "toolCallId": event.tool_call_id,
                            "toolName": event.tool_name,
                            "content": _aelix_blocks_to_pi([dataclasses.asdict(block) for block in event.content]),
                            "details": event.details,
                            "isError": bool(event.is_error),
                            "timestamp": 0,
                        },
                    )
                )
                answer = completion["answer"]
                kind = answer["kind"]
                if kind == "rewrite_result":
                    return A["ToolResultPatch"](content=_pi_blocks_to_aelix(answer["content"]), is_error=answer["isError"])
                if kind == "threw":
                    raise Exception(answer["message"])
                return None

            api.on("tool_call", before)
            api.on("tool_result", after)

        return factory

    def observer_factory(self, observer: Dict[str, Any]) -> Any:
        adapter = self
        name = observer["name"]

        def event_fields(event: Any) -> Dict[str, Any]:
            if event.type == "message_end":
                return {"type": "message_end", "message": aelix_to_pi(event.message)}
            if event.type == "turn_end":
                # aelix's turn_end hook event carries the message only (harness/core.py
                # _to_hook_event drops the tool results): the list is empty.
                return {"type": "turn_end", "message": aelix_to_pi(event.message), "toolResults": []}
            return {"type": "agent_end", "messages": [aelix_to_pi(message) for message in event.messages]}

        def factory(api: Any) -> None:
            async def handler(event: Any, _ctx: Any) -> None:
                completion = await adapter.awaited(adapter.effect("notify", observer=name, event=event_fields(event)))
                outcome = completion["outcome"]
                if outcome["kind"] == "threw":
                    raise Exception(outcome["message"])
                return None

            for event_name in observer["events"]:
                api.on(event_name, handler)

        return factory

    def kit_tool(self, spec: Dict[str, Any]) -> Any:
        adapter = self
        name = spec["name"]

        async def execute(args: Dict[str, Any], ctx: Any) -> Any:
            completion = await adapter.awaited(
                adapter.effect(
                    "tool_call",
                    signal=adapter.signal_of_turn(),
                    call={"id": ctx.tool_call_id, "name": name, "arguments": args},
                )
            )
            outcome = completion["outcome"]
            if outcome["kind"] == "ok":
                return A["ToolResult"](
                    content=_pi_blocks_to_aelix(outcome["content"]),
                    details=outcome.get("details"),
                    is_error=bool(outcome.get("isError", False)),
                )
            if outcome["kind"] == "threw":
                raise Exception(outcome["message"])
            raise Exception("Operation aborted")

        return A["AgentTool"](
            name=name,
            description=spec.get("description", ""),
            parameters=spec.get("parameters") or {"type": "object"},
            execute=execute,
        )

    def on_agent_event(self, event: Any) -> None:
        # Runs inside the turn's task (the harness's emit): the turn gets its signal here, and
        # the operation that started the run counts aelix's turns (see "Steps" above).
        if event.type == "agent_start":
            _current_signal.set(self.new_signal())
        elif event.type == "turn_start":
            turns = _run_turns.get()
            if turns is not None:
                turns[0] += 1

    def signal_of_turn(self) -> int:
        signal = _current_signal.get()
        if signal is None:
            # A call outside a turn task (none is expected): a signal of its own.
            signal = self.new_signal()
            _current_signal.set(signal)
        return signal

    async def awaited(self, effect: Any) -> Any:
        """Awaits an effect; when the turn task is cancelled (aelix's abort) while it waits, the
        turn's signal has fired: `abort_signal`, once per signal, then the cancellation goes on."""
        signal = _current_signal.get()
        try:
            return await effect
        except asyncio.CancelledError:
            if signal is not None and signal not in self.fired:
                self.fired.add(signal)
                try:
                    self.abort_signal(signal)
                except ProtocolUsageError:
                    pass  # the run was discarded (reset): nothing is written any more
            raise

    async def stream(self, model: Any, context: Any, options: Any) -> Any:
        """The provider registered for api `agentsim`: one `model_request` per call."""
        signal = self.signal_of_turn()
        request = {
            "systemPrompt": context.system_prompt if context.system_prompt else None,
            "messages": [aelix_to_pi(message) for message in context.messages],
            "tools": [
                {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
                for tool in context.tools
            ],
        }
        effect = self.effect("model_request", signal=signal, request=request)
        partial = A["AssistantMessage"](content=[], api=API, provider=PROVIDER, model=MODEL_ID)
        text = ""
        started = False
        streaming = effect.stream().__aiter__()
        while True:
            try:
                chunk = await self.awaited(streaming.__anext__())
            except StopAsyncIteration:
                break
            if not started:
                started = True
                yield A["AssistantStartEvent"](partial=partial)
                yield A["TextStartEvent"](content_index=0, partial=partial)
            text += chunk
            partial = dataclasses.replace(partial, content=[A["TextContent"](text=text)])
            yield A["TextDeltaEvent"](delta=chunk, content_index=0, partial=partial)
        completion = await self.awaited(effect)
        final = pi_to_aelix({"role": "assistant", **completion["message"]})
        if started:
            yield A["TextEndEvent"](content_index=0, content=text, partial=partial)
        else:
            yield A["AssistantStartEvent"](partial=partial)
        if final.stop_reason in ("error", "aborted"):
            yield A["AssistantErrorEvent"](reason=final.stop_reason, error=final, error_message=final.error_message)
        else:
            reason = final.stop_reason if final.stop_reason in ("stop", "length", "toolUse") else "stop"
            yield A["AssistantDoneEvent"](reason=reason, message=final)

    # -- operations --------------------------------------------------------------------------

    async def operation(self, op: int, operation: Dict[str, Any]) -> Any:
        if self.restore_failure is not None:
            raise Rejected(self.restore_failure["code"], self.restore_failure["message"])
        name = operation["op"]
        harness = self.harness
        try:
            if name == "prompt":
                turns = [0]
                _run_turns.set(turns)
                await harness.prompt(operation["text"])
                return self.run_value(turns[0])
            if name == "steer":
                await harness.steer(operation["text"])
                return UNIT
            if name == "followUp":
                await harness.follow_up(operation["text"])
                return UNIT
            if name == "abort":
                await harness.abort()
                return UNIT
            if name == "flush":
                # aelix has no flush: AgentHarness.wait_for_idle() waits for the current turn.
                await harness.wait_for_idle()
                return UNIT
            if name == "dispose":
                await (await self.runtime_host()).dispose()
                return UNIT
            if name == "mode":
                return await self.run_mode(operation["mode"], operation["text"])
        except Rejected:
            raise
        except Exception as error:  # noqa: BLE001 - the error aelix's caller gets
            kit_cause = getattr(error, "agentsim_cause", None)
            if kit_cause is not None:
                # The kit's own failure (a write's), which aelix let out unchanged.
                raise Rejected(*kit_cause) from None
            raise Rejected(str(getattr(error, "code", None) or type(error).__name__), str(error)) from None
        raise Rejected("adapter.unsupported", f"`{name}` is not supported")

    def run_value(self, turns: int) -> Dict[str, Any]:
        """`{kind: run, reason, steps, messages}`: ``steps`` is the number of turns aelix's loop
        started in the run (its ``turn_start`` events, see "Steps"), ``reason`` is the
        ``stop_reason`` of the transcript's last assistant message (what aelix's print mode
        reads), ``messages`` the transcript (``AgentHarness.messages``)."""
        last_reason = "stop"
        for message in reversed(self.harness.messages):
            if getattr(message, "role", None) == "assistant":
                last_reason = message.stop_reason or "stop"
                break
        return run_result(
            RUN_REASONS.get(last_reason, "stop"),
            turns,
            [aelix_to_pi(message) for message in self.harness.messages],
        )

    async def run_mode(self, mode: str, text: str) -> Any:
        """A mode is what aelix's command line does with its mode flags (``cli/entry.py``
        ``_async_main``): ``parse_args`` reads them, and a flag it refuses (``--mode yaml``:
        "Invalid --mode value") makes ``_async_main`` print the diagnostic and return 1 before
        anything runs; otherwise ``resolve_app_mode`` picks the mode and ``run_print_mode`` runs
        the prompt on the runtime host with ``to_print_output_mode``'s output. Exit code 0
        resolves with the run value; another rejects with ``exitCode.<n>`` and what the mode
        printed to stderr; an exception out of ``run_print_mode`` (it lets a broken pipe out)
        rejects as ``operation`` says."""
        argv = MODE_FLAGS.get(mode, ["--mode", mode])
        parsed = A["parse_args"](argv)
        printed: List[str] = []
        _mode_stderr.set(printed)
        turns = [0]
        _run_turns.set(turns)
        with self.mode_streams():
            if any(diagnostic["type"] == "error" for diagnostic in parsed.diagnostics):
                # aelix's own refusal: _async_main flushes the diagnostics and returns 1 at once
                # (the check precedes everything but the `extension`/`docs`/`status` verbs).
                exit_code = await A["_async_main"](argv)
            else:
                # A mode is a user's command: the interactive one is run from a terminal.
                app_mode = A["resolve_app_mode"](parsed, True)
                if app_mode == "interactive":
                    raise Rejected("adapter.unsupported", INTERACTIVE_UNSUPPORTED)
                if app_mode not in ("print", "json"):
                    # `--mode rpc` is aelix's command protocol on stdin and stdout, no one-shot run.
                    raise Rejected(
                        "adapter.unsupported",
                        f"aelix's {app_mode} mode is a command protocol, not a one-shot run: the adapter cannot drive it in process",
                    )
                host = await self.runtime_host()
                exit_code = await A["run_print_mode"](
                    host, mode=A["to_print_output_mode"](app_mode), messages=[], initial_message=text
                )
        if exit_code != 0:
            raise Rejected(f"exitCode.{exit_code}", "".join(printed).strip() or f"aelix returned exit code {exit_code}")
        return self.run_value(turns[0])

    @contextlib.contextmanager
    def mode_streams(self) -> Any:
        """``sys.stdout`` is the write sink and ``sys.stderr`` the tee while any mode runs."""
        if self.modes_running == 0:
            self.saved_streams = (sys.stdout, sys.stderr)
            sys.stdout, sys.stderr = ModeSink(self), StderrTee(sys.stderr)
        self.modes_running += 1
        try:
            yield
        finally:
            self.modes_running -= 1
            if self.modes_running == 0:
                self.restore_streams()

    def restore_streams(self) -> None:
        if self.saved_streams is not None:
            sys.stdout, sys.stderr = self.saved_streams
            self.saved_streams = None
        self.modes_running = 0

    # -- reset -------------------------------------------------------------------------------

    def reset(self) -> None:
        # The SDK has cancelled the run's tasks and closed its loop; what the run left in this
        # process is the adapter's own state (the harness, its session, its file system).
        self.fresh_run_state()
        _outside["ids"] = 0
        _outside["clock"] = 0


# ---------------------------------------------------------------------------------------------
# The system prompt, composed by aelix's product code (cli/entry.py): the configured prompt
# is `--system-prompt` (else aelix's default coding-agent prompt), then the append chunks:
# the AGENTS.md files aelix discovers from the working directory up, and the skills catalog
# (only when a `read` tool is active). The instructions are written as files into the fixed
# working directory for the moment of that discovery, under a lock, since adapter processes
# run side by side (`--jobs`).
# ---------------------------------------------------------------------------------------------


def compose_system_prompt(configured: Optional[str], resources: Dict[str, Any], tools: List[Any]) -> Any:
    parsed = A["Args"](system_prompt=configured)
    skills_root = os.path.join(AELIX_CWD, ".aelix", "skills")
    skills = [
        A["Skill"](
            name=skill["name"],
            description=skill["description"],
            content=skill.get("body", ""),
            file_path=os.path.join(skills_root, skill["name"], "SKILL.md"),
        )
        for skill in resources.get("skills", [])
    ]
    os.makedirs(os.path.dirname(AELIX_CWD_LOCK), exist_ok=True)
    with open(AELIX_CWD_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        written: List[str] = []
        try:
            for instruction in resources.get("instructions", []):
                path = os.path.normpath(os.path.join(AELIX_CWD, instruction["path"]))
                if not path.startswith(AELIX_CWD + os.sep):
                    continue  # outside the working directory: never written
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as file:
                    file.write(instruction["content"])
                written.append(path)
            base = A["_resolve_system_prompt"](parsed, AELIX_CWD, tools=tools)
            append = A["_resolve_append_chunks"](parsed, AELIX_CWD, skills=skills, live_tool_names=[tool.name for tool in tools])
        finally:
            for path in written:
                try:
                    os.remove(path)
                except OSError:
                    pass
            fcntl.flock(lock, fcntl.LOCK_UN)
    return base, append


# ---------------------------------------------------------------------------------------------
# aelix's tree walk (JsonlSessionStorage.get_path_to_root) has no cycle detection: on a parent
# cycle it never returns (and its path list grows without bound). The walk runs under a timer;
# when it trips, the timer's exception unwinds the walk and the run ends with a recoverable
# `aelix.hang` error naming the hang (RunBroken): the kit reports the run broken and keeps the
# process for the next run.
# ---------------------------------------------------------------------------------------------

# The bound on a restore's tree walk, paid in full on every run of a scenario whose walk hangs (6
# of the 474 schedules of CI's exploration: at 2 s, 474 schedules took 8.9 s on two threads; at
# 0.5 s, 4.0 s). A restore that ends takes well under a millisecond (over aelix's run of the
# corpus: median 0.07 ms, at most 0.28 ms).
WALK_SECONDS = 0.5


class _WalkTimeout(BaseException):
    pass


class _walk_time_limit:
    def __enter__(self) -> None:
        def trip(_signum: int, _frame: Any) -> None:
            raise _WalkTimeout()

        self.previous = _signal.signal(_signal.SIGALRM, trip)
        _signal.setitimer(_signal.ITIMER_REAL, WALK_SECONDS)

    def __exit__(self, *_exc: Any) -> None:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, self.previous)


# The provider: registered once per process in aelix's API registry; it serves the live run.
async def _provider(model: Any, context: Any, options: Any) -> Any:
    assert ADAPTER is not None
    async for event in ADAPTER.stream(model, context, options):
        yield event


A["api_registry"].register_provider(API, _provider, source_id="agentsim")


if __name__ == "__main__":
    serve(AelixAdapter())
