"""padwan-ai's view of the MCP transports: ``.tools`` (``McpTool`` definitions, one list refreshed
in place), ``is_open``, ``label``, and the prefix each server's tools get when names collide, on
real servers (``mcp-server-time``, server-everything, ``servers/changing.py``)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from mcp_helpers import children, other_tasks

from tether import AgentSession, McpStdio, McpStreamable, McpTool
from tether.testing import Call, Reply, ScriptedTransport
from waiting import until

pytestmark = pytest.mark.timeout(60)

PREFIX = re.compile(r"[A-Za-z0-9_-]+")


# -- prefixes and labels, without a server --------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "args", "prefix"),
    [
        (
            "npx",
            ["-y", "@modelcontextprotocol/server-everything@2025.1.0", "stdio"],
            "server_everything",
        ),
        ("npx", ["-y", "@modelcontextprotocol/server-everything"], "server_everything"),
        ("npx", ["@modelcontextprotocol/server-filesystem", "/path"], "server_filesystem"),
        ("uvx", ["mcp-server-time==0.6.2", "--local-timezone", "UTC"], "mcp_server_time"),
        ("uvx", ["--from", "weather-pkg", "weather-mcp"], "weather_mcp"),
        ("python3", ["-m", "mcp_server_time"], "mcp_server_time"),
        ("python", ["my-server.py"], "my_server"),
        ("python", ["main.py"], "main"),
        ("/usr/bin/python", ["server.py"], "server"),
        ("python", ["-u", "/srv/tools/files.py"], "files"),
        ("node", ["index.js"], "index"),
        ("node", ["/abs/path/to/server-foo.mjs"], "server_foo"),
        ("node", ["/opt/server-everything/dist/index.js", "stdio"], "server_everything"),
        ("uv", ["run", "my-server"], "my_server"),
        ("npx", [], "npx"),
        ("/usr/local/bin/mcp-server-time", [], "mcp_server_time"),
        ("docs.server", ["--root", "."], "docs_server"),
        ("python3", ["-c", "import server; server.main()"], "python3"),
        ("docker", ["run", "-i", "--rm", "-e", "KEY=v", "mcp/time"], "time"),
    ],
)
def test_a_stdio_servers_auto_prefix_is_the_package_or_script_it_runs(
    command: str, args: list[str], prefix: str
) -> None:
    """padwan-ai's rule: the script or package, not the launcher (``npx``, ``python``), its
    directories, npm scope, version and ``.py``/``.js``/``.mjs`` gone, every run of characters
    other than letters, digits and ``_`` one ``_``."""
    server = McpStdio(command, args)
    assert server.auto_prefix == prefix
    assert server.prefix == prefix  # the name it goes by, without a name of its own
    assert re.fullmatch(r"[A-Za-z0-9_]+", server.auto_prefix)


def test_auto_prefix_is_the_given_name_and_ignores_name_prefix() -> None:
    assert McpStdio("npx", ["-y", "pkg"], name="my tools!").auto_prefix == "my_tools"
    assert McpStdio("npx", ["-y", "pkg"], name="weather-v2").auto_prefix == "weather-v2"
    pinned = McpStdio("npx", ["-y", "@scope/server-x"], name_prefix="x")
    assert (pinned.auto_prefix, pinned.name_prefix) == ("server_x", "x")
    http = McpStreamable("https://tools.example.com/mcp", name_prefix="t")
    assert http.auto_prefix == "tools_example_com"
    assert McpStreamable("https://tools.example.com/mcp", name="w").auto_prefix == "w"


@pytest.mark.parametrize(
    ("url", "prefix"),
    [
        ("https://mcp.data.gouv.fr/mcp", "mcp_data_gouv_fr"),
        ("http://localhost:8080/mcp", "localhost"),
        ("https://api.weather.example.com/v1/mcp?key=abc", "api_weather_example_com"),
        ("https://my-tools.example.com/mcp", "my_tools_example_com"),
        ("http://127.0.0.1:9000/mcp", "127_0_0_1"),
    ],
)
def test_an_http_servers_auto_prefix_is_its_host(url: str, prefix: str) -> None:
    assert McpStreamable(url).auto_prefix == prefix


def test_a_given_name_is_the_prefix_in_allowed_characters() -> None:
    assert McpStdio("npx", ["-y", "pkg"], name="my tools!").prefix == "my_tools"
    assert McpStreamable("https://x.example/mcp", name="weather").prefix == "weather"


def test_an_http_servers_prefix_before_it_names_itself_is_its_host() -> None:
    server = McpStreamable("https://mcp.data.gouv.fr/mcp?key=abc")
    assert server.prefix == "mcp_data_gouv_fr"
    assert PREFIX.fullmatch(server.prefix)


def test_labels_name_the_server_without_its_secrets() -> None:
    stdio = McpStdio("npx", ["-y", "weather-mcp", "--api-key", "sk-very-secret-value"])
    assert stdio.label == "npx -y weather-mcp --api-key [REDACTED]"
    http = McpStreamable("https://tools.example.com/mcp?key=abcdef123", token="sk-123456789")
    assert http.label == "https://tools.example.com/mcp"


# -- .tools and is_open on real servers -----------------------------------------------------------


async def test_tools_are_mcp_tool_definitions_while_open(time_server: str) -> None:
    server = McpStdio(time_server)
    tools = server.tools
    assert (tools, server.is_open) == ([], False)
    async with server:
        assert server.is_open
        assert server.tools is tools
        assert [t.name for t in tools] == ["get_current_time", "convert_time"]
        assert all(isinstance(t, McpTool) for t in tools)
        now = tools[0]
        assert "timezone" in now.input_schema["properties"] and now.description
        assert now.to_tool_def()["parameters"] == now.input_schema
        result = await now.handler({"timezone": "UTC"})
        assert not result.is_error and '"timezone": "UTC"' in str(result.content)
    assert not server.is_open


async def test_tools_are_refreshed_in_place_when_the_server_says_they_changed(
    changing: tuple[list[str], Path],
) -> None:
    command, _ = changing
    async with McpStdio(command[0], command[1:]) as server:
        tools = server.tools
        before = [t.name for t in tools]
        assert "slow" in before and "fresh" not in before
        assert (await server.call("add_tool", {"name": "fresh"})).content == "added"
        await until(lambda: "fresh" in [t.name for t in tools], "the list refreshed in place")
        assert server.tools is tools
        (fresh,) = [t for t in tools if t.name == "fresh"]
        assert (await fresh.handler({})).content == "I am fresh"


async def test_an_http_server_is_named_by_what_it_calls_itself(changing_http: str) -> None:
    server = McpStreamable(changing_http)
    assert server.prefix == server.auto_prefix == "127_0_0_1"
    async with server:
        assert server.prefix == "changing"
        assert server.auto_prefix == "127_0_0_1"  # padwan-ai's: the host, whatever it says
        assert "slow" in [t.name for t in server.tools]
        assert server.label == changing_http


# -- two real servers offering the same tools -----------------------------------------------------


async def test_two_servers_running_one_command_get_their_own_prefixes(time_server: str) -> None:
    model = ScriptedTransport(
        [
            Reply(
                tool_calls=[
                    Call("mcp_server_time__get_current_time", {"timezone": "Asia/Tokyo"}),
                    Call("mcp_server_time-2__get_current_time", {"timezone": "Europe/Paris"}),
                ]
            ),
            Reply("done"),
        ]
    )
    first, second = McpStdio(time_server), McpStdio(time_server)
    async with AgentSession(model, mcp_tools=[first, second]) as session:
        assert await session.send("What time is it?") == "done"
    assert model.requests[0].tool_names == [
        "mcp_server_time__get_current_time",
        "mcp_server_time__convert_time",
        "mcp_server_time-2__get_current_time",
        "mcp_server_time-2__convert_time",
    ]
    tokyo, paris = session.messages[2].tool_results
    assert "Asia/Tokyo" in tokyo.text and "Europe/Paris" in paris.text
    assert not tokyo.is_error and not paris.is_error


async def test_a_named_server_and_an_appended_one_both_get_prefixed(
    time_server: str, everything: list[str]
) -> None:
    local = McpTool("echo", "Local echo.", {"type": "object"}, lambda args: "local echo")
    tools: list[object] = [local, McpStdio(time_server, name="clock")]
    model = ScriptedTransport(
        [
            Reply("first"),
            Reply(
                tool_calls=[Call("echo", {}), Call("server_everything__echo", {"message": "hi"})]
            ),
            Reply("second"),
        ]
    )
    async with AgentSession(model, mcp_tools=tools) as session:
        assert await session.send("one") == "first"
        tools.append(McpStdio(everything[0], everything[1:]))
        assert await session.send("two") == "second"
    assert model.requests[0].tool_names == ["echo", "get_current_time", "convert_time"]
    names = model.requests[1].tool_names
    assert names[:3] == ["echo", "get_current_time", "convert_time"]
    assert "server_everything__echo" in names and all(PREFIX.fullmatch(n) for n in names)
    local_echo, remote_echo = session.messages[-2].tool_results
    assert (local_echo.text, remote_echo.text) == ("local echo", "Echo: hi")


async def test_entering_cancelled_while_the_first_list_is_read_leaves_nothing_open(
    hostile: tuple[list[str], Path],
) -> None:
    command, _ = hostile
    before = set(children())
    server = McpStdio(command[0], [*command[1:], "hang-list"], timeout=30, list_timeout=30)

    async def enter() -> None:
        async with server:
            raise AssertionError("the list never comes")

    entering = asyncio.create_task(enter())
    await until(lambda: server.is_open, "the server connected")
    entering.cancel()
    with pytest.raises(asyncio.CancelledError):
        await entering
    assert not server.is_open
    assert set(children()) == before
    assert other_tasks() == set()
