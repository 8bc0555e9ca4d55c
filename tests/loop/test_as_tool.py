"""``Agent.as_tool``: a sub-agent as a tool. Each call runs it on a fresh context; its answer (or
typed output as JSON) is the result, its tokens count in the caller's total, its iterations,
calls and text stream as the call's progress, its spans nest under the call's, cancelling the
caller stops it, and its failure is an error result the caller's model reads."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import tether.loop.delegation
from tether import (
    Agent,
    MemoryContextStore,
    SessionEndEvent,
    StreamEvent,
    Tool,
    ToolProgress,
    ToolResult,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    report_progress,
    tool,
)
from tether.errors import BadRequestError
from tether.testing import Call, Reply, ScriptedTransport
from tether.tools.progress import report_usage
from tether.tools.selector import ToolSource
from tether.tracing import OpenTelemetry
from tether.types import ZERO_USAGE


def delegating(tool: Tool, *questions: str, usage: Usage = ZERO_USAGE) -> Agent:
    """A caller whose model asks ``tool`` each of ``questions`` (one iteration each), then
    answers "done"."""
    replies = [Reply(tool_calls=[Call(tool.name, {"input": q})], usage=usage) for q in questions]
    return Agent("boss", ScriptedTransport([*replies, Reply("done", usage=usage)]), tools=[tool])


async def events_of(agent: Agent, message: str = "go") -> list[StreamEvent]:
    return [e async for e in agent.run_stream(message)]


def results(events: list[StreamEvent]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


def end_of(events: list[StreamEvent]) -> SessionEndEvent:
    end = events[-1]
    assert isinstance(end, SessionEndEvent)
    return end


# -- the run and its result ------------------------------------------------------------------------


async def test_each_call_runs_on_a_fresh_context_with_input_as_the_user_message() -> None:
    model = ScriptedTransport([Reply("Paris"), Reply("Rome")])
    helper = Agent("You know capitals.", model, name="geo")
    events = await events_of(delegating(helper.as_tool(), "France?", "Italy?"))
    assert [(r.content, r.is_error) for r in results(events)] == [
        ("Paris", False),
        ("Rome", False),
    ]
    assert [[m.text for m in r.messages] for r in model.requests] == [["France?"], ["Italy?"]]
    assert [r.system for r in model.requests] == ["You know capitals.", "You know capitals."]
    assert end_of(events).error is None


class Capital(BaseModel):
    country: str
    capital: str


async def test_a_typed_sub_agent_answers_its_validated_output_as_json() -> None:
    model = ScriptedTransport([Reply('```json\n{"country": "France", "capital": "Paris"}\n```')])
    helper = Agent("geo", model, output_type=Capital)
    (result,) = results(await events_of(delegating(helper.as_tool(), "France?")))
    assert result.content == Capital(country="France", capital="Paris").model_dump_json()
    assert not result.is_error


async def test_any_output_type_is_dumped_by_its_type_adapter() -> None:
    helper = Agent("count", ScriptedTransport([Reply(" [1, 2, 3] ")]), output_type=list[int])
    (result,) = results(await events_of(delegating(helper.as_tool(), "count")))
    assert result.content == "[1,2,3]"


def test_an_agent_whose_calls_wait_for_a_person_cannot_be_a_tool() -> None:
    """Its run is on a fresh, unstored context: a held call could never be resumed."""
    gated = Agent("s", ScriptedTransport([]), name="payer", approval={"pay"})
    with pytest.raises(ValueError, match="'payer' has approval= and cannot be a tool"):
        gated.as_tool()


def test_an_agent_that_hands_off_to_one_whose_calls_wait_cannot_be_a_tool_either() -> None:
    """The held call would be the handoff target's, in the same unstored run: refused when the
    tool is built, at any depth of handoffs (a cycle of handoffs is walked once)."""
    gated = Agent("s", ScriptedTransport([]), name="payer", approval={"pay"})
    clerk = Agent("c", ScriptedTransport([]), name="clerk", handoffs=[gated])
    triage = Agent("t", ScriptedTransport([]), name="triage", handoffs=[clerk])
    clerk.handoffs = [gated, triage]  # a cycle
    for agent in (clerk, triage):
        with pytest.raises(ValueError, match="hands off to 'payer', which has approval="):
            agent.as_tool()
    free = Agent("f", ScriptedTransport([]), name="free")
    assert Agent("t", ScriptedTransport([]), name="t", handoffs=[free]).as_tool().name == "t"


async def test_a_sub_run_that_pauses_after_all_is_the_calls_error_not_an_empty_answer() -> None:
    """A sub-agent given a handoff to a gated agent after its tool was built (so ``as_tool``
    could not refuse it): the pause is an error result that names the held call, never an
    empty answer."""

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    cashier_model = ScriptedTransport([Reply(tool_calls=[Call("pay", {"amount": 5}, id="p1")])])
    cashier = Agent("cash", cashier_model, tools=[pay], name="cashier", approval={"pay"})
    front = ScriptedTransport([Reply(tool_calls=[Call("transfer_to_cashier", {})])])
    helper = Agent("front desk", front, name="desk")
    desk = helper.as_tool()
    helper.handoffs = [cashier]
    (result,) = results(await events_of(delegating(desk, "pay 5")))
    assert result.is_error and "wait for approval: pay (p1)" in str(result.content)


# -- name, description, parameter -----------------------------------------------------------------


def test_the_name_is_the_agents_made_a_valid_tool_name() -> None:
    model = ScriptedTransport([])
    assert Agent("s", model, name="Research Agent #2!").as_tool().name == "Research_Agent_2"
    assert Agent("s", model, name="writer").as_tool().name == "writer"
    assert Agent("s", model, name="?!").as_tool().name == "agent"
    assert Agent("s", model, name="x" * 200).as_tool().name == "x" * 64
    assert Agent("s", model).as_tool(name="ask.me").name == "ask.me"


def test_the_description_is_the_system_prompts_first_line_or_says_whom_it_asks() -> None:
    model = ScriptedTransport([])
    prompted = Agent("\n  You find sources.  \nCite them.", model, name="research")
    assert prompted.as_tool().description == "You find sources."
    assert Agent("", model, name="research").as_tool().description == "Ask the research agent"
    assert prompted.as_tool(description="Look it up").description == "Look it up"


def test_it_has_one_string_parameter_input_and_reports_progress() -> None:
    tool = Agent("s", ScriptedTransport([]), name="helper").as_tool()
    schema = tool.spec.schema
    assert schema["type"] == "object"
    assert list(schema["properties"]) == ["input"]
    assert schema["properties"]["input"]["type"] == "string"
    assert schema["required"] == ["input"]
    assert tool.reports_progress


async def test_a_call_without_a_string_input_is_sent_back_to_be_corrected() -> None:
    helper = Agent("s", ScriptedTransport([]), name="helper")
    tool = helper.as_tool()
    caller = Agent(
        "boss",
        ScriptedTransport([Reply(tool_calls=[Call("helper", {"question": "?"})]), Reply("ok")]),
        tools=[tool],
    )
    (result,) = results(await events_of(caller))
    assert result.is_error
    assert "'input' must be a string" in str(result.content)
    assert "corrected arguments" in str(result.content)


# -- usage ----------------------------------------------------------------------------------------


async def test_the_sub_agents_tokens_count_in_the_callers_total() -> None:
    helper = Agent("s", ScriptedTransport([Reply("a", usage=Usage(100, 40, reasoning_tokens=7))]))
    caller = delegating(helper.as_tool(), "q", usage=Usage(10, 5))
    stream = caller.run_stream("go")
    end = await stream.get_session_end()
    assert end.total_usage == Usage(120, 50, reasoning_tokens=7)
    assert stream.usage == end.total_usage


async def test_usage_adds_up_through_two_levels_counted_once() -> None:
    leaf = Agent("leaf", ScriptedTransport([Reply("42", usage=Usage(1000, 100))]), name="leaf")
    middle_model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("leaf", {"input": "?"})], usage=Usage(100, 10)),
            Reply("leaf says 42", usage=Usage(100, 10)),
        ]
    )
    middle = Agent("middle", middle_model, tools=[leaf.as_tool()], name="middle")
    caller = delegating(middle.as_tool(), "ask the leaf", usage=Usage(1, 1))
    events = await events_of(caller)
    assert [r.content for r in results(events)] == ["leaf says 42"]
    assert end_of(events).total_usage == Usage(1202, 122)


async def test_a_failed_sub_runs_tokens_still_count() -> None:
    helper = Agent("s", ScriptedTransport([Reply("not json", usage=Usage(30, 3))]), output_type=int)
    helper.output_retries = 0
    events = await events_of(delegating(helper.as_tool(), "q", usage=Usage(1, 1)))
    assert results(events)[0].is_error
    assert end_of(events).total_usage == Usage(32, 5)


async def test_report_usage_counts_from_a_progress_tool_only() -> None:
    def spend(n: int) -> str:
        report_usage(Usage(n, 1))
        return "spent"

    tools: list[Tool | ToolSource] = [
        Tool("counted", spend, reports_progress=True),
        Tool("dropped", spend),  # a report from a tool that does not report progress is dropped
    ]
    for execution in ("parallel", "sequential"):
        model = ScriptedTransport(
            [
                Reply(tool_calls=[Call("counted", {"n": 7}), Call("dropped", {"n": 500})]),
                Reply("ok", usage=Usage(2, 2)),
            ]
        )
        agent = Agent("s", model, tools=tools, execution=execution)
        assert end_of(await events_of(agent)).total_usage == Usage(9, 3), execution
    outside = Agent("s", ScriptedTransport([]), tools=tools)
    (done,) = await outside.dispatch_tools([ToolUseBlock("c1", "counted", {"n": 1})], 1)
    assert done.content == "spent"  # no run to count into: the report is a no-op


async def test_the_sub_agents_own_tools_report_to_the_sub_run_not_past_it() -> None:
    """A plain tool of the sub-agent runs in the call's task; its reports must not reach the
    caller as the call's progress, nor its usage the caller's total past the sub-run's."""

    def leaky() -> str:
        report_progress(1, 1, "leaked")
        report_usage(Usage(5000, 5000))
        return "done"

    model = ScriptedTransport([Reply(tool_calls=[Call("leaky", {})]), Reply("fine")])
    helper = Agent("s", model, tools=[Tool("leaky", leaky)], execution="sequential")
    events = await events_of(delegating(helper.as_tool(), "q"))
    messages = [e.message for e in events if isinstance(e, ToolProgress)]
    assert "leaked" not in messages
    assert end_of(events).total_usage == Usage()


# -- progress -------------------------------------------------------------------------------------


async def test_iterations_tool_calls_and_text_stream_as_the_calls_progress() -> None:
    model = ScriptedTransport(
        [
            Reply("let me look", tool_calls=[Call("lookup", {"key": "k"})]),
            Reply("the answer is 42"),
        ]
    )
    helper = Agent("s", model, tools=[Tool("lookup", lambda key: "42")], name="helper")
    events = await events_of(delegating(helper.as_tool(), "q"))
    progress = [e for e in events if isinstance(e, ToolProgress)]
    (result,) = results(events)
    assert {p.tool_use_id for p in progress} == {result.tool_use_id}
    assert {p.name for p in progress} == {"helper"}
    assert [(p.progress, p.total, p.message) for p in progress] == [
        (1, 50, "iteration 1"),
        (1, 50, "let me look"),
        (1, 50, "calling lookup"),
        (2, 50, "iteration 2"),
        (2, 50, "the answer is 42"),
    ]
    assert events.index(progress[-1]) < events.index(result)


async def test_streamed_text_is_coalesced_not_reported_per_token() -> None:
    text = "word " * 400  # 2,000 characters in 400 deltas
    helper = Agent("s", ScriptedTransport([Reply(text, chunks=400)]), name="helper")
    events = await events_of(delegating(helper.as_tool(), "q"))
    texts = [e.message for e in events if isinstance(e, ToolProgress)][1:]
    assert "".join(t or "" for t in texts) == text
    assert len(texts) <= 2_000 // 200 + 1


async def test_a_nested_sub_agents_progress_is_passed_on() -> None:
    leaf = Agent("leaf", ScriptedTransport([Reply("42")]), name="leaf")
    middle_model = ScriptedTransport(
        [Reply(tool_calls=[Call("leaf", {"input": "?"})]), Reply("ok")]
    )
    middle = Agent("middle", middle_model, tools=[leaf.as_tool()], name="middle")
    events = await events_of(delegating(middle.as_tool(), "q"))
    messages = [e.message for e in events if isinstance(e, ToolProgress)]
    assert "calling leaf" in messages
    assert "leaf: iteration 1" in messages
    assert "leaf: 42" in messages


# -- tracing --------------------------------------------------------------------------------------


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    found: int = span.context.span_id
    return found


async def test_the_sub_runs_spans_nest_under_the_calls() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = OpenTelemetry(provider)
    helper = Agent("s", ScriptedTransport([Reply("42")]), name="helper", middleware=[tracing])
    caller = delegating(helper.as_tool(), "q")
    caller.middleware = (tracing,)
    caller.name = "boss"
    assert end_of(await events_of(caller)).error is None

    spans = exporter.get_finished_spans()
    runs = {s.name: s for s in spans if s.name.startswith("invoke_agent")}
    boss, inner = runs["invoke_agent boss"], runs["invoke_agent helper"]
    (tool,) = [s for s in spans if s.name == "execute_tool helper"]
    assert parent_of(tool) == span_id(boss)
    assert parent_of(inner) == span_id(tool)
    (chat,) = [s for s in spans if parent_of(s) == span_id(inner) and s.name.startswith("chat")]
    assert chat.context is not None and boss.context is not None
    assert chat.context.trace_id == boss.context.trace_id


# -- cancellation and failure ---------------------------------------------------------------------


class Recorded(MemoryContextStore):
    """The stores the sub-runs were given, to look at afterwards."""

    made: list[Recorded] = []  # noqa: RUF012 - filled per test

    def __init__(self) -> None:
        super().__init__()
        Recorded.made.append(self)


def every_call_answered(store: MemoryContextStore) -> bool:
    uses = {b.id for m in store.messages for b in m.content if isinstance(b, ToolUseBlock)}
    done = {
        b.tool_use_id for m in store.messages for b in m.content if isinstance(b, ToolResultBlock)
    }
    return uses <= done


async def test_cancelling_the_caller_stops_the_sub_run_and_leaves_its_context_valid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tether.loop.delegation, "MemoryContextStore", Recorded)
    Recorded.made = []
    entered, stopped = asyncio.Event(), asyncio.Event()

    async def wait_forever() -> str:
        entered.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return "never"

    model = ScriptedTransport([Reply(tool_calls=[Call("wait_forever", {})])])
    helper = Agent("s", model, tools=[Tool("wait_forever", wait_forever)], name="helper")
    caller = delegating(helper.as_tool(), "q")
    context = MemoryContextStore()
    task = asyncio.create_task(caller.run("go", context))
    await asyncio.wait_for(entered.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert stopped.is_set()
    (store,) = Recorded.made
    assert [m.role for m in store.messages] == ["user", "assistant", "user"]
    assert every_call_answered(store)
    assert every_call_answered(context)


def failing(kind: str) -> Agent:
    if kind == "transport":
        return Agent("s", ScriptedTransport([BadRequestError("model refused the request")]))
    if kind == "max_iterations":
        loop = ScriptedTransport([Reply(tool_calls=[Call("again", {})])])
        return Agent("s", loop, tools=[Tool("again", lambda: "more")], max_iterations=1)
    if kind == "max_iterations_raise":
        loop = ScriptedTransport([Reply(tool_calls=[Call("again", {})])])
        return Agent(
            "s",
            loop,
            tools=[Tool("again", lambda: "more")],
            max_iterations=1,
            on_max_iterations="raise",
        )
    assert kind == "output"
    return Agent("s", ScriptedTransport([Reply("not a number")]), output_type=int, output_retries=0)


ERRORS: dict[str, str] = {
    "transport": "BadRequestError: model refused the request",
    "max_iterations": "MaxIterationsError",
    "max_iterations_raise": "MaxIterationsError",
    "output": "OutputValidationError",
}


@pytest.mark.parametrize("kind", list(ERRORS))
async def test_a_failing_sub_agent_is_an_error_result_the_caller_reads(kind: str) -> None:
    helper = failing(kind)
    caller = delegating(helper.as_tool(), "q")
    events = await events_of(caller)
    (result,) = results(events)
    assert result.is_error
    assert f"Error: Tool 'agent' failed: {ERRORS[kind]}" in str(result.content)
    end = end_of(events)
    assert end.error is None
    assert end.stop_reason == "end_turn"
    assert isinstance(caller.transport, ScriptedTransport)
    (sent,) = caller.transport.requests[-1].last_message.tool_results
    assert sent.is_error and sent.content == result.content  # the caller's model read it


async def test_the_callers_error_formatter_words_a_sub_agents_failure() -> None:
    helper = failing("transport")
    caller = delegating(helper.as_tool(), "q")
    seen: list[Any] = []

    def formatter(name: str, arguments: Any, exc: BaseException) -> str:
        seen.append((name, dict(arguments), type(exc).__name__))
        return "the helper could not answer"

    caller.format_tool_error = formatter
    (result,) = results(await events_of(caller))
    assert (result.content, result.is_error) == ("the helper could not answer", True)
    assert seen == [("agent", {"input": "q"}, "BadRequestError")]
