"""tether's MCP client against real servers: listing, calling, errors, images, both protocol
eras, list changes, cancellation, timeouts, servers that die or never start."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from mcp_helpers import children, free_port

from tether import ImageBlock, TextBlock
from tether.mcp import McpError, McpStdio, McpStreamable
from waiting import until

pytestmark = pytest.mark.timeout(60)


async def test_stdio_everything_lists_calls_and_reports_errors(everything: list[str]) -> None:
    async with McpStdio(everything[0], everything[1:], name="everything") as server:
        await server.ping()
        names = [t.name for t in await server.list_tools()]
        assert {"echo", "get-tiny-image", "trigger-long-running-operation"} <= set(names)
        assert "simulate-research-query" in names  # callable only as a task: run as one
        echo = await server.call("echo", {"message": "hi"})
        assert (echo.content, echo.is_error) == ("Echo: hi", False)
        bad = await server.call("echo", {})
        assert bad.is_error and "message" in str(bad.content)
        unknown = await server.call("no-such-tool", {})
        assert unknown.is_error and "no-such-tool" in str(unknown.content)


async def test_images_come_back_as_image_blocks(everything: list[str]) -> None:
    async with McpStdio(everything[0], everything[1:]) as server:
        result = await server.call("get-tiny-image", {})
    assert isinstance(result.content, tuple)
    images = [b for b in result.content if isinstance(b, ImageBlock)]
    assert len(images) == 1 and images[0].media_type == "image/png" and images[0].data
    assert any(isinstance(b, TextBlock) for b in result.content)


async def test_structured_content_is_kept(everything: list[str]) -> None:
    async with McpStdio(everything[0], everything[1:]) as server:
        result = await server.call("get-structured-content", {"location": "Chicago"})
    assert not result.is_error
    assert "temperature" in str(result.content)


async def test_the_stateless_era_server_time(time_server: str) -> None:
    async with McpStdio(time_server, name="time") as server:
        await server.ping()  # no ping in this era: probed by listing
        names = [t.name for t in await server.list_tools()]
        assert names == ["get_current_time", "convert_time"]
        now = await server.call("get_current_time", {"timezone": "UTC"})
        assert not now.is_error and '"timezone": "UTC"' in str(now.content)
        with pytest.raises(McpError, match=r"refused the call to 'nope'.*Unknown tool"):
            await server.call("nope", {})


async def test_the_tool_list_follows_the_server(changing: tuple[list[str], Path]) -> None:
    command, _ = changing
    async with McpStdio(command[0], command[1:]) as server:
        before = [t.name for t in await server.list_tools()]
        revision = server.revision
        assert (await server.call("add_tool", {"name": "fresh"})).content == "added"
        for _ in range(200):  # the change notice arrives on its own
            if server.revision != revision:
                break
            await asyncio.sleep(0.01)
        assert server.revision != revision
        after = [t.name for t in await server.list_tools()]
    assert "fresh" not in before and after == [*before, "fresh"]


async def test_a_tool_that_raises_on_the_server_is_an_error_result(
    changing: tuple[list[str], Path],
) -> None:
    command, _ = changing
    async with McpStdio(command[0], command[1:]) as server:
        result = await server.call("fail", {})
    assert result.is_error and "fail" in str(result.content)


async def test_cancelling_a_call_tells_the_server(changing: tuple[list[str], Path]) -> None:
    command, markers = changing
    async with McpStdio(command[0], command[1:]) as server:
        call = asyncio.ensure_future(server.call("slow", {"seconds": 30}))
        await until((markers / "started").exists, "the call's start on the server")
        started = time.monotonic()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert time.monotonic() - started < 5.0  # not the 30 s the call would take
        await until((markers / "cancelled").exists, "the server's note of the cancel")
        assert (await server.call("slow", {"seconds": 0.1})).content == "slept 0.1"


async def test_every_call_has_a_timeout(changing: tuple[list[str], Path]) -> None:
    command, _ = changing
    async with McpStdio(command[0], command[1:], timeout=0.5) as server:
        started = time.monotonic()
        with pytest.raises(McpError, match=r"timed out after 0\.5 s"):
            await server.call("slow", {"seconds": 30})
        assert time.monotonic() - started < 10.0  # not the 30 s the call would take


async def test_a_server_killed_mid_call_fails_that_call_at_once_and_comes_back(
    everything: list[str],
) -> None:
    before = set(children())
    async with McpStdio(everything[0], everything[1:], name="everything") as server:
        (pid,) = set(children()) - before
        reports: list[float] = []
        call = asyncio.ensure_future(
            server.call(
                "trigger-long-running-operation",
                {"duration": 30, "steps": 300},
                lambda done, total, message: reports.append(done),
            )
        )
        await until(lambda: bool(reports), "the server's first progress report")
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(McpError, match="went away during the call") as info:
            await call
        assert time.monotonic() - killed < 5.0  # not the 30 s the call would take
        assert "Starting default (STDIO) server" in str(info.value)  # its stderr tail
        echo = await server.call("echo", {"message": "back"})  # the next use reconnects
        assert echo.content == "Echo: back"
        assert len(set(children()) - before) == 1
    assert set(children()) == before  # nothing outlives the server's exit


async def test_a_server_killed_while_idle_reconnects_before_the_next_call(
    everything: list[str],
) -> None:
    before = set(children())
    async with McpStdio(everything[0], everything[1:]) as server:
        (pid,) = set(children()) - before
        os.kill(pid, signal.SIGKILL)
        await until(lambda: not server.connected, "the client's noticing the exit")
        assert (await server.call("echo", {"message": "again"})).content == "Echo: again"
    assert set(children()) == before


async def test_a_server_that_never_starts_names_itself_and_its_stderr() -> None:
    script = "import sys; print('config file missing', file=sys.stderr); sys.exit(3)"
    before = set(children())
    with pytest.raises(
        McpError, match=r"(?s)MCP server 'broken'.*stderr ended with:\nconfig file missing"
    ):
        async with McpStdio(sys.executable, ["-c", script], name="broken", connect_timeout=10):
            pass
    with pytest.raises(McpError, match="failed to start"):
        async with McpStdio("/nonexistent/tether-mcp-server"):
            pass
    assert set(children()) == before


async def test_a_secret_in_env_never_reaches_an_error_message() -> None:
    secret = "sk-live-0123456789abcdef"
    script = "import os, sys; print('key is', os.environ['API_KEY'], file=sys.stderr); sys.exit(1)"
    with pytest.raises(McpError) as info:
        async with McpStdio(sys.executable, ["-c", script], env={"API_KEY": secret}):
            pass
    assert secret not in str(info.value) and "[REDACTED]" in str(info.value)


async def test_stdio_children_get_a_minimal_environment(
    everything: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_PARENT_SECRET", "do-not-pass")
    async with McpStdio(everything[0], everything[1:], env={"EXTRA": "given"}) as server:
        seen = str((await server.call("get-env", {})).content)
    assert "EXTRA" in seen and "given" in seen
    assert "TETHER_TEST_PARENT_SECRET" not in seen and "do-not-pass" not in seen


async def test_streamable_http_everything(everything_http: str) -> None:
    async with McpStreamable(everything_http, token="t0k3n-for-tests") as server:
        await server.ping()
        names = [t.name for t in await server.list_tools()]
        assert "echo" in names
        assert (await server.call("echo", {"message": "over http"})).content == "Echo: over http"


async def test_streamable_http_stateless_era(changing_http: str) -> None:
    async with McpStreamable(changing_http) as server:
        await server.ping()
        revision = server.revision
        await server.call("add_tool", {"name": "fresh"})
        for _ in range(300):
            if server.revision != revision:
                break
            await asyncio.sleep(0.01)
        assert "fresh" in [t.name for t in await server.list_tools()]


async def test_an_http_server_that_is_not_there() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(McpError, match=r"failed to start.*ConnectError"):
        async with McpStreamable(url, token="secret-token-123", connect_timeout=5):
            pass


def test_bad_server_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="http"):
        McpStreamable("ftp://example.com/mcp")
    with pytest.raises(ValueError, match="not the URL"):
        McpStreamable("https://user:pw@example.com/mcp")
    with pytest.raises(TypeError, match="list of strings"):
        McpStdio("node", "server.js")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="command"):
        McpStdio("")


async def test_credentials_go_only_to_the_servers_own_url() -> None:
    """A server that redirects elsewhere does not get the token carried along: redirects are not
    followed, and the failure names the server without its secrets."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    elsewhere: list[dict[str, str]] = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            elsewhere.append(dict(self.headers))
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    target = f"http://127.0.0.1:{other.server_address[1]}/mcp"

    class Redirecting(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(307)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST

        def log_message(self, *args: object) -> None:
            pass

    first = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    for server in (other, first):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{first.server_address[1]}/mcp"
        token, key = "tok-0123456789abcdef", "key-abcdefghijkl"
        with pytest.raises(McpError) as info:
            async with McpStreamable(
                url, token=token, headers={"X-Api-Key": key}, connect_timeout=10
            ):
                pass
    finally:
        for server in (first, other):
            server.shutdown()
            server.server_close()
    assert elsewhere == []
    assert token not in str(info.value) and key not in str(info.value)


async def test_progress_notifications_become_events(everything: list[str]) -> None:
    from tether import Agent, ToolProgress, ToolResult
    from tether.testing import Call, Reply, ScriptedTransport

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("trigger-long-running-operation", {"duration": 1, "steps": 4})]),
            Reply("done"),
        ]
    )
    async with McpStdio(everything[0], everything[1:]) as server:
        agent = Agent("s", model, tools=[server], execution="sequential")
        events = [e async for e in agent.run_stream("go")]
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [p.progress for p in progress] == [1.0, 2.0, 3.0, 4.0]
    assert all(p.total == 4.0 and p.name == "trigger-long-running-operation" for p in progress)
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert events.index(progress[-1]) < events.index(result) and not result.is_error


async def test_an_http_server_that_restarts_is_reconnected(everything: list[str]) -> None:
    """A restarted server has forgotten the session: the call that finds out fails without
    running, and the next use connects again."""
    import subprocess

    from mcp_helpers import wait_for_port

    port = free_port()
    env = {"PATH": os.environ.get("PATH", ""), "PORT": str(port)}

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [everything[0], everything[1], "streamableHttp"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(port, proc)
        return proc

    proc = start()
    try:
        async with McpStreamable(f"http://127.0.0.1:{port}/mcp", connect_timeout=10) as server:
            assert (await server.call("echo", {"message": "one"})).content == "Echo: one"
            proc.kill()
            proc.wait()
            proc = start()
            try:
                await server.call("echo", {"message": "lost"})
            except McpError as exc:
                assert "HTTP error" in str(exc) or "went away" in str(exc)
            assert (await server.call("echo", {"message": "two"})).content == "Echo: two"
    finally:
        proc.kill()
        proc.wait()
