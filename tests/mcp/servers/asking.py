"""A real MCP server (the official SDK's ``MCPServer``) whose tools ask the user for input: in the
2026-07-28 era as an ``InputRequiredResult`` (the client answers by calling again), in the
handshake era as an ``elicitation/create`` request mid-call. Run: python asking.py [stdio | http
PORT]

Tools: ``book`` (asks for seating preferences through ``Resolve``; answers what it got),
``endless`` (asks again every round, never done), ``crowd`` (asks 40 questions in one round),
``big_schema`` (asks with a schema of 5,000 properties), ``big_message`` (asks with a message of
200,000 characters), ``say`` (asks with a message from its argument and no fields).

With ``ASKING_STATE_KEY`` set, the request state is sealed with that key (as servers that run
in several processes share one), so another process of this server takes it back; without it,
with a key of the process's own. With ``ASKING_LOG`` set, each booking is also written there,
one line each."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer, RequestStateSecurity, Resolve
from mcp.server.mcpserver.resolve import Elicit
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    TextContent,
)
from pydantic import BaseModel, Field

_KEY = os.environ.get("ASKING_STATE_KEY")
server = MCPServer(
    "asking",
    version="1.0.0",
    request_state_security=None if _KEY is None else RequestStateSecurity(keys=[_KEY]),
)


class Seat(BaseModel):
    """How the user likes to travel."""

    seat: Literal["window", "aisle"] = Field(description="where to sit")
    count: int = Field(ge=1, le=9, description="how many seats")
    meal: bool = Field(default=True, description="a meal on board")


def ask_seat(day: str) -> Elicit[Seat]:
    return Elicit(f"Seats for {day}?", Seat)


@server.tool()
def book(day: str, seat: Annotated[Seat, Resolve(ask_seat)]) -> str:
    """Book seats for ``day``; asks the user how."""
    said = f"booked {day}: {seat.count} {seat.seat} meal={seat.meal}"
    log = os.environ.get("ASKING_LOG")
    if log:
        with Path(log).open("a") as out:
            out.write(said + "\n")
    return said


def _asking(message: str, schema: dict[str, object], count: int = 1) -> InputRequiredResult:
    params = ElicitRequestFormParams(message=message, requested_schema=schema)
    requests = {f"q{i}": ElicitRequest(params=params) for i in range(count)}
    return InputRequiredResult(input_requests=requests, request_state="asked")  # type: ignore[arg-type]


_NAME = {"type": "object", "properties": {"name": {"type": "string"}}}


@server.tool()
def endless(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks for a name every round, whatever the answer."""
    return _asking("Your name, again?", _NAME)


@server.tool()
def crowd(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks 40 questions at once; answers how many came back."""
    if ctx.input_responses:
        text = f"{len(ctx.input_responses)} answers"
        return CallToolResult(content=[TextContent(type="text", text=text)])
    return _asking("One of many", _NAME, 40)


@server.tool()
def big_schema(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks with a schema of 5,000 properties."""
    props = {f"field_{i}": {"type": "string", "description": "x" * 20} for i in range(5_000)}
    return _asking("Fill these in", {"type": "object", "properties": props})


@server.tool()
def big_message(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks with a message of 200,000 characters."""
    return _asking("y" * 200_000, _NAME)


@server.tool()
def say(text: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Asks the user to confirm ``text`` (no fields); answers what came back."""
    if ctx.input_responses:
        answer = next(iter(ctx.input_responses.values()))
        said = answer.model_dump(mode="json", exclude_none=True)
        return CallToolResult(content=[TextContent(type="text", text=f"got {said}")])
    return _asking(text, {"type": "object", "properties": {}})


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
