"""One budget covers a run and everything it delegates to: a sub-agent's tokens, cost, tool
calls and time count against the caller's ``Limits`` while it runs (through ``as_tool``, at any
depth), a handoff's target and a fallback's answering model are priced as their own, and a sub-run
that passes the caller's limit stops there, its caller ending with ``LimitExceeded``."""

from __future__ import annotations

import asyncio

import pytest

from tether import Agent, LimitExceeded, Limits, tool
from tether.context import MemoryContextStore
from tether.errors import RateLimitError
from tether.messages import Message, ToolResultBlock, ToolUseBlock
from tether.testing import Call, Reply, ScriptedTransport
from tether.transports import FallbackTransport
from tether.types import Usage

PRICES = {"boss": (1.0, 1.0), "helper": (100.0, 100.0), "leaf": (1000.0, 1000.0)}
"""USD per million tokens: the helper's model is a hundred times the caller's."""

ran: list[int] = []


@tool
def ping(n: int) -> str:
    """Ping."""
    ran.append(n)
    return f"pong {n}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def named(model: ScriptedTransport, name: str) -> ScriptedTransport:
    model.model = name  # type: ignore[attr-defined]
    return model


def pinging(rounds: int, usage: Usage, name: str) -> ScriptedTransport:
    """A model that calls ``ping`` once a reply for ``rounds`` replies, then answers."""
    replies = [Reply(tool_calls=[Call("ping", {"n": i})], usage=usage) for i in range(rounds)]
    return named(ScriptedTransport([*replies, Reply("done", usage=usage)]), name)


SMALL = Usage(10, 10)


def boss(sub: Agent, limits: Limits, usage: Usage = SMALL) -> Agent:
    """A caller that asks ``sub`` once, then answers."""
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call(sub.name, {"input": "work"})], usage=usage),
            Reply("all done", usage=usage),
        ]
    )
    return Agent("boss", named(model, "boss"), tools=[sub.as_tool()], limits=limits, name="boss")


def every_call_answered(history: list[Message]) -> bool:
    asked = {b.id for m in history for b in m.content if isinstance(b, ToolUseBlock)}
    answered = {b.tool_use_id for m in history for b in m.content if isinstance(b, ToolResultBlock)}
    return asked == answered


async def limit_of(agent: Agent) -> LimitExceeded:
    context = MemoryContextStore()
    with pytest.raises(LimitExceeded) as info:
        await asyncio.wait_for(agent.run("go", context), 20)
    assert every_call_answered(await context.get_history())
    return info.value


async def test_a_sub_agents_cost_counts_against_the_callers_cost_limit_while_it_runs() -> None:
    # each helper reply costs 1M tokens at $100/M = $100; the caller may spend $10 in all
    helper_model = pinging(10, Usage(500_000, 500_000), "helper")
    helper = Agent("helper", helper_model, tools=[ping], name="helper")
    error = await limit_of(boss(helper, Limits(cost=10.0, prices=PRICES)))
    assert error.limit == "cost"
    assert 100 <= error.value < 110  # the one reply that passed it, not ~$1,000
    assert len(helper_model.requests) == 1  # the sub-run stopped at the reply that passed it
    assert ran == []  # its calls were answered without running


async def test_tokens_and_tool_calls_of_a_sub_agent_count_against_the_callers() -> None:
    helper_model = pinging(10, Usage(300, 100), "helper")
    helper = Agent("helper", helper_model, tools=[ping], name="helper")
    error = await limit_of(boss(helper, Limits(total_tokens=1_000)))
    assert error.limit == "total_tokens"
    assert len(helper_model.requests) == 3  # 20 + 400 + 400 + 400 > 1,000
    assert ran == [0, 1]
    ran.clear()
    helper_model = pinging(10, Usage(1, 1), "helper")
    helper = Agent("helper", helper_model, tools=[ping], name="helper")
    error = await limit_of(boss(helper, Limits(tool_calls=4)))
    assert error.limit == "tool_calls"
    assert len(ran) == 3  # the delegating call is the first of four


async def test_the_budget_holds_through_two_levels_of_delegation() -> None:
    leaf_model = pinging(10, Usage(10_000, 0), "leaf")  # $10 a reply
    leaf = Agent("leaf", leaf_model, tools=[ping], name="leaf")
    middle_model = named(
        ScriptedTransport(
            [Reply(tool_calls=[Call("leaf", {"input": "dig"})], usage=Usage(1, 1)), Reply("ok")]
        ),
        "helper",
    )
    middle = Agent("middle", middle_model, tools=[leaf.as_tool()], name="middle")
    error = await limit_of(boss(middle, Limits(cost=25.0, prices=PRICES)))
    assert error.limit == "cost"
    assert len(leaf_model.requests) == 3  # $10, $20, $30: stopped at the third


async def test_a_sub_agents_own_tighter_limit_still_holds_and_prices_its_model() -> None:
    helper_model = pinging(10, Usage(1_000, 0), "private")
    own = Limits(cost=0.05, prices={"private": (10.0, 10.0)})  # $0.01 a reply
    helper = Agent("helper", helper_model, tools=[ping], name="helper", limits=own)
    caller = boss(helper, Limits(cost=1.0, prices=PRICES))
    answer = await caller.run("go")  # the helper's limit ends its run: the caller goes on
    assert answer == "all done"
    assert len(helper_model.requests) == 6  # $0.06 > $0.05
    # the caller's table has no price for "private": the helper's own price is the model's,
    # and the caller's $1 was never passed


async def test_a_sub_agents_model_priced_nowhere_ends_the_callers_run() -> None:
    helper = Agent("helper", pinging(3, Usage(5, 5), "unpriced"), tools=[ping], name="helper")
    caller = boss(helper, Limits(cost=100.0, prices=PRICES))
    context = MemoryContextStore()
    with pytest.raises(ValueError, match="no price for model 'unpriced'"):
        await caller.run("go", context)
    assert every_call_answered(await context.get_history())


async def test_a_handoffs_target_is_priced_as_its_own_model() -> None:
    expert = Agent("expert", pinging(10, Usage(50_000, 0), "helper"), tools=[ping], name="expert")
    router_model = ScriptedTransport(
        [Reply(tool_calls=[Call("transfer_to_expert", {})], usage=Usage(10, 10))]
    )
    router = Agent(
        "router",
        named(router_model, "boss"),
        handoffs=[expert],
        name="router",
        limits=Limits(cost=12.0, prices=PRICES),
    )
    error = await limit_of(router)
    assert error.limit == "cost" and 15 <= error.value < 16  # three $5 replies of the expert


async def test_a_fallbacks_answering_model_is_priced_as_its_own() -> None:
    class Down:
        model = "boss"

        async def stream(self, messages: object, tools: object, system: str):  # type: ignore[no-untyped-def]
            raise RateLimitError("busy", retryable=True)
            yield  # pragma: no cover

    backup = pinging(10, Usage(50_000, 0), "helper")  # $5 a reply at the helper's price
    agent = Agent(
        "",
        FallbackTransport([Down(), backup]),  # type: ignore[list-item]
        tools=[ping],
        limits=Limits(cost=12.0, prices=PRICES),
    )
    error = await limit_of(agent)
    assert error.limit == "cost" and 15 <= error.value < 16


async def test_the_callers_time_limit_stops_a_sub_agent_in_a_tool_call() -> None:
    stopped = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait a long time."""
        try:
            await asyncio.sleep(30)
        finally:
            stopped.set()
        return "late"

    model = ScriptedTransport([Reply(tool_calls=[Call("wait", {})]), Reply("late")])
    helper = Agent("helper", model, tools=[wait], name="helper")
    error = await limit_of(boss(helper, Limits(seconds=0.5)))
    assert error.limit == "seconds" and stopped.is_set()
