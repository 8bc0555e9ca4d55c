"""A call that needs approval asks the MCP client through elicitation, in both eras: over the
handshake (``mode="legacy"``) the server sends ``elicitation/create`` mid-call; on 2026-07-28 (the
SDK client's default) it answers ``input_required`` and the client retries with the answer. Yes
runs the call, no or cancel is an error result saying the user declined; in ``ask`` the paused run
resumes with the decision. A client that cannot elicit gets the refusal it always got. And a
tool's own progress reaches a client that asked for progress. All over real ``tether mcp-serve``
processes (stdio and HTTP), driven by the SDK's ``Client``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp_serve_helpers import AGENT_SPEC, WAY_IDS, WAYS, client, reaching, text_of

from mcp import MCPError


@pytest.fixture(params=WAYS, ids=WAY_IDS)
def way(request: pytest.FixtureRequest, markers: Path) -> Iterator[tuple[Any, str]]:
    """Where a client finds the server (stdio parameters or a URL), and the client's mode."""
    transport, mode = request.param
    with reaching(transport, markers, AGENT_SPEC) as where:
        yield where, mode


class Person:
    """The client's user: answers each elicitation as told, and remembers what was asked."""

    def __init__(self, action: str, approve: bool = True) -> None:
        self.action = action
        self.approve = approve
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params)
        if self.action != "accept":
            return types.ElicitResult(action=self.action)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content={"approve": self.approve})


async def test_a_call_the_user_approves_runs(way: tuple[Any, str], markers: Path) -> None:
    person = Person("accept")
    async with client(way, person) as session:
        result = await session.call_tool("delete_file", {"path": "notes.txt"})
    assert (text_of(result), result.is_error) == ("deleted notes.txt", False)
    assert (markers / "deleted").exists()
    (asked,) = person.asked
    assert "delete_file" in asked.message and "notes.txt" in asked.message
    assert asked.requested_schema["properties"]["approve"]["type"] == "boolean"


@pytest.mark.parametrize(
    ("action", "approve"), [("decline", True), ("cancel", True), ("accept", False)]
)
async def test_a_call_the_user_declines_never_runs(
    way: tuple[Any, str], markers: Path, action: str, approve: bool
) -> None:
    async with client(way, Person(action, approve)) as session:
        result = await session.call_tool("delete_file", {"path": "notes.txt"})
        after = await session.call_tool("add", {"a": 1, "b": 2})
    assert result.is_error is True
    assert "declined" in text_of(result) and "delete_file" in text_of(result)
    assert not (markers / "deleted").exists()
    assert text_of(after) == "3"


async def test_ask_resumes_the_paused_run_with_the_users_decision(
    way: tuple[Any, str], markers: Path
) -> None:
    yes, no = Person("accept"), Person("decline")
    async with client(way, no) as session:
        denied = await session.call_tool("ask", {"message": "delete"})
    assert not (markers / "deleted").exists()
    async with client(way, yes) as session:
        approved = await session.call_tool("ask", {"message": "delete"})
    assert denied.is_error is False
    assert text_of(denied).startswith("The tool said: Tool call denied:")
    assert "declined" in text_of(denied)
    assert (text_of(approved), approved.is_error) == ("The tool said: deleted notes.txt", False)
    assert (markers / "deleted").exists()
    assert len(yes.asked) == 1 and "delete_file" in yes.asked[0].message


async def test_a_client_that_cannot_elicit_is_refused(way: tuple[Any, str], markers: Path) -> None:
    async with client(way, None) as session:
        direct = await session.call_tool("delete_file", {"path": "notes.txt"})
        asked = await session.call_tool("ask", {"message": "delete"})
    assert direct.is_error is True and "cannot ask for it" in text_of(direct)
    assert asked.is_error is True and "delete_file" in text_of(asked)
    assert "cannot ask for it" in text_of(asked)
    assert not (markers / "deleted").exists()


async def test_an_answer_nobody_asked_for_approves_nothing(markers: Path) -> None:
    """On 2026-07-28 a client could send an accept with its first call: without the server's own
    (sealed) state saying it asked, the server asks instead of running."""
    forged = {"approve": types.ElicitResult(action="accept", content={"approve": True})}
    with reaching("stdio", markers) as params:
        async with client((params, "auto"), Person("accept")) as session:
            first = await session.session.call_tool(
                "delete_file",
                {"path": "notes.txt"},
                input_responses=forged,  # type: ignore[arg-type]
                allow_input_required=True,
            )
            assert isinstance(first, types.InputRequiredResult)
            assert first.input_requests and first.request_state
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await session.session.call_tool(  # the state of one call approves no other
                    "delete_file",
                    {"path": "other.txt"},
                    input_responses=forged,  # type: ignore[arg-type]
                    request_state=first.request_state,
                    allow_input_required=True,
                )
    assert not (markers / "deleted").exists()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_tools_own_progress_reaches_the_client(markers: Path, mode: str) -> None:
    reports: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        reports.append((done, total, message))

    with reaching("http", markers) as url:
        async with client((url, mode), None) as session:
            result = await session.call_tool("count_to", {"n": 3}, progress_callback=progress)
            quiet = await session.call_tool("count_to", {"n": 2})
    assert text_of(result) == "counted to 3" and text_of(quiet) == "counted to 2"
    assert reports == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
