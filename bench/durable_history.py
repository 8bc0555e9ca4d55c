"""What a long durable run writes into Temporal's history, with the conversation kept there and
with it kept in a PostgreSQL store, side by side in one run: history bytes and events across
every run of the chain, how often it continued as new, and the bytes the model calls carried.

    python bench/durable_history.py               # 60 rounds of one tool call each
    python bench/durable_history.py --rounds 200

The store half needs ``TETHER_PG_DSN`` (``scripts/services.sh start DIR`` prints it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from temporalio.client import Client

from tether import Agent, Message, StreamEvent, ToolResultBlock, tool
from tether.durable import DevServer, DurableOptions, TemporalAgent
from tether.testing import make_text_response, make_tool_use_response
from tether.types import ToolSpec

NOTE = "x" * 400  # each tool call's argument and result: a conversation of realistic weight


class Rounds:
    """Calls ``note`` once per turn until ``rounds`` results are in, then answers."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        done = sum(isinstance(b, ToolResultBlock) for m in messages for b in m.content)
        events = (
            make_tool_use_response("note", f"call_{done}", {"text": NOTE})
            if done < self.rounds
            else make_text_response(f"noted {done}")
        )
        for event in events:
            yield event


@tool(idempotent=True)
def note(text: str) -> str:
    """Keep a note."""
    return text


async def history_of(client: Client, workflow_id: str) -> dict[str, int]:
    """Bytes and events of every run of ``workflow_id``, and the bytes its model calls carried."""
    handle = client.get_workflow_handle(workflow_id)
    described = await handle.describe()
    run_id: str | None = described.raw_description.workflow_execution_info.first_run_id
    totals = {"runs": 0, "events": 0, "bytes": 0, "model input bytes": 0, "largest model input": 0}
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        totals["runs"] += 1
        totals["events"] += len(history.events)
        totals["bytes"] += sum(e.ByteSize() for e in history.events)
        run_id = None
        for event in history.events:
            scheduled = event.activity_task_scheduled_event_attributes
            if scheduled.activity_type.name.endswith(".model"):
                size = sum(len(p.data) for p in scheduled.input.payloads)
                totals["model input bytes"] += size
                totals["largest model input"] = max(totals["largest model input"], size)
            if event.HasField("workflow_execution_continued_as_new_event_attributes"):
                attributes = event.workflow_execution_continued_as_new_event_attributes
                run_id = attributes.new_execution_run_id
    return totals


async def one_mode(client: Client, rounds: int, store: Any, label: str) -> dict[str, Any]:
    agent = TemporalAgent(
        Agent("Take notes.", Rounds(rounds), tools=[note], max_iterations=rounds + 1),
        name=f"history-{label}",
        store=store,
        options=DurableOptions(max_history_bytes=1 << 20),  # far below Temporal's own limits
    )
    queue = f"history-{label}-{os.getpid()}"
    async with agent.worker(client, queue):
        started = time.perf_counter()
        run = await agent.start(client, "Take the notes.", task_queue=queue)
        answer = await run.answer()
        seconds = time.perf_counter() - started
    assert answer == f"noted {rounds}", answer
    return {"seconds": seconds, **await history_of(client, run.id)}


async def main(opts: argparse.Namespace) -> None:
    dsn = os.environ.get("TETHER_PG_DSN")
    with DevServer() as server:
        client = await Client.connect(server.address)
        results = {"in history": await one_mode(client, opts.rounds, None, "mem")}
        if dsn:
            from tether.stores import PostgresStore

            store = PostgresStore(dsn, schema=f"bench_history_{os.getpid()}")
            results["in PostgreSQL"] = await one_mode(client, opts.rounds, store, "pg")
            await store.aclose()
    print(f"one durable run of {opts.rounds} rounds (a ~400-byte tool call each), "
          "history limit 1 MiB")  # fmt: skip
    keys = list(results["in history"])
    print(f"{'conversation kept':22}" + "".join(f"{k:>22}" for k in keys))
    for label, figures in results.items():
        cells = "".join(
            f"{v:22.2f}" if isinstance(v, float) else f"{v:22,}" for v in figures.values()
        )
        print(f"{label:22}{cells}")
    if not dsn:
        print("(no TETHER_PG_DSN: the store half was left out)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    asyncio.run(main(parser.parse_args()))
    sys.stdout.flush()
    os._exit(0)  # the Temporal SDK's native threads can abort interpreter teardown
