"""AgentSession on the scripted transport: every behaviour padwan-ai documents.

MCP servers are stood in for by ``FakeServer`` here (entering, pinging, teardown order); the real
servers are exercised in ``tests/mcp/``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tether import (
    AgentSession,
    ConversationStore,
    McpTool,
    MemoryContextStore,
    Message,
    OutputValidationError,
    Tool,
    ToolCallContext,
    ToolResultBlock,
    ToolUseBlock,
    TransportError,
    Usage,
)
from tether.testing import Call, Reply, ScriptedTransport

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def weather_tool(seen: list[dict[str, Any]] | None = None) -> McpTool:
    def handler(args: dict[str, Any]) -> dict[str, Any]:
        if seen is not None:
            seen.append(args)
        return {"city": args["city"], "temp": 22, "sky": "sunny"}

    return McpTool("get_weather", "Return current weather for a city.", WEATHER_SCHEMA, handler)


def results_of(message: Message) -> list[ToolResultBlock]:
    return message.tool_results


# -- the loop -------------------------------------------------------------------------------------


async def test_send_runs_tools_and_returns_the_final_answer() -> None:
    seen: list[dict[str, Any]] = []
    model = ScriptedTransport(
        [
            Reply("Let me look.", tool_calls=[Call("get_weather", {"city": "Paris"})]),
            Reply("It is 22 and sunny in Paris."),
        ]
    )
    async with AgentSession(
        model, system="You are a weather assistant.", mcp_tools=[weather_tool(seen)]
    ) as session:
        answer = await session.send("What's the weather in Paris?")
    assert answer == "It is 22 and sunny in Paris."
    assert seen == [{"city": "Paris"}]  # the handler got one args dict
    assert model.requests[0].system == "You are a weather assistant."
    assert model.requests[0].tool_names == ["get_weather"]
    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    (result,) = results_of(session.messages[2])
    assert json.loads(result.text) == {"city": "Paris", "temp": 22, "sky": "sunny"}


async def test_a_session_without_servers_needs_no_async_with() -> None:
    session = AgentSession(ScriptedTransport([Reply("hi")]))
    assert await session.send("hello") == "hi"


async def test_stream_yields_text_only_and_tool_calls_stay_silent() -> None:
    model = ScriptedTransport(
        [
            Reply("Checking. ", tool_calls=[Call("get_weather", {"city": "Oslo"})]),
            Reply("Cold in Oslo.", chunks=3),
        ]
    )
    session = AgentSession(model, mcp_tools=[weather_tool()])
    chunks = [chunk async for chunk in session.stream("Weather in Oslo?")]
    assert all(isinstance(c, str) for c in chunks)
    assert "".join(chunks) == "Checking. Cold in Oslo."
    assert len(chunks) == 4


async def test_conversation_goes_on_across_sends() -> None:
    model = ScriptedTransport([Reply("Hello Ann."), Reply("You are Ann.")])
    session = AgentSession(model)
    await session.send("I am Ann.")
    assert await session.send("Who am I?") == "You are Ann."
    sent = model.requests[1].messages
    assert [m.text for m in sent] == ["I am Ann.", "Hello Ann.", "Who am I?"]


async def test_async_handlers_and_plain_tools_are_accepted() -> None:
    async def handler(args: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return f"shouted {args['text'].upper()}"

    async def whisper(text: str) -> str:
        return text.lower()

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("shout", {"text": "hi"}), Call("whisper", {"text": "HO"})]),
            Reply("done"),
        ]
    )
    session = AgentSession(
        model,
        mcp_tools=[McpTool("shout", "", {"type": "object"}, handler), Tool("whisper", whisper)],
    )
    await session.send("go")
    texts = [r.text for r in results_of(session.messages[2])]
    assert texts == ["shouted HI", "ho"]


async def test_results_keep_call_order_and_parallel_calls_overlap() -> None:
    running = 0
    peak = 0

    async def slow(args: dict[str, Any]) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05 if args["n"] == 0 else 0.01)
        running -= 1
        return f"r{args['n']}"

    def script() -> ScriptedTransport:
        calls = [Call("slow", {"n": n}) for n in range(3)]
        return ScriptedTransport([Reply(tool_calls=calls), Reply("done")])

    tools = [McpTool("slow", "", {"type": "object"}, slow)]
    for execution, expected_peak in (("sequential", 1), ("parallel", 3)):
        running = peak = 0
        session = AgentSession(script(), mcp_tools=tools, execution=execution)  # type: ignore[arg-type]
        await session.send("go")
        assert [r.text for r in results_of(session.messages[2])] == ["r0", "r1", "r2"]
        assert peak == expected_peak, execution


# -- approval, observation, errors -----------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_denied_call_gets_the_exact_denial_text_and_never_runs(asynchronous: bool) -> None:
    seen: list[dict[str, Any]] = []
    asked: list[tuple[str, dict[str, Any]]] = []

    def decide(tool: Tool, args: Any) -> bool:
        asked.append((tool.name, dict(args)))
        return args["city"] != "Paris"

    async def decide_async(tool: Tool, args: Any) -> bool:
        return decide(tool, args)

    model = ScriptedTransport(
        [
            Reply(
                tool_calls=[
                    Call("get_weather", {"city": "Paris"}),
                    Call("get_weather", {"city": "Rome"}),
                ]
            ),
            Reply("ok"),
        ]
    )
    session = AgentSession(
        model,
        mcp_tools=[weather_tool(seen)],
        approve_tool=decide_async if asynchronous else decide,
    )
    await session.send("go")
    denied, allowed = results_of(session.messages[2])
    assert json.loads(denied.text) == {"error": "Tool call denied."}  # padwan's error form
    assert denied.is_error
    assert not allowed.is_error
    assert seen == [{"city": "Rome"}]
    assert asked == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]


async def test_an_approval_hook_that_returns_nothing_refuses() -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("get_weather", {"city": "X"})]), Reply("ok")])
    session = AgentSession(model, mcp_tools=[weather_tool()], approve_tool=lambda t, a: None)  # type: ignore[arg-type,return-value]
    await session.send("go")
    assert json.loads(results_of(session.messages[2])[0].text) == {"error": "Tool call denied."}


async def test_on_tool_brackets_each_dispatch() -> None:
    log: list[str] = []

    def handler(args: dict[str, Any]) -> str:
        log.append(f"run {args['city']}")
        return "ok"

    @contextmanager
    def observe(tc: ToolCallContext) -> Iterator[None]:
        log.append(f"enter {tc.name} {dict(tc.args)}")
        yield
        log.append(f"exit {tc.name}")

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("w", {"city": "A"}), Call("w", {"city": "B"})]),
            Reply("done"),
        ]
    )
    session = AgentSession(
        model, mcp_tools=[McpTool("w", "", WEATHER_SCHEMA, handler)], on_tool=observe
    )
    await session.send("go")
    assert log == [
        "enter w {'city': 'A'}",
        "run A",
        "exit w",
        "enter w {'city': 'B'}",
        "run B",
        "exit w",
    ]


async def test_on_tool_may_be_an_async_context_manager_and_wraps_the_approval() -> None:
    log: list[str] = []

    @asynccontextmanager
    async def observe(tc: ToolCallContext) -> AsyncIterator[None]:
        log.append("enter")
        yield
        log.append("exit")

    def approve(tool: Tool, args: Any) -> bool:
        log.append("approve")
        return False

    model = ScriptedTransport([Reply(tool_calls=[Call("get_weather", {"city": "A"})]), Reply("ok")])
    session = AgentSession(model, mcp_tools=[weather_tool()], on_tool=observe, approve_tool=approve)
    await session.send("go")
    assert log == ["enter", "approve", "exit"]


async def test_on_tool_that_is_not_a_context_manager_becomes_an_error_result() -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("get_weather", {"city": "A"})]), Reply("ok")])
    session = AgentSession(model, mcp_tools=[weather_tool()], on_tool=lambda tc: None)
    assert await session.send("go") == "ok"
    (result,) = results_of(session.messages[2])
    assert result.is_error
    assert "on_tool must return a context manager" in result.text


async def test_on_tool_error_formats_a_failing_handler() -> None:
    def broken(args: dict[str, Any]) -> str:
        raise RuntimeError("station offline")

    calls: list[tuple[str, dict[str, Any], str]] = []

    def format_error(tool: Tool, args: Any, exc: BaseException) -> str:
        calls.append((tool.name, dict(args), type(exc).__name__))
        return f"[{tool.name} failed: {type(exc).__name__}: {exc}]"

    model = ScriptedTransport([Reply(tool_calls=[Call("w", {"city": "A"})]), Reply("sorry")])
    session = AgentSession(
        model, mcp_tools=[McpTool("w", "", WEATHER_SCHEMA, broken)], on_tool_error=format_error
    )
    assert await session.send("go") == "sorry"
    (result,) = results_of(session.messages[2])
    assert result.text == "[w failed: RuntimeError: station offline]"
    assert result.is_error
    assert calls == [("w", {"city": "A"}, "RuntimeError")]


async def test_a_failing_handler_without_a_formatter_still_answers_the_model() -> None:
    def broken(args: dict[str, Any]) -> str:
        raise ValueError("bad city")

    model = ScriptedTransport([Reply(tool_calls=[Call("w", {"city": "A"})]), Reply("sorry")])
    session = AgentSession(model, mcp_tools=[McpTool("w", "", WEATHER_SCHEMA, broken)])
    await session.send("go")
    (result,) = results_of(model.requests[1].last_message)
    assert result.is_error and "bad city" in result.text


# -- truncation, round limit, usage ---------------------------------------------------------------


async def test_long_results_are_cut_in_the_models_copy_only() -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("big", {})]), Reply("ok")])
    big = McpTool("big", "", {"type": "object"}, lambda args: "x" * 50)
    session = AgentSession(model, mcp_tools=[big], max_tool_result_chars=10)
    await session.send("go")
    (sent,) = results_of(model.requests[1].last_message)
    (kept,) = results_of(session.messages[2])
    assert len(kept.text) == 50
    assert sent.text.startswith("x" * 10) and len(sent.text) < 50


async def test_the_round_limit_is_yielded_as_text_not_raised() -> None:
    loop_call = Reply(tool_calls=[Call("get_weather", {"city": "A"})])
    model = ScriptedTransport([loop_call] * 3 + [Reply("never")])
    session = AgentSession(model, mcp_tools=[weather_tool()], max_tool_rounds=3)
    chunks = [c async for c in session.stream("go")]
    assert model.call_count == 3
    assert len(chunks) == 1 and "reached tool call limit of 3 rounds" in chunks[0]
    assert session.messages[-1].tool_results  # every call of the last round has its result
    again = AgentSession(
        ScriptedTransport([loop_call] * 3), mcp_tools=[weather_tool()], max_tool_rounds=3
    )
    assert "reached tool call limit of 3 rounds" in await again.send("go")


async def test_no_round_limit_with_none() -> None:
    loop_call = Reply(tool_calls=[Call("get_weather", {"city": "A"})])
    model = ScriptedTransport([loop_call] * 8 + [Reply("finally")])
    session = AgentSession(model, mcp_tools=[weather_tool()], max_tool_rounds=None)
    assert await session.send("go") == "finally"
    assert model.call_count == 9


async def test_last_and_total_usage() -> None:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("get_weather", {"city": "A"})], usage=Usage(10, 2)),
            Reply("one", usage=Usage(20, 3)),
            Reply("two", usage=Usage(30, 4)),
        ]
    )
    session = AgentSession(model, mcp_tools=[weather_tool()])
    await session.send("a")
    assert session.last_usage == Usage(20, 3)
    assert session.total_usage == Usage(30, 5)
    await session.send("b")
    assert session.last_usage == Usage(30, 4)
    assert session.total_usage == Usage(60, 9)


async def test_a_model_failure_raises_from_send() -> None:
    session = AgentSession(ScriptedTransport([TransportError("provider down")]))
    with pytest.raises(TransportError, match="provider down"):
        await session.send("go")
    assert [m.role for m in session.messages] == ["user"]


# -- persistence -----------------------------------------------------------------------------------


class JsonStore:
    """The seed's example store: one JSON file per session."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def save(self, session_id: str, snapshot: Any) -> None:
        (self.path / f"{session_id}.json").write_text(json.dumps(snapshot))

    def load(self, session_id: str) -> Any:
        return json.loads((self.path / f"{session_id}.json").read_text())


class AsyncStore:
    def __init__(self) -> None:
        self.saved: dict[str, Any] = {}

    async def save(self, session_id: str, snapshot: Any) -> None:
        await asyncio.sleep(0)
        self.saved[session_id] = json.loads(json.dumps(snapshot))

    async def load(self, session_id: str) -> Any:
        await asyncio.sleep(0)
        return self.saved[session_id]


async def test_save_and_load_restore_system_prompt_and_whole_history(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    assert isinstance(store, ConversationStore)
    first = ScriptedTransport(
        [Reply(tool_calls=[Call("get_weather", {"city": "Paris"})]), Reply("22 in Paris.")]
    )
    async with AgentSession(
        first, system="Be brief.", mcp_tools=[weather_tool()], store=store, session_id="user-42"
    ) as session:
        await session.send("Weather in Paris?")
        session.save()
    saved = json.loads((tmp_path / "user-42.json").read_text())
    assert saved["system"] == "Be brief." and len(saved["messages"]) == 4

    second = ScriptedTransport([Reply("We talked about Paris.")])
    async with AgentSession.load(
        client=second, store=store, session_id="user-42", mcp_tools=[weather_tool()]
    ) as resumed:
        assert resumed.messages == session.messages
        await resumed.send("What were we talking about?")
    request = second.requests[0]
    assert request.system == "Be brief."
    assert [m.role for m in request.messages] == ["user", "assistant", "user", "assistant", "user"]


async def test_load_without_a_session_id_starts_fresh_and_saves_under_a_new_id(
    tmp_path: Path,
) -> None:
    store = JsonStore(tmp_path)
    async with AgentSession.load(client=ScriptedTransport([Reply("Hi!")]), store=store) as session:
        assert session.messages == []
        await session.send("Hello!")
        session.save()
    assert session.session_id
    assert (tmp_path / f"{session.session_id}.json").exists()


async def test_an_async_store_is_awaited() -> None:
    store = AsyncStore()
    session = AgentSession(
        ScriptedTransport([Reply("one")]), system="S", store=store, session_id="s1"
    )
    await session.send("hi")
    await session.save()  # type: ignore[misc]
    async with AgentSession.load(
        client=ScriptedTransport([Reply("two")]), store=store, session_id="s1"
    ) as resumed:
        assert [m.text for m in resumed.messages] == ["hi", "one"]
        assert resumed.system == "S"


async def test_load_refuses_unreadable_snapshots_and_bad_arguments(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps({"version": 99, "messages": []}))
    with pytest.raises(ValueError, match="version 99"):
        AgentSession.load(client=ScriptedTransport([]), store=store, session_id="bad")
    (tmp_path / "worse.json").write_text(json.dumps({"messages": [{"role": "robot"}]}))
    with pytest.raises(ValueError, match="cannot read"):
        AgentSession.load(client=ScriptedTransport([]), store=store, session_id="worse")
    with pytest.raises(ValueError, match="exactly one of model= or client="):
        AgentSession.load(store=store)
    with pytest.raises(ValueError, match="no store"):
        AgentSession(ScriptedTransport([])).save()


# -- typed output ----------------------------------------------------------------------------------


class Forecast(BaseModel):
    city: str
    temp: int


async def test_typed_output_validates_and_asks_for_the_schema() -> None:
    """The engine's one typed-output mechanism: the schema is asked for in that run's
    instructions (this transport has no response format), the message goes as it was written,
    and the next untyped send asks for nothing."""
    model = ScriptedTransport(
        [Reply('```json\n{"city": "Paris", "temp": 22}\n```'), Reply("It is sunny.")]
    )
    session = AgentSession(model, system="You forecast.")
    forecast = await session.send("Forecast for Paris", output=Forecast)
    assert forecast == Forecast(city="Paris", temp=22)
    first = model.requests[0]
    assert first.last_message.text == "Forecast for Paris"
    assert first.system.startswith("You forecast.") and '"temp"' in first.system
    assert await session.send("And tomorrow?") == "It is sunny."
    assert model.requests[1].system == "You forecast."


async def test_invalid_typed_output_is_sent_back_for_repair() -> None:
    model = ScriptedTransport(
        [Reply('{"city": "Paris", "temp": "warm"}'), Reply('{"city": "Paris", "temp": 22}')]
    )
    session = AgentSession(model)
    assert await session.send("Forecast", output=Forecast) == Forecast(city="Paris", temp=22)
    repair = model.requests[1].last_message.text
    assert "temp" in repair and "did not match" in repair


async def test_typed_output_gives_up_with_a_clear_error() -> None:
    model = ScriptedTransport([Reply("no json here")] * 3)
    session = AgentSession(model, output_retries=2)
    with pytest.raises(OutputValidationError, match="not a valid Forecast after 2") as info:
        await session.send("Forecast", output=Forecast)
    assert info.value.text == "no json here"
    assert model.call_count == 3


# -- configuration ---------------------------------------------------------------------------------


def test_a_model_string_picks_the_provider_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    session = AgentSession("openai:gpt-4.1")
    assert type(session.client).__name__ == "OpenAIChatTransport"


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(TypeError, match="mcp_tools takes"):
        AgentSession(ScriptedTransport([]), mcp_tools=["get_weather"])
    with pytest.raises(ValueError, match="max_tool_rounds"):
        AgentSession(ScriptedTransport([]), max_tool_rounds=0)
    with pytest.raises(TypeError, match="client must be"):
        AgentSession(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="handler must be callable or None"):
        McpTool("x", "", {}, "echo")  # type: ignore[arg-type]
    assert McpTool("x", "", {}, None).handler is McpTool("x", "", {}).handler  # padwan's echo


# -- servers: entering, teardown, tool lists -------------------------------------------------------


class FakeServer:
    """Stands in for McpStdio/McpStreamable: records enter, ping and exit."""

    def __init__(self, name: str, log: list[str], tools: list[Tool], *, fail: str = "") -> None:
        self.prefix = name
        self.log = log
        self.tools = tools
        self.fail = fail

    async def __aenter__(self) -> FakeServer:
        self.log.append(f"enter {self.prefix}")
        if self.fail == "enter":
            raise ConnectionError(f"{self.prefix} did not start")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.log.append(f"exit {self.prefix}")

    async def ping(self) -> None:
        self.log.append(f"ping {self.prefix}")
        if self.fail == "ping":
            raise ConnectionError(f"{self.prefix} does not answer")

    async def list_tools(self) -> list[Tool]:
        return self.tools


def echo_tool(tag: str) -> Tool:
    async def search(q: str) -> str:
        return f"{tag}:{q}"

    return Tool("search", search)


async def test_servers_enter_in_order_ping_report_and_leave_in_reverse() -> None:
    log: list[str] = []
    servers = [FakeServer("a", log, []), FakeServer("b", log, [])]
    connected: list[str] = []
    async with AgentSession(
        ScriptedTransport([Reply("hi")]),
        mcp_tools=servers,
        on_mcp_connect=lambda s: connected.append(s.prefix),
    ) as session:
        await session.send("x")
    assert log == ["enter a", "ping a", "enter b", "ping b", "exit b", "exit a"]
    assert connected == ["a", "b"]


@pytest.mark.parametrize("fail", ["enter", "ping"])
async def test_a_server_that_fails_to_start_tears_down_the_ones_before(fail: str) -> None:
    log: list[str] = []
    servers = [
        FakeServer("a", log, []),
        FakeServer("b", log, [], fail=fail),
        FakeServer("c", log, []),
    ]
    with pytest.raises(ConnectionError, match="b "):
        async with AgentSession(ScriptedTransport([]), mcp_tools=servers):
            pass
    assert "enter c" not in log
    assert log[-1] == "exit a"
    assert ("exit b" in log) == (fail == "ping")


async def test_sending_before_entering_a_session_with_servers_is_refused() -> None:
    session = AgentSession(ScriptedTransport([]), mcp_tools=[FakeServer("a", [], [])])
    with pytest.raises(RuntimeError, match="async with"):
        await session.send("x")


async def test_tool_lists_are_read_each_round_and_collisions_get_a_prefix() -> None:
    log: list[str] = []
    a = FakeServer("alpha", log, [echo_tool("A")])
    b = FakeServer("beta", log, [])

    async def fresh() -> str:
        return "new tool"

    async def install(q: str) -> str:
        b.tools = [echo_tool("B"), Tool("install", install), Tool("fresh", fresh)]
        return "installed"  # the server's list changed while the run goes on

    b.tools = [echo_tool("B"), Tool("install", install)]
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("alpha__search", {"q": "x"}), Call("beta__search", {"q": "y"})]),
            Reply(tool_calls=[Call("beta__install", {"q": ""})]),
            Reply(tool_calls=[Call("beta__fresh", {})]),
            Reply("done"),
        ]
    )
    async with AgentSession(model, mcp_tools=[a, b]) as session:
        await session.send("go")
    # both servers offer `search`: every tool of each gets its server's prefix
    assert model.requests[0].tool_names == ["alpha__search", "beta__search", "beta__install"]
    assert model.requests[2].tool_names == [
        "alpha__search",
        "beta__search",
        "beta__install",
        "beta__fresh",
    ]
    texts = [r.text for r in results_of(session.messages[2])]
    assert texts == ["A:x", "B:y"]
    assert results_of(session.messages[6])[0].text == "new tool"


# -- per-call cancellation ------------------------------------------------------------------------


async def test_one_running_call_can_be_cancelled_without_ending_the_turn() -> None:
    started: dict[str, str] = {}
    release, both = asyncio.Event(), asyncio.Event()

    async def slow(args: dict[str, Any]) -> str:
        await release.wait()
        return f"done {args['n']}"

    @contextmanager
    def note(tc: ToolCallContext) -> Iterator[None]:
        started[str(tc.args["n"])] = tc.id
        if len(started) == 2:
            both.set()
        yield

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("slow", {"n": 1}), Call("slow", {"n": 2})]), Reply("ok")]
    )
    session = AgentSession(
        model,
        mcp_tools=[McpTool("slow", "", {"type": "object"}, slow)],
        execution="parallel",
        on_tool=note,
    )
    send = asyncio.ensure_future(session.send("go"))
    await asyncio.wait_for(both.wait(), 5)
    assert session.cancel_tool_call(started["1"])
    assert not session.cancel_tool_call("no-such-call")
    release.set()
    assert await send == "ok"
    first, second = results_of(session.messages[2])
    assert (first.text, first.is_error) == ("Tool call cancelled.", True)
    assert (second.text, second.is_error) == ("done 2", False)
    assert not session.cancel_tool_call(started["2"])  # finished calls are not running


async def test_a_cancelled_call_that_turns_the_cancel_into_an_error_answers_that_error() -> None:
    started = asyncio.Event()
    call_ids: list[str] = []

    async def stubborn(args: dict[str, Any]) -> str:
        if args["n"] == 1:
            try:
                started.set()
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                raise RuntimeError("stopped half way") from None
        try:  # a later timeout in the same task must still read as a timeout
            async with asyncio.timeout(0.01):
                await asyncio.sleep(1)
        except TimeoutError:
            return "timed out as expected"
        return "no timeout"

    @contextmanager
    def note(tc: ToolCallContext) -> Iterator[None]:
        call_ids.append(tc.id)
        yield

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("stubborn", {"n": 1}), Call("stubborn", {"n": 2})]), Reply("ok")]
    )
    session = AgentSession(
        model,
        mcp_tools=[McpTool("stubborn", "", {"type": "object"}, stubborn)],
        execution="sequential",
        on_tool=note,
    )
    send = asyncio.ensure_future(session.send("go"))
    await asyncio.wait_for(started.wait(), 5)
    assert session.cancel_tool_call(call_ids[0])
    assert await asyncio.wait_for(send, 5) == "ok"
    first, second = results_of(session.messages[2])
    assert first.is_error and "stopped half way" in first.text
    assert (second.text, second.is_error) == ("timed out as expected", False)


# -- approval while the answer streams ------------------------------------------------------------


@pytest.mark.parametrize("execution", ["sequential", "parallel"])
async def test_a_complete_call_is_approved_while_the_answer_still_streams(execution: str) -> None:
    from tether.testing import Hold

    asked: list[str] = []
    ran: list[str] = []
    first_asked = asyncio.Event()

    async def approve(tool: Tool, args: Any) -> bool:
        asked.append(args["city"])
        first_asked.set()
        return True

    def handler(args: dict[str, Any]) -> str:
        ran.append(args["city"])
        return "ok"

    gate = asyncio.Event()
    calls = [Call("w", {"city": "A"}), Call("w", {"city": "B"})]
    model = ScriptedTransport([Hold(gate, Reply(tool_calls=calls), after_events=3), Reply("done")])
    session = AgentSession(
        model,
        mcp_tools=[McpTool("w", "", WEATHER_SCHEMA, handler)],
        approve_tool=approve,
        execution=execution,  # type: ignore[arg-type]
        start_tools_early=True,
    )
    send = asyncio.ensure_future(session.send("go"))
    await asyncio.wait_for(first_asked.wait(), 5)
    assert asked == ["A"]  # B's arguments are still streaming
    assert ran == ([] if execution == "sequential" else ["A"])  # parallel calls start too
    gate.set()
    assert await asyncio.wait_for(send, 5) == "done"
    assert asked == ["A", "B"]  # each call asked once
    assert sorted(ran) == ["A", "B"]


class TetherStoreLike:
    """A store with ``open(session_id)`` giving a ContextStore, as ``tether.stores`` has."""

    def __init__(self) -> None:
        self.contexts: dict[str, MemoryContextStore] = {}
        self.opened: list[str] = []

    async def open(self, session_id: str) -> MemoryContextStore:
        self.opened.append(session_id)
        return self.contexts.setdefault(session_id, MemoryContextStore(session_id=session_id))


async def test_a_tether_store_keeps_every_message_as_it_is_appended() -> None:
    store = TetherStoreLike()
    async with AgentSession(
        ScriptedTransport([Reply("one")]), store=store, session_id="s1"
    ) as session:
        await session.send("hi")
        assert session.save() is None  # nothing left to save
    assert [m.text for m in store.contexts["s1"].messages] == ["hi", "one"]
    resumed = AgentSession.load(
        client=ScriptedTransport([Reply("two")]), store=store, session_id="s1"
    )
    await resumed.send("again")
    assert [m.text for m in resumed.messages] == ["hi", "one", "again", "two"]
    assert store.opened == ["s1", "s1"]


async def test_a_session_closes_the_transport_it_made_from_a_model_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    closed: list[bool] = []
    async with AgentSession("openai:gpt-4.1") as session:
        original = session.client.aclose  # type: ignore[attr-defined]

        async def aclose() -> None:
            closed.append(True)
            await original()

        session.client.aclose = aclose  # type: ignore[attr-defined]
    assert closed == [True]


# -- found in review ----------------------------------------------------------------------------


async def test_cancelling_the_send_while_a_call_is_being_cancelled_still_cancels_the_send() -> None:
    started = asyncio.Event()
    ids: list[str] = []

    async def slow(args: dict[str, Any]) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    @contextmanager
    def note(tc: ToolCallContext) -> Iterator[None]:
        ids.append(tc.id)
        yield

    model = ScriptedTransport([Reply(tool_calls=[Call("slow", {})]), Reply("never")])
    session = AgentSession(
        model, mcp_tools=[McpTool("slow", "", {"type": "object"}, slow)], on_tool=note
    )
    send = asyncio.ensure_future(session.send("go"))
    await asyncio.wait_for(started.wait(), 5)
    assert session.cancel_tool_call(ids[0])
    send.cancel()  # in the same moment: the user's cancel must not be swallowed
    with pytest.raises(asyncio.CancelledError):
        await send
    assert model.call_count == 1


async def test_leaving_a_stream_early_stops_the_run_and_keeps_history_valid() -> None:
    model = ScriptedTransport([Reply("one two three", chunks=3), Reply("next")])
    session = AgentSession(model)
    async for _ in session.stream("go"):
        break
    assert {t for t in asyncio.all_tasks() if t is not asyncio.current_task()} == set()
    assert await session.send("again") == "next"
    assert [m.role for m in session.messages][-2:] == ["user", "assistant"]


async def test_typed_output_keeps_the_blocks_of_a_message() -> None:
    from tether import ImageBlock, TextBlock

    model = ScriptedTransport([Reply('{"city": "Paris", "temp": 22}')])
    session = AgentSession(model)
    image = ImageBlock("image/png", "iVBORw0KGgo=")
    await session.send(Message("user", [TextBlock("What is this?"), image]), output=Forecast)
    sent = model.requests[0].last_message.content
    assert sent == (TextBlock("What is this?"), image)
    assert '"temp"' in model.requests[0].system


async def test_early_approval_asks_once_per_call_over_several_turns() -> None:
    from tether.testing import Hold

    asked: list[str] = []

    def approve(tool: Tool, args: Any) -> bool:
        asked.append(args["city"])
        return True

    gate = asyncio.Event()
    gate.set()
    model = ScriptedTransport(
        [
            Reply("Looking.", tool_calls=[Call("w", {"city": "A"})]),
            Hold(
                gate,
                Reply(
                    "More.",
                    reasoning="hmm",
                    tool_calls=[Call("w", {"city": "B"}), Call("w", {"city": "C"})],
                ),
            ),
            Reply("done"),
        ]
    )
    session = AgentSession(
        model,
        mcp_tools=[McpTool("w", "", WEATHER_SCHEMA, lambda a: "ok")],
        approve_tool=approve,
        start_tools_early=True,
    )
    assert await session.send("go") == "done"
    assert sorted(asked) == ["A", "B", "C"]


async def test_a_server_that_cannot_list_leaves_the_other_tools_usable() -> None:
    from tether.mcp import McpError

    class Broken(FakeServer):
        async def list_tools(self) -> list[Tool]:
            raise McpError("cannot reach it")

    model = ScriptedTransport([Reply(tool_calls=[Call("get_weather", {"city": "A"})]), Reply("ok")])
    async with AgentSession(model, mcp_tools=[weather_tool(), Broken("down", [], [])]) as s:
        assert await s.send("go") == "ok"
    assert model.requests[0].tool_names == ["get_weather"]


@pytest.mark.parametrize("error", [RuntimeError("a bug of its own"), ValueError("bad list")])
async def test_any_listing_failure_of_one_server_never_breaks_a_turn(error: Exception) -> None:
    class Broken(FakeServer):
        async def list_tools(self) -> list[Tool]:
            raise error

    model = ScriptedTransport([Reply(tool_calls=[Call("get_weather", {"city": "A"})]), Reply("ok")])
    async with AgentSession(model, mcp_tools=[weather_tool(), Broken("down", [], [])]) as s:
        assert await s.send("go") == "ok"
    assert model.requests[0].tool_names == ["get_weather"]


async def test_a_prefixed_server_tool_name_still_fits_what_providers_take() -> None:
    def named(name: str) -> Tool:
        async def handler(q: str) -> str:
            return q

        return Tool(name, handler)

    long = "a" * 60
    clash = FakeServer("a_server_with_a_long_prefix", [], [named(long)])
    model = ScriptedTransport([Reply("ok")])
    async with AgentSession(model, mcp_tools=[named(long), clash]) as s:
        assert await s.send("go") == "ok"
    names = model.requests[0].tool_names
    assert len(names) == 2 and all(len(n) <= 64 for n in names), names


# -- limits and delegated usage -------------------------------------------------------------------


async def test_a_session_takes_limits_and_its_history_stays_valid() -> None:
    from tether import LimitExceeded, Limits
    from tether.types import Usage

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("get_weather", {"city": "Paris"})], usage=Usage(50, 10)),
            Reply("never", usage=Usage(50, 10)),
        ]
    )
    session = AgentSession(model, mcp_tools=[weather_tool()], limits=Limits(total_tokens=30))
    with pytest.raises(LimitExceeded) as info:
        await session.send("Weather in Paris?")
    assert info.value.limit == "total_tokens"
    assert session.total_usage.input_tokens == 50
    asked = [b for m in session.state.messages for b in m.content if isinstance(b, ToolUseBlock)]
    answered = [
        b for m in session.state.messages for b in m.content if isinstance(b, ToolResultBlock)
    ]
    assert [b.id for b in asked] == [b.tool_use_id for b in answered]


async def test_a_sub_agents_tokens_count_in_the_sessions_total() -> None:
    from tether import Agent
    from tether.types import Usage

    helper = Agent(
        "Answers.", ScriptedTransport([Reply("22 degrees", usage=Usage(7, 3))]), name="helper"
    )
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("helper", {"input": "Paris?"})], usage=Usage(20, 5)),
            Reply("It is 22 degrees.", usage=Usage(30, 5)),
        ]
    )
    session = AgentSession(model, mcp_tools=[helper.as_tool()])
    assert await session.send("Weather?") == "It is 22 degrees."
    assert (session.total_usage.input_tokens, session.total_usage.output_tokens) == (57, 13)


async def test_a_session_pauses_for_approval_and_another_process_resumes_it(
    tmp_path: Path,
) -> None:
    from tether import RunPaused
    from tether.stores import SQLiteStore

    seen: list[dict[str, Any]] = []
    held = Reply(tool_calls=[Call("get_weather", {"city": "Paris"}, id="w1")])
    async with SQLiteStore(tmp_path / "s.db") as store:
        first = AgentSession(
            ScriptedTransport([held]),
            mcp_tools=[weather_tool(seen)],
            store=store,
            session_id="trip",
            approval={"get_weather"},
        )
        with pytest.raises(RunPaused) as info:
            await first.send("Weather in Paris?")
        assert [c.id for c in info.value.pending] == ["w1"] and seen == []
    async with SQLiteStore(tmp_path / "s.db") as store:
        later = AgentSession.load(
            store=store,
            session_id="trip",
            client=ScriptedTransport([Reply("Sunny, 22.")]),
            mcp_tools=[weather_tool(seen)],
            approval={"get_weather"},
        )
        assert await later.resume(approve=["w1"]) == "Sunny, 22."
        assert seen == [{"city": "Paris"}]
        assert later.state.messages[-1].text == "Sunny, 22."


@pytest.mark.parametrize("decide", ["approve", "deny-then-approve"])
async def test_a_paused_session_saved_to_a_conversation_store_resumes_after_loading(
    tmp_path: Path, decide: str
) -> None:
    """padwan-ai's snapshot stores keep a pause too: the held call is not "not run" after a
    load, and the record of a partial decision reads back (so only the rest can be decided)."""
    from tether import RunPaused

    seen: list[dict[str, Any]] = []
    calls = [Call("get_weather", {"city": c}, id=f"w{i}") for i, c in enumerate(("Paris", "Oslo"))]
    first = AgentSession(
        ScriptedTransport([Reply(tool_calls=calls)]),
        mcp_tools=[weather_tool(seen)],
        store=JsonStore(tmp_path),
        session_id="trip",
        approval={"get_weather"},
    )
    with pytest.raises(RunPaused):
        await first.send("Weather in Paris and Oslo?")
    first.save()

    def load(replies: list[Reply]) -> AgentSession:
        return AgentSession.load(
            store=JsonStore(tmp_path),
            session_id="trip",
            client=ScriptedTransport(replies),
            mcp_tools=[weather_tool(seen)],
            approval={"get_weather"},
        )

    if decide == "deny-then-approve":
        middle = load([])
        with pytest.raises(RunPaused) as still:
            await middle.resume(deny={"w0": "not Paris"})
        assert [c.id for c in still.value.pending] == ["w1"]
        middle.save()
        with pytest.raises(ValueError, match="w0"):
            await load([]).resume(approve=["w0"])  # decided already: refused after a load
    later = load([Reply("Sunny.")])
    approve = ["w1"] if decide == "deny-then-approve" else ["w0", "w1"]
    assert await later.resume(approve=approve) == "Sunny."
    assert [s["city"] for s in seen] == (
        ["Oslo"] if decide == "deny-then-approve" else ["Paris", "Oslo"]
    )
