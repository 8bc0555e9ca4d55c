"""The chat asks the person about calls that wait for approval (``tether chat --approve TOOL``)
and goes on with the answer; a resumed session's waiting calls are asked about first; the
arguments shown are the ones the run stored."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from tether import PendingCall, tool
from tether.cli.app import build_agent
from tether.cli.args import build_parser
from tether.cli.chat import ChatSession
from tether.cli.render import RichRenderer
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport

ran: list[str] = []


@tool
def delete(path: str) -> str:
    """Delete a file."""
    ran.append(path)
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


def console() -> Console:
    return Console(file=io.StringIO(), force_terminal=False, width=100)


def asking(answers: dict[str, str | None]) -> tuple[list[PendingCall], object]:
    asked: list[PendingCall] = []

    def decide(call: PendingCall) -> str | None:
        asked.append(call)
        return answers[call.id]

    return asked, decide


async def test_an_approved_call_runs_and_the_turn_goes_on() -> None:
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("delete", {"path": "old.txt"}, id="d1")]), Reply("Deleted.")]
    )
    agent = build_agent(model, [delete], system="s", approve=["delete"])
    asked, decide = asking({"d1": None})
    session = ChatSession(agent, RichRenderer(console()), decide=decide)  # type: ignore[arg-type]
    outcome = await session.turn("Tidy up.")
    assert outcome.text == "Deleted." and outcome.error is None and not outcome.pending
    assert asked == [PendingCall("d1", "delete", {"path": "old.txt"})]
    assert ran == ["old.txt"]


async def test_a_refusal_reaches_the_model_and_the_call_never_runs() -> None:
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("delete", {"path": "x"}, id="d1")]), Reply("Kept it.")]
    )
    agent = build_agent(model, [delete], system="s", approve=["delete"])
    _, decide = asking({"d1": "keep my files"})
    session = ChatSession(agent, RichRenderer(console()), decide=decide)  # type: ignore[arg-type]
    assert (await session.turn("Tidy up.")).text == "Kept it."
    assert ran == []
    result = model.requests[1].last_message.tool_results[0]
    assert result.is_error and "keep my files" in str(result.content)


async def test_a_resumed_session_asks_about_its_waiting_calls_first(tmp_path: object) -> None:
    from pathlib import Path

    db = Path(str(tmp_path)) / "chat.db"
    held = Reply(tool_calls=[Call("delete", {"path": "a"}, id="d1")])
    async with SQLiteStore(db) as store:
        first = build_agent(ScriptedTransport([held]), [delete], system="s", approve=["delete"])
        paused = await ChatSession(first, RichRenderer(console()), await store.open("c")).turn(
            "Tidy."
        )
        assert paused.pending and paused.error is None  # no person to ask: it waits
    async with SQLiteStore(db) as store:
        model = ScriptedTransport([Reply("Done.")])
        agent = build_agent(model, [delete], system="s", approve=["delete"])
        asked, decide = asking({"d1": None})
        session = ChatSession(
            agent,
            RichRenderer(console()),
            await store.open("c"),
            decide=decide,  # type: ignore[arg-type]
        )
        outcome = await session.settle()
        assert outcome is not None and outcome.text == "Done."
        assert [c.id for c in asked] == ["d1"] and ran == ["a"]
        assert await session.settle() is None  # nothing waits any more


def test_chat_takes_approve_options() -> None:
    opts = build_parser().parse_args(["chat", "--approve", "delete", "--approve", "pay"])
    assert opts.approve == ["delete", "pay"]
