"""What padwan-ai users' own code relies on (issue 35, section 2): ``result_text``, tool-name
collisions across padwan-like transports, any object that behaves as padwan's transport,
``ConversationState``'s padwan API, and padwan's reply and error texts."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent

from parts import absent
from tether import McpStdio, McpTool
from tether.session import AgentSession, ConversationState, result_text

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


# -- a padwan-style client and transport, written the way padwan's users write theirs ------------


class Stream:
    """padwan's ChatStream: text chunks; ``tool_calls`` readable after iteration."""

    def __init__(self, chunks: list[str], tool_calls: list[dict[str, Any]]) -> None:
        self.chunks, self.tool_calls, self.usage = chunks, tool_calls, None

    async def __aiter__(self) -> AsyncIterator[str]:
        for chunk in self.chunks:
            yield chunk


def call(name: str, arguments: Any, id: str = "c1") -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": id, "type": "function", "function": {"name": name, "arguments": text}}


@dataclass
class Client:
    """Plays one reply per ``stream_chat`` (chunks, calls) and keeps what it was sent; an async
    context manager that records its exit in ``log``."""

    replies: list[tuple[list[str], list[dict[str, Any]]]]
    log: list[str] = field(default_factory=list)
    sent: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = field(default_factory=list)

    def stream_chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> Stream:
        self.sent.append((messages, list(tools or [])))
        chunks, calls = self.replies.pop(0)
        return Stream(chunks, calls)

    async def __aenter__(self) -> Client:
        self.log.append("enter client")
        return self

    async def __aexit__(self, *_: object) -> None:
        self.log.append("exit client")

    def tool_message(self, turn: int) -> dict[str, Any]:
        return next(m for m in self.sent[turn][0] if m["role"] == "tool")


@dataclass
class Transport:
    """An object that behaves as padwan's transport and is no tether class: entered, pinged,
    ``.tools`` a list of ``McpTool``s, ``auto_prefix``, ``name_prefix``, ``label``."""

    name: str
    tools: list[McpTool]
    log: list[str]
    auto_prefix: Any = None
    name_prefix: str | None = None
    fail_ping: bool = False
    is_open: bool = False

    @property
    def label(self) -> str:
        return f"fake {self.name}"

    async def __aenter__(self) -> Transport:
        self.log.append(f"enter {self.name}")
        self.is_open = True
        return self

    async def __aexit__(self, *_: object) -> None:
        self.log.append(f"exit {self.name}")
        self.is_open = False

    async def ping(self) -> None:
        self.log.append(f"ping {self.name}")
        if self.fail_ping:
            raise ConnectionError(f"{self.name} does not answer")


def tool(name: str, answer: str, ran: list[str] | None = None) -> McpTool:
    def handler(args: dict[str, Any]) -> str:
        if ran is not None:
            ran.append(answer)
        return answer

    return McpTool(name, f"the tool {name}", EMPTY_SCHEMA, handler)


def offered(client: Client, turn: int = 0) -> set[str]:
    return {t["name"] for t in client.sent[turn][1]}


# -- result_text ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("as it is", "as it is"),
        ({"content": [{"type": "text", "text": "one"}]}, "one"),
        ({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "a\nb"),
    ],
)
def test_result_text_keeps_strings_and_joins_text_blocks(value: Any, expected: str) -> None:
    assert result_text(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"content": [{"type": "text", "text": "boom"}], "isError": True},
        {"content": [{"type": "text", "text": "sum"}], "structuredContent": {"rows": [1, 2]}},
        {"structuredContent": {"answer": 42}},
        {"content": [{"type": "image", "data": "AAAA"}, {"type": "text", "text": "caption"}]},
        {"content": []},
        {"city": "Paris", "temp": 22},
        [1, "two", {"three": 3}],
    ],
)
def test_result_text_gives_anything_richer_as_json_that_round_trips(value: Any) -> None:
    """Nothing is dropped: the error flag, structured content and non-text blocks all reach
    the text, which reads back as the value."""
    assert json.loads(result_text(value)) == value


def test_result_text_reads_the_sdk_result_as_its_wire_form() -> None:
    plain = CallToolResult(content=[TextContent(type="text", text="found it")])
    assert result_text(plain) == "found it"
    failed = CallToolResult(content=[TextContent(type="text", text="no")], is_error=True)
    assert json.loads(result_text(failed)) == {
        "content": [{"type": "text", "text": "no"}],
        "isError": True,
    }
    image = CallToolResult(content=[ImageContent(type="image", data="AAAA", mime_type="image/png")])
    assert json.loads(result_text(image))["content"][0]["mimeType"] == "image/png"


def test_result_text_is_public() -> None:
    import tether.session

    assert "result_text" in tether.session.__all__


# -- transports that behave as padwan's -----------------------------------------------------------


async def test_a_padwan_like_transport_is_entered_pinged_and_its_tools_called() -> None:
    log: list[str] = []
    ran: list[str] = []
    server = Transport("maps", [tool("route", "via Lyon", ran)], log)
    connected: list[Any] = []
    client = Client([([], [call("route", {})]), (["done"], []), (["again"], [])], log)
    async with AgentSession(client, mcp_tools=[server], on_mcp_connect=connected.append) as s:
        assert await s.send("go") == "done"
        assert await s.send("more") == "again"
    assert connected == [server]  # once per transport, not once per send
    assert ran == ["via Lyon"]
    assert client.tool_message(1)["content"] == "via Lyon"
    assert log[:3] == ["enter client", "enter maps", "ping maps"]
    assert log[-2:] == ["exit maps", "exit client"]


async def test_a_failing_ping_unwinds_everything_entered_last_in_first_out() -> None:
    log: list[str] = []
    first = Transport("first", [], log)
    second = Transport("second", [], log, fail_ping=True)
    third = Transport("third", [], log)
    client = Client([], log)
    with pytest.raises(ConnectionError, match="second does not answer"):
        async with AgentSession(client, mcp_tools=[first, second, third]):
            pytest.fail("entered despite a failing ping")
    assert log == [
        "enter client",
        "enter first",
        "ping first",
        "enter second",
        "ping second",
        "exit second",
        "exit first",
        "exit client",
    ]


async def test_an_open_transport_is_used_without_entering_the_session() -> None:
    """padwan reads ``.tools`` of a transport its owner opened, session entered or not."""
    server = Transport("maps", [tool("route", "via Lyon")], [], is_open=True)
    client = Client([([], [call("route", {})]), (["done"], [])])
    session = AgentSession(client, mcp_tools=[server])
    assert await session.send("go") == "done"
    assert client.tool_message(1)["content"] == "via Lyon"
    assert server.is_open  # left to its owner


# -- tool-name collisions -----------------------------------------------------------------------


async def test_colliding_transports_get_their_auto_prefix_and_calls_reach_the_right_one() -> None:
    log: list[str] = []
    ran: list[str] = []
    a = Transport("a", [tool("search", "a-search", ran), tool("filter", "a-filter")], log, "src_a")
    b = Transport("b", [tool("search", "b-search", ran)], log, "src_b")
    client = Client([([], [call("src_b__search", {})]), (["done"], [])])
    async with AgentSession(client, mcp_tools=[a, b]) as session:
        await session.send("go")
    assert offered(client) == {"src_a__search", "src_a__filter", "src_b__search"}
    assert ran == ["b-search"]


async def test_a_transport_without_a_string_auto_prefix_is_prefixed_from_its_label() -> None:
    a = Transport("a", [tool("search", "a")], [], auto_prefix=True)
    b = Transport("b", [tool("search", "b")], [], auto_prefix=True)
    client = Client([(["done"], [])])
    async with AgentSession(client, mcp_tools=[a, b]) as session:
        await session.send("go")
    assert offered(client) == {"fake_a__search", "fake_b__search"}


async def test_an_explicit_name_prefix_is_never_prefixed_again() -> None:
    a = Transport("a", [tool("weather__search", "a")], [], "src_a", name_prefix="weather")
    b = Transport("b", [tool("search", "b")], [], "src_b")
    local = tool("search", "local")
    client = Client([(["done"], [])])
    async with AgentSession(client, mcp_tools=[local, a, b]) as session:
        await session.send("go")
    assert offered(client) == {"search", "weather__search", "src_b__search"}


@pytest.mark.parametrize(
    ("items", "name"),
    [
        pytest.param(lambda: [tool("search", "a"), tool("search", "b")], "search", id="local"),
        pytest.param(
            lambda: [
                Transport("a", [tool("weather__search", "a")], [], name_prefix="weather"),
                Transport("b", [tool("weather__search", "b")], [], name_prefix="weather"),
            ],
            "weather__search",
            id="explicit-prefixes",
        ),
        pytest.param(
            lambda: [
                tool("search", "local"),
                Transport("a", [tool("search", "a")], [], auto_prefix=False),
            ],
            "search",
            id="auto-prefix-off",
        ),
    ],
)
async def test_a_name_left_taken_raises_on_entering(items: Any, name: str) -> None:
    client = Client([(["unused"], [])])
    session = AgentSession(client, mcp_tools=items())  # built: nothing is refused yet
    with pytest.raises(ValueError, match=f"Duplicate tool name '{name}'"):
        async with session:
            pytest.fail("entered with two tools of one name")
    assert client.sent == []  # the model was never asked


async def test_duplicate_local_tools_raise_at_the_first_send_without_entering() -> None:
    client = Client([(["unused"], [])])
    session = AgentSession(client, mcp_tools=[tool("search", "a"), tool("search", "b")])
    with pytest.raises(ValueError, match="Duplicate tool name 'search'"):
        await session.send("go")
    assert client.sent == []


# -- ConversationState ----------------------------------------------------------------------------


def test_conversation_state_has_padwans_methods_and_usage_dict() -> None:
    state = ConversationState(system="be helpful")
    state.add_user_message("hi")
    state.add_assistant_message("hello")
    state.accumulate_usage({"total": 12, "input": 7, "output": 5})
    state.accumulate_usage({"total": 3, "input": 2, "output": 1, "cached": 2})
    assert [(m.role, m.text) for m in state.messages] == [("user", "hi"), ("assistant", "hello")]
    assert state.total_usage == {"total": 15, "input": 9, "output": 6, "cached": 2}
    assert state.last_usage == {"total": 3, "input": 2, "output": 1, "cached": 2}

    restored = ConversationState.from_snapshot(json.loads(json.dumps(state.snapshot())))
    assert restored.system == "be helpful"
    assert restored.messages == state.messages
    assert restored.total_usage == state.total_usage
    assert restored.last_usage is None  # padwan keeps no last usage in a snapshot


def test_conversation_state_reads_a_snapshot_padwan_wrote() -> None:
    snapshot = {
        "system": "S",
        "messages": [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
        ],
        "total_usage": {"total": 4, "input": 3, "output": 1},
    }
    state = ConversationState.from_snapshot(snapshot)
    assert state.system == "S"
    assert [m.text for m in state.messages] == ["hi", "hello"]
    assert state.total_usage == {"total": 4, "input": 3, "output": 1}


def test_conversation_state_refuses_usage_that_is_not_token_counts() -> None:
    state = ConversationState()
    with pytest.raises(ValueError, match="input"):
        state.accumulate_usage({"total": 1, "output": 1})
    assert state.total_usage == {"total": 0, "input": 0, "output": 0}


async def test_a_sessions_state_is_a_copy_with_its_usage() -> None:
    client = Client([(["hello"], [])])
    session = AgentSession(client, system="S")
    await session.send("hi")
    state = session.state
    state.add_user_message("not sent")
    assert [m.text for m in session.messages] == ["hi", "hello"]
    assert state.system == "S"


# -- replies and error texts ----------------------------------------------------------------------


async def test_an_empty_reply_is_no_response_in_the_answer_the_stream_and_the_history() -> None:
    client = Client([([], []), ([], [])])
    session = AgentSession(client)
    assert await session.send("hi") == "(no response)"
    assert session.messages[-1].text == "(no response)"
    assert [chunk async for chunk in session.stream("again")] == ["(no response)"]


async def test_the_round_limit_says_so_in_padwans_words() -> None:
    client = Client([([], [call("loop", {}, f"c{n}")]) for n in range(3)])
    session = AgentSession(client, mcp_tools=[tool("loop", "more")], max_tool_rounds=2)
    answer = await session.send("go")
    assert "reached tool call limit of 2 rounds" in answer
    assert len(client.sent) == 2


async def test_broken_json_arguments_are_an_error_and_the_handler_never_runs() -> None:
    ran: list[str] = []
    client = Client([([], [call("echo", "{")]), (["done"], [])])
    session = AgentSession(client, mcp_tools=[tool("echo", "ran", ran)])
    assert await session.send("go") == "done"
    assert ran == []
    error = json.loads(client.tool_message(1)["content"])["error"]
    assert "not valid JSON" in error


async def test_an_unknown_tool_and_a_raising_handler_give_padwans_error_texts() -> None:
    def boom(args: dict[str, Any]) -> str:
        raise RuntimeError("kaboom")

    client = Client([([], [call("missing", {}, "c1"), call("boom", {}, "c2")]), (["done"], [])])
    session = AgentSession(client, mcp_tools=[McpTool("boom", "", EMPTY_SCHEMA, boom)])
    await session.send("go")
    results = [m["content"] for m in client.sent[1][0] if m["role"] == "tool"]
    assert [json.loads(r) for r in results] == [
        {"error": "Unknown tool: missing"},
        {"error": "kaboom"},
    ]


@pytest.mark.parametrize("limit", [None, 100])
async def test_max_tool_result_chars_none_sends_the_whole_result(limit: int | None) -> None:
    huge = "x" * 50_000
    client = Client([([], [call("big", {})]), (["done"], [])])
    session = AgentSession(client, mcp_tools=[tool("big", huge)], max_tool_result_chars=limit)
    await session.send("go")
    sent = client.tool_message(1)["content"]
    assert (sent == huge) if limit is None else (len(sent) < 200 and "truncated" in sent)
    assert session.messages[2].tool_results[0].text == huge  # the history keeps it whole


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_denied_call_never_runs_its_handler(asynchronous: bool) -> None:
    ran: list[str] = []

    def deny(tool: Any, args: Any) -> bool:
        return False

    async def deny_later(tool: Any, args: Any) -> bool:
        return False

    client = Client([([], [call("t", {})]), (["done"], [])])
    session = AgentSession(
        client, mcp_tools=[tool("t", "ran", ran)], approve_tool=deny_later if asynchronous else deny
    )
    await session.send("go")
    assert ran == []
    assert "denied" in json.loads(client.tool_message(1)["content"])["error"]


def test_load_with_both_model_and_client_says_exactly_one() -> None:
    class Store:
        def save(self, session_id: str, snapshot: Any) -> None: ...

        def load(self, session_id: str) -> Any:
            raise KeyError(session_id)

    with pytest.raises(ValueError, match="exactly one of model= or client="):
        AgentSession.load(model="local", client=Client([]), store=Store(), session_id="a")


async def test_load_takes_the_system_prompt_from_the_snapshot() -> None:
    saved: dict[str, Any] = {}

    class Store:
        def save(self, session_id: str, snapshot: Any) -> None:
            saved[session_id] = snapshot

        def load(self, session_id: str) -> Any:
            return saved[session_id]

    first = AgentSession(Client([(["one"], [])]), system="original", store=Store(), session_id="a")
    await first.send("hi")
    first.save()
    later = AgentSession.load(client=Client([]), store=Store(), session_id="a", system="other")
    assert later.system == "original"
    assert later.messages == first.messages


# -- with real servers --------------------------------------------------------------------------


@pytest.fixture
def time_server() -> str:
    """The ``mcp-server-time`` executable (a real MCP server over stdio)."""
    found = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")
    if not Path(found).exists():
        absent("mcp-server-time")
    return found


def child_pids() -> set[int]:
    """This process's children still alive (the stdio servers), from /proc."""
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(entry))
    return found


@pytest.mark.timeout(60)
async def test_two_real_servers_with_one_tool_name_are_prefixed_apart(time_server: str) -> None:
    before = child_pids()
    tokyo = McpStdio(time_server, ["--local-timezone", "Asia/Tokyo"])
    paris = McpStdio(time_server, ["--local-timezone", "Europe/Paris"])
    args = {"timezone": "Europe/Paris"}
    client = Client([([], [call("mcp_server_time-2__get_current_time", args)]), (["ok"], [])])
    async with AgentSession(client, mcp_tools=[tokyo, paris]) as session:
        assert await session.send("time?") == "ok"
    assert offered(client) == {
        f"{prefix}__{name}"
        for prefix in ("mcp_server_time", "mcp_server_time-2")
        for name in ("get_current_time", "convert_time")
    }
    assert '"timezone": "Europe/Paris"' in client.tool_message(1)["content"]
    assert child_pids() == before


@pytest.mark.timeout(60)
async def test_real_servers_with_one_name_prefix_are_refused_and_both_stopped(
    time_server: str,
) -> None:
    before = child_pids()
    servers = [McpStdio(time_server, name_prefix="time") for _ in range(2)]
    client = Client([])
    with pytest.raises(ValueError, match="Duplicate tool name 'time__get_current_time'"):
        async with AgentSession(client, mcp_tools=servers):
            pytest.fail("entered with two tools of one name")
    assert not any(server.is_open for server in servers)
    assert child_pids() == before
