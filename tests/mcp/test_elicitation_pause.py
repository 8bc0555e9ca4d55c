"""A server that asks the user for input with no ``on_elicit`` to answer pauses the run, as an
approval does: the question is stored in a SQLite store, and another process resumes the run
with the user's answer (``Agent.resume(answers=)``), the call going on from the server's request
state. Real processes throughout: the SDK's own ``MCPServer`` of the 2026-07-28 era
(``servers/asking.py``) over stdio, and each agent a process of its own (this file, run as a
script) on one SQLite file. A handshake-era question cannot pause (it lives inside the open
call): it is declined and the call ends with an error that names ``on_elicit``."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
ASKING = HERE / "servers" / "asking.py"
ELICITING = HERE / "servers" / "eliciting.py"
KEY = "a key this test's server processes share"

pytestmark = pytest.mark.timeout(120)


# -- the agent, as a process of its own ----------------------------------------------------------


def _agent(mode: str, db: str, answers: str | None) -> dict[str, Any]:
    """One agent process: ``run`` books Monday (pauses), ``resume`` answers, ``again`` asks the
    model something else; what it got, as JSON data."""
    from tether import Agent
    from tether.errors import ConflictError, RunPaused
    from tether.mcp import McpStdio
    from tether.stores import SQLiteStore
    from tether.stores.jsonforms import pending_to_dict
    from tether.testing import Call, Reply, ScriptedTransport

    book = Reply("Let me book.", tool_calls=[Call("book", {"day": "monday"}, id="b1")])
    replies = [book, Reply("Done.")] if mode == "run" else [Reply("Done.")]
    env = {k: os.environ[k] for k in ("ASKING_STATE_KEY", "ASKING_LOG") if k in os.environ}

    async def go() -> dict[str, Any]:
        server = McpStdio(sys.executable, [str(ASKING), "stdio"], env, name="asking")
        async with SQLiteStore(db) as store, server:
            model = ScriptedTransport(replies)
            agent = Agent("You book trips.", model, tools=[server])
            context = await store.open("trip")
            try:
                if mode == "resume":
                    answer = await agent.resume(context, answers=json.loads(answers or "{}"))
                else:
                    answer = await agent.run("book monday" if mode == "run" else "and?", context)
            except RunPaused as paused:
                return {"paused": [pending_to_dict(p) for p in paused.pending]}
            except (ConflictError, ValueError) as exc:
                return {"refused": type(exc).__name__, "why": str(exc)}
            read = [r.text for m in model.requests[-1].messages for r in m.tool_results]
            return {"answer": answer, "read": read}

    return asyncio.run(go())


if __name__ == "__main__":
    print(json.dumps(_agent(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)))
    sys.exit(0)


# -- the tests -----------------------------------------------------------------------------------


def agent_env(tmp_path: Path, *, key: str | None = KEY) -> dict[str, str]:
    env = dict(os.environ, ASKING_LOG=str(tmp_path / "booked"))
    if key is not None:
        env["ASKING_STATE_KEY"] = key
    return env


def agent(tmp_path: Path, mode: str, answers: Any = None, **options: Any) -> subprocess.Popen[str]:
    args = [sys.executable, __file__, mode, str(tmp_path / "trip.db")]
    if answers is not None:
        args.append(json.dumps(answers))
    return subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=agent_env(tmp_path, **options),
    )


def outcome(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def booked(tmp_path: Path) -> list[str]:
    path = tmp_path / "booked"
    return path.read_text().splitlines() if path.exists() else []


def paused(tmp_path: Path, **options: Any) -> dict[str, Any]:
    got = outcome(agent(tmp_path, "run", **options))
    (call,) = got["paused"]
    return call


def stored(tmp_path: Path) -> list[Any]:
    from tether.stores import SQLiteStore

    async def read() -> list[Any]:
        async with SQLiteStore(tmp_path / "trip.db") as store:
            return list(await (await store.open("trip")).get_history())

    return asyncio.run(read())


def answer_for(call: dict[str, Any], content: Any) -> dict[str, Any]:
    (ask,) = call["asks"]
    return {call["id"]: {ask["key"]: content}}


def test_a_question_pauses_the_run_and_another_process_resumes_it(tmp_path: Path) -> None:
    call = paused(tmp_path)
    (ask,) = call["asks"]
    assert (call["id"], call["name"], call["input"]) == ("b1", "book", {"day": "monday"})
    assert ask["message"] == "Seats for monday?" and ask["tool"] == "book"
    assert set(ask["schema"]["properties"]) == {"seat", "count", "meal"}
    assert booked(tmp_path) == []
    got = outcome(agent(tmp_path, "resume", answer_for(call, {"seat": "window", "count": 2})))
    assert got["answer"] == "Done."
    assert "booked monday: 2 window meal=True" in got["read"]  # the server's real result
    assert booked(tmp_path) == ["booked monday: 2 window meal=True"]


def test_a_declined_question_reaches_the_server_and_the_model_reads_its_answer(
    tmp_path: Path,
) -> None:
    call = paused(tmp_path)
    got = outcome(agent(tmp_path, "resume", answer_for(call, None)))
    assert got["answer"] == "Done."
    (result,) = got["read"]
    assert "decline" in result and booked(tmp_path) == []


def test_an_answer_that_does_not_fit_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    call = paused(tmp_path)
    before = stored(tmp_path)
    got = outcome(agent(tmp_path, "resume", answer_for(call, {"seat": "middle", "count": 1})))
    assert got["refused"] == "ValueError" and "'middle' is not one of" in got["why"]
    assert stored(tmp_path) == before
    got = outcome(agent(tmp_path, "resume", answer_for(call, {"seat": "aisle", "count": 1})))
    assert got["answer"] == "Done." and booked(tmp_path) == ["booked monday: 1 aisle meal=True"]


def test_two_resumes_at_once_run_the_call_once(tmp_path: Path) -> None:
    call = paused(tmp_path)
    answer = answer_for(call, {"seat": "window", "count": 1})
    both = [agent(tmp_path, "resume", answer) for _ in range(2)]
    outcomes = [outcome(p) for p in both]
    assert sorted("answer" in o for o in outcomes) == [False, True], outcomes
    (loser,) = [o for o in outcomes if "refused" in o]
    assert loser["refused"] in {"ConflictError", "ValueError"}  # raced, or came after
    assert booked(tmp_path) == ["booked monday: 1 window meal=True"]


def test_a_server_that_no_longer_takes_the_state_fails_the_call_clearly(tmp_path: Path) -> None:
    call = paused(tmp_path, key=None)  # each server process seals with a key of its own
    got = outcome(
        agent(tmp_path, "resume", answer_for(call, {"seat": "window", "count": 1}), key=None)
    )
    assert got["answer"] == "Done."
    (result,) = got["read"]
    assert "Invalid or expired requestState" in result and "no longer takes that state" in result
    assert booked(tmp_path) == []


def valid(history: list[Any]) -> None:
    """Every call of the history has a result, or is pending (the run paused on it)."""
    from tether.loop.approval import pending

    waiting = {p.id for p in pending(history)}
    asked = {b.id for m in history for b in m.tool_uses}
    answered = {r.tool_use_id for m in history for r in m.tool_results}
    assert asked - answered <= waiting, (asked, answered, waiting)


def until_done(folder: Path, mode: str) -> float:
    """Seconds from starting an agent process until it stored its pause (``run``) or the server
    booked (``resume``): the kills land around then."""
    from tether.loop.approval import pending

    folder.mkdir()
    answer = None
    if mode == "resume":
        answer = answer_for(paused(folder), {"seat": "aisle", "count": 1})
    started = time.monotonic()
    process = agent(folder, mode, answer)
    while not (booked(folder) if mode == "resume" else pending(stored(folder))):
        assert process.poll() is None or time.monotonic() - started < 60
        time.sleep(0.02)
    reached = time.monotonic() - started
    outcome(process)
    return reached


@pytest.mark.parametrize("mode", ["run", "resume"])
def test_a_process_killed_at_any_point_loses_nothing(tmp_path: Path, mode: str) -> None:
    from tether.loop.approval import pending

    rng = random.Random(39)
    reached = until_done(tmp_path / "timing", mode)  # how long until the point that matters
    seen: set[tuple[bool, int]] = set()
    for attempt in range(12):  # five at least; more until two kills landed at different points
        if attempt >= 5 and len(seen) > 1:
            break
        folder = tmp_path / str(attempt)
        folder.mkdir()
        answer = None
        if mode == "resume":
            answer = answer_for(paused(folder), {"seat": "aisle", "count": 1})
        process = agent(folder, mode, answer)
        try:
            # a random point in each fifth of 0.3 to 1.5 times that: before it, around, after
            # (a loaded machine moves the point: the later attempts go on round the same fifths)
            process.wait(timeout=reached * (0.3 + 1.2 * (attempt % 5 + rng.random()) / 5))
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
        history = stored(folder)  # a call the kill left open, if any, is answered next
        waiting = pending(history)
        seen.add((bool(waiting), len(history)))
        if waiting:  # paused (or never got past the pause): another process answers
            (call,) = [{"id": p.id, "asks": [{"key": a.key} for a in p.asks]} for p in waiting]
            got = outcome(agent(folder, "resume", answer_for(call, {"seat": "aisle", "count": 1})))
            assert got["answer"] == "Done." and "booked monday: 1 aisle meal=True" in got["read"]
        else:  # killed before the pause, or while the answered call ran: answered interrupted
            got = outcome(agent(folder, "again"))
            assert got["answer"] == "Done.", got
        valid(stored(folder))
        assert len(booked(folder)) <= 1
    assert len(seen) > 1, seen  # the kills landed at different points


# -- the handshake era ---------------------------------------------------------------------------


async def test_a_handshake_era_question_is_declined_and_the_call_names_on_elicit(
    tmp_path: Path,
) -> None:
    from tether.mcp import McpStdio

    async with McpStdio(
        sys.executable, [str(ELICITING), str(tmp_path)], name="eliciting"
    ) as server:
        result = await server.call("ask", {})
        again = await server.call("ask", {})  # the server stays usable
    assert result.is_error and "give the server on_elicit=" in result.text
    assert again.is_error and "on_elicit" in again.text
    assert json.loads((tmp_path / "capabilities").read_text())["elicitation"] is not None
    answers = [json.loads(line) for line in (tmp_path / "answers").read_text().splitlines()]
    assert answers[0] == {"action": "decline"}


async def test_without_a_run_a_direct_call_raises_the_pause_with_its_questions(
    tmp_path: Path,
) -> None:
    from tether.mcp import McpStdio
    from tether.tools.needs_input import NeedsInput

    async with McpStdio(sys.executable, [str(ASKING), "stdio"], name="asking") as server:
        with pytest.raises(NeedsInput, match=r"give the server on_elicit=") as caught:
            await server.call("book", {"day": "monday"})
    (ask,) = caught.value.asks
    assert (ask.message, ask.tool, dict(ask.arguments or {})) == (
        "Seats for monday?",
        "book",
        {"day": "monday"},
    )
    assert caught.value.state["keys"] == [ask.key] and caught.value.state["request_state"]


# -- padwan-ai's door ----------------------------------------------------------------------------


async def test_a_session_pauses_and_a_session_on_the_same_store_answers(tmp_path: Path) -> None:
    from tether import AgentSession
    from tether.errors import RunPaused
    from tether.mcp import McpStdio
    from tether.stores import SQLiteStore
    from tether.testing import Call, Reply, ScriptedTransport

    env = {"ASKING_STATE_KEY": KEY}
    book = Reply("Let me.", tool_calls=[Call("book", {"day": "friday"}, id="b1")])
    async with SQLiteStore(tmp_path / "chat.db") as store:
        server = McpStdio(sys.executable, [str(ASKING), "stdio"], env, name="asking")
        first = AgentSession(
            ScriptedTransport([book]), mcp_tools=[server], store=store, session_id="s"
        )
        async with first:
            with pytest.raises(RunPaused) as caught:
                await first.send("book friday")
        (call,) = caught.value.pending
        (ask,) = call.asks
        assert ask.message == "Seats for friday?" and ask.server.endswith("asking.py stdio")
        model = ScriptedTransport([Reply("Booked.")])
        server = McpStdio(sys.executable, [str(ASKING), "stdio"], env, name="asking")
        second = AgentSession(model, mcp_tools=[server], store=store, session_id="s")
        async with second:
            with pytest.raises(ValueError, match="leave out"):
                await second.resume(answers={"b1": {}})
            answer = await second.resume(answers={"b1": {ask.key: {"seat": "aisle", "count": 4}}})
    assert answer == "Booked."
    read = [r.text for m in model.requests[0].messages for r in m.tool_results]
    assert read == ["booked friday: 4 aisle meal=True"]


# -- a server that misbehaves --------------------------------------------------------------------


async def test_questions_past_the_caps_end_the_call_and_a_server_that_asks_again_pauses_again() -> (
    None
):
    from tether import Agent
    from tether.context import MemoryContextStore
    from tether.errors import RunPaused
    from tether.mcp import McpStdio
    from tether.testing import Call, Reply, ScriptedTransport

    calls = [
        Call("crowd", {}, id="c1"),
        Call("big_schema", {}, id="s1"),
        Call("big_message", {}, id="m1"),
        Call("endless", {}, id="e1"),
    ]
    model = ScriptedTransport([Reply(tool_calls=calls), Reply("Done.")])
    async with McpStdio(sys.executable, [str(ASKING), "stdio"], name="asking") as server:
        agent = Agent("You ask.", model, tools=[server])
        context = MemoryContextStore()
        with pytest.raises(RunPaused) as caught:
            await agent.run("go", context)
        results = {r.tool_use_id: r for m in await context.get_history() for r in m.tool_results}
        assert (
            results["c1"].is_error
            and "asked 40 questions at once (at most 10)" in results["c1"].text
        )
        assert results["s1"].is_error and "schema of" in results["s1"].text
        assert results["m1"].is_error and "200,000 characters" in results["m1"].text
        (endless,) = caught.value.pending
        for _ in range(3):  # asked again each time: paused again each time, nothing lost
            (ask,) = endless.asks
            with pytest.raises(RunPaused) as again:
                await agent.resume(context, answers={"e1": {ask.key: {"name": "Ada"}}})
            (endless,) = again.value.pending
            assert endless.id == "e1" and endless.asks[0].message == "Your name, again?"
        with pytest.raises(RunPaused):  # declined: this server asks again all the same
            await agent.resume(context, answers={"e1": {ask.key: None}})
        assert model.requests[1:] == []  # the model never saw a result it could not have
