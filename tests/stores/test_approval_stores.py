"""Approval that outlives the process, on every store backend: a paused run's pending calls are
read back by a new store (as another process would), never turned into "interrupted" by a later
open, decided once by a resume; of two resumes at once exactly one runs an approved call; and
after children pausing runs are SIGKILLed at random points, resumes in other processes (two at
once) run each approved call exactly once (effects counted in a file).

Run as a script, this file is the child those tests start:
    python test_approval_stores.py pause KIND PLACE TAG     # pause runs until killed
    python test_approval_stores.py resume KIND PLACE EFFECTS  # resume every paused session
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from backends import BACKENDS, CHILD_ENV, make

from rendezvous import Together
from tether import Agent, Message, Tool
from tether.errors import ConflictError, RunPaused
from tether.loop.approval import pending
from tether.testing import Call, Reply, ScriptedTransport

TRIALS = int(os.environ.get("TETHER_APPROVAL_TRIALS", "30"))
EFFECTS_ENV = "TETHER_APPROVAL_EFFECTS"  # where a child's approved calls write their effects


@pytest.fixture(params=BACKENDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def tools(effects: Path | None) -> list[Tool]:
    """``effect`` (waits for a person) appends its key to ``effects``; ``work`` does not wait."""

    def effect(key: str) -> str:
        assert effects is not None
        with effects.open("a") as out:  # one short write in append mode: whole lines
            out.write(f"{key}\n")
        return f"did {key}"

    async def work(key: str) -> str:
        await asyncio.sleep(0.002)
        return f"worked {key}"

    return [Tool("effect", effect), Tool("work", work)]


def pausing(key: str, effects: Path | None = None) -> Agent:
    """An agent whose one reply asks for ``effect`` (held) and ``work`` (runs)."""
    reply = Reply(
        tool_calls=[Call("effect", {"key": key}, id=f"e-{key}"), Call("work", {"key": key})]
    )
    model = ScriptedTransport([reply])
    return Agent("s", model, tools=tools(effects), approval={"effect"})


def answering(effects: Path | None = None) -> tuple[Agent, ScriptedTransport]:
    """An agent whose model answers once, after the decisions."""
    model = ScriptedTransport([Reply("done")])
    return Agent("s", model, tools=tools(effects), approval={"effect"}), model


def every_call_answered_once(history: list[Message]) -> None:
    asked = [b.id for m in history for b in m.tool_uses]
    answered = [r.tool_use_id for m in history for r in m.tool_results]
    assert sorted(asked) == sorted(answered), (asked, answered)


def valid_for_a_model(messages: tuple[Message, ...]) -> None:
    for i, message in enumerate(messages):
        assert message.content, i
        asked = {b.id for b in message.tool_uses}
        if asked:
            answered = set()
            for later in messages[i + 1 :]:
                if not later.tool_results:
                    break
                answered.update(r.tool_use_id for r in later.tool_results)
            assert asked == answered, (i, asked, answered)


# -- one process ----------------------------------------------------------------------------------


async def test_a_pause_is_read_back_by_a_new_store_and_resumed_once(
    kind: str, tmp_path: Path
) -> None:
    effects = tmp_path / "effects"
    async with make(kind, tmp_path) as store:
        with pytest.raises(RunPaused) as info:
            await pausing("k").run("go", await store.open("chat"))
        paused = await (await store.open("chat")).get_history()
    assert [p.id for p in info.value.pending] == ["e-k"]
    async with make(kind, tmp_path) as store:  # as another process
        context = await store.open("chat")
        assert await context.get_history() == paused  # the records come back as they were
        assert pending(paused) == info.value.pending
        plain = ScriptedTransport([Reply("never")])
        with pytest.raises(RunPaused):
            await Agent("s", plain).run("anything?", context)
        assert plain.call_count == 0
        assert await context.get_history() == paused  # not interrupted, nothing added
        agent, model = answering(effects)
        assert await agent.resume(context, approve=["e-k"]) == "done"
        history = await context.get_history()
    async with make(kind, tmp_path) as store:
        again, _ = answering(effects)
        with pytest.raises(ValueError, match="e-k"):
            await again.resume(await store.open("chat"), approve=["e-k"])
    assert effects.read_text() == "k\n"
    every_call_answered_once(history)
    valid_for_a_model(model.requests[0].messages)


@pytest.mark.parametrize("decision", ["approve", "deny"])
async def test_of_two_resumes_at_once_exactly_one_decides(
    kind: str, decision: str, tmp_path: Path
) -> None:
    effects = tmp_path / "effects"
    effects.touch()
    decided: dict[str, Any] = (
        {"approve": ["e-k"]} if decision == "approve" else {"deny": {"e-k": "no"}}
    )
    async with make(kind, tmp_path) as store:
        with pytest.raises(RunPaused):
            await pausing("k").run("go", await store.open("chat"))
    async with make(kind, tmp_path) as one, make(kind, tmp_path) as two:  # two writers
        ready = asyncio.Barrier(2)
        contexts = [Together(await s.open("chat"), ready) for s in (one, two)]
        outcomes = await asyncio.gather(
            *(answering(effects)[0].resume(c, **decided) for c in contexts),  # type: ignore[arg-type]
            return_exceptions=True,
        )
        assert sorted(type(o).__name__ for o in outcomes) == ["ConflictError", "str"], outcomes
        history = await (await one.open("chat")).get_history()
    assert effects.read_text() == ("k\n" if decision == "approve" else "")
    every_call_answered_once(history)
    assert pending(history) == ()


# -- processes killed between pause and resume ----------------------------------------------------


def pause_and_kill(kind: str, place: Path, tag: str, rng: random.Random) -> None:
    """Start a child pausing runs, SIGKILL it after a random time."""
    child = subprocess.Popen(
        [sys.executable, __file__, "pause", kind, str(place), tag],
        stdout=subprocess.PIPE,
        text=True,
        env=CHILD_ENV,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "READY"
    deadline = time.monotonic() + rng.uniform(0.0, 0.25)
    while time.monotonic() < deadline:
        select.select([child.stdout], [], [], max(0.0, deadline - time.monotonic()))
        time.sleep(0.001)
    child.send_signal(signal.SIGKILL)
    child.communicate()


async def _pending_by_session(kind: str, place: Path) -> dict[str, list[str]]:
    async with make(kind, place) as store:
        found = {}
        for info in await store.sessions():
            history = await (await store.open(info.session_id)).get_history()
            found[info.session_id] = [p.id for p in pending(history)]
        return found


@pytest.mark.timeout(900)
def test_after_kills_resumes_elsewhere_run_each_approved_call_once(
    kind: str, tmp_path: Path
) -> None:
    rng = random.Random(20261124)
    for trial in range(TRIALS):
        pause_and_kill(kind, tmp_path, f"t{trial}", rng)
    waiting = asyncio.run(_pending_by_session(kind, tmp_path))
    approved = {f"e-{session}" for session, ids in waiting.items() if ids}
    assert all(ids in ([], [f"e-{session}"]) for session, ids in waiting.items())
    assert approved, "no child paused a run before it was killed"
    effects = tmp_path / "effects"
    resumers = [
        subprocess.Popen(
            [sys.executable, __file__, "resume", kind, str(tmp_path), str(effects)],
            stdout=subprocess.PIPE,
            text=True,
            env=CHILD_ENV,
        )
        for _ in range(2)
    ]
    reports = [r.communicate(timeout=600)[0] for r in resumers]
    assert [r.returncode for r in resumers] == [0, 0], reports
    done = Counter(f"e-{key}" for key in effects.read_text().split())
    assert set(done) == approved and set(done.values()) == {1}, done  # each exactly once
    assert sum(int(r.split()[1]) for r in reports) == len(approved), reports
    asyncio.run(_all_answered(kind, tmp_path))


async def _all_answered(kind: str, place: Path) -> None:
    async with make(kind, place) as store:
        for info in await store.sessions():
            history = await (await store.open(info.session_id)).get_history()
            assert pending(history) == ()
            if any(m.tool_uses for m in history):
                every_call_answered_once(history)


# -- the child ------------------------------------------------------------------------------------


async def _pause_forever(kind: str, place: str, tag: str) -> None:
    async with make(kind, place) as store:
        print("READY", flush=True)
        for n in range(1_000_000):
            key = f"{tag}-{n}"
            with contextlib.suppress(RunPaused):
                await pausing(key).run("go", await store.open(key))


async def _resume_all(kind: str, place: str, effects: str) -> None:
    resumed = lost = 0
    async with make(kind, place) as store:
        infos = await store.sessions()
        random.Random(os.getpid()).shuffle(infos)  # the two resumers meet in the middle
        for info in infos:
            context = await store.open(info.session_id)
            ids = [p.id for p in pending(await context.get_history())]
            if not ids:
                continue
            agent, _ = answering(Path(effects))
            try:
                assert await agent.resume(context, approve=ids) == "done"
                resumed += 1
            except (ConflictError, ValueError):  # the other resumer decided it first
                lost += 1
    print(f"RESUMED {resumed} LOST {lost}", flush=True)


if __name__ == "__main__":
    mode, kind_, place_, last = sys.argv[1:5]
    if mode == "pause":
        asyncio.run(_pause_forever(kind_, place_, last))
    else:
        asyncio.run(_resume_all(kind_, place_, last))
