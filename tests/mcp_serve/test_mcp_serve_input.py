"""A served tool that asks the user (it raises ``NeedsInput``) asks the MCP client through
elicitation, in both eras: over the handshake (``mode="legacy"``) with ``elicitation/create``
mid-call, on 2026-07-28 with ``input_required`` and the client's retry; then the call runs again
with the answers (``tether.mcp.resumed``), as often as the tool asks. A decline
reaches the tool as None; an answer that does not fit the question never reaches it; a client
that cannot elicit gets an ``isError`` refusal. In ``ask`` the paused run resumes with the
answers. All over real ``tether mcp-serve`` processes (stdio and HTTP), with the SDK's
``Client``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp_serve_helpers import AGENTS, WAY_IDS, WAYS, client, reaching, text_of

SPEC = f"{AGENTS}:asker"


@pytest.fixture(params=WAYS, ids=WAY_IDS)
def way(request: pytest.FixtureRequest, markers: Path) -> Iterator[tuple[Any, str]]:
    """Where a client finds the server (stdio parameters or a URL), and the client's mode."""
    transport, mode = request.param
    with reaching(transport, markers, SPEC) as where:
        yield where, mode


class Person:
    """The client's user: answers each question from ``answers`` (by the schema's first
    field), declines when it has none, and remembers what was asked."""

    def __init__(self, **answers: dict[str, Any]) -> None:
        self.answers = answers
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params)
        first = next(iter(params.requested_schema["properties"]))
        answer = self.answers.get(first)
        if answer is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=answer)


ADA = {"name": "Ada", "email": "ada@example.com"}


async def test_a_tool_asks_the_client_and_runs_again_with_the_answers(
    way: tuple[Any, str], markers: Path
) -> None:
    person = Person(name=ADA, sure={"sure": True})
    async with client(way, person) as session:
        result = await session.call_tool("sign_up", {"plan": "pro"})
    assert (text_of(result), result.is_error) == ("signed up Ada <ada@example.com> for pro", False)
    assert (markers / "signed").exists()
    who, sure = person.asked  # two rounds: the second asked with what the first answered
    assert who.message == "Who is signing up for pro?"
    assert set(who.requested_schema["properties"]) == {"name", "email"}
    assert who.requested_schema["required"] == ["name", "email"]
    assert sure.message == "Sign Ada up for pro?"


async def test_a_decline_reaches_the_tool_as_none(way: tuple[Any, str], markers: Path) -> None:
    async with client(way, Person()) as session:
        result = await session.call_tool("sign_up", {"plan": "pro"})
        after = await session.call_tool("add", {"a": 1, "b": 2})
    assert (text_of(result), result.is_error) == (
        "nobody signed up: the user declined to say who they are",
        False,
    )
    assert text_of(after) == "3"


async def test_an_answer_that_does_not_fit_never_reaches_the_tool(
    way: tuple[Any, str], markers: Path
) -> None:
    person = Person(name={"name": "Ada", "email": "ada@example.com", "age": 7})
    async with client(way, person) as session:
        result = await session.call_tool("sign_up", {"plan": "pro"})
    assert result.is_error is True
    assert "sign_up" in text_of(result) and "age" in text_of(result)
    assert not (markers / "signed").exists()


async def test_a_client_that_cannot_elicit_is_refused(way: tuple[Any, str], markers: Path) -> None:
    async with client(way, None) as session:
        direct = await session.call_tool("sign_up", {"plan": "pro"})
        asked = await session.call_tool("ask", {"message": "sign up"})
    for result in (direct, asked):
        assert result.is_error is True
        assert "sign_up" in text_of(result) and "cannot ask" in text_of(result)
    assert "who they are" in text_of(direct)  # the tool's own reason
    assert not (markers / "signed").exists()


async def test_ask_resumes_the_paused_run_with_the_answers(
    way: tuple[Any, str], markers: Path
) -> None:
    person = Person(name=ADA, sure={"sure": True})
    async with client(way, person) as session:
        result = await session.call_tool("ask", {"message": "sign up"})
    assert (text_of(result), result.is_error) == (
        "The tool said: signed up Ada <ada@example.com> for pro",
        False,
    )
    assert [asked.message for asked in person.asked] == [
        "Who is signing up for pro?",
        "Sign Ada up for pro?",
    ]
