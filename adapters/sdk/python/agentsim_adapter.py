"""agentsim_adapter: write an agentsim adapter in Python.

An adapter is the process the kit drives through the JSON-lines protocol of
``docs/protocol.md`` (version 1) and its version-2 delta (``reset``, one process for many runs,
and the ``notify`` effect of extension event observers). This module owns everything about the
protocol, so that an adapter is only the *mapping* between the kit and a runtime:

- framing: one JSON object per line, UTF-8, at most 4 MiB; stdout carries protocol lines only
  (``serve`` points file descriptor 1, ``sys.stdout`` and ``print`` at stderr, and fd 0 at
  ``/dev/null``, so neither the runtime nor a child process can corrupt the protocol);
- turn-taking: ``hello`` first; after every kit line, the runtime runs until it is quiescent,
  then every ``effect``, ``abort_signal`` and ``settled`` is written in the order it happened,
  then exactly one ``idle`` (or one ``error``); nothing is ever written after ``idle`` until
  the kit writes again;
- strict parsing of kit lines: an unknown ``type``, an unknown, missing or mistyped field is
  answered with an ``error`` line (``input.*`` codes), never a crash;
- effect ids (1, 2, 3... per run) and the pending-effect table: a ``complete`` for an unknown
  effect is ``input.unknown_effect``, one of the wrong kind ``input.wrong_completion``;
- the ``ids`` and ``clock`` rules as per-run helpers (``self.ids.next()``, ``self.clock.now()``);
- ``reset`` (protocol 2), a ``start`` while a run is live (reset, then start), ``shutdown`` and
  end of input (exit 0);
- a run the mapping cannot go on with in a sound process (:class:`RunBroken`): an ``error``
  marked ``recoverable`` (protocol 2), the run discarded, the process kept for the next run.

The mapping subclasses :class:`Adapter` and implements ``start(scenario)`` and
``operation(op, operation)`` (plain or ``async``), and optionally ``hello()`` and ``reset()``.
The runtime issues effects with ``self.effect(kind, **fields)``, which returns an
:class:`Effect` (awaitable, or with callbacks) that the SDK resolves when the kit's
``complete`` arrives, or with ``self.effect_sync(kind, **fields)`` for runtimes whose store (or
model, or tool) API is synchronous. See README.md next to this file for the API reference and
the exact definition of quiescence.

Python >= 3.9, standard library only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as _dt
import inspect
import json
import os
import sys
import threading
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import (
    IO,
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Deque,
    Dict,
    Generator,
    List,
    Mapping,
    NoReturn,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypedDict,
    Union,
    cast,
)

__all__ = [
    "Adapter",
    "Effect",
    "Hello",
    "Started",
    "State",
    "RestoreFailed",
    "Rejected",
    "RunBroken",
    "ProtocolUsageError",
    "IdRule",
    "ClockRule",
    "UNIT",
    "run_result",
    "library_result",
    "cause",
    "iso_timestamp",
    "parse_kit_line",
    "check_adapter_message",
    "describe_message",
    "ShapeProblem",
    "ShapeError",
    "EFFECT_KINDS",
    "serve",
    "run",
    "SDK_VERSION",
    "PROTOCOL_VERSIONS",
    "LINE_BYTES_MAX",
]

SDK_VERSION = "0.1.0"

#: The protocol versions this SDK speaks; ``Adapter.protocol`` picks the one ``hello`` states.
PROTOCOL_VERSIONS: Tuple[int, ...] = (1, 2)

#: The longest line either side may write, newline excluded.
LINE_BYTES_MAX = 4 * 1024 * 1024

#: The operation names of ``operation.operation.op`` (and the keys of ``hello.unsupported``).
OPERATIONS: Tuple[str, ...] = ("prompt", "flush", "dispose", "steer", "followUp", "abort", "mode", "library")

#: Which ``completion.kind`` answers which ``effect.kind``. ``model_chunk`` is progress: the
#: model request stays pending until its ``model_final``.
COMPLETIONS_FOR_EFFECT: Mapping[str, Tuple[str, ...]] = {
    "model_request": ("model_chunk", "model_final"),
    "tool_call": ("tool",),
    "hook": ("hook",),
    "append": ("append",),
    "write": ("write",),
    "notify": ("notify",),
}

#: Run reasons of a ``run`` or ``library`` settlement value.
RUN_REASONS: Tuple[str, ...] = ("stop", "length", "error", "aborted", "max_steps")

_LOG_PREFIX = "[agentsim_adapter]"
#: The longest ``message`` the SDK writes in an ``error`` line of the mapping's (as the JavaScript
#: SDK: the rest is cut).
_ERROR_MESSAGE_MAX = 100_000
_U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1

# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------

#: Any JSON value as ``json.loads`` returns it.
JSON = Any
#: A JSON object.
JSONObject = Dict[str, Any]


class Cause(TypedDict):
    """An error value: two causes are "the same" when both fields are equal."""

    code: str
    message: str


class Operation(TypedDict, total=False):
    """``operation.operation``: ``op`` is one of :data:`OPERATIONS`; ``text`` for prompt, steer,
    followUp, mode and library; ``mode`` for mode."""

    op: str
    text: str
    mode: str


class Completion(TypedDict, total=False):
    """``complete.completion``: ``kind`` and that kind's fields (docs/protocol.md)."""

    kind: str
    text: str
    message: JSONObject
    outcome: JSONObject
    answer: JSONObject


class Scenario(TypedDict, total=False):
    """``start.scenario``. ``observers`` is present only when the scenario has some (protocol 2);
    ``chunks`` (informational) only when a scripted model response streams chunks.
    Session entries, messages, resources and tools are Pi's JSON shapes, passed through as
    parsed."""

    config: JSONObject
    session: List[JSONObject]
    resources: JSONObject
    tools: List[JSONObject]
    extensions: List[str]
    ids: JSONObject
    clock: JSONObject
    faults: JSONObject
    observers: List[JSONObject]
    chunks: List[int]


#: A settlement value: ``{"kind": "unit"}``, ``{"kind": "run", ...}`` or ``{"kind": "library", ...}``.
Value = JSONObject

#: ``{"kind": "unit"}``: what flush, dispose, steer, followUp and abort resolve with.
UNIT: Value = {"kind": "unit"}


def run_result(reason: str, steps: int, messages: Sequence[JSONObject]) -> Value:
    """The value a prompt or a mode resolves with: ``{"kind":"run","reason","steps","messages"}``."""
    return {"kind": "run", "reason": reason, "steps": steps, "messages": list(messages)}


def library_result(reason: str, text: str) -> Value:
    """The value of the library adapter: ``{"kind":"library","reason","text"}``."""
    return {"kind": "library", "reason": reason, "text": text}


def cause(code: str, message: str) -> Cause:
    """``{"code": code, "message": message}``."""
    return {"code": code, "message": message}


def iso_timestamp(ms: int) -> str:
    """Milliseconds since the epoch as JavaScript's ``Date.prototype.toISOString`` writes them
    (``2026-01-01T00:00:05.000Z``): what Pi writes in an entry's ``timestamp``."""
    seconds, millis = divmod(ms, 1000)
    moment = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % millis


class ProtocolUsageError(TypeError):
    """The mapping asked the SDK for something that would break the protocol (an effect of an
    unknown kind or with wrong fields, a second settlement, an effect outside a run, ...). It is
    raised in the mapping's own stack, before anything is written."""


class Rejected(Exception):
    """Raise it from ``operation`` (or an operation's coroutine) to settle the operation as
    rejected with ``{"code", "message"}``: the error the runtime's caller got."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    @classmethod
    def from_cause(cls, value: Mapping[str, Any]) -> "Rejected":
        return cls(str(value["code"]), str(value["message"]))

    @property
    def cause(self) -> Cause:
        return {"code": self.code, "message": self.message}


class RunBroken(Exception):
    """Raise it from ``start`` or ``operation`` (or their coroutines) when the runtime cannot go
    on with this run but the process is sound: say, a walk of the runtime's that the adapter
    stopped at a time limit, whose stack was unwound, so that nothing of it runs on. The SDK
    writes an ``error`` line marked ``recoverable`` with ``code`` and ``message``, discards the
    run (nothing it does afterwards reaches the kit) and ends the turn with ``idle``; the kit
    reports the run broken, writes ``reset`` and serves the next run on this process instead of
    starting a new one. Under protocol 1 (no ``reset``) the turn ends with an unmarked ``error``
    instead of ``idle``, as for the mapping's other errors, and the kit stops the process.

    Not for a runtime that still runs (a thread the adapter gave up on): it would run on into
    the next run. Let such an error end the process (any other exception)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass
class Hello:
    """What ``hello`` says besides the protocol version. ``features`` lists supported
    operations and behaviours (``steer``, ``followUp``, ``abort``, ``mode``, ``library``,
    ``chunks``, ``sync-store``, ``observers``); ``unsupported`` maps an operation or behaviour
    to the reason it is not supported (the kit reports scenarios using it *not applicable*).
    ``probes`` (protocol 2) lists what the adapter reports of its runtime at every ``idle``:
    ``state`` (the adapter's :meth:`Adapter.state`)."""

    name: str
    version: str
    features: List[str] = field(default_factory=list)
    unsupported: Dict[str, str] = field(default_factory=dict)
    probes: List[str] = field(default_factory=list)


@dataclass
class State:
    """The runtime's own state, as :meth:`Adapter.state` reports it for the state probe: the id
    of the entry its leaf names (None: none) and how many appends it counts as persisted
    (accepted by the store) since it was restored. Read from the runtime, never computed."""

    leaf: Optional[str]
    persisted: int


@dataclass
class Started:
    """``start`` succeeded: the restored leaf and the restored transcript's length."""

    leaf: Optional[str]
    messages: int


@dataclass
class RestoreFailed:
    """``start`` failed: the runtime rejected the session or leaf (``restore.*``/``path.*``)."""

    code: str
    message: str


StartResult = Union[Started, RestoreFailed, None]


class IdRule:
    """The scenario's ``ids`` rule: the k-th call (0-based) returns ``prefix + str(start + k)``.
    One per run; a new run starts again at k = 0."""

    def __init__(self, prefix: str, start: int) -> None:
        self.prefix = prefix
        self.start = start
        self.count = 0

    def next(self) -> str:
        value = f"{self.prefix}{self.start + self.count}"
        self.count += 1
        return value

    __call__ = next


class ClockRule:
    """The scenario's ``clock`` rule: the k-th reading (0-based) is ``start_ms + k * step_ms``.
    One per run; a new run starts again at k = 0. Every call of ``now``/``now_iso`` is one
    reading."""

    def __init__(self, start_ms: int, step_ms: int) -> None:
        self.start_ms = start_ms
        self.step_ms = step_ms
        self.count = 0

    def now(self) -> int:
        value = self.start_ms + self.count * self.step_ms
        self.count += 1
        return value

    def now_iso(self) -> str:
        """One reading, as an ISO-8601 timestamp (:func:`iso_timestamp`)."""
        return iso_timestamp(self.now())

    __call__ = now


# ---------------------------------------------------------------------------------------------
# Strict parsing
# ---------------------------------------------------------------------------------------------


class InputError(Exception):
    """A kit line the adapter cannot apply; answered with an ``error`` line."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


Checker = Callable[[Any, str], None]


def _quote(text: str, limit: int = 80) -> str:
    cut = text if len(text) <= limit else text[:limit] + "\u2026"
    return json.dumps(cut, ensure_ascii=False)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _malformed(where: str, problem: str) -> InputError:
    return InputError("input.malformed", f"`{where}`: {problem}")


def _any(value: Any, where: str) -> None:
    return None


def _string(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise _malformed(where, f"expected a string, got {_describe(value)}")


def _boolean(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        raise _malformed(where, f"expected a boolean, got {_describe(value)}")


def _object(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise _malformed(where, f"expected an object, got {_describe(value)}")


def _integer(low: int, high: int) -> Checker:
    def check(value: Any, where: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _malformed(where, f"expected an integer, got {_describe(value)}")
        if not low <= value <= high:
            raise _malformed(where, f"{value} is out of range {low}..={high}")

    return check


def _nullable(inner: Checker) -> Checker:
    def check(value: Any, where: str) -> None:
        if value is not None:
            inner(value, where)

    return check


def _one_of(*choices: str) -> Checker:
    def check(value: Any, where: str) -> None:
        if value not in choices:
            shown = _quote(value) if isinstance(value, str) else _describe(value)
            raise _malformed(where, f"{shown} is not one of {', '.join(choices)}")

    return check


def _list_of(inner: Checker) -> Checker:
    def check(value: Any, where: str) -> None:
        if not isinstance(value, list):
            raise _malformed(where, f"expected an array, got {_describe(value)}")
        for index, item in enumerate(value):
            inner(item, f"{where}[{index}]")

    return check


def _fields(required: Mapping[str, Checker], optional: Optional[Mapping[str, Checker]] = None) -> Checker:
    """An object with exactly these keys: every required one, any optional one, nothing else.
    (An optional key is what the kit's wire types declare ``Option``: absent or null.)"""
    optional = optional or {}

    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise _malformed(where, f"expected an object, got {_describe(value)}")
        for key in value:
            if key not in required and key not in optional:
                raise _malformed(f"{where}.{key}", "unknown field")
        for key, inner in required.items():
            if key not in value:
                raise _malformed(f"{where}.{key}", "missing field")
            inner(value[key], f"{where}.{key}")
        for key, inner in optional.items():
            if key in value:
                inner(value[key], f"{where}.{key}")

    return check


Variant = Tuple[Mapping[str, Checker], Mapping[str, Checker]]


def _tagged(tag: str, variants: Mapping[str, Variant]) -> Checker:
    """An object whose ``tag`` key picks one of ``variants``, each with its own exact keys."""

    def check(value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise _malformed(where, f"expected an object, got {_describe(value)}")
        if tag not in value:
            raise _malformed(f"{where}.{tag}", "missing field")
        name = value[tag]
        if not isinstance(name, str) or name not in variants:
            shown = _quote(name) if isinstance(name, str) else _describe(name)
            raise _malformed(f"{where}.{tag}", f"{shown} is not one of {', '.join(variants)}")
        required, optional = variants[name]
        _fields({tag: _any, **required}, optional)(value, where)

    return check


_U32 = _integer(0, _U32_MAX)
_U64 = _integer(0, _U64_MAX)
_CAUSE = _fields({"code": _string, "message": _string})
_NO_FIELDS: Mapping[str, Checker] = {}


def _typed_object(value: Any, where: str) -> None:
    """A Pi shape passed through as is: an object with a string ``type``."""
    _object(value, where)
    if not isinstance(value.get("type"), str):
        raise _malformed(f"{where}.type", f"expected a string, got {_describe(value.get('type'))}")


def _assistant_message(value: Any, where: str) -> None:
    _object(value, where)
    if value.get("role") != "assistant":
        raise _malformed(f"{where}.role", "expected an assistant message (`role`: `assistant`)")


_SCENARIO_FIELDS: Mapping[str, Checker] = {
    "config": _fields(
        {
            "maxSteps": _U32,
            "context": _fields({"total": _U64, "reservedOutput": _U64, "safetyMargin": _U64}),
        },
        {"activeLeafId": _nullable(_string), "systemPrompt": _nullable(_string)},
    ),
    "session": _list_of(_typed_object),
    "resources": _object,
    "tools": _list_of(_object),
    "extensions": _list_of(_string),
    "ids": _fields({"prefix": _string, "start": _U64}),
    "clock": _fields({"startMs": _U64, "stepMs": _U64}),
    "faults": _fields(
        {
            "appends": _list_of(
                _fields({"at": _U32, "fault": _string}, {"error": _nullable(_CAUSE), "until": _any})
            ),
            "writes": _list_of(_fields({"at": _U32, "error": _CAUSE})),
        }
    ),
}
_OBSERVERS: Mapping[str, Checker] = {"observers": _list_of(_fields({"name": _string, "events": _list_of(_string)}))}
# Informational: the chunks each scripted model response streams (absent when none does).
_CHUNKS: Mapping[str, Checker] = {"chunks": _list_of(_U32)}

_TEXT: Mapping[str, Checker] = {"text": _string}

_OPERATION = _tagged(
    "op",
    {
        "prompt": (_TEXT, _NO_FIELDS),
        "flush": (_NO_FIELDS, _NO_FIELDS),
        "dispose": (_NO_FIELDS, _NO_FIELDS),
        "steer": (_TEXT, _NO_FIELDS),
        "followUp": (_TEXT, _NO_FIELDS),
        "abort": (_NO_FIELDS, _NO_FIELDS),
        "mode": ({"mode": _string, "text": _string}, _NO_FIELDS),
        "library": (_TEXT, _NO_FIELDS),
    },
)

_CONTENT = _list_of(_typed_object)
_MESSAGE_TEXT: Mapping[str, Checker] = {"message": _string}

_COMPLETION_VARIANTS: Mapping[str, Variant] = {
    "model_chunk": (_TEXT, _NO_FIELDS),
    "model_final": ({"message": _assistant_message}, _NO_FIELDS),
    "tool": (
        {
            "outcome": _tagged(
                "kind",
                {
                    "ok": ({"content": _CONTENT, "isError": _boolean}, {"details": _any}),
                    "threw": (_MESSAGE_TEXT, _NO_FIELDS),
                    "aborted": (_NO_FIELDS, _NO_FIELDS),
                },
            )
        },
        _NO_FIELDS,
    ),
    "hook": (
        {
            "answer": _tagged(
                "kind",
                {
                    "allow": (_NO_FIELDS, _NO_FIELDS),
                    "deny": ({"reason": _string}, _NO_FIELDS),
                    "rewrite_arguments": ({"arguments": _any}, _NO_FIELDS),
                    "observe": (_NO_FIELDS, _NO_FIELDS),
                    "rewrite_result": ({"content": _CONTENT, "isError": _boolean}, _NO_FIELDS),
                    "threw": (_MESSAGE_TEXT, _NO_FIELDS),
                },
            )
        },
        _NO_FIELDS,
    ),
    "append": (
        {"outcome": _tagged("kind", {"ok": (_NO_FIELDS, _NO_FIELDS), "failed": ({"cause": _CAUSE}, _NO_FIELDS)})},
        _NO_FIELDS,
    ),
    "write": (
        {"outcome": _tagged("kind", {"ok": (_NO_FIELDS, _NO_FIELDS), "failed": ({"cause": _CAUSE}, _NO_FIELDS)})},
        _NO_FIELDS,
    ),
}
_NOTIFY: Mapping[str, Variant] = {
    "notify": (
        {"outcome": _tagged("kind", {"ok": (_NO_FIELDS, _NO_FIELDS), "threw": (_MESSAGE_TEXT, _NO_FIELDS)})},
        _NO_FIELDS,
    ),
}


def _kit_messages(protocol: int) -> Mapping[str, Variant]:
    """The kit's messages in ``protocol``: version 2 adds ``reset``, ``start.scenario.observers``
    and the ``notify`` completion."""
    two = protocol >= 2
    scenario = _fields(_SCENARIO_FIELDS, {**_OBSERVERS, **_CHUNKS} if two else _CHUNKS)
    completion = _tagged("kind", {**_COMPLETION_VARIANTS, **(_NOTIFY if two else {})})
    messages: Dict[str, Variant] = {
        "start": ({"scenario": scenario}, _NO_FIELDS),
        "operation": ({"op": _U32, "operation": _OPERATION}, _NO_FIELDS),
        "complete": ({"effect": _U32, "completion": completion}, _NO_FIELDS),
        "shutdown": (_NO_FIELDS, _NO_FIELDS),
    }
    if two:
        messages["reset"] = (_NO_FIELDS, _NO_FIELDS)
    return messages


_KIT_MESSAGES: Mapping[int, Mapping[str, Variant]] = {version: _kit_messages(version) for version in PROTOCOL_VERSIONS}


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: List[Tuple[str, Any]]) -> JSONObject:
    result: JSONObject = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(f"duplicate key {_quote(key)}")
        result[key] = value
    return result


def parse_kit_line(line: Union[bytes, str], protocol: int = 2) -> JSONObject:
    """Reads one kit line (without its newline) strictly, as the SDK does before acting on it,
    for the ``protocol`` version the adapter stated.

    Raises :class:`InputError` with ``input.garbage`` (not UTF-8, not JSON, not an object),
    ``input.unknown_type`` or ``input.malformed`` (a missing, mistyped or unknown field, at any
    depth of the protocol's own shapes). Pi's shapes inside (session entries, messages, tools,
    resources) are passed through as parsed: only their being objects (with a string ``type``
    where Pi has one) is checked."""
    if isinstance(line, bytes):
        if len(line) > LINE_BYTES_MAX:
            raise InputError("input.oversize", f"a line of {len(line)} bytes; the limit is {LINE_BYTES_MAX}")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError("input.garbage", f"not UTF-8: {error}") from None
    else:
        text = line
    try:
        message = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except _DuplicateKey as error:
        raise InputError("input.malformed", str(error)) from None
    except ValueError as error:
        raise InputError("input.garbage", f"not JSON ({error}): {_quote(text)}") from None
    if not isinstance(message, dict):
        raise InputError("input.garbage", f"not a JSON object: {_quote(text)}")
    known = _KIT_MESSAGES[protocol]
    type_name = message.get("type")
    if not isinstance(type_name, str) or type_name not in known:
        shown = _quote(type_name) if isinstance(type_name, str) else _describe(type_name)
        raise InputError("input.unknown_type", f"unknown message type {shown} (protocol {protocol})")
    required, optional = known[type_name]
    _fields({"type": _any, **required}, optional)(message, type_name)
    return message


# ---------------------------------------------------------------------------------------------
# What the adapter writes: every line is checked against the kit's own shapes before it is
# written, so that a mapping bug (an assistant message without `role`, a tool result whose
# `content` is a string) ends the turn with `adapter.malformed` naming the field, and the line
# never reaches the kit.
#
# The tables mirror the kit's (src/protocol/shape.rs) field for field, with the same paths and
# the same words; tests/fixtures/protocol/lines.json holds all three to the same answers
# (tests/test_lines.py). docs/protocol.md, "Message shapes" and "Errors in adapter lines".
# ---------------------------------------------------------------------------------------------

_MALFORMED = "wire.malformed"

#: The effect kinds, in the protocol's order (``effect.kind``).
EFFECT_KINDS: Tuple[str, ...] = ("model_request", "tool_call", "hook", "append", "write", "notify")

Shape = Dict[str, Any]


def _leaf(kind: str) -> Shape:
    return {"kind": kind}


_STRING, _BOOLEAN, _U32_SHAPE, _U64_SHAPE, _NUMBER, _ANY = map(_leaf, ("string", "boolean", "u32", "u64", "number", "any"))
_STR_MAP, _VERSION, _USER_CONTENT = map(_leaf, ("strMap", "version", "userContent"))


def _nullable_shape(inner: Shape) -> Shape:
    return {"kind": "nullable", "inner": inner}


def _array_shape(item: Shape) -> Shape:
    return {"kind": "array", "item": item}


def _enum_shape(*names: str) -> Shape:
    return {"kind": "enum", "names": names}


def _req(name: str, shape: Shape) -> Tuple[str, Shape, bool]:
    return (name, shape, False)


def _opt(name: str, shape: Shape) -> Tuple[str, Shape, bool]:
    return (name, shape, True)


def _closed(fields: Sequence[Tuple[str, Shape, bool]]) -> Shape:
    return {"kind": "record", "fields": tuple(fields), "closed": True}


def _open(fields: Sequence[Tuple[str, Shape, bool]]) -> Shape:
    return {"kind": "record", "fields": tuple(fields), "closed": False}


def _tagged_shape(tag: str, variants: Sequence[Tuple[str, Shape]], unknown: str = _MALFORMED, missing: str = _MALFORMED) -> Shape:
    return {"kind": "tagged", "tag": tag, "variants": tuple(variants), "unknown_code": unknown, "missing_code": missing}


_CAUSE_SHAPE = _closed([_req("code", _STRING), _req("message", _STRING)])
_CONTENT_BLOCK = _tagged_shape(
    "type",
    [("text", _open([_req("text", _STRING)])), ("image", _open([_req("data", _STRING), _req("mimeType", _STRING)]))],
)
_TOOL_CALL = _open([_req("id", _STRING), _req("name", _STRING), _req("arguments", _ANY)])
_ASSISTANT_BLOCK = _tagged_shape(
    "type",
    [
        ("text", _open([_req("text", _STRING)])),
        ("thinking", _open([_req("thinking", _STRING)])),
        ("toolCall", _open([_req("id", _STRING), _req("name", _STRING), _req("arguments", _ANY)])),
    ],
)
_COST = _open([_req(name, _NUMBER) for name in ("input", "output", "cacheRead", "cacheWrite", "total")])
_USAGE = _open([*(_req(name, _U64_SHAPE) for name in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")), _req("cost", _COST)])
_TOOL_RESULT_FIELDS = [
    _req("toolCallId", _STRING),
    _req("toolName", _STRING),
    _req("content", _array_shape(_CONTENT_BLOCK)),
    _opt("details", _ANY),
    _req("isError", _BOOLEAN),
    _req("timestamp", _U64_SHAPE),
]
_TOOL_RESULT = _open(_TOOL_RESULT_FIELDS)
_MESSAGE = _tagged_shape(
    "role",
    [
        ("user", _closed([_req("content", _USER_CONTENT), _req("timestamp", _U64_SHAPE)])),
        (
            "assistant",
            _open(
                [
                    _req("content", _array_shape(_ASSISTANT_BLOCK)),
                    _req("api", _STRING),
                    _req("provider", _STRING),
                    _req("model", _STRING),
                    _req("usage", _USAGE),
                    _req("stopReason", _enum_shape("stop", "length", "toolUse", "error", "aborted")),
                    _opt("errorMessage", _nullable_shape(_STRING)),
                    _req("timestamp", _U64_SHAPE),
                ]
            ),
        ),
        ("toolResult", _open(_TOOL_RESULT_FIELDS)),
    ],
)
_MESSAGES = _array_shape(_MESSAGE)
_ENTRY_IDENTITY = [_req("id", _STRING), _req("parentId", _nullable_shape(_STRING)), _req("timestamp", _STRING)]
_METADATA = _open(_ENTRY_IDENTITY)
_ENTRY = _tagged_shape(
    "type",
    [
        ("message", _open([*_ENTRY_IDENTITY, _req("message", _MESSAGE)])),
        (
            "compaction",
            _open([*_ENTRY_IDENTITY, _req("summary", _STRING), _req("firstKeptEntryId", _STRING), _req("tokensBefore", _U64_SHAPE)]),
        ),
        *((name, _METADATA) for name in ("branch_summary", "model_change", "thinking_level_change", "custom", "custom_message", "label", "session_info")),
    ],
)
_TOOL_SPEC = _closed([_req("name", _STRING), _opt("description", _STRING), _opt("parameters", _ANY)])
_EVENT = _tagged_shape(
    "type",
    [
        ("message_end", _closed([_req("message", _MESSAGE)])),
        ("turn_end", _closed([_req("message", _MESSAGE), _req("toolResults", _MESSAGES)])),
        ("agent_end", _closed([_req("messages", _MESSAGES)])),
    ],
)
_EFFECT = _tagged_shape(
    "kind",
    [
        (
            "model_request",
            _closed(
                [
                    _req("id", _U32_SHAPE),
                    _req("signal", _U32_SHAPE),
                    _req(
                        "request",
                        _closed([_opt("systemPrompt", _nullable_shape(_STRING)), _req("messages", _MESSAGES), _req("tools", _array_shape(_TOOL_SPEC))]),
                    ),
                ]
            ),
        ),
        ("tool_call", _closed([_req("id", _U32_SHAPE), _req("signal", _U32_SHAPE), _req("call", _TOOL_CALL)])),
        (
            "hook",
            _closed(
                [
                    _req("id", _U32_SHAPE),
                    _req("extension", _STRING),
                    _req("phase", _enum_shape("before", "after")),
                    _req("call", _TOOL_CALL),
                    _opt("result", _nullable_shape(_TOOL_RESULT)),
                ]
            ),
        ),
        ("append", _closed([_req("id", _U32_SHAPE), _req("entry", _ENTRY)])),
        ("write", _closed([_req("id", _U32_SHAPE), _req("text", _STRING)])),
        ("notify", _closed([_req("id", _U32_SHAPE), _req("observer", _STRING), _req("event", _EVENT)])),
    ],
    unknown="wire.unknown_effect_kind",
)
_RUN_REASON = _enum_shape(*RUN_REASONS)
_SETTLEMENT = _tagged_shape(
    "status",
    [
        (
            "resolved",
            _closed(
                [
                    _req(
                        "value",
                        _tagged_shape(
                            "kind",
                            [
                                ("unit", _closed([])),
                                ("run", _closed([_req("reason", _RUN_REASON), _req("steps", _U32_SHAPE), _req("messages", _MESSAGES)])),
                                ("library", _closed([_req("reason", _RUN_REASON), _req("text", _STRING)])),
                            ],
                        ),
                    )
                ]
            ),
        ),
        ("rejected", _closed([_req("cause", _CAUSE_SHAPE)])),
    ],
)
_ADAPTER_MESSAGE = _tagged_shape(
    "type",
    [
        (
            "hello",
            _closed(
                [
                    _req("protocol", _VERSION),
                    _req("implementation", _closed([_req("name", _STRING), _req("version", _STRING)])),
                    _opt("features", _array_shape(_STRING)),
                    _opt("unsupported", _STR_MAP),
                    _opt("probes", _array_shape(_enum_shape("state"))),
                ]
            ),
        ),
        ("started", _closed([_opt("leaf", _nullable_shape(_STRING)), _req("messages", _U64_SHAPE)])),
        ("restore_failed", _closed([_req("cause", _CAUSE_SHAPE)])),
        ("effect", _closed([_req("effect", _EFFECT)])),
        ("abort_signal", _closed([_req("signal", _U32_SHAPE)])),
        ("settled", _closed([_req("op", _U32_SHAPE), _req("settlement", _SETTLEMENT)])),
        (
            "idle",
            _closed(
                [
                    _opt(
                        "state",
                        _nullable_shape(_closed([_opt("leaf", _nullable_shape(_STRING)), _req("persisted", _U64_SHAPE)])),
                    )
                ]
            ),
        ),
        ("error", _closed([_req("code", _STRING), _req("message", _STRING), _opt("recoverable", _BOOLEAN)])),
    ],
    unknown="wire.unknown_type",
    missing="wire.unknown_type",
)


#: Each effect kind's fields after ``kind`` and ``id``, in the order the protocol lists them.
_EFFECT_FIELD_ORDER: Mapping[str, Tuple[str, ...]] = {
    name: tuple(field for field, _, _ in record["fields"] if field != "id") for name, record in _EFFECT["variants"]
}


@dataclass(frozen=True)
class ShapeProblem:
    """Where an adapter line departs from the kit's shapes (docs/protocol.md, "Errors in adapter
    lines"): ``code`` is ``wire.malformed``, ``wire.unknown_type``, ``wire.unknown_effect_kind``
    or ``wire.version``; ``path`` the JSON path of the bad value (``effect.entry.message.role``);
    ``expected`` what the shape wants there, in the kit's words; ``got`` what the line has."""

    code: str
    path: str
    expected: str
    got: str

    def __str__(self) -> str:
        return f"`{self.path}`: expected {self.expected}, got {self.got}"


class ShapeError(ProtocolUsageError):
    """The mapping asked for a line the kit would refuse: raised in its stack, after the turn
    was marked to end with ``adapter.malformed``. ``problem`` says where and why."""

    def __init__(self, message: str, problem: ShapeProblem) -> None:
        super().__init__(message)
        self.problem = problem


class _Mismatch(Exception):
    def __init__(self, code: str, path: Tuple[Union[str, int], ...], expected: str, got: str) -> None:
        super().__init__(code)
        self.problem = ShapeProblem(code, _render_path(path), expected, got)


def _render_path(path: Sequence[Union[str, int]]) -> str:
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        else:
            text = step if text == "" else f"{text}.{step}"
    return text


_MISSING = "nothing (the field is missing)"


def _got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 40 else value[:40] + "\u2026", ensure_ascii=False)
    return "an array" if isinstance(value, list) else "an object"


def _one_of_names(names: Sequence[str]) -> str:
    return "one of " + ", ".join(f'"{name}"' for name in names)


def _expected(shape: Shape) -> str:
    kind = shape["kind"]
    if kind == "nullable":
        return f"{_expected(shape['inner'])} or null"
    if kind == "enum":
        return _one_of_names(shape["names"])
    if kind == "version":
        return "one of " + ", ".join(str(version) for version in PROTOCOL_VERSIONS)
    return {
        "string": "a string",
        "boolean": "a boolean",
        "u32": "an integer from 0 to 4294967295",
        "u64": "a non-negative integer",
        "number": "a number",
        "any": "any JSON value",
        "array": "an array",
        "userContent": "a string or an array",
    }.get(kind, "an object")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_shape(shape: Shape, value: Any, path: Tuple[Union[str, int], ...]) -> None:
    kind = shape["kind"]

    def wrong() -> NoReturn:
        raise _Mismatch(_MALFORMED, path, _expected(shape), _got(value))

    if kind == "string":
        if not isinstance(value, str):
            wrong()
    elif kind == "boolean":
        if not isinstance(value, bool):
            wrong()
    elif kind == "u32":
        if not (_is_int(value) and 0 <= value <= _U32_MAX):
            wrong()
    elif kind == "u64":
        if not (_is_int(value) and 0 <= value <= _U64_MAX):
            wrong()
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            wrong()
    elif kind == "any":
        pass
    elif kind == "nullable":
        if value is None:
            return
        try:
            _check_shape(shape["inner"], value, path)
        except _Mismatch as mismatch:
            # The inner shape's own complaint names a deeper path; a wrong kind here is ours.
            if mismatch.problem.path == _render_path(path):
                raise _Mismatch(mismatch.problem.code, path, _expected(shape), mismatch.problem.got) from None
            raise
    elif kind == "array":
        if not isinstance(value, list):
            wrong()
        for index, item in enumerate(value):
            _check_shape(shape["item"], item, (*path, index))
    elif kind == "strMap":
        if not isinstance(value, dict):
            wrong()
        for key, item in value.items():
            _check_shape(_STRING, item, (*path, key))
    elif kind == "enum":
        if not (isinstance(value, str) and value in shape["names"]):
            wrong()
    elif kind == "version":
        if not (_is_int(value) and value in PROTOCOL_VERSIONS):
            raise _Mismatch("wire.version", path, _expected(shape), _got(value))
    elif kind == "userContent":
        if isinstance(value, str):
            return
        if not isinstance(value, list):
            wrong()
        _check_shape(_array_shape(_CONTENT_BLOCK), value, path)
    elif kind == "record":
        if not isinstance(value, dict):
            wrong()
        _check_record(shape, None, value, path)
    elif kind == "tagged":
        if not isinstance(value, dict):
            wrong()
        tag = shape["tag"]
        names = [name for name, _ in shape["variants"]]
        if tag not in value:
            raise _Mismatch(shape["missing_code"], (*path, tag), _one_of_names(names), _MISSING)
        variant = next((record for name, record in shape["variants"] if isinstance(value[tag], str) and name == value[tag]), None)
        if variant is None:
            raise _Mismatch(shape["unknown_code"], (*path, tag), _one_of_names(names), _got(value[tag]))
        _check_record(variant, tag, value, path)
    else:
        raise AssertionError(f"unknown shape {kind}")


def _check_record(record: Shape, tag: Optional[str], value: JSONObject, path: Tuple[Union[str, int], ...]) -> None:
    fields = record["fields"]
    if record["closed"]:
        known = [name for name, _, _ in fields]
        for key, item in value.items():
            if key == tag or key in known:
                continue
            names = ([tag] if tag is not None else []) + known
            listed = ", ".join(names) if names else "none"
            raise _Mismatch(_MALFORMED, (*path, key), f"no such field (fields: {listed})", _got(item))
    for name, shape, optional in fields:
        if name not in value:
            if optional:
                continue
            code = "wire.version" if shape["kind"] == "version" else _MALFORMED
            raise _Mismatch(code, (*path, name), _expected(shape), _MISSING)
        _check_shape(shape, value[name], (*path, name))


def check_adapter_message(message: Any) -> Optional[ShapeProblem]:
    """Where ``message`` (an adapter line as ``json.loads`` reads it) departs from the kit's
    shapes, or None if it fits. The SDK checks every line it writes with it."""
    try:
        _check_shape(_ADAPTER_MESSAGE, message, ())
    except _Mismatch as mismatch:
        return mismatch.problem
    return None


def describe_message(message: Any) -> str:
    """What a line is about, as the kit's verdicts say it: ``effect append fx#6``,
    ``settlement of op#1``, or the message type."""
    type_name = message.get("type") if isinstance(message, dict) else None
    type_name = type_name if isinstance(type_name, str) else "line"
    if type_name == "effect":
        effect = message.get("effect")
        effect = effect if isinstance(effect, dict) else {}
        kind, effect_id = effect.get("kind"), effect.get("id")
        text = "effect"
        if isinstance(kind, str):
            text += " " + kind[:40]
        if _is_int(effect_id) and 0 <= effect_id <= _U64_MAX:
            text += f" fx#{effect_id}"
        return text
    if type_name == "settled":
        op = message.get("op")
        return f"settlement of op#{op}" if _is_int(op) and 0 <= op <= _U64_MAX else "settlement"
    return f"`{type_name[:40]}`"


def _usage(checker: Checker, value: Any, where: str) -> None:
    try:
        checker(value, where)
    except InputError as error:
        raise ProtocolUsageError(error.message) from None


def _dump(message: JSONObject) -> bytes:
    """One protocol line (newline included), compact UTF-8 JSON, never NaN."""
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ProtocolUsageError(f"not JSON-serializable: {error}") from None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (from a JSON escape): escape it instead of writing invalid UTF-8.
        data = json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")
    if len(data) > LINE_BYTES_MAX:
        raise ProtocolUsageError(f"a `{message.get('type')}` line of {len(data)} bytes; the limit is {LINE_BYTES_MAX}")
    return data + b"\n"


# ---------------------------------------------------------------------------------------------
# The event loop and quiescence
# ---------------------------------------------------------------------------------------------


class _SdkLoop(asyncio.SelectorEventLoop):
    """The event loop of one run. It is an ordinary selector loop that also keeps account, via
    the public scheduling methods every asyncio component goes through (``call_soon``,
    ``call_soon_threadsafe``, ``call_at``/``call_later``, ``run_in_executor``), of the work it
    holds: callbacks scheduled and not yet run (task steps, future callbacks), timers, and jobs
    running on threads. The driver asks it whether anything is runnable (quiescence)."""

    def __init__(self) -> None:
        super().__init__()
        self._sdk_lock = threading.Lock()
        self._sdk_token = 0
        self._sdk_ready: Dict[int, asyncio.Handle] = {}
        self._sdk_timers: Dict[int, asyncio.TimerHandle] = {}
        self._sdk_jobs: Set["asyncio.Future[Any]"] = set()

    # -- bookkeeping ------------------------------------------------------------------------
    # (The overrides keep the base signatures; typeshed spells them with TypeVarTuple, which
    # Python 3.9 cannot, hence the `type: ignore[override]`.)

    def _sdk_next_token(self) -> int:
        self._sdk_token += 1
        return self._sdk_token

    def _sdk_run_ready(self, token: int, callback: Callable[..., Any], args: Tuple[Any, ...]) -> None:
        with self._sdk_lock:
            self._sdk_ready.pop(token, None)
        callback(*args)

    def _sdk_run_timer(self, token: int, callback: Callable[..., Any], args: Tuple[Any, ...]) -> None:
        self._sdk_timers.pop(token, None)
        callback(*args)

    def call_soon(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.Handle:  # type: ignore[override]
        with self._sdk_lock:
            token = self._sdk_next_token()
            handle = super().call_soon(self._sdk_run_ready, token, callback, args, context=context)
            self._sdk_ready[token] = handle
        return handle

    def call_soon_threadsafe(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.Handle:  # type: ignore[override]
        # Under the lock: the loop's thread cannot run (and forget) the callback before it is
        # recorded.
        with self._sdk_lock:
            token = self._sdk_next_token()
            handle = super().call_soon_threadsafe(self._sdk_run_ready, token, callback, args, context=context)
            self._sdk_ready[token] = handle
        return handle

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any, context: Any = None) -> asyncio.TimerHandle:  # type: ignore[override]
        with self._sdk_lock:
            token = self._sdk_next_token()
        handle = super().call_at(when, self._sdk_run_timer, token, callback, args, context=context)
        self._sdk_timers[token] = handle
        return handle

    def run_in_executor(self, executor: Any, func: Callable[..., Any], *args: Any) -> "asyncio.Future[Any]":  # type: ignore[override]
        future = super().run_in_executor(executor, func, *args)
        self.sdk_track(future)
        return future

    def sdk_track(self, future: "asyncio.Future[Any]") -> None:
        """Counts ``future`` as work in flight until it is done."""
        self._sdk_jobs.add(future)
        future.add_done_callback(self._sdk_jobs.discard)

    # -- questions --------------------------------------------------------------------------

    def sdk_has_ready(self) -> bool:
        with self._sdk_lock:
            for token, handle in list(self._sdk_ready.items()):
                if handle.cancelled():
                    del self._sdk_ready[token]
            return bool(self._sdk_ready)

    def sdk_timers(self) -> List[asyncio.TimerHandle]:
        for token, handle in list(self._sdk_timers.items()):
            if handle.cancelled():
                del self._sdk_timers[token]
        return list(self._sdk_timers.values())

    def sdk_jobs(self) -> List["asyncio.Future[Any]"]:
        return [job for job in self._sdk_jobs if not job.done()]

    def sdk_wake_at(self, when: float, future: "asyncio.Future[Any]") -> asyncio.TimerHandle:
        """A timer that is not the runtime's (not counted as work)."""
        return asyncio.SelectorEventLoop.call_at(self, when, _set_result_unless_done, future)


def _set_result_unless_done(future: "asyncio.Future[Any]", *_: Any) -> None:
    if not future.done():
        future.set_result(None)


class _Abandoned(BaseException):
    """Raised out of ``effect_sync`` when the kit ends the run (``reset``, ``start``,
    ``shutdown``, end of input) while the runtime is blocked in it. It unwinds the runtime's
    stack; do not catch it (or re-raise it)."""


# ---------------------------------------------------------------------------------------------
# Effects
# ---------------------------------------------------------------------------------------------


class Effect:
    """An effect the runtime issued, with the id the SDK gave it. Await it (it resolves with the
    final ``completion`` object: ``model_final``, ``tool``, ``hook``, ``append``, ``write`` or
    ``notify``) or use :meth:`add_done_callback`. A model request's streamed ``model_chunk`` texts
    are collected in :attr:`chunks`, passed to every :meth:`on_chunk` callback, and yielded by
    :meth:`stream`."""

    def __init__(self, driver: "_Driver", kind: str, effect_id: int, fields: JSONObject, future: "asyncio.Future[Completion]") -> None:
        self._driver = driver
        self.kind = kind
        self.id = effect_id
        self.fields = fields
        self.chunks: List[str] = []
        self._future = future
        self._chunk_callbacks: List[Callable[[str], Any]] = []
        self._waiters: List["asyncio.Future[None]"] = []

    def __repr__(self) -> str:
        state = "done" if self._future.done() else "pending"
        return f"<Effect {self.kind} #{self.id} {state}>"

    def __await__(self) -> Generator[Any, None, Completion]:
        return self._future.__await__()

    def done(self) -> bool:
        return self._future.done()

    def result(self) -> Completion:
        """The final completion (``asyncio.InvalidStateError`` while pending)."""
        return self._future.result()

    def as_future(self) -> "asyncio.Future[Completion]":
        return self._future

    def add_done_callback(self, callback: Callable[["Effect"], Any]) -> None:
        """``callback(effect)`` runs on the event loop once the final completion arrived."""
        self._future.add_done_callback(lambda _future: self._driver._guarded(callback, self))

    def on_chunk(self, callback: Callable[[str], Any]) -> None:
        """``callback(text)`` runs on the event loop for every ``model_chunk`` from now on."""
        self._chunk_callbacks.append(callback)

    async def stream(self) -> AsyncIterator[str]:
        """Yields every chunk text (those already received first), until the final completion
        (then ``await effect`` returns at once)."""
        seen = 0
        loop = self._future.get_loop()
        while True:
            while seen < len(self.chunks):
                seen += 1
                yield self.chunks[seen - 1]
            if self._future.done():
                return
            waiter: "asyncio.Future[None]" = loop.create_future()
            self._waiters.append(waiter)
            await waiter

    # -- the driver's side ------------------------------------------------------------------

    def _chunk(self, text: str) -> None:
        self.chunks.append(text)
        loop = self._future.get_loop()
        for callback in self._chunk_callbacks:
            loop.call_soon(self._driver._guarded, callback, text)
        self._wake()

    def _final(self, completion: Completion) -> None:
        if not self._future.done():
            self._future.set_result(completion)
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            _set_result_unless_done(waiter)


# ---------------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------------


class _Run:
    """Everything of one run (``start`` to ``reset``): discarded as a whole."""

    def __init__(self, scenario: Scenario, executor_threads: int) -> None:
        self.scenario = scenario
        self.loop = _SdkLoop()
        self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=executor_threads, thread_name_prefix="agentsim-run")
        self.loop.set_default_executor(self.executor)
        ids = scenario["ids"]
        clock = scenario["clock"]
        self.ids = IdRule(ids["prefix"], ids["start"])
        self.clock = ClockRule(clock["startMs"], clock["stepMs"])
        self.next_effect = 1
        self.next_signal = 1
        self.pending: Dict[int, Effect] = {}
        self.ops_delivered: Set[int] = set()
        self.ops_settled: Set[int] = set()
        self.start_answered: Optional[str] = None  # "started" | "restore_failed"
        # The loop holds tasks weakly: the run holds those it created for the mapping.
        self.tasks: Set["asyncio.Future[Any]"] = set()
        self.discard = False
        self.warned_timers = False


class _Line:
    """What the reader returns: a line's bytes, an oversize line, or the end of input."""

    __slots__ = ("data", "oversize", "eof")

    def __init__(self, data: bytes = b"", oversize: int = 0, eof: bool = False) -> None:
        self.data = data
        self.oversize = oversize
        self.eof = eof


class _Reader:
    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream

    def read(self) -> _Line:
        """The next non-blank line. An oversize line is skipped in bounded pieces and reported
        with its size; a last line without a newline counts."""
        while True:
            data = self._stream.readline(LINE_BYTES_MAX + 1)
            if not data:
                return _Line(eof=True)
            if data.endswith(b"\n"):
                data = data[:-1]
            elif len(data) > LINE_BYTES_MAX:
                size = len(data)
                while True:
                    more = self._stream.readline(LINE_BYTES_MAX + 1)
                    if not more:
                        break
                    if more.endswith(b"\n"):
                        size += len(more) - 1
                        break
                    size += len(more)
                return _Line(oversize=size)
            if data.endswith(b"\r"):
                data = data[:-1]
            if data.strip():
                return _Line(data=data)


class _Driver:
    """The protocol engine behind an :class:`Adapter`."""

    def __init__(self, adapter: "Adapter", reader: _Reader, output: IO[bytes], log: IO[str], protocol: int) -> None:
        self.adapter = adapter
        self.reader = reader
        self.output = output
        self.log = log
        self.protocol = protocol
        self.hello: Optional[Hello] = None
        self.run: Optional[_Run] = None
        self.outbox: List[bytes] = []
        self.deferred: Deque[Callable[[], None]] = deque()
        self.turn_error: Optional[Tuple[str, str]] = None
        self.abandon: Optional[_Line] = None
        self.next_line: Optional[_Line] = None
        self.thread = threading.get_ident()
        self.turn_deadline = 0.0
        self.exit_when_kit_gone = False

    # -- output -----------------------------------------------------------------------------

    def note(self, text: str) -> None:
        try:
            self.log.write(f"{_LOG_PREFIX} {text}\n")
            self.log.flush()
        except Exception:
            pass

    def _write_now(self, data: bytes) -> None:
        self._write(data)
        self._flush()

    def _write(self, data: bytes) -> None:
        try:
            self.output.write(data)
        except OSError as error:
            self._kit_gone(error)

    def _flush(self) -> None:
        try:
            self.output.flush()
        except OSError as error:
            self._kit_gone(error)

    def _kit_gone(self, error: OSError) -> NoReturn:
        """stdout is closed: the kit is gone, nobody is left to tell. Exit at once (under
        ``serve``) rather than let the error wander through the runtime's callbacks."""
        self.note(f"cannot write to the kit ({error}); exiting")
        if self.exit_when_kit_gone:
            try:
                self.log.flush()
            finally:
                os._exit(1)
        raise error

    def emit(self, message: JSONObject) -> None:
        """Queues a line of the current turn (dropped while a run is being torn down). What
        would be written is checked against the kit's shapes first: a line that does not fit
        is not queued (nor anything after it in the turn), the turn is marked to end with
        ``adapter.malformed`` naming the field, and :class:`ShapeError` is raised in the
        mapping's stack."""
        data = _dump(message)
        if self.run is not None and self.run.discard:
            return
        if self.turn_error is not None and self.turn_error[0] == "adapter.malformed":
            # The turn ends with that error, as the JavaScript SDK's does at once: nothing the
            # runtime does after a bad line is written (it would reach the kit before the error).
            return
        problem = check_adapter_message(json.loads(data))
        if problem is not None:
            text = f"bad {describe_message(message)}, not written: {problem}"
            where = "".join(traceback.format_stack()[:-1]).rstrip()
            self.note(f"{text}; the mapping asked for it here:\n{where}")
            self.fail("adapter.malformed", text)
            raise ShapeError(text, problem)
        self.outbox.append(data)

    def flush_outbox(self) -> None:
        lines, self.outbox = self.outbox, []
        if lines:
            self._write(b"".join(lines))

    def write_idle(self) -> None:
        self.flush_outbox()
        self._write(self._idle_line())
        self._flush()

    def _idle_line(self) -> bytes:
        """``idle``, with the runtime's state when the adapter declared the state probe and a
        runtime exists (its ``start`` answered ``started`` and the run is live)."""
        run = self.run
        probes = self.hello is not None and "state" in self.hello.probes
        if not probes or run is None or run.discard or run.start_answered != "started":
            return b'{"type":"idle"}\n'
        try:
            state = self.adapter.state()
            if not isinstance(state, State):
                raise ProtocolUsageError(f"state() must return a State, not {type(state).__name__}")
            message = {"type": "idle", "state": {"leaf": state.leaf, "persisted": state.persisted}}
            problem = check_adapter_message(json.loads(_dump(message)))
            if problem is not None:
                raise ProtocolUsageError(f"bad state, not written: {problem}")
        except Exception as error:
            self.note("state() failed:\n" + "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip())
            self._write_now(_dump({"type": "error", "code": "adapter.exception", "message": f"state() failed: {error}"}))
            self._flush()
            os._exit(1)
        return _dump(message)

    def write_turn_end(self) -> None:
        """Ends a turn: what happened, then ``idle``, or the turn's ``error`` instead."""
        if self.turn_error is not None:
            code, message = self.turn_error
            self.turn_error = None
            self.write_error(code, message)
        else:
            self.write_idle()

    def write_error(self, code: str, message: str) -> None:
        self.flush_outbox()
        self._write_now(_dump({"type": "error", "code": code, "message": message}))

    def fail(self, code: str, message: str) -> None:
        """Records the turn's error: the turn ends with an ``error`` line instead of ``idle``."""
        if self.turn_error is None:
            self.turn_error = (code, message)

    def fail_exception(self, where: str, error: BaseException) -> None:
        self.note(f"{where} raised:\n" + "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip())
        self.fail("adapter.exception", f"{where} raised {type(error).__name__}: {error}")

    def break_run(self, run: Optional[_Run], error: RunBroken) -> None:
        """The mapping cannot go on with ``run``, the process can (:class:`RunBroken`): the
        reason on stderr, an ``error`` line marked ``recoverable`` queued in the turn, and the
        run discarded, so that nothing it does afterwards is written; the turn ends with
        ``idle`` as usual. Once per run: a run already discarded (broken before, or reset) is
        left as it is. Under protocol 1 the turn ends with the (unmarked) error instead."""
        if run is None or run.discard or run is not self.run:
            return
        code = str(error.code)
        message = str(error.message)[:_ERROR_MESSAGE_MAX]
        if self.protocol < 2:
            self.note(f"broken run: {code}: {message} (protocol 1 has no `reset`: the turn ends with this error)")
            self.fail(code, message)
        elif self.turn_error is not None:
            self.note(f"broken run: {code}: {message} (not written: the turn already ends with `{self.turn_error[0]}`)")
        else:
            self.note(f"broken run: {code}: {message}")
            self.emit({"type": "error", "code": code, "message": message, "recoverable": True})
        run.discard = True
        # Lines acknowledged while the runtime was blocked in effect_sync belong to this run.
        self.deferred.clear()

    # -- the main loop ----------------------------------------------------------------------

    def serve(self) -> int:
        try:
            hello = self.adapter.hello()
            if not isinstance(hello, Hello):
                raise ProtocolUsageError(f"hello() must return a Hello, not {type(hello).__name__}")
            _usage(_string, hello.name, "hello.implementation.name")
            _usage(_string, hello.version, "hello.implementation.version")
            _usage(_list_of(_string), list(hello.features), "hello.features")
            unsupported = dict(hello.unsupported)
            for key, reason in unsupported.items():
                _usage(_string, key, "hello.unsupported (a key)")
                _usage(_string, reason, f"hello.unsupported.{key}")
            for feature in hello.features:
                if feature in hello.unsupported:
                    self.note(f"`{feature}` is listed both in features and in unsupported")
            _usage(_list_of(_string), list(hello.probes), "hello.probes")
            if "state" in hello.probes and self.protocol < 2:
                raise ProtocolUsageError("hello.probes declares `state`, a protocol 2 probe, under protocol 1")
            if "state" in hello.probes and type(self.adapter).state is Adapter.state:
                raise ProtocolUsageError("hello.probes declares `state` but the adapter does not implement state()")
            self.hello = hello
            said: JSONObject = {
                "type": "hello",
                "protocol": self.protocol,
                "implementation": {"name": hello.name, "version": hello.version},
                "features": list(hello.features),
                "unsupported": dict(hello.unsupported),
            }
            if hello.probes:
                said["probes"] = list(hello.probes)
            line = self._hello_line(said)
        except Exception as error:
            self.note("hello() failed:\n" + "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip())
            return 1
        self._write_now(line)
        while True:
            if self.next_line is not None:
                line_read, self.next_line = self.next_line, None
            else:
                line_read = self.reader.read()
            if line_read.eof:
                self.teardown(call_reset=False)
                return 0
            message = self._parse_or_report(line_read)
            if message is None:
                continue
            if self.handle(message):
                return 0

    @staticmethod
    def _hello_line(message: JSONObject) -> bytes:
        data = _dump(message)
        problem = check_adapter_message(json.loads(data))
        if problem is not None:
            raise ShapeError(f"bad `hello`, not written: {problem}", problem)
        return data

    def _parse_or_report(self, line: _Line) -> Optional[JSONObject]:
        """The kit message on `line`; `None` after answering an oversize or malformed line with `error`."""
        if line.oversize:
            self.write_error("input.oversize", f"a line of {line.oversize} bytes; the limit is {LINE_BYTES_MAX}")
            return None
        try:
            return parse_kit_line(line.data, self.protocol)
        except InputError as error:
            self.write_error(error.code, error.message)
            return None

    def handle(self, message: JSONObject) -> bool:
        """Applies one kit line at the top level; True when the adapter must exit."""
        kind = message["type"]
        self.turn_error = None
        if kind == "shutdown":
            self.teardown(call_reset=False)
            return True
        if kind == "reset":
            self.teardown(call_reset=True)
            self.end_turn()
            return False
        if kind == "start":
            if self.run is not None:
                self.teardown(call_reset=True)
            self.begin_run(cast(Scenario, message["scenario"]))
            self.end_turn()
            return False
        run = self.run
        if run is None or run.discard or run.start_answered != "started":
            if run is None:
                what = "before `start`"
            elif run.discard:
                what = "after the run broke (before `reset`)"
            else:
                what = "after `restore_failed`"
            self.write_error("input.out_of_turn", f"`{kind}` {what}")
            return False
        try:
            action = self.claim(message)
        except InputError as error:
            self.write_error(error.code, error.message)
            return False
        self.schedule(action)
        self.drain_all()
        self.end_turn()
        return False

    def claim(self, message: JSONObject) -> Callable[[], None]:
        """Checks an ``operation`` or ``complete`` against the run's state *now* (its arrival)
        and returns what applying it does."""
        run = self.run
        assert run is not None
        if message["type"] == "operation":
            op: int = message["op"]
            operation = cast(Operation, message["operation"])
            if op == 0:
                raise InputError("input.malformed", "`operation.op`: operations are numbered from 1")
            if op in run.ops_delivered:
                raise InputError("input.malformed", f"operation {op} was already delivered")
            name = operation["op"]
            if self.hello is not None and name in self.hello.unsupported:
                raise InputError("input.unsupported", f"`{name}` was declared unsupported: {self.hello.unsupported[name]}")
            run.ops_delivered.add(op)
            return lambda: self.invoke_operation(op, operation)
        effect_id: int = message["effect"]
        completion = cast(Completion, message["completion"])
        effect = run.pending.get(effect_id)
        if effect is None:
            raise InputError("input.unknown_effect", f"fx#{effect_id} is not a pending effect")
        kind = completion["kind"]
        if kind not in COMPLETIONS_FOR_EFFECT[effect.kind]:
            raise InputError(
                "input.wrong_completion",
                f"fx#{effect_id} is a `{effect.kind}` effect; a completion of kind `{kind}` cannot answer it",
            )
        if kind == "model_chunk":
            text = completion["text"]
            return lambda: effect._chunk(text)
        del run.pending[effect_id]
        return lambda: effect._final(completion)

    def schedule(self, action: Callable[[], None]) -> None:
        assert self.run is not None
        self.run.loop.call_soon(self._guarded, action)

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: Dict[str, Any]) -> None:
        """An exception asyncio could not hand to anyone. One raised by a callback the runtime
        scheduled is a bug of the adapter, as an uncaught exception would be in JavaScript: the
        turn ends with ``error``. Anything else (a task's exception nobody retrieved) is noted."""
        error = context.get("exception")
        if isinstance(error, _Abandoned) or (self.run is not None and self.run.discard):
            return
        if "handle" in context and isinstance(error, RunBroken):
            self.break_run(self.run, error)
            return
        if "handle" in context and isinstance(error, Exception):
            self.fail_exception(f"a callback ({context.get('message', '')})", error)
            return
        detail = ""
        if isinstance(error, BaseException):
            detail = ":\n" + "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip()
        self.note(f"{context.get('message', 'asyncio')}{detail}")

    def _guarded(self, function: Callable[..., Any], *args: Any) -> None:
        run = self.run
        try:
            function(*args)
        except _Abandoned:
            pass
        except RunBroken as error:
            self.break_run(run, error)
        except Exception as error:
            if run is not None and run.discard:
                # A broken run's callbacks may still run in its last turn; nothing of them is
                # the kit's.
                self.note(f"a discarded run's {getattr(function, '__qualname__', repr(function))} raised {type(error).__name__}: {error}")
                return
            self.fail_exception(getattr(function, "__qualname__", repr(function)), error)

    def end_turn(self) -> None:
        if self.abandon is not None:
            # The kit ended the run while the runtime was blocked in effect_sync: the line that
            # ended it is handled next, as if it had just been read.
            self.next_line, self.abandon = self.abandon, None
            self.outbox.clear()
            return
        run = self.run
        if self.turn_error is None and run is not None and not run.discard and run.start_answered is None:
            self.fail("adapter.no_start_result", "start() finished without `started` or `restore_failed`")
        if self.turn_error is None and run is not None and not run.discard:
            self.diagnose(run)
        self.write_turn_end()

    def diagnose(self, run: _Run) -> None:
        """Notes on stderr (never on the protocol) what quiescence cannot see."""
        unsettled = sorted(run.ops_delivered - run.ops_settled)
        if unsettled and not run.pending and not run.loop.sdk_jobs():
            self.note(
                f"idle with operation(s) {', '.join(map(str, unsettled))} unsettled and no effect pending: "
                "nothing the kit can answer will settle them"
            )
        if run.loop.sdk_timers() and not run.warned_timers:
            run.warned_timers = True
            self.note(
                "idle while the runtime has timers due later than the timer horizon: if they fire later, "
                "their work lands in whichever turn is running then (real time is not deterministic)"
            )

    # -- runs -------------------------------------------------------------------------------

    def begin_run(self, scenario: Scenario) -> None:
        run = _Run(scenario, self.adapter.executor_threads)
        run.loop.set_exception_handler(self._loop_exception)
        self.run = run
        asyncio.set_event_loop(run.loop)
        run.loop.call_soon(self._guarded, self.invoke_start, scenario)
        self.drain_all()

    def teardown(self, call_reset: bool) -> None:
        """Discards the live run: tasks cancelled (their output dropped), the loop closed, every
        counter gone; then the mapping's ``reset()``."""
        run = self.run
        if run is not None:
            run.discard = True
            loop = run.loop
            try:
                for task in asyncio.all_tasks(loop):
                    task.cancel()
                for _ in range(1000):  # bounded: a runtime that refuses to stop is dropped anyway
                    if not loop.sdk_has_ready():
                        break
                    loop.stop()
                    loop.run_forever()
                # Close the run's async generators (Effect.stream() among them) on this loop.
                loop.run_until_complete(asyncio.wait_for(loop.shutdown_asyncgens(), 1.0))
            except (Exception, _Abandoned) as error:
                self.note(f"while discarding the run: {type(error).__name__}: {error}")
            finally:
                run.executor.shutdown(wait=False, cancel_futures=True)
                loop.close()
                asyncio.set_event_loop(None)
            self.run = None
        self.outbox.clear()
        self.deferred.clear()
        self.abandon = None
        if call_reset:
            try:
                self.adapter.reset()
            except Exception as error:
                self.fail_exception("reset()", error)

    # -- quiescence -------------------------------------------------------------------------

    def drain_all(self) -> None:
        """Runs until quiescent; then applies the kit lines that arrived while the runtime was
        blocked in ``effect_sync``, each followed by quiescence again."""
        run = self.run
        assert run is not None
        self.turn_deadline = run.loop.time() + self.adapter.timer_horizon
        self.drain()
        while self.deferred and self.abandon is None and self.run is run and not run.discard:
            self.schedule(self.deferred.popleft())
            self.drain()

    def drain(self) -> None:
        """Quiescence (README.md, "Quiescence"): no callback is ready, no timer of the runtime is
        due before the turn's horizon, and no thread job is in flight."""
        run = self.run
        assert run is not None
        loop = run.loop
        while self.abandon is None:
            if loop.sdk_has_ready():
                loop.stop()
                loop.run_forever()
                continue
            due = [timer.when() for timer in loop.sdk_timers() if timer.when() <= self.turn_deadline]
            jobs = loop.sdk_jobs()
            if not due and not jobs:
                return
            wake: "asyncio.Future[None]" = loop.create_future()
            alarm = loop.sdk_wake_at(min(due), wake) if due else None
            for job in jobs:
                job.add_done_callback(lambda _job: _set_result_unless_done(wake))
            try:
                loop.run_until_complete(wake)
            except RuntimeError:
                if self.abandon is None:
                    raise
            finally:
                if alarm is not None:
                    alarm.cancel()

    # -- calling the mapping ----------------------------------------------------------------

    def invoke_start(self, scenario: Scenario) -> None:
        run = self.run
        assert run is not None
        try:
            result = self.adapter.start(scenario)
        except _Abandoned:
            return
        except RunBroken as error:
            self.break_run(run, error)
            return
        except Exception as error:
            if not run.discard:
                self.fail_exception("start()", error)
            return
        if inspect.isawaitable(result):
            task = asyncio.ensure_future(result)
            run.tasks.add(task)
            task.add_done_callback(run.tasks.discard)
            task.add_done_callback(lambda done: self._guarded(self._start_done, run, done))
        elif not run.discard:
            self.take_start_result(result)

    def _start_done(self, run: _Run, task: "asyncio.Future[Any]") -> None:
        if task.cancelled():
            return
        error = task.exception()
        if isinstance(error, _Abandoned):
            return
        if isinstance(error, RunBroken):
            self.break_run(run, error)
            return
        if run.discard:
            return
        if error is not None:
            self.fail_exception("start()", error)
            return
        self.take_start_result(task.result())

    def take_start_result(self, result: Any) -> None:
        if result is None:
            return
        if isinstance(result, Started):
            self.started(result.leaf, result.messages)
        elif isinstance(result, RestoreFailed):
            self.restore_failed(result.code, result.message)
        else:
            raise ProtocolUsageError(f"start() returned {type(result).__name__}; expected Started, RestoreFailed or None")

    def invoke_operation(self, op: int, operation: Operation) -> None:
        run = self.run
        try:
            result = self.adapter.operation(op, operation)
        except _Abandoned:
            return
        except Rejected as rejection:
            self.settle(op, {"status": "rejected", "cause": rejection.cause})
            return
        except RunBroken as error:
            self.break_run(run, error)
            return
        except Exception as error:
            if run is None or not run.discard:
                self.fail_exception(f"operation({op}, {operation['op']})", error)
            return
        if inspect.isawaitable(result):
            assert run is not None
            task = asyncio.ensure_future(self._settle_when_done(run, op, operation, result))
            run.tasks.add(task)
            task.add_done_callback(run.tasks.discard)
        elif result is not None:
            self.settle(op, {"status": "resolved", "value": result})

    async def _settle_when_done(self, run: _Run, op: int, operation: Operation, awaitable: Awaitable[Any]) -> None:
        """Awaits an operation's awaitable and settles the operation *in the same step* it
        finishes, not one loop step later in a done callback: a runtime whose queue wakes the
        next prompt when this one returns (an ``asyncio.Lock``, an ``Event``, a future set in a
        ``finally``) wakes it by scheduling, so the ``settled`` line comes before the next run's
        first effect, as the kit demands (a prompt settles before the next queued run starts)."""
        try:
            value = await awaitable
        except Rejected as rejection:
            if not run.discard:
                self._guarded(self.settle, op, {"status": "rejected", "cause": rejection.cause})
            return
        except (_Abandoned, asyncio.CancelledError):
            return
        except RunBroken as error:
            self.break_run(run, error)
            return
        except Exception as error:
            if not run.discard:
                self.fail_exception(f"operation({op}, {operation['op']})", error)
            return
        if value is not None and not run.discard:
            self._guarded(self.settle, op, {"status": "resolved", "value": value})

    # -- services for the mapping -----------------------------------------------------------

    def live_run(self, what: str) -> _Run:
        if threading.get_ident() != self.thread:
            raise ProtocolUsageError(f"{what} must be called on the adapter's thread (use loop.call_soon_threadsafe)")
        if self.run is None:
            raise ProtocolUsageError(f"{what} outside a run (after `start`, before `reset`)")
        return self.run

    def new_effect(self, kind: str, fields: Mapping[str, Any]) -> Effect:
        run = self.live_run(f"effect({kind!r})")
        if kind not in EFFECT_KINDS:
            raise ProtocolUsageError(f"unknown effect kind {kind!r}; expected one of {', '.join(EFFECT_KINDS)}")
        if kind == "notify" and self.protocol < 2:
            raise ProtocolUsageError("the `notify` effect needs protocol 2 (Adapter.protocol = 2)")
        if "id" in fields:
            raise ProtocolUsageError(f"effect({kind!r}): `id` is the SDK's to write")
        if run.start_answered is None:
            self.note(f"an effect ({kind}) before `started`: the kit expects none while restoring (RESTORE-5)")
        given = dict(fields)
        if kind == "hook" and "result" not in given:
            given["result"] = None
        effect_id = run.next_effect
        # The protocol's field order, then anything else (which the shape check refuses).
        order = _EFFECT_FIELD_ORDER[kind]
        body: JSONObject = {"kind": kind, "id": effect_id}
        body.update((name, given[name]) for name in order if name in given)
        body.update((name, value) for name, value in given.items() if name not in order)
        self.emit({"type": "effect", "effect": body})
        run.next_effect += 1
        effect = Effect(self, kind, effect_id, body, run.loop.create_future())
        if not run.discard:
            run.pending[effect_id] = effect
        return effect

    def effect_sync(self, kind: str, fields: Mapping[str, Any], on_chunk: Optional[Callable[[str], Any]]) -> Completion:
        run = self.live_run(f"effect_sync({kind!r})")
        if self.abandon is not None or run.discard:
            raise _Abandoned()
        effect = self.new_effect(kind, fields)
        return self._wait_for(run, effect, on_chunk)

    def _wait_for(self, run: _Run, effect: Effect, on_chunk: Optional[Callable[[str], Any]]) -> Completion:
        # The runtime is blocked: everything it did so far is written, then `idle`.
        self.write_turn_end()
        while True:
            line = self.reader.read()
            if line.eof:
                return self._abandon(run, line)
            message = self._parse_or_report(line)
            if message is None:
                continue
            if message["type"] in ("reset", "start", "shutdown"):
                return self._abandon(run, line)
            if message["type"] == "complete" and message["effect"] == effect.id:
                completion = cast(Completion, message["completion"])
                kind = completion["kind"]
                if kind not in COMPLETIONS_FOR_EFFECT[effect.kind]:
                    self.write_error(
                        "input.wrong_completion",
                        f"fx#{effect.id} is a `{effect.kind}` effect; a completion of kind `{kind}` cannot answer it",
                    )
                    continue
                if kind == "model_chunk":
                    text = completion["text"]
                    effect.chunks.append(text)
                    if on_chunk is not None:
                        self._guarded(on_chunk, text)
                    for callback in effect._chunk_callbacks:
                        self._guarded(callback, text)
                    if run.discard:
                        # A chunk callback broke the run (RunBroken): unwind the blocked
                        # runtime now; the turn ends as usual once its stack is gone.
                        raise _Abandoned()
                    self.write_turn_end()
                    continue
                run.pending.pop(effect.id, None)
                effect._final(completion)
                return completion
            # Another line while the runtime is blocked: checked now, applied once the runtime
            # is free again (as a blocked thread would see it), acknowledged with `idle`.
            if run.start_answered != "started":
                self.write_error("input.out_of_turn", f"`{message['type']}` before `started`")
                continue
            try:
                self.deferred.append(self.claim(message))
            except InputError as error:
                self.write_error(error.code, error.message)
                continue
            self.write_idle()

    def _abandon(self, run: _Run, line: _Line) -> NoReturn:
        self.abandon = line
        run.discard = True
        self.outbox.clear()
        run.loop.stop()
        raise _Abandoned()

    def new_signal(self) -> int:
        run = self.live_run("new_signal()")
        signal = run.next_signal
        run.next_signal += 1
        return signal

    def abort_signal(self, signal: int) -> None:
        self.live_run("abort_signal()")
        self.emit({"type": "abort_signal", "signal": signal})

    def settle(self, op: int, settlement: JSONObject) -> None:
        run = self.live_run("settle()")
        if op not in run.ops_delivered:
            raise ProtocolUsageError(f"settle({op}): the kit never delivered operation {op}")
        if op in run.ops_settled:
            raise ProtocolUsageError(f"settle({op}): operation {op} is already settled")
        self.emit({"type": "settled", "op": op, "settlement": settlement})
        run.ops_settled.add(op)

    def started(self, leaf: Optional[str], messages: int) -> None:
        run = self.answer_start("started")
        _usage(_nullable(_string), leaf, "started.leaf")
        _usage(_U64, messages, "started.messages")
        self.emit({"type": "started", "leaf": leaf, "messages": messages})
        run.start_answered = "started"

    def restore_failed(self, code: str, message: str) -> None:
        run = self.answer_start("restore_failed")
        _usage(_CAUSE, {"code": code, "message": message}, "restore_failed.cause")
        self.emit({"type": "restore_failed", "cause": {"code": code, "message": message}})
        run.start_answered = "restore_failed"

    def answer_start(self, what: str) -> _Run:
        run = self.live_run(f"{what}()")
        if run.start_answered is not None:
            raise ProtocolUsageError(f"{what}(): `start` was already answered with `{run.start_answered}`")
        return run


# ---------------------------------------------------------------------------------------------
# The mapping's base class
# ---------------------------------------------------------------------------------------------


class Adapter:
    """Subclass it; implement :meth:`start` and :meth:`operation`; call :func:`serve`.

    Class attributes (or override :meth:`hello`): ``name``, ``version``, ``features``,
    ``unsupported``. ``protocol`` is the version ``hello`` states (2 by default; the environment
    variable ``AGENTSIM_PROTOCOL`` overrides it, e.g. ``1`` for a kit that speaks only version 1).
    ``timer_horizon`` (seconds) and ``executor_threads`` tune quiescence (README.md).

    The attribute ``_sdk`` is the SDK's; everything else is the mapping's.
    """

    name: str = "unnamed-runtime"
    version: str = "0.0.0"
    features: Sequence[str] = ()
    unsupported: Mapping[str, str] = {}
    #: Protocol 2: ``("state",)`` to report the runtime's state at every ``idle`` (:meth:`state`).
    probes: Sequence[str] = ()
    protocol: int = 2
    timer_horizon: float = 1.0
    executor_threads: int = 4

    _sdk: Optional[_Driver] = None

    # -- what the mapping implements --------------------------------------------------------

    def hello(self) -> Hello:
        """What ``hello`` says (the protocol version is the SDK's)."""
        return Hello(self.name, self.version, list(self.features), dict(self.unsupported), list(self.probes))

    def start(self, scenario: Scenario) -> Union[StartResult, Awaitable[StartResult]]:
        """Create the runtime for ``scenario`` (``start.scenario``) and restore its session.
        Return :class:`Started` or :class:`RestoreFailed` (or call :meth:`started` /
        :meth:`restore_failed`, then return None); may be ``async``. It runs on the run's event
        loop, so it may create tasks and asyncio objects (create them here, not in
        ``__init__``: each run has its own loop)."""
        raise NotImplementedError("Adapter.start")

    def operation(self, op: int, operation: Operation) -> Union[Optional[Value], Awaitable[Optional[Value]]]:
        """Deliver operation number ``op`` (``operation["op"]`` is its name) to the runtime.

        Return a value (``UNIT``, :func:`run_result`, :func:`library_result`) to resolve it, raise
        :class:`Rejected` to reject it, or return None and settle it later with :meth:`resolve`
        / :meth:`reject`. An ``async def operation`` (or a returned awaitable) runs as a task:
        its return value or ``Rejected`` settles the operation when it finishes."""
        raise NotImplementedError("Adapter.operation")

    def state(self) -> State:
        """The state probe (``probes = ("state",)``): the runtime's own leaf and persisted count,
        read from the runtime when a turn is complete, for the ``idle`` that ends it. Called for
        every ``idle`` of a run whose ``start`` answered ``started``. Report the runtime's values,
        never ones the adapter computes."""
        raise NotImplementedError("Adapter.state")

    def reset(self) -> None:
        """The run is over (``reset``, or a ``start`` while a run is live): drop every reference
        to the runtime and clear any module-level state it touched. The SDK has already
        cancelled the run's tasks and closed its loop, and forgets its effects, signals,
        settlements and the ids/clock counters itself."""

    def close(self) -> None:
        """Called once before the process exits (``shutdown`` or end of input): remove
        temporary files and the like. ``atexit`` handlers do not run (the SDK exits with
        ``os._exit`` so that a stuck thread cannot keep the process alive)."""

    # -- what the SDK provides --------------------------------------------------------------

    def _driver(self) -> _Driver:
        if self._sdk is None:
            raise ProtocolUsageError("the adapter is not being served (call serve(adapter))")
        return self._sdk

    @property
    def scenario(self) -> Scenario:
        """The live run's ``start.scenario``."""
        return self._driver().live_run("scenario").scenario

    @property
    def ids(self) -> IdRule:
        """The live run's ``ids`` rule: ``self.ids.next()`` is the runtime's ``createId``."""
        return self._driver().live_run("ids").ids

    @property
    def clock(self) -> ClockRule:
        """The live run's ``clock`` rule: ``self.clock.now()`` is the runtime's clock."""
        return self._driver().live_run("clock").clock

    @property
    def protocol_version(self) -> int:
        """The version ``hello`` stated."""
        return self._driver().protocol

    def effect(self, kind: str, **fields: Any) -> Effect:
        """Issue an effect: the line is written (with the next effect id) at the end of the
        turn. Kinds and fields: ``model_request(signal, request)``, ``tool_call(signal, call)``,
        ``hook(extension, phase, call, result=None)``, ``append(entry)``, ``write(text)``,
        ``notify(observer, event)`` (protocol 2). Returns an awaitable :class:`Effect`."""
        return self._driver().new_effect(kind, fields)

    def effect_sync(self, kind: str, *, on_chunk: Optional[Callable[[str], Any]] = None, **fields: Any) -> Completion:
        """Issue an effect and block until the kit completes it (for synchronous APIs): writes
        everything pending, the effect and ``idle``, then reads the kit's lines until the
        matching ``complete``. Other lines that arrive meanwhile are checked, acknowledged with
        ``idle`` and applied once the runtime is free again. Returns the final completion; model
        chunks go to ``on_chunk``. The whole adapter (event loop included) waits meanwhile."""
        return self._driver().effect_sync(kind, fields, on_chunk)

    def new_signal(self) -> int:
        """A new abort-signal id (1, 2, ... per run) for ``model_request``/``tool_call``."""
        return self._driver().new_signal()

    def abort_signal(self, signal: int) -> None:
        """Report that abort signal ``signal`` fired."""
        self._driver().abort_signal(signal)

    def resolve(self, op: int, value: Value = UNIT) -> None:
        """Settle operation ``op`` as resolved with ``value``."""
        self._driver().settle(op, {"status": "resolved", "value": value})

    def reject(self, op: int, code: Union[str, Mapping[str, Any]], message: Optional[str] = None) -> None:
        """Settle operation ``op`` as rejected: ``reject(op, code, message)`` or
        ``reject(op, {"code", "message"})``."""
        if isinstance(code, Mapping):
            value: Cause = {"code": code["code"], "message": code["message"]}
        else:
            if message is None:
                raise ProtocolUsageError("reject(op, code, message): the message is missing")
            value = {"code": code, "message": message}
        self._driver().settle(op, {"status": "rejected", "cause": value})

    def started(self, leaf: Optional[str], messages: int) -> None:
        """Answer ``start``: the runtime restored ``messages`` messages at ``leaf``."""
        self._driver().started(leaf, messages)

    def restore_failed(self, code: str, message: str) -> None:
        """Answer ``start``: the runtime rejected the session or the leaf."""
        self._driver().restore_failed(code, message)

    def track(self, work: Union[Awaitable[Any], "concurrent.futures.Future[Any]"]) -> "asyncio.Future[Any]":
        """Count ``work`` (a thread's ``concurrent.futures.Future``, or any awaitable) as runnable
        until it finishes: the adapter does not go idle meanwhile. ``loop.run_in_executor`` and
        ``asyncio.to_thread`` are counted without it."""
        run = self._driver().live_run("track()")
        if isinstance(work, concurrent.futures.Future):
            future: "asyncio.Future[Any]" = asyncio.wrap_future(work, loop=run.loop)
        else:
            future = asyncio.ensure_future(work, loop=run.loop)
        run.loop.sdk_track(future)
        return future

    def planned_append_fault(self, n: int) -> Optional[JSONObject]:
        """The fault the scenario plans for the ``n``-th append of the run (1-based), or None:
        ``{"at", "fault", "error"}`` or ``{"at", "fault": "late", "until"}``. Only for a
        ``sync-store`` runtime that must decide an append's outcome before the kit answers."""
        for fault in self.scenario["faults"]["appends"]:
            if fault["at"] == n:
                return cast(JSONObject, fault)
        return None

    def planned_write_fault(self, n: int) -> Optional[JSONObject]:
        """The fault the scenario plans for the ``n``-th write (1-based), or None."""
        for fault in self.scenario["faults"]["writes"]:
            if fault["at"] == n:
                return cast(JSONObject, fault)
        return None


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def _protocol_of(adapter: Adapter) -> int:
    chosen = os.environ.get("AGENTSIM_PROTOCOL")
    if chosen is None or chosen == "":
        version = adapter.protocol
    else:
        try:
            version = int(chosen)
        except ValueError:
            raise ProtocolUsageError(f"AGENTSIM_PROTOCOL={chosen!r} is not a number") from None
    if version not in PROTOCOL_VERSIONS:
        raise ProtocolUsageError(f"protocol {version} is not one of {PROTOCOL_VERSIONS}")
    return version


def run(
    adapter: Adapter,
    stdin: IO[bytes],
    stdout: IO[bytes],
    stderr: Optional[IO[str]] = None,
    *,
    exit_when_kit_gone: bool = False,
) -> int:
    """Serve ``adapter`` on the given binary streams until ``shutdown`` or end of input and
    return the exit code (0; 1 if ``hello()`` failed). Does not redirect anything and does not
    exit: :func:`serve` is the entry point of an adapter process."""
    log = stderr if stderr is not None else sys.stderr
    driver = _Driver(adapter, _Reader(stdin), stdout, log, _protocol_of(adapter))
    adapter._sdk = driver
    driver.exit_when_kit_gone = exit_when_kit_gone
    try:
        return driver.serve()
    finally:
        adapter._sdk = None


def serve(adapter: Adapter) -> NoReturn:
    """The adapter process's main: protects the protocol streams, serves ``adapter`` on
    stdin/stdout, calls ``adapter.close()`` and exits (0 on ``shutdown`` or end of input).

    Before ``hello``: the real stdout is kept for protocol lines only, file descriptor 1 and
    ``sys.stdout`` (so ``print``) are pointed at stderr, and file descriptor 0 and ``sys.stdin``
    at ``/dev/null`` (child processes inherit both), so nothing but the SDK can write to or
    read from the kit."""
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    protocol_in = os.fdopen(os.dup(0), "rb", buffering=1 << 16)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, "r")
    code = 1
    try:
        code = run(adapter, protocol_in, protocol_out, sys.stderr, exit_when_kit_gone=True)
    except BrokenPipeError:
        sys.stderr.write(f"{_LOG_PREFIX} the kit closed stdout\n")
        code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:
            adapter.close()
        except Exception:
            traceback.print_exc()
        try:
            protocol_out.flush()
        except Exception:
            pass
        try:
            sys.stderr.flush()
        except Exception:
            pass
    os._exit(code)
