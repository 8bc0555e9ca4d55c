"""``Limits`` on a run: tokens and cost checked after each reply, tool calls before they run,
wall-clock time while the model streams and tools run; past a limit ``LimitExceeded`` and a
history in which every stored call has a result. ``tool_calls_per_turn`` caps one reply's calls
(the rest answered with an error, never run) and the run goes on."""

from __future__ import annotations

import asyncio
import time

import pytest

from tether import Agent, LimitExceeded, Limits, SessionEndEvent, ToolResult, tool
from tether.context import MemoryContextStore
from tether.messages import Message, ToolResultBlock, ToolUseBlock
from tether.testing import Call, Hold, Reply, ScriptedTransport
from tether.types import Usage
from waiting import until

ran: list[str] = []


@tool
def ping(n: int) -> str:
    """Ping."""
    ran.append(f"ping {n}")
    return f"pong {n}"


@tool
async def slow(n: int) -> str:
    """Sleep a long time."""
    ran.append(f"slow {n}")
    await asyncio.sleep(30)
    return "late"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def calls(*ns: int, name: str = "ping") -> Reply:
    return Reply(tool_calls=[Call(name, {"n": n}) for n in ns], usage=Usage(10, 5))


def every_call_answered(history: list[Message]) -> bool:
    asked = {b.id for m in history for b in m.content if isinstance(b, ToolUseBlock)}
    answered = {b.tool_use_id for m in history for b in m.content if isinstance(b, ToolResultBlock)}
    return asked == answered


async def run(agent: Agent, context: MemoryContextStore) -> BaseException:
    with pytest.raises(LimitExceeded) as info:
        await agent.run("go", context)
    assert every_call_answered(await context.get_history())
    return info.value


def test_limits_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="tool_calls"):
        Limits(tool_calls=-1)
    with pytest.raises(ValueError, match="prices"):
        Limits(cost=1.0)
    with pytest.raises(ValueError, match="seconds"):
        Limits(seconds=0)
    with pytest.raises(ValueError, match="tool_calls_per_turn"):
        Limits(tool_calls_per_turn=0)


async def test_total_tokens_end_the_run_after_the_reply_that_passes_them() -> None:
    model = ScriptedTransport([calls(1), calls(2), Reply("done", usage=Usage(10, 5))])
    agent = Agent("", model, tools=[ping], limits=Limits(total_tokens=20))
    context = MemoryContextStore()
    error = await run(agent, context)
    assert (error.limit, error.value, error.maximum) == ("total_tokens", 30, 20)
    assert ran == ["ping 1"]  # the second reply's call never ran
    assert model.call_count == 2


async def test_input_and_output_tokens_each_have_their_own_limit() -> None:
    model = ScriptedTransport([calls(1), Reply("done", usage=Usage(10, 5))])
    agent = Agent("", model, tools=[ping], limits=Limits(output_tokens=9))
    error = await run(agent, MemoryContextStore())
    assert (error.limit, error.value) == ("output_tokens", 10)


async def test_a_final_answer_past_the_limit_still_ends_with_limit_exceeded() -> None:
    model = ScriptedTransport([Reply("a long answer", usage=Usage(100, 50))])
    agent = Agent("", model, limits=Limits(input_tokens=99))
    error = await run(agent, MemoryContextStore())
    assert error.limit == "input_tokens"


async def test_cost_is_counted_from_the_prices_of_the_model_that_answered() -> None:
    model = ScriptedTransport([calls(1), calls(2), Reply("done")])
    model.model = "m1"  # type: ignore[attr-defined]
    prices = {"m1": (1_000_000.0, 2_000_000.0)}  # $1 per input token, $2 per output token
    agent = Agent("", model, tools=[ping], limits=Limits(cost=25.0, prices=prices))
    error = await run(agent, MemoryContextStore())
    assert error.limit == "cost" and error.value == pytest.approx(40.0)


async def test_cached_input_is_counted_at_the_cached_price_when_prices_give_one() -> None:
    """1,000 input tokens of which 800 read from the cache and 100 written to it, 10 out: at
    (3, 15, 0.3, 3.75) USD per million that is 100*3 + 800*0.3 + 100*3.75 + 10*15 millionths."""
    usage = Usage(1000, 10, cache_read_tokens=800, cache_write_tokens=100)
    spent = []
    for price in [(3.0, 15.0, 0.3, 3.75), (3.0, 15.0)]:
        model = ScriptedTransport([Reply("done", usage=usage)])
        model.model = "m"  # type: ignore[attr-defined]
        agent = Agent("", model, limits=Limits(cost=1e-9, prices={"m": price}))
        spent.append((await run(agent, MemoryContextStore())).value)
    assert spent == [
        pytest.approx((100 * 3 + 800 * 0.3 + 100 * 3.75 + 10 * 15) / 1e6),
        pytest.approx((1000 * 3 + 10 * 15) / 1e6),  # no cached price: all input at 3
    ]
    with pytest.raises(ValueError, match="2 to 4 numbers"):
        Limits(cost=1.0, prices={"m": (1.0,)})


async def test_a_model_without_a_price_is_a_clear_error() -> None:
    model = ScriptedTransport([calls(1)])
    agent = Agent("", model, tools=[ping], limits=Limits(cost=1.0, prices={"other": (1, 1)}))
    end = await agent.run_stream("go").get_session_end()
    assert isinstance(end.error, ValueError) and "no price" in str(end.error)


async def test_tool_calls_past_the_limit_never_run_and_the_run_ends() -> None:
    model = ScriptedTransport([calls(1, 2), calls(3, 4, 5), Reply("done")])
    agent = Agent("", model, tools=[ping], limits=Limits(tool_calls=3))
    context = MemoryContextStore()
    error = await run(agent, context)
    assert (error.limit, error.maximum) == ("tool_calls", 3)
    assert sorted(ran) == ["ping 1", "ping 2", "ping 3"]
    results = [
        b for m in await context.get_history() for b in m.content if isinstance(b, ToolResultBlock)
    ]
    refused = [r for r in results if r.is_error]
    assert len(refused) == 2 and "tool_calls limit" in str(refused[0].content)


async def test_calls_past_the_per_turn_cap_are_answered_and_never_run() -> None:
    model = ScriptedTransport([calls(*range(1, 8)), Reply("done")])
    agent = Agent("", model, tools=[ping], limits=Limits(tool_calls_per_turn=3))
    events = [e async for e in agent.run_stream("go")]
    assert sorted(ran) == ["ping 1", "ping 2", "ping 3"]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == 7 and sum(r.is_error for r in results) == 4
    end = events[-1]
    assert isinstance(end, SessionEndEvent) and end.error is None
    told = model.requests[1].messages[-1]
    assert "tool_calls_per_turn" in str(told.content[-1].content)  # type: ignore[union-attr]


async def test_seconds_stop_a_run_in_a_tool_call() -> None:
    model = ScriptedTransport([calls(1, name="slow"), Reply("never")])
    agent = Agent("", model, tools=[slow], limits=Limits(seconds=0.3))
    context = MemoryContextStore()
    started = time.monotonic()
    error = await run(agent, context)
    assert time.monotonic() - started < 5
    assert error.limit == "seconds" and error.maximum == 0.3


async def test_seconds_stop_a_run_while_the_model_streams() -> None:
    model = ScriptedTransport([Hold(asyncio.Event(), Reply("never"), after_events=0)])
    agent = Agent("", model, limits=Limits(seconds=0.3))
    started = time.monotonic()
    error = await run(agent, MemoryContextStore())
    assert error.limit == "seconds"
    assert time.monotonic() - started < 5


async def test_a_run_within_its_limits_is_untouched() -> None:
    model = ScriptedTransport([calls(1), Reply("done", usage=Usage(1, 1))])
    limits = Limits(tool_calls=5, total_tokens=1000, tool_calls_per_turn=4, seconds=30)
    agent = Agent("", model, tools=[ping], limits=limits)
    assert await agent.run("go") == "done"


async def test_the_time_limit_never_cancels_the_callers_token_and_the_caller_still_can() -> None:
    from tether import CancellationToken, RunCancelled

    mine = CancellationToken()
    model = ScriptedTransport([Hold(asyncio.Event(), Reply("never"))])
    agent = Agent("", model, limits=Limits(seconds=0.2))
    with pytest.raises(LimitExceeded):
        await agent.run("go", cancel=mine)
    assert not mine.cancelled

    held = ScriptedTransport([Hold(asyncio.Event(), Reply("never"))])
    agent = Agent("", held, limits=Limits(seconds=30))
    running = asyncio.create_task(agent.run("go", cancel=mine))
    await until(lambda: held.call_count == 1, "the held model call")  # the run is under way
    mine.cancel()
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(running, 5)


async def test_limit_exceeded_reads_back_from_its_stored_form() -> None:
    from tether.stores.jsonforms import exception_from_dict, exception_to_dict

    back = exception_from_dict(exception_to_dict(LimitExceeded("cost", 2.5, 2.0)))
    assert isinstance(back, LimitExceeded)
    assert (back.limit, back.value, back.maximum) == ("cost", 2.5, 2.0)


async def test_the_per_turn_cap_holds_for_sequential_and_early_started_calls() -> None:
    for fields in ({"execution": "sequential"}, {"start_tools_early": True}):
        ran.clear()
        model = ScriptedTransport([calls(1, 2, 3, 4), Reply("done")])
        limits = Limits(tool_calls_per_turn=2)
        agent = Agent("", model, tools=[ping], limits=limits, **fields)  # type: ignore[arg-type]
        assert await agent.run("go") == "done"
        assert sorted(ran) == ["ping 1", "ping 2"], fields
