"""padwan-ai users' code on ``AgentSession``: a client with ``stream_chat(messages, tools)`` (as
padwan's ``LLMClient`` and the fakes people test with), resuming unknown sessions, and
``ConversationState``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tether import McpTool, StreamContractError, Usage
from tether.session import AgentSession, ChatClientTransport, ConversationState
from tether.stores.files import FileStore
from tether.testing import Reply, ScriptedTransport

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


# -- a padwan-style fake client, written the way users write theirs --------------------------------


def tool_call(id: str, name: str, arguments: str) -> dict[str, Any]:
    """padwan's ``ToolCall`` (a TypedDict in OpenAI's shape)."""
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def usage_token(input: int, output: int) -> dict[str, int]:
    """padwan's ``UsageToken``."""
    return {"total": input + output, "input": input, "output": output}


@dataclass
class FlatCall:
    id: str
    name: str
    arguments: Any


@dataclass
class TokenCounts:
    input_tokens: int
    output_tokens: int


class FakeStream:
    """padwan's ChatStream: text chunks first; ``tool_calls`` and ``usage`` set after iteration."""

    def __init__(self, chunks: list[Any], tool_calls: list[Any], usage: Any) -> None:
        self._chunks = chunks
        self._calls = tool_calls
        self._usage = usage
        self.tool_calls: list[Any] = []
        self.usage: Any = None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        for chunk in self._chunks:
            yield chunk
        self.tool_calls = self._calls
        self.usage = self._usage


@dataclass
class Turn:
    chunks: list[Any] = field(default_factory=list)
    tool_calls: list[Any] = field(default_factory=list)
    usage: Any = None


class FakeClient:
    """Plays one ``Turn`` per ``stream_chat`` call and keeps what it was sent."""

    def __init__(self, *turns: Turn) -> None:
        self.turns = list(turns)
        self.sent: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = []

    def stream_chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> FakeStream:
        self.sent.append((messages, tools))
        turn = self.turns.pop(0)
        return FakeStream(turn.chunks, turn.tool_calls, turn.usage)


def weather(seen: list[dict[str, Any]]) -> McpTool:
    def handler(args: dict[str, Any]) -> dict[str, Any]:
        seen.append(args)
        return {"city": args["city"], "temp": 22}

    return McpTool("get_weather", "Current weather for a city.", WEATHER_SCHEMA, handler)


# -- the client protocol ---------------------------------------------------------------------------


async def test_a_text_answer_from_a_stream_chat_client() -> None:
    client = FakeClient(Turn(["Hel", "lo", "!"], usage=usage_token(3, 2)))
    session = AgentSession(client=client, system="Be kind.", mcp_tools=[weather([])])
    assert await session.send("Hi") == "Hello!"
    messages, tools = client.sent[0]
    assert messages == [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "Hi"},
    ]
    assert tools == [  # padwan's ToolDefinition
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": WEATHER_SCHEMA,
        }
    ]
    assert isinstance(session.client, ChatClientTransport)


async def test_calls_without_ids_get_ids_of_their_own_and_each_its_result() -> None:
    seen: list[dict[str, Any]] = []
    calls = [
        {"name": "get_weather", "arguments": {"city": "Oslo"}},
        {"id": "", "name": "get_weather", "arguments": {"city": "Rome"}},
    ]
    client = FakeClient(Turn([], calls), Turn(["done"]))
    async with AgentSession(client=client, mcp_tools=[weather(seen)]) as session:
        assert await session.send("two cities") == "done"
    assert seen == [{"city": "Oslo"}, {"city": "Rome"}]
    messages, _ = client.sent[1]
    ids = [c["id"] for c in messages[1]["tool_calls"]]
    assert len(set(ids)) == 2 and all(ids)
    assert [m["tool_call_id"] for m in messages[2:4]] == ids


async def test_a_session_without_tools_sends_none_for_them() -> None:
    client = FakeClient(Turn(["hi"]))
    await AgentSession(client=client).send("hello")
    assert client.sent[0][1] is None


async def test_a_tool_round_trip_through_an_mcp_tool_handler() -> None:
    seen: list[dict[str, Any]] = []
    client = FakeClient(
        Turn(["Let me look."], [tool_call("c1", "get_weather", '{"city": "Paris"}')]),
        Turn(["22 in Paris."]),
    )
    async with AgentSession(client=client, mcp_tools=[weather(seen)]) as session:
        assert await session.send("Weather in Paris?") == "22 in Paris."
    assert seen == [{"city": "Paris"}]
    messages, _ = client.sent[1]
    (call,) = messages[1]["tool_calls"]
    assert json.loads(call["function"].pop("arguments")) == {"city": "Paris"}
    assert messages[1] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather"}}],
    }
    result = messages[2]
    assert json.loads(result.pop("content")) == {"city": "Paris", "temp": 22}
    assert result == {"role": "tool", "tool_call_id": "c1", "name": "get_weather"}
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]


@pytest.mark.parametrize(
    "call",
    [
        {"id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}},
        {"id": "c1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        },
        FlatCall("c1", "get_weather", {"city": "Oslo"}),
    ],
)
async def test_tool_calls_as_objects_dicts_or_openai_dicts(call: Any) -> None:
    seen: list[dict[str, Any]] = []
    client = FakeClient(Turn([], [call]), Turn(["cold"]))
    session = AgentSession(client=client, mcp_tools=[weather(seen)])
    assert await session.send("Oslo?") == "cold"
    assert seen == [{"city": "Oslo"}]
    assert session.messages[1].tool_uses[0].id == "c1"


async def test_malformed_arguments_reach_the_model_as_an_error_result() -> None:
    seen: list[dict[str, Any]] = []
    client = FakeClient(
        Turn([], [tool_call("c1", "get_weather", '{"city": ')]),
        Turn(["sorry"]),
    )
    session = AgentSession(client=client, mcp_tools=[weather(seen)])
    assert await session.send("Oslo?") == "sorry"
    assert seen == []
    (result,) = session.messages[2].tool_results
    assert result.is_error
    assert json.loads(result.text)["error"].startswith("arguments are not valid JSON")
    sent_back = client.sent[1][0][-1]
    assert sent_back["role"] == "tool" and "not valid JSON" in sent_back["content"]


async def test_usage_reaches_last_and_total_usage() -> None:
    client = FakeClient(
        Turn([], [tool_call("c1", "get_weather", '{"city": "Rome"}')], usage_token(10, 4)),
        Turn([], [tool_call("c2", "get_weather", '{"city": "Rome"}')], TokenCounts(5, 5)),
        Turn(["warm"], usage={"prompt_tokens": 20, "completion_tokens": 1}),
    )
    session = AgentSession(client=client, mcp_tools=[weather([])])
    await session.send("Rome?")
    assert session.last_usage == Usage(20, 1)
    assert session.total_usage == Usage(35, 10)
    cached = FakeClient(Turn(["x"], usage={**usage_token(9, 1), "cached": 4, "reasoning": 1}))
    session = AgentSession(client=cached)
    await session.send("go")
    assert session.last_usage == Usage(9, 1, cache_read_tokens=4, reasoning_tokens=1)


async def test_usage_that_is_not_a_count_is_a_clear_error() -> None:
    session = AgentSession(client=FakeClient(Turn(["x"], usage={"input": "many"})))
    with pytest.raises(StreamContractError, match="usage input must be a count"):
        await session.send("go")


async def test_chunks_may_be_objects_or_dicts_with_text_or_content() -> None:
    @dataclass
    class Delta:
        text: str | None

    @dataclass
    class Part:
        content: str

    client = FakeClient(Turn(["a", Delta("b"), Delta(None), Part("c"), {"text": "d"}, ""]))
    session = AgentSession(client=client)
    assert await session.send("go") == "abcd"


async def test_a_chunk_that_is_not_text_is_a_clear_error() -> None:
    session = AgentSession(client=FakeClient(Turn([42])))
    with pytest.raises(StreamContractError, match=r"stream_chat .*int"):
        await session.send("go")


async def test_a_call_without_a_name_is_a_clear_error() -> None:
    session = AgentSession(client=FakeClient(Turn([], [{"id": "c1", "arguments": "{}"}])))
    with pytest.raises(StreamContractError, match="no name"):
        await session.send("go")


async def test_async_stream_chat_and_a_stream_given_as_a_context_manager() -> None:
    log: list[str] = []

    class Client:
        async def stream_chat(self, messages: list[Any], tools: list[Any] | None = None) -> Any:
            @asynccontextmanager
            async def opened() -> AsyncIterator[FakeStream]:
                log.append("open")
                try:
                    yield FakeStream(["fine"], [], usage_token(1, 1))
                finally:
                    log.append("close")

            return opened()

    session = AgentSession(client=Client())
    assert await session.send("how are you?") == "fine"
    assert log == ["open", "close"]
    assert session.last_usage == Usage(1, 1)


async def test_stream_yields_the_clients_chunks() -> None:
    client = FakeClient(
        Turn(["One. "], [tool_call("c1", "get_weather", '{"city": "Oslo"}')]),
        Turn(["Two", " three."]),
    )
    session = AgentSession(client=client, mcp_tools=[weather([])])
    chunks = [chunk async for chunk in session.stream("go")]
    assert chunks == ["One. ", "Two", " three."]


def test_an_object_that_is_no_client_is_refused() -> None:
    with pytest.raises(TypeError, match="stream_chat"):
        AgentSession(client=object())  # type: ignore[arg-type]


# -- a client that is an async context manager -----------------------------------------------------


class ManagedClient(FakeClient):
    def __init__(self, log: list[str], *turns: Turn) -> None:
        super().__init__(*turns)
        self.log = log

    async def __aenter__(self) -> ManagedClient:
        self.log.append("enter client")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.log.append("exit client")


class FakeServer:
    def __init__(self, log: list[str], *, fail: bool = False) -> None:
        self.prefix = "srv"
        self.log = log
        self.fail = fail

    async def __aenter__(self) -> FakeServer:
        self.log.append("enter srv")
        if self.fail:
            raise ConnectionError("srv did not start")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.log.append("exit srv")

    async def ping(self) -> None:
        pass

    async def list_tools(self) -> list[Any]:
        return []


async def test_a_client_that_is_an_async_context_manager_lives_with_the_session() -> None:
    log: list[str] = []
    client = ManagedClient(log, Turn(["hi"]))
    async with AgentSession(client=client, mcp_tools=[FakeServer(log)]) as session:
        assert log == ["enter client", "enter srv"]
        assert await session.send("hello") == "hi"
    assert log == ["enter client", "enter srv", "exit srv", "exit client"]


async def test_the_client_is_left_when_entering_a_server_fails() -> None:
    log: list[str] = []
    session = AgentSession(client=ManagedClient(log), mcp_tools=[FakeServer(log, fail=True)])
    with pytest.raises(ConnectionError, match="did not start"):
        async with session:
            pass
    assert log == ["enter client", "enter srv", "exit client"]


async def test_a_transport_given_as_client_is_not_entered() -> None:
    class Transport(ScriptedTransport):
        async def __aenter__(self) -> None:
            raise AssertionError("a transport the caller gave is the caller's to open")

    async with AgentSession(client=Transport([Reply("hi")])) as session:
        assert await session.send("hello") == "hi"


# -- resuming an unknown session -------------------------------------------------------------------


class JsonStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def save(self, session_id: str, snapshot: Any) -> None:
        (self.path / f"{session_id}.json").write_text(json.dumps(snapshot))

    def load(self, session_id: str) -> Any:
        return json.loads((self.path / f"{session_id}.json").read_text())


class DictStore:
    def __init__(self, error: BaseException | None = None) -> None:
        self.saved: dict[str, Any] = {}
        self.error = error

    async def save(self, session_id: str, snapshot: Any) -> None:
        self.saved[session_id] = json.loads(json.dumps(snapshot))

    async def load(self, session_id: str) -> Any:
        if self.error is not None:
            raise self.error
        return self.saved[session_id]


async def test_loading_an_id_a_file_store_does_not_know_starts_fresh_under_it(
    tmp_path: Path,
) -> None:
    store = JsonStore(tmp_path)
    session = AgentSession.load(
        client=FakeClient(Turn(["hi"])), store=store, session_id="new-user", system="S"
    )
    async with session:
        assert session.messages == [] and session.session_id == "new-user"
        await session.send("hello")
        session.save()
    assert json.loads((tmp_path / "new-user.json").read_text())["system"] == "S"


async def test_loading_an_id_an_async_store_does_not_know_starts_fresh_under_it() -> None:
    store = DictStore()
    async with AgentSession.load(
        client=FakeClient(Turn(["hi"])), store=store, session_id="s9"
    ) as session:
        assert session.messages == []
        await session.send("hello")
        await session.save()  # type: ignore[misc]
    assert [m["role"] for m in store.saved["s9"]["messages"]] == ["user", "assistant"]


async def test_any_lookup_error_of_the_store_means_not_known() -> None:
    store = DictStore(LookupError("no such conversation"))
    async with AgentSession.load(
        client=FakeClient(Turn(["hi"])), store=store, session_id="gone"
    ) as session:
        assert session.messages == [] and session.session_id == "gone"


async def test_other_store_errors_still_propagate(tmp_path: Path) -> None:
    with pytest.raises(PermissionError):
        async with AgentSession.load(
            client=FakeClient(), store=DictStore(PermissionError("no")), session_id="s1"
        ):
            pass
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(IsADirectoryError):
        AgentSession.load(client=FakeClient(), store=JsonStore(tmp_path), session_id="dir")


async def test_loading_an_id_a_tether_store_does_not_know_starts_fresh_under_it(
    tmp_path: Path,
) -> None:
    store = FileStore(tmp_path)
    async with AgentSession.load(
        client=FakeClient(Turn(["hi"])), store=store, session_id="fresh"
    ) as session:
        assert session.messages == []
        await session.send("hello")
    context = await store.open("fresh")
    assert [m.text for m in await context.get_history()] == ["hello", "hi"]


def test_load_refuses_both_model_and_client() -> None:
    with pytest.raises(ValueError, match="exactly one of model= or client="):
        AgentSession.load(model="local", client=FakeClient(), store=DictStore())


# -- ConversationState -----------------------------------------------------------------------------


async def test_state_holds_the_system_prompt_messages_and_usage_as_a_copy() -> None:
    session = AgentSession(client=FakeClient(Turn(["hi"], usage=usage_token(3, 2))), system="B.")
    assert session.state == ConversationState("B.", [])
    await session.send("hello")
    state = session.state
    assert state.system == "B."
    assert state.messages == session.messages
    assert [m.text for m in state.messages] == ["hello", "hi"]
    assert state.total_usage == state.last_usage == {"total": 5, "input": 3, "output": 2}
    state.system = "other"
    state.add_assistant_message("not the session's")
    assert session.state.system == "B." and len(session.messages) == 2


async def test_state_of_a_loaded_session_is_the_snapshot() -> None:
    store = DictStore()
    first = AgentSession(client=FakeClient(Turn(["one"])), system="S", store=store, session_id="a")
    await first.send("hi")
    await first.save()  # type: ignore[misc]
    async with AgentSession.load(client=FakeClient(), store=store, session_id="a") as resumed:
        assert resumed.state == first.state
