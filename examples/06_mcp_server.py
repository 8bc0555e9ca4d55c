"""An MCP server's tools: the agent is offered the tools of a real server, started as a child.

``McpStdio(command, args)`` runs the server (here ``mcp-server-time``, from PyPI) and is a tool
source: its tools are listed again before every model call. The model is
scripted; the server and its answers are real. Needs the ``mcp`` extra and the server (the
``dev`` extra has both). From the repository root:

    .venv/bin/pip install -e '.[mcp]' mcp-server-time
    .venv/bin/python examples/06_mcp_server.py
"""

import asyncio
import json
import sys

from tether import Agent, McpStdio, ToolResult
from tether.testing import Call, Reply, Request, ScriptedTransport


def answer(request: Request) -> Reply:
    """The scripted model's answer, from what the server returned."""
    now = json.loads(request.last_message.tool_results[0].text)
    return Reply(f"In Tokyo it is {now['day_of_week']}, {now['datetime'][11:16]}.")


model = ScriptedTransport(
    [Reply(tool_calls=[Call("get_current_time", {"timezone": "Asia/Tokyo"})]), answer]
)


async def main() -> None:
    server = McpStdio(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"])
    async with server:  # starts the process; leaving the block ends it
        agent = Agent(system="You tell the time.", transport=model, tools=[server])
        stream = agent.run_stream("What time is it in Tokyo?")
        async for event in stream:
            if isinstance(event, ToolResult):
                print(f"<- {event.name}: {json.loads(event.content)['timezone']}")
        print("offered:", ", ".join(model.requests[0].tool_names))
        print(await stream.get_final_text())


if __name__ == "__main__":
    asyncio.run(main())
