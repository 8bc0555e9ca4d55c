"""tether's "everything client" for the official MCP conformance suite's client scenarios:
``conformance client --command "python everything_client.py" --scenario S`` starts it with the
scenario's server URL as its one argument and the scenario's name in ``MCP_CONFORMANCE_SCENARIO``.
It does what each scenario asks through tether's own MCP client (``McpStreamable``), as a tether
user would; a scenario that needs a client feature tether does not have yet is still run, with
what tether has, so the suite's verdict on it is real (``scripts/mcp-conformance.md`` lists them).
Exit status 0 when the scenario's steps all succeeded, 1 with the error on stderr otherwise."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable

from tether import McpStreamable
from tether.mcp import Elicitation

Step = Callable[[McpStreamable], Awaitable[None]]


async def list_only(server: McpStreamable) -> None:
    """Connect (the initialize handshake) and list the tools."""
    await server.list_tools()


async def add_numbers(server: McpStreamable) -> None:
    """Call the scenario's ``add_numbers`` tool and check its sum."""
    result = await server.call("add_numbers", {"a": 5, "b": 3})
    if result.is_error or "8" not in result.text:
        raise RuntimeError(f"add_numbers answered {result.content!r}")


async def reconnection(server: McpStreamable) -> None:
    """Call ``test_reconnection``, whose answer comes only after the client reconnects (the
    server closes the POST stream after a priming event and answers on the resumed stream)."""
    await server.list_tools()
    result = await server.call("test_reconnection", {})
    if result.is_error:
        raise RuntimeError(f"test_reconnection failed: {result.content!r}")


async def elicitation_defaults(server: McpStreamable) -> None:
    """Call the tool that elicits with defaults: the user accepts without filling anything in,
    so tether's client answers with the requested schema's defaults (``accept_defaults``)."""
    result = await server.call("test_client_elicitation_defaults", {})
    if result.is_error:
        raise RuntimeError(f"test_client_elicitation_defaults failed: {result.content!r}")


async def list_and_call(server: McpStreamable) -> None:
    """What an authorised client does in the auth scenarios: list the tools, call one."""
    await server.list_tools()
    result = await server.call("test-tool", {})
    if result.is_error:
        raise RuntimeError(f"test-tool failed: {result.content!r}")


STEPS: dict[str, Step] = {
    "initialize": list_only,
    "tools_call": add_numbers,
    "sse-retry": reconnection,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
}


def step_for(scenario: str) -> Step:
    """The steps of ``scenario``; every ``auth/...`` scenario lists and calls (pending: OAuth)."""
    if scenario in STEPS:
        return STEPS[scenario]
    if scenario.startswith("auth/"):
        return list_and_call
    raise SystemExit(f"everything_client: no steps for the scenario {scenario!r}")


def accept_defaults(question: Elicitation) -> dict[str, object]:
    """The user accepts the form as it is shown: nothing typed, every default kept."""
    return {}


async def main(url: str, scenario: str) -> None:
    step = step_for(scenario)
    async with McpStreamable(
        url, timeout=30.0, connect_timeout=30.0, on_elicit=accept_defaults
    ) as server:
        await step(server)


if __name__ == "__main__":
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if len(sys.argv) != 2 or not scenario:
        raise SystemExit("usage: MCP_CONFORMANCE_SCENARIO=<scenario> everything_client.py <url>")
    try:
        asyncio.run(main(sys.argv[1], scenario))
    except Exception as exc:  # the suite reads the exit status; the reason goes to stderr
        print(f"everything_client: {scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
