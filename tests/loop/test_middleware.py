"""Tests for the engine seam: ``Middleware`` around model calls and tool calls, the injectable
``Clock`` that retries wait on, and ``ToolSource`` listings (async, and cached by ``revision``).

Every run is driven by a ``ScriptedTransport``; the tests assert on what the middleware saw,
what the fake model was sent (``requests``), and what the run yielded and stored.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import pytest

from tether import (
    Agent,
    AgentStream,
    CancellationToken,
    Clock,
    Error,
    IterationEnd,
    MemoryContextStore,
    Message,
    Middleware,
    ModelRequest,
    Retrying,
    RetryPolicy,
    SessionEndEvent,
    StopReason,
    StreamEvent,
    TextDelta,
    Tool,
    ToolInputDelta,
    ToolRequest,
    ToolResult,
    ToolResultBlock,
    ToolSource,
    ToolUseBlock,
    ToolUseStart,
    Usage,
    tool,
)
from tether.errors import TransportError
from tether.loop.middleware import ModelHandler, ToolHandler, model_chain, tool_chain
from tether.testing import Call, Reply, ScriptedTransport

pytestmark = pytest.mark.timeout(30)  # a hang guard only: a deadlocked run fails, not hangs

SYSTEM = "You are a test agent."
NO_RETRY = RetryPolicy(max_attempts=1)
TIMEOUT = 5.0  # hang guard for one run


# --------------------------------------------------------------------------------------------
# Helpers


def make_agent(
    transport: Any,
    tools: Iterable[Any] = (),
    middleware: Sequence[Any] = (),
    **kwargs: Any,
) -> Agent:
    kwargs.setdefault("retry", NO_RETRY)
    return Agent(
        system=SYSTEM,
        transport=transport,
        tools=list(tools),
        middleware=list(middleware),
        **kwargs,
    )


async def run_events(
    agent: Agent, user_message: Any = "hi", context: Any = None, **kwargs: Any
) -> tuple[list[StreamEvent], AgentStream]:
    stream = agent.run_stream(user_message, context, **kwargs)

    async def drain() -> list[StreamEvent]:
        return [event async for event in stream]

    return await asyncio.wait_for(drain(), TIMEOUT), stream


def of_type(events: Sequence[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def assert_clean_end(events: Sequence[StreamEvent]) -> SessionEndEvent:
    assert events, "the run yielded no events"
    end = events[-1]
    assert isinstance(end, SessionEndEvent), f"last event is {end!r}"
    assert end.error is None, f"run ended with {end.error!r}"
    assert not of_type(events, Error)
    return end


def make_echo(calls: list[str] | None = None) -> Tool:
    @tool
    async def echo(text: str) -> str:
        """Echo the text back.

        Args:
            text: what to echo
        """
        if calls is not None:
            calls.append(text)
        return f"echo:{text}"

    return echo


def tool_results(request_messages: Sequence[Message]) -> tuple[ToolResultBlock, ...]:
    """The results in the last message sent to the model."""
    return request_messages[-1].tool_results


class FakeClock:
    """A clock that never waits: ``sleep`` records the seconds asked for and returns at once."""

    def __init__(self, rand: float = 0.5) -> None:
        self.rand = rand
        self.sleeps: list[float] = []
        self.time = 1000.0

    def now(self) -> float:
        return self.time

    def random(self) -> float:
        return self.rand

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += seconds


class ModelRecorder(Middleware):
    """Records each model call it wraps and the events it passes on (unchanged)."""

    def __init__(self, log: list[str] | None = None, name: str = "M") -> None:
        self.name = name
        self.log: list[str] = [] if log is None else log
        self.requests: list[ModelRequest] = []
        self.sent: list[tuple[Message, ...]] = []  # the messages as they were at call time
        self.passed: list[StreamEvent] = []

    async def wrap_model_call(
        self, request: ModelRequest, call_next: ModelHandler
    ) -> AsyncIterator[StreamEvent]:
        self.log.append(f"{self.name}>model{request.iteration}")
        self.requests.append(request)
        self.sent.append(tuple(request.messages))
        try:
            async for event in call_next(request):
                self.passed.append(event)
                yield event
        finally:
            self.log.append(f"{self.name}<model{request.iteration}")


class ToolRecorder(Middleware):
    """Records each tool call it wraps, and the result its inner handler gave."""

    def __init__(self, log: list[str] | None = None, name: str = "T") -> None:
        self.name = name
        self.log: list[str] = [] if log is None else log
        self.calls: list[ToolRequest] = []
        self.results: list[ToolResultBlock] = []

    async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        self.log.append(f"{self.name}>tool:{call.id}")
        self.calls.append(call)
        try:
            result = await call_next(call)
            self.results.append(result)
            return result
        finally:
            self.log.append(f"{self.name}<tool:{call.id}")


class Both(ModelRecorder, ToolRecorder):
    """Wraps model calls and tool calls, logging both into one shared list."""

    def __init__(self, log: list[str], name: str) -> None:
        ModelRecorder.__init__(self, log, name)
        ToolRecorder.__init__(self, log, name)


# --------------------------------------------------------------------------------------------
# 1. Model middleware


async def test_model_middleware_brackets_every_model_call() -> None:
    model = ScriptedTransport(
        [
            Reply("looking", tool_calls=[Call("echo", {"text": "a"})], usage=Usage(3, 2)),
            Reply("done", chunks=2, usage=Usage(5, 1)),
        ]
    )
    log: list[str] = []
    mw = ModelRecorder(log)
    echo = make_echo()
    events, _ = await run_events(make_agent(model, [echo], [mw]), "question")
    assert_clean_end(events)

    # Before and after each iteration's call, each call finished before the next began.
    assert log == ["M>model1", "M<model1", "M>model2", "M<model2"]
    assert [r.iteration for r in mw.requests] == [1, 2]
    assert [r.attempt for r in mw.requests] == [1, 1]
    for request, messages, sent in zip(mw.requests, mw.sent, model.requests, strict=True):
        assert request.system == SYSTEM == sent.system
        assert [t.name for t in request.tools] == ["echo"]
        assert tuple(request.tools) == sent.tools == (echo.spec,)
        assert messages == sent.messages
        assert request.transport is model
    assert mw.sent[0] == (Message("user", "question"),)
    assert len(mw.sent[1]) == 3
    assert tool_results(mw.sent[1])[0].content == "echo:a"

    # What the middleware passed on reached the stream as it was (IterationEnd is re-stamped
    # with the run's iteration number; its stop reason and usage are the transport's).
    model_events = [e for e in mw.passed if not isinstance(e, IterationEnd)]
    streamed = [e for e in events if isinstance(e, TextDelta | ToolUseStart | ToolInputDelta)]
    assert streamed == model_events
    for got, sent_event in zip(streamed, model_events, strict=True):
        assert got is sent_event
    assert [e.delta for e in of_type(events, TextDelta)] == ["looking", "do", "ne"]
    passed_ends = of_type(mw.passed, IterationEnd)
    run_ends = of_type(events, IterationEnd)
    assert [(e.stop_reason, e.usage) for e in passed_ends] == [
        (e.stop_reason, e.usage) for e in run_ends
    ]
    assert [e.iteration for e in run_ends] == [1, 2]


async def test_model_middleware_code_after_its_loop_runs() -> None:
    seen: list[StreamEvent] = []
    done: list[int] = []

    class CollectThenStore(Middleware):
        async def wrap_model_call(
            self, request: ModelRequest, call_next: ModelHandler
        ) -> AsyncIterator[StreamEvent]:
            async for event in call_next(request):
                seen.append(event)
                yield event
            done.append(request.iteration)  # e.g. a cache storing the finished turn

    model = ScriptedTransport([Reply("hello")])
    assert await make_agent(model, middleware=[CollectThenStore()]).run("hi") == "hello"
    assert isinstance(seen[-1], IterationEnd)
    assert done == [1]


async def test_model_middleware_can_replace_the_call() -> None:
    class Cached(Middleware):
        def __init__(self) -> None:
            self.requests: list[ModelRequest] = []

        async def wrap_model_call(
            self, request: ModelRequest, call_next: ModelHandler
        ) -> AsyncIterator[StreamEvent]:
            self.requests.append(request)
            yield TextDelta(0, "from the cache")
            yield IterationEnd(0, StopReason.END_TURN, Usage(0, 0))

    model = ScriptedTransport([])  # any call to the transport would raise ScriptExhausted
    mw = Cached()
    store = MemoryContextStore()
    events, stream = await run_events(make_agent(model, middleware=[mw]), "hi", store)
    assert_clean_end(events)
    assert model.requests == []
    assert len(mw.requests) == 1
    assert await stream.get_final_text() == "from the cache"
    assert store.messages == [Message("user", "hi"), Message("assistant", "from the cache")]


async def test_model_middleware_replacing_the_call_with_tool_calls_drives_the_loop() -> None:
    """A replayed turn that asks for a tool is dispatched like the transport's own."""

    class Replay(Middleware):
        async def wrap_model_call(
            self, request: ModelRequest, call_next: ModelHandler
        ) -> AsyncIterator[StreamEvent]:
            if request.iteration == 1:
                yield ToolUseStart(0, "replayed_1", "echo")
                yield ToolInputDelta(0, "replayed_1", '{"text": "r"}')
                yield IterationEnd(0, StopReason.TOOL_USE, Usage(0, 0))
            else:
                async for event in call_next(request):
                    yield event

    echoed: list[str] = []
    model = ScriptedTransport([Reply("after replay")])
    answer = await make_agent(model, [make_echo(echoed)], [Replay()]).run("hi")
    assert answer == "after replay"
    assert echoed == ["r"]
    assert model.call_count == 1
    (result,) = tool_results(model.requests[0].messages)
    assert (result.tool_use_id, result.content) == ("replayed_1", "echo:r")


# --------------------------------------------------------------------------------------------
# 2. Order


async def test_first_middleware_is_outermost_for_model_and_tool_calls() -> None:
    log: list[str] = []
    handler_log: list[str] = []

    @tool
    def note(text: str) -> str:
        """Note something."""
        log.append("handler")
        handler_log.append(text)
        return text

    model = ScriptedTransport([Reply(tool_calls=[Call("note", {"text": "x"})]), Reply("ok")])
    agent = make_agent(model, [note], [Both(log, "A"), Both(log, "B")])
    assert await agent.run("hi") == "ok"
    assert handler_log == ["x"]
    model_entries = [e for e in log if ">model" in e]
    assert model_entries == ["A>model1", "B>model1", "A>model2", "B>model2"]
    tool_part = log[log.index("A>tool:call_1") : log.index("A<tool:call_1") + 1]
    assert tool_part == [
        "A>tool:call_1",
        "B>tool:call_1",
        "handler",
        "B<tool:call_1",
        "A<tool:call_1",
    ]


async def test_nested_model_middleware_close_in_reverse_order() -> None:
    log: list[str] = []
    model = ScriptedTransport([Reply("ok")])
    agent = make_agent(model, middleware=[ModelRecorder(log, "A"), ModelRecorder(log, "B")])
    assert await agent.run("hi") == "ok"
    assert log == ["A>model1", "B>model1", "B<model1", "A<model1"]


# --------------------------------------------------------------------------------------------
# 3. Retries and the clock


async def test_retries_call_the_chain_again_with_the_next_attempt() -> None:
    policy = RetryPolicy(max_attempts=3, initial_delay=2.0, multiplier=2.0, jitter=0.5)
    model = ScriptedTransport(
        [
            TransportError("busy", retryable=True),
            TransportError("still busy", retryable=True),
            Reply("finally"),
        ]
    )
    clock = FakeClock(rand=0.5)
    mw = ModelRecorder()
    events, _ = await run_events(make_agent(model, middleware=[mw], retry=policy, clock=clock))
    assert_clean_end(events)
    assert [(r.iteration, r.attempt) for r in mw.requests] == [(1, 1), (1, 2), (1, 3)]
    assert mw.sent == [(Message("user", "hi"),)] * 3
    assert model.call_count == 3

    retries = of_type(events, Retrying)
    assert [r.attempt for r in retries] == [1, 2]
    assert clock.sleeps == [r.delay for r in retries]
    # With random() fixed, the delay is exactly the policy's: base * (1 - jitter * 0.5).
    assert [r.delay for r in retries] == [
        policy.delay(1, TransportError("busy", retryable=True), lambda: 0.5),
        policy.delay(2, TransportError("busy", retryable=True), lambda: 0.5),
    ]
    assert [r.delay for r in retries] == [1.5, 3.0]


@pytest.mark.parametrize("with_token", [False, True], ids=["no-token", "cancel-token"])
async def test_retry_waits_only_on_the_injected_clock(with_token: bool) -> None:
    model = ScriptedTransport([TransportError("busy", retryable=True), Reply("ok")])
    clock = FakeClock(rand=0.0)
    assert isinstance(clock, Clock)
    policy = RetryPolicy(max_attempts=2, initial_delay=3600.0, max_delay=3600.0, jitter=0.25)
    kwargs: dict[str, Any] = {"cancel": CancellationToken()} if with_token else {}
    events, stream = await run_events(
        make_agent(model, retry=policy, clock=clock), "hi", None, **kwargs
    )
    assert_clean_end(events)
    (retry,) = of_type(events, Retrying)
    assert retry.delay == 3600.0  # rand 0.0: no jitter taken off
    assert clock.sleeps == [3600.0]
    assert await stream.get_final_text() == "ok"


# --------------------------------------------------------------------------------------------
# 4. Tool middleware


async def test_tool_middleware_brackets_every_tool_call() -> None:
    echoed: list[str] = []
    echo = make_echo(echoed)
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("echo", {"text": "a"}), Call("echo", {"text": "b"})]),
            Reply(tool_calls=[Call("echo", {"text": "c"})]),
            Reply("done"),
        ]
    )
    log: list[str] = []
    mw = ToolRecorder(log)
    agent = make_agent(model, [echo], [mw], execution="sequential")
    assert await agent.run("hi") == "done"
    assert log == [
        "T>tool:call_1",
        "T<tool:call_1",
        "T>tool:call_2",
        "T<tool:call_2",
        "T>tool:call_3",
        "T<tool:call_3",
    ]
    assert [(c.id, c.name, dict(c.input), c.iteration) for c in mw.calls] == [
        ("call_1", "echo", {"text": "a"}, 1),
        ("call_2", "echo", {"text": "b"}, 1),
        ("call_3", "echo", {"text": "c"}, 2),
    ]
    assert all(c.tool is echo for c in mw.calls)
    assert mw.calls[0].block == ToolUseBlock("call_1", "echo", {"text": "a"})
    assert [r.content for r in mw.results] == ["echo:a", "echo:b", "echo:c"]
    assert echoed == ["a", "b", "c"]


async def test_tool_middleware_can_change_the_result() -> None:
    class Shout(Middleware):
        async def wrap_tool_call(
            self, call: ToolRequest, call_next: ToolHandler
        ) -> ToolResultBlock:
            result = await call_next(call)
            return dataclasses.replace(result, content=result.text.upper())

    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "hey"})]), Reply("ok")])
    events, _ = await run_events(make_agent(model, [make_echo()], [Shout()]))
    assert_clean_end(events)
    (result,) = tool_results(model.requests[1].messages)
    assert (result.content, result.is_error) == ("ECHO:HEY", False)
    (event,) = of_type(events, ToolResult)
    assert event.content == "ECHO:HEY"


async def test_tool_middleware_can_short_circuit_the_call() -> None:
    class Canned(Middleware):
        async def wrap_tool_call(
            self, call: ToolRequest, call_next: ToolHandler
        ) -> ToolResultBlock:
            return ToolResultBlock(call.id, f"canned for {call.input['text']}")

    echoed: list[str] = []
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "q"})]), Reply("ok")])
    assert await make_agent(model, [make_echo(echoed)], [Canned()]).run("hi") == "ok"
    assert echoed == []  # the handler never ran
    (result,) = tool_results(model.requests[1].messages)
    assert (result.tool_use_id, result.content, result.is_error) == (
        "call_1",
        "canned for q",
        False,
    )


async def test_tool_middleware_returning_plain_value_becomes_that_calls_content() -> None:
    class Plain(Middleware):
        async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> Any:
            return "plain text"

    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "q"})]), Reply("ok")])
    assert await make_agent(model, [make_echo()], [Plain()]).run("hi") == "ok"
    (result,) = tool_results(model.requests[1].messages)
    assert result == ToolResultBlock("call_1", "plain text")


async def test_tool_middleware_can_rewrite_the_call() -> None:
    class Rewrite(Middleware):
        async def wrap_tool_call(
            self, call: ToolRequest, call_next: ToolHandler
        ) -> ToolResultBlock:
            block = dataclasses.replace(call.block, input={"text": call.input["text"] + "!"})
            return await call_next(dataclasses.replace(call, block=block))

    inner = ToolRecorder(name="inner")
    echoed: list[str] = []
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "q"})]), Reply("ok")])
    assert await make_agent(model, [make_echo(echoed)], [Rewrite(), inner]).run("hi") == "ok"
    assert echoed == ["q!"]
    assert dict(inner.calls[0].input) == {"text": "q!"}
    (result,) = tool_results(model.requests[1].messages)
    assert (result.tool_use_id, result.content) == ("call_1", "echo:q!")


async def test_unknown_tool_passes_through_tool_middleware() -> None:
    mw = ToolRecorder()
    model = ScriptedTransport([Reply(tool_calls=[Call("nope", {"x": 1})]), Reply("ok")])
    events, _ = await run_events(make_agent(model, [make_echo()], [mw]))
    assert_clean_end(events)
    (call,) = mw.calls
    assert (call.name, call.tool, dict(call.input)) == ("nope", None, {"x": 1})
    (result,) = tool_results(model.requests[1].messages)
    assert result.is_error
    assert "Unknown tool 'nope'" in result.text
    assert "echo" in result.text  # the available tools are named
    assert mw.results == [result]


async def test_tool_middleware_that_raises_gives_an_error_result_and_the_run_goes_on() -> None:
    class Broken(Middleware):
        async def wrap_tool_call(
            self, call: ToolRequest, call_next: ToolHandler
        ) -> ToolResultBlock:
            raise RuntimeError("tracing backend down")

    echoed: list[str] = []
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "q"})]), Reply("recovered")])
    events, stream = await run_events(make_agent(model, [make_echo(echoed)], [Broken()]))
    end = assert_clean_end(events)
    assert end.stop_reason is StopReason.END_TURN
    assert model.call_count == 2
    assert echoed == []
    (result,) = tool_results(model.requests[1].messages)
    assert result.is_error
    assert result.tool_use_id == "call_1"
    assert result.text.startswith("Error: a middleware failed on tool 'echo'")
    assert "tracing backend down" in result.text
    (event,) = of_type(events, ToolResult)
    assert event.is_error
    assert await stream.get_final_text() == "recovered"


# --------------------------------------------------------------------------------------------
# 5. Chains and construction


async def _inner_model(request: ModelRequest) -> AsyncIterator[StreamEvent]:
    yield IterationEnd(0, StopReason.END_TURN, Usage(0, 0))


async def _inner_tool(call: ToolRequest) -> ToolResultBlock:
    return ToolResultBlock(call.id, "inner")


def test_middleware_is_only_chained_for_the_methods_it_overrides() -> None:
    only_tool, only_model = ToolRecorder(), ModelRecorder()
    assert model_chain([only_tool], _inner_model) is None
    assert tool_chain([only_model], _inner_tool) is None
    assert model_chain([only_model], _inner_model) is not None
    assert tool_chain([only_tool], _inner_tool) is not None
    assert model_chain([], _inner_model) is None
    assert tool_chain([], _inner_tool) is None
    assert model_chain([Middleware()], _inner_model) is None  # overrides neither
    assert tool_chain([Middleware()], _inner_tool) is None


async def test_tool_chain_of_model_only_and_tool_middleware_runs_only_the_tool_one() -> None:
    log: list[str] = []
    chain = tool_chain([ModelRecorder(log), ToolRecorder(log)], _inner_tool)
    assert chain is not None
    block = ToolUseBlock("id1", "x", {})
    result = await chain(ToolRequest(block, None, 1))
    assert result == ToolResultBlock("id1", "inner")
    assert log == ["T>tool:id1", "T<tool:id1"]


async def test_without_middleware_the_transport_is_called_directly() -> None:
    model = ScriptedTransport([Reply("direct")])
    agent = make_agent(model)
    assert agent.middleware == ()
    assert await agent.run("hi") == "direct"
    assert model.call_count == 1


def test_middleware_class_instead_of_instance_is_refused() -> None:
    with pytest.raises(TypeError, match="ToolRecorder"):
        make_agent(ScriptedTransport([]), middleware=[ToolRecorder])


def test_object_wrapping_nothing_is_refused() -> None:
    with pytest.raises(TypeError, match="none of wrap_run, wrap_model_call, wrap_tool_call"):
        make_agent(ScriptedTransport([]), middleware=[object()])


def test_public_names() -> None:
    import tether

    assert tether.Middleware is Middleware
    assert tether.ModelRequest is ModelRequest
    assert tether.ToolRequest is ToolRequest


# --------------------------------------------------------------------------------------------
# 6. Agent.dispatch_tools


async def test_dispatch_tools_goes_through_middleware_and_keeps_call_order() -> None:
    # Call 0 may finish only after call 1 has finished: completion order is 1, 0.
    second_done = asyncio.Event()
    finished: list[int] = []

    @tool
    async def gated(i: int) -> str:
        """Finish in a set order."""
        if i == 0:
            await second_done.wait()
        finished.append(i)
        if i == 1:
            second_done.set()
        return f"done {i}"

    log: list[str] = []
    mw = ToolRecorder(log)
    agent = make_agent(ScriptedTransport([]), [gated], [mw], execution="parallel")
    blocks = [
        ToolUseBlock("a", "gated", {"i": 0}),
        ToolUseBlock("b", "gated", {"i": 1}),
        ToolUseBlock("c", "missing", {}),
    ]
    results = await asyncio.wait_for(agent.dispatch_tools(blocks, 7), TIMEOUT)
    assert finished == [1, 0]
    assert [r.tool_use_id for r in results] == ["a", "b", "c"]
    assert [(r.content, r.is_error) for r in results[:2]] == [("done 0", False), ("done 1", False)]
    assert results[2].is_error
    assert "Unknown tool 'missing'" in results[2].text
    assert sorted(c.id for c in mw.calls) == ["a", "b", "c"]
    assert {c.iteration for c in mw.calls} == {7}
    assert {c.id: c.tool for c in mw.calls} == {"a": gated, "b": gated, "c": None}
    # All three entered before the gated call finished: they ran at once.
    assert log.index("T<tool:a") > max(log.index(f"T>tool:{i}") for i in "abc")
    assert log.index("T<tool:b") < log.index("T<tool:a")


async def test_dispatch_tools_short_circuit_and_failing_middleware() -> None:
    class Mixed(Middleware):
        async def wrap_tool_call(
            self, call: ToolRequest, call_next: ToolHandler
        ) -> ToolResultBlock:
            if call.id == "canned":
                return ToolResultBlock(call.id, "canned")
            if call.id == "boom":
                raise ValueError("kaput")
            return await call_next(call)

    echoed: list[str] = []
    agent = make_agent(ScriptedTransport([]), [make_echo(echoed)], [Mixed()])
    blocks = [
        ToolUseBlock("canned", "echo", {"text": "1"}),
        ToolUseBlock("boom", "echo", {"text": "2"}),
        ToolUseBlock("real", "echo", {"text": "3"}),
    ]
    results = await asyncio.wait_for(agent.dispatch_tools(blocks, 1), TIMEOUT)
    assert echoed == ["3"]
    assert [r.tool_use_id for r in results] == ["canned", "boom", "real"]
    assert results[0] == ToolResultBlock("canned", "canned")
    assert results[1].is_error
    assert "a middleware failed on tool 'echo'" in results[1].text
    assert results[2] == ToolResultBlock("real", "echo:3")


# --------------------------------------------------------------------------------------------
# 7. on_event with middleware


async def test_on_event_sees_every_event_once_in_order_with_middleware() -> None:
    observed: list[StreamEvent] = []
    log: list[str] = []
    model = ScriptedTransport(
        [
            TransportError("busy", retryable=True),
            Reply("using", tool_calls=[Call("echo", {"text": "a"})], chunks=2),
            Reply("done"),
        ]
    )
    agent = make_agent(
        model,
        [make_echo()],
        [Both(log, "A"), Both(log, "B")],
        on_event=observed.append,
        retry=RetryPolicy(max_attempts=2),
        clock=FakeClock(),
    )
    events, _ = await run_events(agent)
    assert_clean_end(events)
    assert len(observed) == len(events)
    assert all(o is e for o, e in zip(observed, events, strict=True))
    assert len(of_type(observed, Retrying)) == 1
    assert len(of_type(observed, ToolResult)) == 1
    assert len(of_type(observed, SessionEndEvent)) == 1


# --------------------------------------------------------------------------------------------
# 8. Tool sources


class RevisionedSource:
    """An async source whose list changes with ``revision`` (like an MCP server's)."""

    def __init__(self) -> None:
        self.revision = 1
        self.listings = 0
        self.tools: list[Tool] = []

        @tool
        async def bump() -> str:
            """Add a tool to this source."""
            self.tools.append(self.extra)
            self.revision += 1
            return "bumped"

        @tool
        def extra() -> str:
            """A tool that appears later."""
            return "extra ran"

        self.extra = extra
        self.tools.append(bump)

    async def list_tools(self) -> list[Tool]:
        self.listings += 1
        return list(self.tools)


class PlainSource:
    """A sync source without ``revision``: listed every iteration."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = list(tools)
        self.listings = 0

    def list_tools(self) -> list[Tool]:
        self.listings += 1
        return list(self.tools)


class AsyncPlainSource(PlainSource):
    async def list_tools(self) -> list[Tool]:  # type: ignore[override]
        return PlainSource.list_tools(self)


async def test_async_tool_source_is_listed_and_its_tools_run() -> None:
    echoed: list[str] = []
    source = AsyncPlainSource([make_echo(echoed)])
    assert isinstance(source, ToolSource)
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "s"})]), Reply("ok")])
    assert await make_agent(model, [source]).run("hi") == "ok"
    assert echoed == ["s"]
    assert [r.tool_names for r in model.requests] == [["echo"], ["echo"]]
    assert source.listings == 2  # no revision: listed every iteration


async def test_source_with_revision_is_listed_once_per_revision() -> None:
    revisioned = RevisionedSource()

    @tool
    def fixed() -> str:
        """Always here."""
        return "fixed"

    plain = PlainSource([fixed])
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("bump")]),  # iteration 1: the source changes
            Reply(tool_calls=[Call("extra")]),  # iteration 2: the new tool is offered and used
            Reply("done"),  # iteration 3: nothing changed since iteration 2
        ]
    )
    agent = make_agent(model, [revisioned, plain])
    events, _ = await run_events(agent)
    assert_clean_end(events)
    assert [r.tool_names for r in model.requests] == [
        ["bump", "fixed"],
        ["bump", "extra", "fixed"],
        ["bump", "extra", "fixed"],
    ]
    assert revisioned.revision == 2
    assert revisioned.listings == 2  # revision 1 in iteration 1, revision 2 in iteration 2
    assert plain.listings == 3  # every iteration
    (result,) = tool_results(model.requests[2].messages)
    assert (result.content, result.is_error) == ("extra ran", False)

    # The listing cache belongs to one run: a new run lists the source again.
    model2 = ScriptedTransport([Reply("again")])
    await agent.copy(transport=model2).run("hi")
    assert revisioned.listings == 3
    assert model2.requests[0].tool_names == ["bump", "extra", "fixed"]


# --------------------------------------------------------------------------------------------
# Results from middleware always answer their own call; contracts around the chain


async def test_a_result_with_another_calls_id_is_rekeyed_to_this_call() -> None:
    class StaleCache(Middleware):
        async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> Any:
            return ToolResultBlock("stale-id", "cached")

    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "a"})]), Reply("ok")])
    store = MemoryContextStore()
    events, _ = await run_events(make_agent(model, [make_echo()], [StaleCache()]), "go", store)
    assert_clean_end(events)
    (use,) = store.messages[1].tool_uses
    assert store.messages[2].tool_results == [ToolResultBlock(use.id, "cached")]


def test_middleware_given_as_instance_attributes_is_refused() -> None:
    import types

    async def passthrough(call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        return await call_next(call)

    with pytest.raises(TypeError, match="its class defines none of"):
        make_agent(
            ScriptedTransport([]), middleware=[types.SimpleNamespace(wrap_tool_call=passthrough)]
        )


async def test_events_after_iteration_end_break_the_contract() -> None:
    class Chatty:
        async def stream(
            self, messages: Any, tools: Any, system: str
        ) -> AsyncIterator[StreamEvent]:
            yield TextDelta(0, "hi")
            yield IterationEnd(0, StopReason.END_TURN, Usage())
            yield TextDelta(0, "and more")

    events, _ = await run_events(make_agent(Chatty()))
    assert isinstance(events[-1], SessionEndEvent)
    assert "after IterationEnd" in str(events[-1].error)
