"""tether's "everything client" for the official MCP conformance suite's client scenarios:
``conformance client --command "python everything_client.py" --scenario S`` starts it with the
scenario's server URL as its one argument and the scenario's name in ``MCP_CONFORMANCE_SCENARIO``.
It does what each scenario asks through tether's own MCP client (``McpStreamable``), as a tether
user would; a scenario that needs a client feature tether does not have yet is still run, with
what tether has, so the suite's verdict on it is real (``scripts/mcp-conformance.md`` lists them).
Exit status 0 when the scenario's steps all succeeded, 1 with the error on stderr otherwise."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from tether import McpStreamable
from tether.mcp import Elicitation, McpError, OAuth

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
    """The steps of ``scenario``; every ``auth/...`` scenario lists and calls once logged in."""
    if scenario in STEPS:
        return STEPS[scenario]
    if scenario.startswith("auth/"):
        return list_and_call
    raise SystemExit(f"everything_client: no steps for the scenario {scenario!r}")


async def browser(authorization_url: str) -> None:
    """The person at the browser, headless: open the authorization address; the suite's
    authorization server approves at once and redirects back to tether's loopback listener."""
    async with httpx.AsyncClient(follow_redirects=True, timeout=30) as you:
        await you.get(authorization_url)


# The client ID metadata document the suite's scenarios expect a client to name (they take it
# as it is, without fetching it); where an authorization server takes none, tether registers.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def oauth_for(tokens: Path) -> OAuth:
    """The ``OAuth`` a tether user would configure for the scenario: the credentials it gives
    (``MCP_CONFORMANCE_CONTEXT``: a client registered beforehand, or one acting for itself with
    its secret or private key), else tether's client ID metadata document or registration."""
    context: dict[str, Any] = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    own = context.get("name", "").startswith("auth/client-credentials")
    return OAuth(
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        private_key=context.get("private_key_pem"),
        grant="client_credentials" if own else "authorization_code",
        client_metadata_url=None if context else CLIENT_METADATA_URL,
        token_file=tokens,
    )


async def authorised(url: str, step: Step) -> None:
    """Log in (the browser step; a client acting for itself has none), connect with the kept
    tokens and do the steps. When the server asks for more access than the login gave (a
    scope step-up), log in again, as the error says, and do them once more."""
    with tempfile.TemporaryDirectory() as home:
        oauth = oauth_for(Path(home) / "tokens.json")
        if oauth.grant == "authorization_code":
            await oauth.login(url, browser=browser, within=30.0)
        try:
            await connected(url, oauth, step)
        except McpError as exc:
            if "Log in again" not in str(exc):
                raise
            await oauth.login(url, browser=browser, within=30.0)
            await connected(url, oauth, step)


async def connected(url: str, oauth: OAuth, step: Step) -> None:
    async with McpStreamable(url, timeout=30.0, connect_timeout=30.0, auth=oauth) as server:
        await step(server)


def accept_defaults(question: Elicitation) -> dict[str, object]:
    """The user accepts the form as it is shown: nothing typed, every default kept."""
    return {}


async def main(url: str, scenario: str) -> None:
    step = step_for(scenario)
    if scenario.startswith("auth/"):
        await authorised(url, step)
        return
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
