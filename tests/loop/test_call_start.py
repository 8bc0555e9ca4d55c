"""``start_tools_early``: with parallel execution a call starts once its arguments are complete,
while the model still streams the rest of its answer; dispatch takes the running call over."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tether import (
    Agent,
    Allow,
    MemoryContextStore,
    StopReason,
    StreamEvent,
    Tool,
    ToolResult,
    TransportError,
)
from tether.testing import Call, Hold, Reply, ScriptedTransport

TWO_CALLS = [Call("work", {"tag": "a"}), Call("work", {"tag": "b"})]


class Work:
    """A tool that records when each call starts, and can be held; says when one has finished."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.first = asyncio.Event()
        self.finished = asyncio.Event()
        self.release = asyncio.Event()
        self.release.set()

    def tool(self) -> Tool:
        async def work(tag: str) -> str:
            self.started.append(tag)
            self.first.set()
            await self.release.wait()
            self.finished.set()
            return f"did {tag}"

        return Tool("work", work)


def agent(model: ScriptedTransport, work: Work, **kw: Any) -> Agent:
    return Agent("s", model, tools=[work.tool()], start_tools_early=True, **kw)


async def test_a_complete_call_starts_before_the_turn_ends() -> None:
    work, gate = Work(), asyncio.Event()
    # Events: start a, args a, start b (a is complete here), args b, end.
    model = ScriptedTransport(
        [Hold(gate, Reply(tool_calls=TWO_CALLS), after_events=3), Reply("ok")]
    )
    store = MemoryContextStore()
    run = asyncio.ensure_future(agent(model, work).run("go", store))
    await asyncio.wait_for(work.first.wait(), 5)
    assert work.started == ["a"]  # b's arguments are still streaming
    gate.set()
    assert await asyncio.wait_for(run, 5) == "ok"
    assert sorted(work.started) == ["a", "b"]  # a ran once, not again at dispatch
    results = store.messages[2].tool_results
    assert [r.text for r in results] == ["did a", "did b"]


async def test_without_parallel_execution_nothing_starts_early() -> None:
    work, gate = Work(), asyncio.Event()
    model = ScriptedTransport(
        [Hold(gate, Reply(tool_calls=TWO_CALLS), after_events=3), Reply("ok")]
    )
    run = asyncio.ensure_future(agent(model, work, execution="sequential").run("go"))
    await asyncio.sleep(0.1)
    assert work.started == []
    gate.set()
    assert await asyncio.wait_for(run, 5) == "ok"
    assert work.started == ["a", "b"]


async def test_a_stream_that_fails_cancels_the_call_it_started() -> None:
    work = Work()
    work.release.clear()
    cancelled: list[str] = []

    class Failing:
        async def stream(self, messages: Any, tools: Any, system: str) -> Any:
            from tether import ToolInputDelta, ToolUseStart

            yield ToolUseStart(0, "c1", "work")
            yield ToolInputDelta(0, "c1", '{"tag": "a"}')
            yield ToolUseStart(1, "c2", "work")
            await work.first.wait()
            raise TransportError("the connection dropped")

    async def work_tool(tag: str) -> str:
        work.started.append(tag)
        work.first.set()
        try:
            await work.release.wait()
        except asyncio.CancelledError:
            cancelled.append(tag)
            raise
        return "never"

    a = Agent("s", Failing(), tools=[Tool("work", work_tool)], start_tools_early=True)
    events: list[StreamEvent] = [e async for e in a.run_stream("go")]
    assert work.started == ["a"] and cancelled == ["a"]
    assert isinstance(events[-1].error, TransportError)  # type: ignore[union-attr]
    assert {t for t in asyncio.all_tasks() if t is not asyncio.current_task()} == set()


async def test_a_cut_off_turn_keeps_the_result_of_a_call_that_ran() -> None:
    work = Work()
    cut = Reply(tool_calls=TWO_CALLS, stop_reason=StopReason.MAX_TOKENS)
    model = ScriptedTransport([cut, Reply("ok")])
    store = MemoryContextStore()
    events = [e async for e in agent(model, work).run_stream("go", store)]
    results = {e.content: e.is_error for e in events if isinstance(e, ToolResult)}
    assert results["did a"] is False  # it ran: its result stands
    assert work.started == ["a"]  # b was not complete when the turn was cut off
    assert any(is_error for is_error in results.values())


def test_output_guardrails_rule_out_starting_early() -> None:
    with pytest.raises(ValueError, match="output_guardrails"):
        Agent(
            "s",
            ScriptedTransport([]),
            start_tools_early=True,
            output_guardrails=[lambda m: Allow()],
        )


async def test_arguments_that_needed_repair_do_not_start_early() -> None:
    work, gate = Work(), asyncio.Event()
    calls = [Call("work", raw_arguments='{"tag": "a",}'), Call("work", {"tag": "b"})]
    model = ScriptedTransport([Hold(gate, Reply(tool_calls=calls), after_events=3), Reply("ok")])
    run = asyncio.ensure_future(agent(model, work).run("go"))
    await asyncio.sleep(0.1)
    assert work.started == []  # a repaired prefix might have been cut short: it waits
    gate.set()
    assert await asyncio.wait_for(run, 5) == "ok"
    assert sorted(work.started) == ["a", "b"]


async def test_a_turn_closed_at_its_end_keeps_the_results_of_calls_that_ran() -> None:
    work = Work()
    model = ScriptedTransport([Reply(tool_calls=TWO_CALLS), Reply("ok")])
    store = MemoryContextStore()
    stream = agent(model, work).run_stream("go", store)
    async for event in stream:
        if type(event).__name__ == "IterationEnd":
            await asyncio.wait_for(work.finished.wait(), 5)  # a finished while the turn ended
            break
    await stream.aclose()
    results = {r.tool_use_id: r for r in store.messages[-1].tool_results}
    assert len(results) == 2
    assert results["call_1"].text == "did a"  # it ran: its result stands
    assert results["call_2"].is_error  # never started
