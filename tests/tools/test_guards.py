"""Tool-call guards: the agent's then the tool's, on every call; a denial reaches the model,
a rewrite changes the arguments, a guard that raises becomes an error result."""

from __future__ import annotations

import asyncio
from typing import Any

from agent_runs import end_of, of_type, run_events
from tether import Agent, Allow, Deny, MemoryContextStore, Rewrite, ToolCall, ToolResult, tool
from tether.testing import Call, Reply, ScriptedTransport


async def test_agent_guards_then_tool_guards_on_every_call_with_call_fields() -> None:
    log: list[tuple[str, ToolCall]] = []

    def agent_guard(call: ToolCall) -> None:
        log.append(("agent", call))

    def tool_guard(call: ToolCall) -> Allow:
        log.append(("tool", call))
        return Allow()

    @tool(guards=[tool_guard])
    def add(a: int, b: int) -> int:
        return a + b

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("add", {"a": 1, "b": 2}), Call("add", {"a": 3, "b": 4})]),
            Reply(tool_calls=[Call("add", {"a": 5, "b": 6}, id="later")]),
            Reply("done"),
        ]
    )
    agent = Agent("sys", model, tools=[add], guards=[agent_guard], execution="sequential")
    events = await run_events(agent, "go")
    assert [e.content for e in of_type(events, ToolResult)] == ["3", "7", "11"]
    assert [(who, c.id) for who, c in log] == [
        ("agent", "call_1"),
        ("tool", "call_1"),
        ("agent", "call_2"),
        ("tool", "call_2"),
        ("agent", "later"),
        ("tool", "later"),
    ]
    first = log[0][1]
    assert first.name == "add"
    assert dict(first.arguments) == {"a": 1, "b": 2}
    assert first.tool is add
    assert first.iteration == 1
    assert log[4][1].iteration == 2
    assert dict(log[4][1].arguments) == {"a": 5, "b": 6}


async def test_guard_deny_reason_reaches_model_and_handler_not_called() -> None:
    ran: list[str] = []

    @tool(guards=[lambda call: Deny("too risky")])
    def rm(path: str) -> str:
        ran.append(path)
        return "deleted"

    model = ScriptedTransport([Reply(tool_calls=[Call("rm", {"path": "/"})]), Reply("ok")])
    agent = Agent("sys", model, tools=[rm])
    events = await run_events(agent, "go")
    assert ran == []
    (result,) = of_type(events, ToolResult)
    assert result.is_error and result.content == "Tool call denied: too risky"
    sent = model.requests[1].last_message.tool_results[0]
    assert sent.content == "Tool call denied: too risky" and sent.is_error
    assert end_of(events).error is None


async def test_agent_guard_deny_stops_chain_before_tool_guard() -> None:
    log: list[str] = []

    def tool_guard(call: ToolCall) -> None:
        log.append("tool")

    @tool(guards=[tool_guard])
    def act() -> str:
        log.append("handler")
        return "x"

    model = ScriptedTransport([Reply(tool_calls=[Call("act")]), Reply("ok")])
    agent = Agent("sys", model, tools=[act], guards=[lambda c: Deny("policy")])
    await agent.run("go")
    assert log == []
    assert model.requests[1].last_message.tool_results[0].content == "Tool call denied: policy"


async def test_guard_rewrite_changes_args_and_async_guard_is_awaited() -> None:
    received: list[int] = []
    tool_guard_saw: list[dict[str, Any]] = []

    async def agent_guard(call: ToolCall) -> Rewrite:
        await asyncio.sleep(0)
        return Rewrite({**call.arguments, "n": call.arguments["n"] * 10})

    async def tool_guard(call: ToolCall) -> None:
        tool_guard_saw.append(dict(call.arguments))

    @tool(guards=[tool_guard])
    def record(n: int) -> str:
        received.append(n)
        return str(n)

    model = ScriptedTransport([Reply(tool_calls=[Call("record", {"n": 4})]), Reply("ok")])
    agent = Agent("sys", model, tools=[record], guards=[agent_guard])
    events = await run_events(agent, "go")
    assert received == [40]
    assert tool_guard_saw == [{"n": 40}]
    assert of_type(events, ToolResult)[0].content == "40"


async def test_guard_that_raises_becomes_error_result() -> None:
    ran: list[str] = []

    def broken(call: ToolCall) -> None:
        raise RuntimeError("guard exploded")

    @tool(guards=[broken])
    def act() -> str:
        ran.append("act")
        return "x"

    model = ScriptedTransport([Reply(tool_calls=[Call("act")]), Reply("recovered")])
    agent = Agent("sys", model, tools=[act])
    store = MemoryContextStore()
    assert await agent.run("go", store) == "recovered"
    assert ran == []
    result = store.messages[2].tool_results[0]
    assert result.is_error and "guard exploded" in result.text
