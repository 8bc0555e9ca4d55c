"""``Agent.as_tool`` on the real local model: the caller delegates a question to a sub-agent (the
same model, another system prompt); the sub-agent's answer reaches the caller as the tool's
result, its run streams as the call's progress, and its tokens add up in the caller's total."""

from __future__ import annotations

from typing import Any

import pytest

from tether import (
    Agent,
    IterationEnd,
    SessionEndEvent,
    StreamEvent,
    ToolProgress,
    ToolResult,
    Usage,
)
from tether.local import LocalModel

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]

OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 7, "max_tokens": 160}
SYSTEM = "You are a helpful assistant. Use the tools when they help, then answer briefly."


async def test_a_question_delegated_to_a_sub_agent_comes_back(local_model: LocalModel) -> None:
    transport = local_model.chat_transport(**OPTIONS)
    sub_ends: list[SessionEndEvent] = []

    def seen(event: StreamEvent) -> None:
        if isinstance(event, SessionEndEvent):
            sub_ends.append(event)

    geography = Agent(
        "You answer geography questions in one short sentence.",
        transport,
        name="geography",
        on_event=seen,
    )
    caller = Agent(SYSTEM, transport, tools=[geography.as_tool()], max_iterations=4)
    try:
        prompt = "Use the geography tool to ask what the capital of France is, then tell me."
        events = [e async for e in caller.run_stream(prompt)]
    finally:
        await transport.aclose()

    end = events[-1]
    assert isinstance(end, SessionEndEvent), end
    assert end.error is None, end.error
    results = [e for e in events if isinstance(e, ToolResult) and e.name == "geography"]
    assert results, "the caller never asked the sub-agent"
    assert all(not r.is_error and str(r.content).strip() for r in results), results
    assert len(sub_ends) == len(results)
    assert any(isinstance(e, ToolProgress) and e.name == "geography" for e in events)

    own = sum((e.usage for e in events if isinstance(e, IterationEnd)), Usage())
    delegated = sum((s.total_usage for s in sub_ends), Usage())
    assert delegated.input_tokens > 0 and delegated.output_tokens > 0
    assert end.total_usage == own + delegated
