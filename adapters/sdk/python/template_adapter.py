#!/usr/bin/env python3
"""A template agentsim adapter, in Python. Copy it (with agentsim_adapter.py, or put the SDK's
folder on PYTHONPATH), replace ``ToyRuntime`` with your runtime, and adapt ``TemplateAdapter``.

The file has two halves:

1. ``ToyRuntime``: stands for *your* runtime. It is a tiny in-memory runtime of the family:
   restore a branch of a session tree, queue prompts (each settles before the next starts), ask
   the model once per prompt, then append the user and the assistant message to the store one
   entry at a time (the leaf advances after each accepted append), and resolve the prompt only
   after the last append; flush waits for the queue, dispose closes the entry; a failed append
   poisons it. It knows nothing of agentsim: it
   gets its model, store, id generator and clock injected, as a real runtime would.
2. ``TemplateAdapter``: the mapping. It gives the runtime a model and a store that are kit
   effects, the scenario's ``ids`` and ``clock`` rules, and turns operations into runtime calls
   and their outcomes into settlements. Everything about the protocol is the SDK's.

The toy does not run tools or hooks, build a resource context or budget the context: the kit
reports those rules as failed, which is allowed. What it must never do is break the protocol.
Run it: ``agentsim run --impl "python3 adapters/sdk/python/template_adapter.py" scenarios/wiring``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from agentsim_adapter import (  # noqa: E402
    UNIT,
    Adapter,
    Operation,
    Rejected,
    RestoreFailed,
    Scenario,
    Started,
    State,
    Value,
    iso_timestamp,
    run_result,
    serve,
)

# ---------------------------------------------------------------------------------------------
# 1. The runtime under test (replace with yours)
# ---------------------------------------------------------------------------------------------

Message = Dict[str, Any]
Entry = Dict[str, Any]


class RuntimeError_(Exception):
    """An error the runtime's caller gets, with a stable code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class AbortSignal:
    """One per agent run (the runtime's own object; the adapter maps it to a signal id)."""


def restore(session: List[Entry], leaf: Optional[str]) -> Tuple[Optional[str], List[Message]]:
    """The messages on the path from the root to ``leaf`` (chapter 10's ``pathTo``)."""
    if not session:
        if leaf is None:
            return None, []
        raise RuntimeError_("restore.unknown_leaf", f"the session is empty; there is no entry {leaf!r}")
    if leaf is None:
        raise RuntimeError_("restore.leaf_required", "the session is not empty: choose a leaf")
    by_id: Dict[str, Entry] = {}
    for entry in session:
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            if entry_id in by_id:
                raise RuntimeError_("path.duplicate_id", f"two entries have the id {entry_id!r}")
            by_id[entry_id] = entry
    if leaf not in by_id:
        raise RuntimeError_("path.unknown_leaf", f"no entry has the id {leaf!r}")
    path: List[Entry] = []
    seen = set()
    current: Optional[str] = leaf
    while current is not None:
        if current in seen:
            raise RuntimeError_("path.cycle", f"the parent chain of {leaf!r} loops at {current!r}")
        seen.add(current)
        found = by_id.get(current)
        if found is None:
            raise RuntimeError_("path.missing_parent", f"the parent {current!r} does not exist")
        path.append(found)
        current = found.get("parentId")
    path.reverse()
    return leaf, [entry["message"] for entry in path if entry.get("type") == "message"]


Model = Callable[[Dict[str, Any], AbortSignal], Awaitable[Message]]
Store = Callable[[Entry], Awaitable[None]]


class ToyRuntime:
    """A tiny in-memory runtime. ``model(request, signal)`` returns the assistant message;
    ``store(entry)`` returns when the entry is stored, or raises ``RuntimeError_``."""

    def __init__(
        self,
        *,
        leaf: Optional[str],
        messages: List[Message],
        system_prompt: Optional[str],
        tools: List[Dict[str, Any]],
        model: Model,
        store: Store,
        create_id: Callable[[], str],
        now: Callable[[], int],
    ) -> None:
        self.leaf = leaf
        self.messages = list(messages)
        self.system_prompt = system_prompt
        self.tools = tools
        self.model = model
        self.store = store
        self.create_id = create_id
        self.now = now
        self.disposed = False
        self.persisted = 0  # appends the store accepted since the restore
        self.poison: Optional[RuntimeError_] = None
        self.tail: Optional[asyncio.Future[None]] = None  # done when the last queued prompt is

    async def prompt(self, text: str) -> Dict[str, Any]:
        """Queues a prompt: it runs after the prompts before it, and the next one runs after it.

        The rule (docs/implementers-guide.md, "A prompt settles before the next queued run
        starts"): the next queued run may start only once this prompt has settled for its
        caller. Here the hand-over is a future set in ``finally``: setting it only *schedules*
        the next prompt's wake-up, and this coroutine returns its result in the same loop step,
        so the caller (the adapter's ``operation``, which returns at once) resolves first; the
        SDK writes ``settled`` in the step the operation returns. Do not start the next run
        directly here (a call that issues its model request before this one returns), and do
        not let the caller await anything else between this result and its return."""
        if self.poison is not None:
            raise self.poison
        if self.disposed:
            raise RuntimeError_("runtime.disposed", "the runtime is disposed")
        previous = self.tail
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.tail = done
        try:
            if previous is not None:
                await previous
            return await self._run(text)
        finally:
            done.set_result(None)

    async def _run(self, text: str) -> Dict[str, Any]:
        if self.poison is not None:
            raise self.poison
        user: Message = {"role": "user", "content": text, "timestamp": self.now()}
        request = {
            "systemPrompt": self.system_prompt,
            "messages": [*self.messages, user],
            "tools": [dict(tool) for tool in self.tools],
        }
        assistant = await self.model(request, AbortSignal())
        for message in (user, assistant):
            entry: Entry = {
                "type": "message",
                "id": self.create_id(),
                "parentId": self.leaf,
                "timestamp": iso_timestamp(self.now()),
                "message": message,
            }
            try:
                await self.store(entry)
            except RuntimeError_ as error:
                self.poison = error
                raise
            self.persisted += 1
            self.leaf = entry["id"]
            self.messages.append(message)
        reason = {"length": "length", "error": "error", "aborted": "aborted"}.get(assistant.get("stopReason", ""), "stop")
        return {"reason": reason, "steps": 1, "messages": list(self.messages)}

    async def flush(self) -> None:
        if self.tail is not None:
            await self.tail
        if self.poison is not None:
            raise self.poison

    async def dispose(self) -> None:
        self.disposed = True
        if self.tail is not None:
            await self.tail


# ---------------------------------------------------------------------------------------------
# 2. The mapping
# ---------------------------------------------------------------------------------------------


class TemplateAdapter(Adapter):
    name = "toy-runtime"
    version = "0.1.0"
    # A multi-chunk model response is fine: the toy reads the final message only.
    features = ["chunks"]
    unsupported = {
        "steer": "the toy runtime has no steering queue",
        "followUp": "the toy runtime has no follow-up queue",
        "abort": "the toy runtime cannot abort a run",
        "mode": "the toy runtime has no output modes",
        "library": "the toy runtime has no library adapter",
        "observers": "the toy runtime has no extension event observers",
    }
    # The state probe (protocol 2): with AGENTSIM_TEMPLATE_PROBES=1 every `idle` carries the
    # runtime's own leaf and persisted count (`state` below), which PERSIST-10 judges.
    probes = ("state",) if os.environ.get("AGENTSIM_TEMPLATE_PROBES") == "1" else ()

    def __init__(self) -> None:
        self.runtime: Optional[ToyRuntime] = None
        self.signals: Dict[AbortSignal, int] = {}

    def start(self, scenario: Scenario) -> Started | RestoreFailed:
        config = scenario["config"]
        try:
            leaf, messages = restore(scenario["session"], config.get("activeLeafId"))
        except RuntimeError_ as error:
            return RestoreFailed(error.code, error.message)
        self.runtime = ToyRuntime(
            leaf=leaf,
            messages=messages,
            system_prompt=config.get("systemPrompt"),
            tools=scenario["tools"],
            model=self.model,
            store=self.store,
            create_id=self.ids.next,
            now=self.clock.now,
        )
        return Started(leaf, len(messages))

    async def model(self, request: Dict[str, Any], signal: AbortSignal) -> Message:
        if signal not in self.signals:
            self.signals[signal] = self.new_signal()
        completion = await self.effect("model_request", signal=self.signals[signal], request=request)
        return completion["message"]

    async def store(self, entry: Entry) -> None:
        completion = await self.effect("append", entry=entry)
        outcome = completion["outcome"]
        if outcome["kind"] == "failed":
            raise RuntimeError_(outcome["cause"]["code"], outcome["cause"]["message"])

    async def operation(self, op: int, operation: Operation) -> Value:
        runtime = self.runtime
        assert runtime is not None
        name = operation["op"]
        try:
            if name == "prompt":
                result = await runtime.prompt(operation["text"])
                return run_result(result["reason"], result["steps"], result["messages"])
            if name == "flush":
                await runtime.flush()
                return UNIT
            if name == "dispose":
                await runtime.dispose()
                return UNIT
        except RuntimeError_ as error:
            raise Rejected(error.code, error.message) from None
        # Never reached: the kit does not send what hello declared unsupported.
        raise Rejected("adapter.unsupported", f"`{name}` is not supported")

    def state(self) -> State:
        runtime = self.runtime
        assert runtime is not None
        return State(runtime.leaf, runtime.persisted)

    def reset(self) -> None:
        self.runtime = None
        self.signals = {}


if __name__ == "__main__":
    serve(TemplateAdapter())
