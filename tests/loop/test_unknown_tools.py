"""Calls of tools the agent does not have: an error result by default, a raise on request;
duplicate tool names never leave a call unanswered."""

from __future__ import annotations

import pytest

from agent_runs import assert_history_valid, end_of, of_type, results_by_id, run_events
from tether import Agent, Error, MemoryContextStore, Tool, ToolNotFoundError, tool
from tether.testing import Call, Reply, ScriptedTransport


async def test_unknown_tool_default_is_an_error_result_and_run_goes_on() -> None:
    @tool
    def known() -> str:
        return "k"

    model = ScriptedTransport([Reply(tool_calls=[Call("ghost")]), Reply("sorry")])
    agent = Agent("sys", model, tools=[known])
    store = MemoryContextStore()
    assert await agent.run("go", store) == "sorry"
    result = model.requests[1].last_message.tool_results[0]
    assert result.is_error
    assert "ghost" in result.text and "known" in result.text
    assert_history_valid(store.messages)


async def test_unknown_tool_raise_stores_result_then_raises() -> None:
    @tool
    def known() -> str:
        return "k"

    model = ScriptedTransport([Reply(tool_calls=[Call("known"), Call("ghost")]), Reply("no")])
    agent = Agent("sys", model, tools=[known], unknown_tool="raise")
    store = MemoryContextStore()
    events = await run_events(agent, "go", store)
    errors = of_type(events, Error)
    assert len(errors) == 1 and isinstance(errors[0].exception, ToolNotFoundError)
    assert "ghost" in str(errors[0].exception)
    assert end_of(events).error is errors[0].exception
    assert model.call_count == 1
    assert_history_valid(store.messages)
    results = results_by_id(store.messages[-1])
    assert results["call_1"].content == "k"
    assert results["call_2"].is_error

    with pytest.raises(ToolNotFoundError):
        await agent.copy(transport=ScriptedTransport([Reply(tool_calls=[Call("ghost")])])).run("go")


async def test_duplicate_tool_names_never_leave_an_unanswered_call() -> None:
    """ENGINE BUG: the duplicate-name check runs after the tool-calling turn is stored."""

    def handler() -> str:
        return "x"

    model = ScriptedTransport([Reply(tool_calls=[Call("same")]), Reply("ok")])
    agent = Agent("sys", model, tools=[Tool("same", handler), Tool("same", handler)])
    store = MemoryContextStore()
    with pytest.raises(ValueError, match="same"):
        await agent.run("go", store)
    assert_history_valid(store.messages)
