"""Cancelling a run reaches the tool calls it is running: an async tool is cancelled at once and
its result stored as interrupted; a synchronous tool in a worker thread is no longer waited for
(the run ends, the history says the call was interrupted, and the thread's late value is never
stored); calls that finished keep their results. Checked at random cancel points, many times."""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from typing import Literal

import pytest

from tether import Agent, CancellationToken, StreamEvent, Tool, ToolResult
from tether.context import MemoryContextStore
from tether.errors import RunCancelled
from tether.messages import Message, ToolResultBlock, ToolUseBlock
from tether.testing import Call, Reply, ScriptedTransport

Execution = Literal["parallel", "sequential"]


def results_of(history: list[Message]) -> dict[str, ToolResultBlock]:
    return {b.tool_use_id: b for m in history for b in m.content if isinstance(b, ToolResultBlock)}


def every_call_answered(history: list[Message]) -> bool:
    asked = [b.id for m in history for b in m.content if isinstance(b, ToolUseBlock)]
    return sorted(asked) == sorted(results_of(history))


def interrupted(result: ToolResultBlock) -> bool:
    return result.is_error and "interrupted" in str(result.content)


class Sleeper:
    """An async tool that sleeps ``seconds``; records that it started and how it ended."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = asyncio.Event()
        self.cancelled = False

    async def __call__(self) -> str:
        self.started.set()
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return "slept"


def agent_with(tools: list[Tool], calls: list[Call], execution: Execution) -> Agent:
    model = ScriptedTransport([Reply(tool_calls=calls), Reply("done")])
    return Agent("", model, tools=tools, execution=execution)


@pytest.mark.parametrize("execution", ["parallel", "sequential"])
async def test_an_async_tool_is_cancelled_at_once_and_stored_as_interrupted(
    execution: Execution,
) -> None:
    slow = Sleeper(30)
    agent = agent_with([Tool("slow", slow)], [Call("slow", {}, id="s1")], execution)
    store, token = MemoryContextStore(), CancellationToken()
    task = asyncio.ensure_future(agent.run("go", store, cancel=token))
    await slow.started.wait()
    token.cancel()
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(task, 10)  # the tool alone takes 30 s
    assert slow.cancelled
    history = await store.get_history()
    assert every_call_answered(history) and interrupted(results_of(history)["s1"])


async def test_calls_that_finished_keep_their_results() -> None:
    slow, quick = Sleeper(30), Sleeper(0)
    calls = [Call("slow", {}, id="s1"), Call("quick", {}, id="q1")]
    quick_done = asyncio.Event()

    def on_event(event: StreamEvent) -> None:
        if isinstance(event, ToolResult) and event.tool_use_id == "q1":
            quick_done.set()

    agent = agent_with([Tool("slow", slow), Tool("quick", quick)], calls, "parallel")
    agent = agent.copy(on_event=on_event)
    store, token = MemoryContextStore(), CancellationToken()
    task = asyncio.ensure_future(agent.run("go", store, cancel=token))
    await slow.started.wait()
    await asyncio.wait_for(quick_done.wait(), 10)  # the quick call has ended, the slow one runs
    token.cancel()
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(task, 10)
    results = results_of(await store.get_history())
    assert interrupted(results["s1"]) and results["q1"].content == "slept"


async def test_a_sync_tool_in_a_thread_is_no_longer_waited_for() -> None:
    began, release = threading.Event(), threading.Event()

    def blocking() -> str:
        began.set()
        release.wait(30)
        return "late value"

    tool = Tool("blocking", blocking, thread=True)
    agent = agent_with([tool], [Call("blocking", {}, id="b1")], "parallel")
    store, token = MemoryContextStore(), CancellationToken()
    task = asyncio.ensure_future(agent.run("go", store, cancel=token))
    await asyncio.to_thread(began.wait, 10)
    token.cancel()
    try:
        with pytest.raises(RunCancelled):
            await asyncio.wait_for(task, 10)  # the thread alone takes 30 s
        history = await store.get_history()
        assert every_call_answered(history) and interrupted(results_of(history)["b1"])
    finally:
        release.set()
    await asyncio.sleep(0.05)  # the thread ends: its value is stored nowhere
    assert await store.get_history() == history


@pytest.mark.parametrize("execution", ["parallel", "sequential"])
async def test_cancelled_at_random_points_the_history_stays_valid(execution: Execution) -> None:
    rng = random.Random(35)
    stopped_in_a_call = 0
    for trial in range(30):
        tools = [Tool(f"t{i}", Sleeper(rng.choice([0, 0.001, 0.01, 0.05, 5]))) for i in range(3)]
        calls = [Call(f"t{i}", {}, id=f"c{trial}_{i}") for i in range(3)]
        again = [Call("t0", {}, id=f"again{trial}")]
        model = ScriptedTransport([Reply(tool_calls=calls), Reply(tool_calls=again), Reply("ok")])
        agent = Agent("", model, tools=tools, execution=execution)
        store, token = MemoryContextStore(), CancellationToken()
        task = asyncio.ensure_future(agent.run("go", store, cancel=token))
        await asyncio.sleep(rng.uniform(0, 0.03))
        token.cancel()
        with contextlib.suppress(RunCancelled):
            await asyncio.wait_for(task, 10)  # a 5 s tool never holds the run
        history = await store.get_history()
        assert every_call_answered(history), (trial, "\n".join(map(str, history)))
        for result in results_of(history).values():
            assert (
                result.content == "slept"
                or interrupted(result)
                or "cancelled" in str(result.content)
            ), (trial, result)
        stopped_in_a_call += any(interrupted(r) for r in results_of(history).values())
    assert stopped_in_a_call >= 5  # the random points did land inside running calls
