"""Agents together: one agent asks another as a tool, and one hands the conversation over.

``researcher.as_tool()`` is a tool whose call runs the researcher on a fresh context and returns
its answer (its steps stream as ``ToolProgress``). ``Agent(handoffs=[billing])`` offers the model
``transfer_to_billing``, which gives the rest of the run to ``billing`` on the same context.
The models are scripted. From the repository root:

    .venv/bin/python examples/05_agents_together.py
"""

import asyncio

from tether import Agent, Handoff, MemoryContextStore, ToolProgress, tool
from tether.testing import Call, Reply, ScriptedTransport

# -- an agent as a tool ---------------------------------------------------------------------

researcher = Agent(
    system="Finds facts and answers in one sentence.",
    transport=ScriptedTransport([Reply("Oslo has 717,710 people.")]),
    name="researcher",
)
writer = Agent(
    system="You write short answers; ask the researcher for facts.",
    transport=ScriptedTransport(
        [
            Reply(tool_calls=[Call("researcher", {"input": "Population of Oslo?"})]),
            Reply("Oslo is home to about 718,000 people."),
        ]
    ),
    tools=[researcher.as_tool()],
)

# -- a handoff ------------------------------------------------------------------------------


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


billing = Agent(
    system="You handle billing.",
    name="billing",
    tools=[refund],
    transport=ScriptedTransport(
        [Reply(tool_calls=[Call("refund", {"order": "A1"})]), Reply("Refunded order A1.")]
    ),
)
triage = Agent(
    system="You route customers to the right desk.",
    name="triage",
    handoffs=[billing],
    transport=ScriptedTransport([Reply(tool_calls=[Call("transfer_to_billing")])]),
)


async def main() -> None:
    stream = writer.run_stream("How many people live in Oslo?")
    async for event in stream:
        if isinstance(event, ToolProgress):
            print(f"  [{event.name}] {event.message}")
    print("writer:", await stream.get_final_text())

    context = MemoryContextStore()
    stream = triage.run_stream("My order A1 arrived broken; I want my money back.", context)
    async for event in stream:
        if isinstance(event, Handoff):
            print(f"  handoff: {event.from_agent} -> {event.to_agent}")
    print("answer:", await stream.get_final_text())
    print("written by:", [m.name for m in context.messages if m.role == "assistant"])


if __name__ == "__main__":
    asyncio.run(main())
