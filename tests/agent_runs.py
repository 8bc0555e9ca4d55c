"""Helpers for tests that run an agent: a plain agent and a one-call script, the run's events
(all, of one kind, the last), a cancelled task's end, and the check that a history answers every
tool call exactly once."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from tether import Agent, Message, SessionEndEvent, StreamEvent, ToolResultBlock, ToolUseBlock
from tether.testing import Call, Reply, ScriptedTransport

SYSTEM = "You are a test agent."


def agent_of(model: Any, tools: Sequence[Any] = (), **kwargs: Any) -> Agent:
    """An agent with a fixed system prompt, ``model`` and ``tools``."""
    return Agent(SYSTEM, model, tools=list(tools), **kwargs)


def one_call_then(answer: str, name: str = "t", **arguments: Any) -> ScriptedTransport:
    """A model that calls tool ``name`` once with ``arguments``, then answers ``answer``."""
    return ScriptedTransport([Reply(tool_calls=[Call(name, arguments)]), Reply(answer)])


def assert_history_valid(messages: Sequence[Message]) -> None:
    """Every tool call has exactly one result in the next user message; no result lacks its call."""
    for i, message in enumerate(messages):
        uses = [b.id for b in message.content if isinstance(b, ToolUseBlock)]
        results = [b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock)]
        if uses:
            assert message.role == "assistant", f"message {i}: tool calls in a {message.role} turn"
            assert i + 1 < len(messages), f"message {i}: tool calls {uses} have no results after"
            following = messages[i + 1]
            assert following.role == "user", f"message {i + 1} should hold the tool results"
            answered = [b.tool_use_id for b in following.content if isinstance(b, ToolResultBlock)]
            for use_id in uses:
                assert answered.count(use_id) == 1, (
                    f"call {use_id} (message {i}) has {answered.count(use_id)} results"
                )
        if results:
            assert message.role == "user", f"message {i}: tool results in a {message.role} turn"
            assert i > 0, f"message {i}: tool results {results} with no call before them"
            previous = messages[i - 1]
            called = [b.id for b in previous.content if isinstance(b, ToolUseBlock)]
            for result_id in results:
                assert result_id in called, f"message {i}: result {result_id} answers no call"
            assert len(set(results)) == len(results), f"message {i}: duplicate results"


def results_by_id(message: Message) -> dict[str, ToolResultBlock]:
    """The tool results of ``message``, by the id of the call each answers."""
    return {b.tool_use_id: b for b in message.tool_results}


async def run_events(agent: Agent, user: Any, context: Any = None, **kw: Any) -> list[StreamEvent]:
    """Every event of one run, in order."""
    return [e async for e in agent.run_stream(user, context, **kw)]


def of_type(events: Sequence[StreamEvent], kind: type) -> list[Any]:
    """The events of one kind."""
    return [e for e in events if isinstance(e, kind)]


def end_of(events: Sequence[StreamEvent]) -> SessionEndEvent:
    """The run's last event, which must be its ``SessionEndEvent``."""
    last = events[-1]
    assert isinstance(last, SessionEndEvent)
    return last


async def finish(task: asyncio.Task[Any]) -> None:
    """Await a cancelled task, expecting CancelledError (never hang the suite)."""
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
