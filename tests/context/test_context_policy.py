"""The context policy ``CharBudget``: what is trimmed from the request (the store keeps
everything), the summary, the ``ContextTrimmed`` event, and a trimmed history that stays valid."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from agent_runs import assert_history_valid, of_type, run_events
from tether import (
    Agent,
    CharBudget,
    ContextTrimmed,
    MemoryContextStore,
    Message,
    StreamEvent,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tether.testing import Reply, ScriptedTransport


def _long_history() -> list[Message]:
    return [
        Message("system", "You are terse."),
        Message("user", "first question " + "a" * 300),
        Message("assistant", [TextBlock("let me look"), ToolUseBlock("old_1", "search", {})]),
        Message("user", [ToolResultBlock("old_1", "r" * 300)]),
        Message("assistant", "first answer " + "b" * 300),
        Message("user", "second question " + "c" * 300),
        Message("assistant", "second answer " + "d" * 300),
    ]


@dataclass(frozen=True, slots=True)
class Trimmed:
    """A run over ``_long_history`` under an 800-character budget: what it had, sent and stored."""

    original: list[Message]
    full: list[Message]
    sent: tuple[Message, ...]
    events: list[StreamEvent]
    store: MemoryContextStore


async def trimmed_run() -> Trimmed:
    original = _long_history()
    store = MemoryContextStore(original)
    model = ScriptedTransport([Reply("short answer")])
    agent = Agent("sys", model, context_policy=CharBudget(max_chars=800))
    events = await run_events(agent, "latest question", store)
    full = [*original, Message("user", "latest question")]
    return Trimmed(original, full, model.requests[0].messages, events, store)


async def test_char_budget_trims_request_but_store_keeps_everything() -> None:
    run = await trimmed_run()
    original, full, sent, events, store = run.original, run.full, run.sent, run.events, run.store
    assert len(sent) < len(full)
    assert sent[0] == original[0]
    summary = sent[1]
    assert summary.role == "user" and summary.text.startswith("[Context summary:")
    assert "first question" in summary.text
    assert "search" in summary.text  # the dropped tool call is named
    kept = list(sent[2:])
    assert kept == full[len(full) - len(kept) :]
    assert kept[-1] == Message("user", "latest question")
    assert len(kept) >= 2
    assert_history_valid(sent)
    assert not any(isinstance(b, ToolResultBlock) for b in kept[0].content)

    (trimmed,) = of_type(events, ContextTrimmed)
    assert trimmed.remaining == len(sent)
    assert store.messages == [*full, Message("assistant", "short answer")]


async def test_context_trimmed_removed_counts_the_dropped_messages() -> None:
    """ENGINE BUG: ``removed`` is one short when a summary message is inserted."""
    run = await trimmed_run()
    full, sent, events = run.full, run.sent, run.events
    dropped = len(full) - (len(sent) - 1)  # everything not sent, the summary aside
    (trimmed,) = of_type(events, ContextTrimmed)
    assert trimmed.removed == dropped


async def test_no_context_trimmed_event_when_under_budget() -> None:
    model = ScriptedTransport([Reply("ok")])
    agent = Agent("sys", model, context_policy=CharBudget(max_chars=100_000))
    events = await run_events(agent, "go")
    assert not of_type(events, ContextTrimmed)
    assert model.requests[0].messages == (Message("user", "go"),)


def test_char_budget_under_budget_changes_nothing() -> None:
    messages = [Message("user", "hi"), Message("assistant", "hello")]
    assert CharBudget(max_chars=1000).apply(messages) is None


def test_char_budget_keeps_system_and_at_least_two() -> None:
    messages = [
        Message("system", "s1"),
        Message("system", "s2"),
        *[Message("user" if i % 2 == 0 else "assistant", f"m{i} " + "x" * 500) for i in range(6)],
    ]
    for summarize in (True, False):
        trim = CharBudget(max_chars=10, summarize=summarize).apply(messages)
        assert trim is not None
        assert trim.removed == 4
        out = trim.messages
        assert list(out[:2]) == messages[:2]
        rest = list(out[2:])
        if summarize:
            assert rest[0].text.startswith("[Context summary:")
            rest = rest[1:]
        assert rest == messages[-2:]


def test_char_budget_unsummarised_never_starts_with_assistant_or_orphan_result() -> None:
    messages = [
        Message("user", "q " + "x" * 500),
        Message("assistant", [ToolUseBlock("c1", "search", {"q": "y" * 500})]),
        Message("user", [ToolResultBlock("c1", "found")]),
        Message("assistant", "answer"),
        Message("user", "thanks"),
        Message("assistant", "welcome"),
    ]
    trim = CharBudget(max_chars=150, summarize=False).apply(messages)
    assert trim is not None
    out = list(trim.messages)
    assert trim.removed == len(messages) - len(out)
    assert out
    assert out[0].role == "user"
    assert not out[0].tool_results
    assert out == messages[len(messages) - len(out) :]
    assert_history_valid(out)

    summed = CharBudget(max_chars=150).apply(messages)
    assert summed is not None
    summarized = list(summed.messages)
    assert summarized[0].text.startswith("[Context summary:")
    assert "Called tools: search" in summarized[0].text
    assert not summarized[1].tool_results
    assert_history_valid(summarized)


def test_char_budget_rejects_non_positive_budget() -> None:
    with pytest.raises(ValueError):
        CharBudget(max_chars=0)
