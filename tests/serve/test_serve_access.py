"""Who gets in: without a token only loopback host names (no DNS rebinding), with one only
requests carrying it (bearer header, or the cookie of a one-time login link); nothing that
changes state from another site. And ``tether serve`` as a real process."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from served import ask, client, run, serving
from tether import Agent
from tether.cli.serving import listen
from tether.serve import app
from tether.serve.access import Access
from tether.stores import SQLiteStore
from tether.testing import Reply, ScriptedTransport

TOKEN = "a-token-of-enough-length-0123456789"


def agent() -> Agent:
    return Agent("s", ScriptedTransport([], then=Reply("hello")))


async def test_without_a_token_only_loopback_names_get_in(tmp_path: Path) -> None:
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(agent(), store)) as base,
        client(base) as http,
    ):
        assert (await http.get("/")).status_code == 200
        assert (await http.get("/", headers={"host": "localhost:1"})).status_code == 200
        for host in ("evil.example", "evil.example:80", "10.0.0.5", "127.0.0.1.evil.example"):
            refused = await http.get("/api/sessions", headers={"host": host})
            assert refused.status_code == 421, host


async def test_nothing_changes_from_another_site(tmp_path: Path) -> None:
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(agent(), store)) as base,
        client(base) as http,
    ):
        for headers in (
            {"origin": "http://evil.example"},
            {"origin": "http://127.0.0.1:1"},
            {"sec-fetch-site": "cross-site"},
            {"sec-fetch-site": "same-site"},
        ):
            refused = await http.post("/agui", json=ask("hi"), headers=headers)
            assert refused.status_code == 403, headers
        assert (await http.get("/api/sessions")).json() == []
        same = await http.post(
            "/agui", json=ask("hi"), headers={"origin": base, "sec-fetch-site": "same-origin"}
        )
        assert same.status_code == 200


async def test_with_a_token_every_request_carries_it(tmp_path: Path) -> None:
    served = app(agent(), SQLiteStore(tmp_path / "c.db"), token=TOKEN)
    async with serving(served) as base, client(base, headers={"host": "chat.example:8000"}) as http:
        for path in ("/", "/api/sessions", "/api/agent"):
            assert (await http.get(path)).status_code == 401, path
        wrong = {"authorization": "Bearer " + TOKEN[:-1] + "x"}
        assert (await http.get("/api/sessions", headers=wrong)).status_code == 401
        right = {"authorization": f"Bearer {TOKEN}"}
        assert (await http.get("/api/sessions", headers=right)).status_code == 200
        events = await run(client(base, headers={**right, "host": "chat.example:8000"}), ask("hi"))
        assert events[-1]["type"] == "RUN_FINISHED"


async def test_a_login_link_sets_the_cookie_once(tmp_path: Path) -> None:
    served = app(agent(), SQLiteStore(tmp_path / "c.db"), token=TOKEN)
    code = served.login_code()
    async with serving(served) as base, client(base) as http:
        assert (await http.get("/login?code=not-a-code")).status_code == 403
        login = await http.get(f"/login?code={code}")
        assert login.status_code == 303 and login.headers["location"] == "/"
        cookie = login.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert (await http.get("/")).status_code == 200  # the client kept the cookie
        async with client(base) as stranger:
            assert (await stranger.get(f"/login?code={code}")).status_code == 403  # used up
            assert (await stranger.get("/")).status_code == 401


def test_tokens_are_long_and_codes_work_once() -> None:
    with pytest.raises(ValueError, match="16 characters"):
        Access("short")
    with pytest.raises(ValueError, match="letters, digits"):
        Access("a token with spaces; and more")
    with pytest.raises(ValueError, match="no login links"):
        Access(None).login_code()
    access = Access(TOKEN)
    first, second = access.login_code(), access.login_code()
    assert first != second
    assert access.redeem(second) and not access.redeem(second) and access.redeem(first)


async def test_the_page_allows_only_its_own_script(tmp_path: Path) -> None:
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(agent(), store)) as base,
        client(base) as http,
    ):
        page = await http.get("/")
    policy = page.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", policy)
    assert nonce is not None and "default-src 'none'" in policy
    assert page.text.count(f'nonce="{nonce.group(1)}"') == 2  # the one script and one style
    assert "http://" not in page.text and "https://" not in page.text  # nothing fetched elsewhere


def test_tether_serve_runs_until_interrupted(tmp_path: Path) -> None:
    """The command as a user starts it: a bound port, a page, a login link for a public host;
    Ctrl-C (SIGINT) stops it cleanly."""
    module = tmp_path / "served_agent.py"
    module.write_text(
        "from tether import Agent\n"
        "from tether.testing import Reply, ScriptedTransport\n"
        "agent = Agent('s', ScriptedTransport([], then=Reply('hi')), name='demo')\n"
    )
    command = [sys.executable, "-m", "tether.cli", "serve", "--agent", f"{module}:agent"]
    command += ["--port", "0", "--host", "0.0.0.0", "--store", str(tmp_path / "c.db")]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        port = re.search(r":(\d+)/ ", lines[0])
        link = re.search(r"(/login\?code=\S+)", lines[1])
        bearer = re.search(r"Bearer (\S+)", lines[2])
        assert port and link and bearer, lines
        base = f"http://127.0.0.1:{port.group(1)}"
        with httpx.Client(base_url=base) as http:
            assert http.get("/api/agent").status_code == 401
            assert http.get(link.group(1)).status_code == 303
            assert http.get("/api/agent").json()["agent"] == "demo"
        direct = {"authorization": f"Bearer {bearer.group(1)}"}
        with httpx.Client(base_url=base, headers=direct) as api:
            assert api.get("/api/sessions").status_code == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(20) == 0, process.stderr.read() if process.stderr else ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_an_agent_that_cannot_be_loaded_is_a_usage_error(tmp_path: Path) -> None:
    not_agent = tmp_path / "not_agent.py"
    not_agent.write_text("agent = 42\n")
    for spec, said in (("nowhere:agent", "nowhere"), (f"{not_agent}:agent", "not an Agent")):
        done = subprocess.run(
            [sys.executable, "-m", "tether.cli", "serve", "--agent", spec],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2 and said in done.stderr, done.stderr


def test_ctrl_c_with_a_run_under_way_stops_it_and_keeps_its_history(tmp_path: Path) -> None:
    """A tool that would take a minute: Ctrl-C ends the open stream and the run; the session
    keeps the call with an interrupted result."""
    module = tmp_path / "napping_agent.py"
    module.write_text(
        "import asyncio\n"
        "from tether import Agent, tool\n"
        "from tether.testing import Call, Reply, ScriptedTransport\n"
        "@tool\n"
        "async def nap() -> str:\n"
        "    '''Sleep a minute.'''\n"
        "    await asyncio.sleep(60)\n"
        "    return 'woke'\n"
        "agent = Agent('s', ScriptedTransport([Reply(tool_calls=[Call('nap')])]), tools=[nap])\n"
    )
    store = tmp_path / "c.db"
    command = [sys.executable, "-m", "tether.cli", "serve", "--agent", f"{module}:agent"]
    command += ["--port", "0", "--store", str(store)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port = re.search(r":(\d+)/ ", process.stdout.readline())
        assert port
        body = {"messages": [{"role": "user", "content": "nap"}]}
        base = f"http://127.0.0.1:{port.group(1)}"
        with (
            httpx.Client(base_url=base, timeout=30) as http,
            http.stream("POST", "/agui", json=body) as answer,
        ):
            lines = answer.iter_lines()
            for line in lines:
                if "TOOL_CALL_END" in line:
                    break
            process.send_signal(signal.SIGINT)
            rest = list(lines)  # the stream ends with the server, not after the minute
        assert not any("woke" in line for line in rest)
        assert process.wait(20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    history = asyncio.run(_history(store))
    assert [m.role for m in history] == ["user", "assistant", "user"]
    assert "interrupted" in history[-1].tool_results[0].text


async def _history(path: Path) -> list[Any]:
    async with SQLiteStore(path) as store:
        (info,) = await store.sessions()
        return await (await store.open(info.session_id)).get_history()


async def test_connections_tether_serve_accepts_send_small_writes_at_once() -> None:
    """asyncio sets TCP_NODELAY on accepted connections only when the listening socket names
    the TCP protocol; without it every SSE event after the first waited for a delayed ACK."""
    listening = listen("127.0.0.1", 0)
    nodelay: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        option = writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        nodelay.set_result(option)
        writer.close()

    server = await asyncio.start_server(accepted, sock=listening)
    async with server:
        _, writer = await asyncio.open_connection(*listening.getsockname())
        assert await nodelay != 0
        writer.close()
