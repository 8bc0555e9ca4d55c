"""Reading a session back, one way for every store: ``await context.get_history()``, on the
context a run used or on the session opened again by id (in a new store, as another process
would). ``MemoryContextStore.messages`` is the in-memory store's convenience only; a stored
context's ``.messages`` says to await ``get_history()`` instead of a bare ``AttributeError``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from backends import BACKENDS, make

from tether import Agent, MemoryContextStore, Message, ToolResultBlock, ToolUseBlock, tool
from tether.testing import Call, Reply, ScriptedTransport


@tool
def population(city: str) -> float:
    """The population of a city, in millions."""
    return {"Tokyo": 14.0}.get(city, 0.0)


def agent() -> Agent:
    model = ScriptedTransport(
        [
            Reply("Let me look.", tool_calls=[Call("population", {"city": "Tokyo"}, id="c1")]),
            Reply("Tokyo has 14.0 million people."),
        ]
    )
    return Agent("You know cities.", model, tools=[population])


def assert_the_run(history: list[Message]) -> None:
    """The four messages of one run with one tool call, in order."""
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[0].text == "How many people live in Tokyo?"
    [call] = [b for b in history[1].content if isinstance(b, ToolUseBlock)]
    assert (call.name, call.input) == ("population", {"city": "Tokyo"})
    [result] = history[2].content
    assert isinstance(result, ToolResultBlock) and result.content == "14.0"
    assert history[3].text == "Tokyo has 14.0 million people."


@pytest.fixture(params=BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_stored_session_reads_back_with_get_history(kind: str, tmp_path: Path) -> None:
    async with make(kind, tmp_path) as store:
        context = await store.open("trip-7")
        await agent().run("How many people live in Tokyo?", context)
        assert_the_run(await context.get_history())
    async with make(kind, tmp_path) as again:  # later, in any process
        assert_the_run(await (await again.open("trip-7")).get_history())


async def test_the_memory_store_reads_back_the_same_way() -> None:
    context = MemoryContextStore()
    await agent().run("How many people live in Tokyo?", context)
    assert_the_run(await context.get_history())
    assert context.messages == await context.get_history()  # its in-memory convenience


async def test_a_stored_context_has_no_messages_and_says_what_to_use(
    kind: str, tmp_path: Path
) -> None:
    async with make(kind, tmp_path) as store:
        context: Any = await store.open("trip-7")
        with pytest.raises(AttributeError, match=r"await context\.get_history\(\)"):
            _ = context.messages
        assert not hasattr(context, "messages")  # no sync read pretends to be one
