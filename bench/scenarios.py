"""The benchmark scenarios of ``shared/reference/PEERS.md``, for tether and for a raw asyncio loop.

Both sides get the same scripted in-process model: call k (k = tool results so far) returns one
tool call ``step(i=k)`` while k < N, then the text "done". No network anywhere.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tether import (
    Agent,
    IterationEnd,
    Message,
    StopReason,
    TextDelta,
    Tool,
    ToolInputDelta,
    ToolSpec,
    ToolUseStart,
    Usage,
)

USAGE = Usage(10, 5)

# -- tether ------------------------------------------------------------------------------------


class LoopModel:
    """Call k returns ``step(i=k)`` while k < n, then "done" (k read off the history length)."""

    def __init__(self, n: int) -> None:
        self.n = n

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[Any]:
        k = (len(messages) - 1) // 2
        if k < self.n:
            call_id = f"call_{k}"
            yield ToolUseStart(0, call_id, "step")
            yield ToolInputDelta(0, call_id, f'{{"i": {k}}}')
            yield IterationEnd(0, StopReason.TOOL_USE, USAGE)
        else:
            yield TextDelta(0, "done")
            yield IterationEnd(0, StopReason.END_TURN, USAGE)


class TextModel:
    """Answers at once, as ``chunks`` text deltas (no tools)."""

    def __init__(self, text: str = "hello", chunks: int = 1) -> None:
        self.pieces = [text[i::chunks] for i in range(chunks)] if chunks > 1 else [text]

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[Any]:
        for piece in self.pieces:
            yield TextDelta(0, piece)
        yield IterationEnd(0, StopReason.END_TURN, USAGE)


class ParModel:
    """First call: ``calls`` parallel ``sleep_tool(i=j)``; then the answer."""

    def __init__(self, calls: int) -> None:
        self.calls = calls

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[Any]:
        if len(messages) == 1:
            for j in range(self.calls):
                yield ToolUseStart(j, f"c{j}", "sleep_tool")
                yield ToolInputDelta(j, f"c{j}", f'{{"i": {j}}}')
            yield IterationEnd(0, StopReason.TOOL_USE, USAGE)
        else:
            yield TextDelta(0, "done")
            yield IterationEnd(0, StopReason.END_TURN, USAGE)


class ParkedModel:
    """Blocks until ``gate`` is set, then answers (the memory scenario)."""

    def __init__(self, gate: asyncio.Event, parked: list[int]) -> None:
        self.gate = gate
        self.parked = parked

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[Any]:
        self.parked[0] += 1
        await self.gate.wait()
        yield TextDelta(0, "hello")
        yield IterationEnd(0, StopReason.END_TURN, USAGE)


async def step(i: int) -> str:
    return f"ok {i}"


async def sleep_tool(i: int) -> str:
    await asyncio.sleep(0.05)
    return f"slept {i}"


INT_SCHEMA = {"type": "object", "properties": {"i": {"type": "integer"}}, "required": ["i"]}


def tether_loop_agent(n: int) -> Agent:
    return Agent(
        "You are a bench.",
        LoopModel(n),
        tools=[Tool("step", step, "Take one step.", schema=INT_SCHEMA)],
        max_iterations=n + 1,
    )


def tether_text_agent(text: str = "hello", chunks: int = 1) -> Agent:
    return Agent("You are a bench.", TextModel(text, chunks=chunks))


def tether_par_agent(calls: int = 10) -> Agent:
    return Agent(
        "You are a bench.",
        ParModel(calls),
        tools=[Tool("sleep_tool", sleep_tool, schema=INT_SCHEMA)],
    )


async def tether_stream_events(agent: Agent) -> int:
    """Run once, counting the text deltas the caller sees as events."""
    seen = 0
    async for event in agent.run_stream("go"):
        if type(event) is TextDelta:
            seen += 1
    return seen


# -- raw asyncio: the floor ---------------------------------------------------------------------


async def raw_model(messages: list[dict[str, Any]], n: int) -> AsyncIterator[dict[str, Any]]:
    k = (len(messages) - 2) // 2
    if k < n:
        yield {"tool_calls": [{"id": f"call_{k}", "name": "step", "arguments": f'{{"i": {k}}}'}]}
    else:
        yield {"content": "done"}


async def raw_text_model(
    messages: list[dict[str, Any]], pieces: list[str]
) -> AsyncIterator[dict[str, Any]]:
    for piece in pieces:
        yield {"content": piece}


async def raw_par_model(
    messages: list[dict[str, Any]], calls: int
) -> AsyncIterator[dict[str, Any]]:
    if len(messages) == 2:
        yield {
            "tool_calls": [
                {"id": f"c{j}", "name": "sleep_tool", "arguments": f'{{"i": {j}}}'}
                for j in range(calls)
            ]
        }
    else:
        yield {"content": "done"}


async def raw_run(model: Any, arg: Any, tools: dict[str, Any], on_delta: Any = None) -> str:
    """A minimal hand-written agent loop: dict messages, json.loads, asyncio.gather."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a bench."},
        {"role": "user", "content": "go"},
    ]
    while True:
        text: list[str] = []
        calls: list[dict[str, Any]] = []
        async for chunk in model(messages, arg):
            if "content" in chunk:
                text.append(chunk["content"])
                if on_delta is not None:
                    on_delta(chunk["content"])
            if "tool_calls" in chunk:
                calls.extend(chunk["tool_calls"])
        messages.append({"role": "assistant", "content": "".join(text), "tool_calls": calls})
        if not calls:
            return "".join(text)
        results = await asyncio.gather(
            *(tools[c["name"]](**json.loads(c["arguments"])) for c in calls)
        )
        for call, result in zip(calls, results, strict=True):
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


RAW_TOOLS = {"step": step, "sleep_tool": sleep_tool}
