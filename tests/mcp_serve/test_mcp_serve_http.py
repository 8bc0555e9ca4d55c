"""``tether mcp-serve --http``: a real uvicorn on 127.0.0.1 serving Streamable HTTP at ``/mcp``,
driven by the official SDK's client; Host and Origin checked against DNS rebinding as the MCP
specification asks (421, 403), a token required off loopback and checked when given (401), and
the options that only apply to HTTP refused without ``--http``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_serve_helpers import AGENT_SPEC, TOKEN, HttpServer, run_tether, text_of, wait_for

from mcp import ClientSession

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@asynccontextmanager
async def connected(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def post(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, json=INITIALIZE, headers={**ACCEPT, **headers}, timeout=30)


async def test_over_http_it_lists_calls_and_asks(http_server: HttpServer) -> None:
    assert http_server.url.startswith("http://127.0.0.1:")
    async with connected(http_server.url) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        added = await session.call_tool("add", {"a": 40, "b": 2})
        failed = await session.call_tool("broken", {"reason": "over http"})
        asked = await session.call_tool("ask", {"message": "add 2 2"})
    assert names == {"ask", "add", "broken", "wait_long", "delete_file", "count_to"}
    assert text_of(added) == "42"
    assert failed.is_error is True and "broken on purpose: over http" in text_of(failed)
    assert text_of(asked) == "The tool said: 4"


async def test_cancelling_an_ask_over_http_cancels_the_run(
    http_server: HttpServer, markers: Path
) -> None:
    async with connected(http_server.url) as session:
        call = asyncio.create_task(session.call_tool("ask", {"message": "wait"}))
        assert await wait_for(markers / "started"), "the run never called its tool"
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert await wait_for(markers / "cancelled"), "the run went on after the cancellation"
        assert text_of(await session.call_tool("add", {"a": 3, "b": 4})) == "7"
    assert not (markers / "finished").exists()


def test_a_host_other_than_loopback_is_refused(http_server: HttpServer) -> None:
    port = http_server.url.split(":")[2].split("/")[0]
    refused = post(http_server.url, Host=f"rebound.example:{port}")
    assert refused.status_code == 421
    assert "rebound.example" in refused.json()["error"]
    assert post(http_server.url, Host=f"localhost:{port}").status_code == 200


def test_an_origin_of_another_site_is_refused(http_server: HttpServer) -> None:
    refused = post(http_server.url, Origin="http://evil.example")
    assert refused.status_code == 403
    assert "evil.example" in refused.json()["error"]
    assert post(http_server.url, Origin="http://localhost:5173").status_code == 200
    assert post(http_server.url, Origin="null").status_code == 403


async def test_with_a_token_every_request_must_carry_it(markers: Path) -> None:
    server = HttpServer(markers, "--token", TOKEN)
    try:
        assert post(server.url).status_code == 401
        wrong = post(server.url, Authorization="Bearer not-the-token-at-all-xxxxxxxx")
        assert wrong.status_code == 401
        assert wrong.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in wrong.text
        async with connected(server.url, TOKEN) as session:
            added = await session.call_tool("add", {"a": 1, "b": 1})
        assert text_of(added) == "2"
    finally:
        server.close()


def test_a_host_other_than_loopback_needs_a_token(tmp_path: Path) -> None:
    done = run_tether("--agent", AGENT_SPEC, "--http", "--host", "0.0.0.0", cwd=tmp_path)
    assert done.returncode == 2
    assert "--host 0.0.0.0 is not a loopback address: give --token" in done.stderr
    short = run_tether(
        "--agent", AGENT_SPEC, "--http", "--host", "0.0.0.0", "--token", "short", cwd=tmp_path
    )
    assert short.returncode == 2
    assert "at least 16 characters" in short.stderr


async def test_off_loopback_with_a_token_it_serves_those_who_carry_it(markers: Path) -> None:
    server = HttpServer(markers, "--host", "0.0.0.0", "--token", TOKEN)
    try:
        port = server.url.split(":")[2].split("/")[0]
        local = f"http://127.0.0.1:{port}/mcp"
        assert post(local).status_code == 401
        async with connected(local, TOKEN) as session:
            added = await session.call_tool("add", {"a": 2, "b": 2})
        assert text_of(added) == "4"
    finally:
        server.close()


@pytest.mark.parametrize(("option", "value"), [("--host", "127.0.0.1"), ("--port", "9000")])
def test_http_options_without_http_are_refused(tmp_path: Path, option: str, value: str) -> None:
    done = run_tether("--agent", AGENT_SPEC, option, value, cwd=tmp_path)
    assert done.returncode == 2
    assert f"{option} applies only with --http" in done.stderr


def test_a_spec_that_names_no_agent_is_refused(tmp_path: Path) -> None:
    done = run_tether("--agent", f"{AGENT_SPEC.rsplit(':', 1)[0]}:add", cwd=tmp_path)
    assert done.returncode == 2
    assert "not an Agent" in done.stderr
