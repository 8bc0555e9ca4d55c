"""``max_tool_result_chars``: the model's copy of a long result is truncated, the stored and
yielded results are not."""

from __future__ import annotations

import pytest

from agent_runs import of_type, run_events
from tether import Agent, MemoryContextStore, ToolResult, tool
from tether.testing import Call, Reply, ScriptedTransport


async def test_max_tool_result_chars_truncates_only_the_model_copy() -> None:
    big = "".join(chr(ord("a") + i % 26) for i in range(500))

    @tool
    def dump() -> str:
        return big

    model = ScriptedTransport([Reply(tool_calls=[Call("dump")]), Reply("ok"), Reply("ok2")])
    agent = Agent("sys", model, tools=[dump], max_tool_result_chars=50)
    store = MemoryContextStore()
    events = await run_events(agent, "go", store)

    assert of_type(events, ToolResult)[0].content == big
    assert store.messages[2].tool_results[0].content == big

    def check_truncated(text: str) -> None:
        assert text.startswith(big[:50])
        assert big[:51] not in text
        assert "[truncated" in text
        assert len(text) <= 50 + 60

    check_truncated(model.requests[1].messages[2].tool_results[0].text)
    assert await agent.run("again", store) == "ok2"
    check_truncated(model.requests[2].messages[2].tool_results[0].text)
    assert store.messages[2].tool_results[0].content == big


async def test_short_results_are_sent_unchanged() -> None:
    @tool
    def small() -> str:
        return "tiny"

    model = ScriptedTransport([Reply(tool_calls=[Call("small")]), Reply("ok")])
    await Agent("sys", model, tools=[small], max_tool_result_chars=50).run("go")
    assert model.requests[1].last_message.tool_results[0].content == "tiny"


def test_max_tool_result_chars_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Agent("sys", ScriptedTransport([]), max_tool_result_chars=0)
