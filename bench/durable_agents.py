"""What ``bench/durable.py`` runs, importable by its worker processes: a durable agent whose
scripted model calls two tools at once, then answers (two model calls, two tool calls per run),
and the baseline: a bare Temporal workflow of the same shape, four no-op activities
(``python bench/durable_agents.py ADDRESS QUEUE`` serves it). ``sized``: one tool call whose
result has the size the prompt asks, its large payloads offloaded to ``FileBlobs`` in
``$TETHER_BENCH_BLOBS`` (a folder the bench and its workers share)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

from tether import Agent, Message, StreamEvent, ToolResultBlock, tool
from tether.durable import FileBlobs, TemporalAgent
from tether.events import IterationEnd, ToolInputDelta, ToolUseStart
from tether.testing import make_text_response
from tether.types import StopReason, ToolSpec, Usage


class TwoCalls:
    """Turn one: two calls of ``add``; turn two: the sum of their results."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        results = [b for m in messages for b in m.content if isinstance(b, ToolResultBlock)]
        if not results:
            for i, (a, b) in enumerate(((1, 2), (3, 4))):
                yield ToolUseStart(i, f"call_{i}", "add")
                yield ToolInputDelta(i, f"call_{i}", f'{{"a": {a}, "b": {b}}}')
            yield IterationEnd(1, StopReason.TOOL_USE, Usage(10, 5))
            return
        for event in make_text_response(str(sum(int(str(r.content)) for r in results))):
            yield event


@tool(idempotent=True)
def add(a: int, b: int) -> int:
    """The sum of a and b."""
    return a + b


plain = Agent("Add.", TwoCalls(), tools=[add])
adder = TemporalAgent(plain, name="bench-adder")


class OneFetch:
    """Turn one: ``fetch`` of the size the prompt names; turn two: the size of what came."""

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        results = [b for m in messages for b in m.content if isinstance(b, ToolResultBlock)]
        if not results:
            size = messages[0].text
            yield ToolUseStart(0, "call_0", "fetch")
            yield ToolInputDelta(0, "call_0", f'{{"size": {size}}}')
            yield IterationEnd(1, StopReason.TOOL_USE, Usage(10, 5))
            return
        for event in make_text_response(str(len(str(results[0].content)))):
            yield event


@tool(idempotent=True)
def fetch(size: int) -> str:
    """A document of ``size`` characters."""
    return "x" * size


fetching = Agent("Fetch.", OneFetch(), tools=[fetch], max_tool_result_chars=None)
_BLOBS = os.environ.get("TETHER_BENCH_BLOBS") or str(Path(tempfile.gettempdir()) / "tether-blobs")
sized = TemporalAgent(fetching, name="bench-sized", blobs=FileBlobs(_BLOBS))


@activity.defn
async def noop(value: int) -> int:
    return value


@workflow.defn(sandboxed=False)
class Bare:
    """One activity, two at once, one more: the shape of a durable agent run, nothing else."""

    @workflow.run
    async def run(self) -> int:
        limit = timedelta(seconds=30)
        await workflow.execute_activity(noop, 1, start_to_close_timeout=limit)
        await asyncio.gather(
            workflow.execute_activity(noop, 2, start_to_close_timeout=limit),
            workflow.execute_activity(noop, 3, start_to_close_timeout=limit),
        )
        return await workflow.execute_activity(noop, 4, start_to_close_timeout=limit)


async def serve_bare(address: str, queue: str) -> None:
    client = await Client.connect(address)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with Worker(client, task_queue=queue, workflows=[Bare], activities=[noop]):
        print("worker ready", file=sys.stderr, flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(serve_bare(sys.argv[1], sys.argv[2]))
