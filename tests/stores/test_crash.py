"""Crash consistency of every store: a child process running agent loops is SIGKILLed at random
points, many times; every append that returned is still there, and the next run on each session
sends the model a history in which every tool call has a result."""

from __future__ import annotations

import asyncio
import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from backends import BACKENDS, CHILD_ENV, make

from tether import Agent, Message
from tether.testing import Reply, ScriptedTransport

CHILD = Path(__file__).with_name("crash_child.py")
TRIALS = int(os.environ.get("TETHER_CRASH_TRIALS", "120"))  # per store; 1,000 in the full suite

pytestmark = pytest.mark.timeout(900)


def run_and_kill(kind: str, place: Path, rng: random.Random) -> list[tuple[str, int]]:
    """Start the child, SIGKILL it after a random time; the appends it acknowledged."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), kind, str(place)],
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
        env=CHILD_ENV,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "READY"
    deadline = time.monotonic() + rng.uniform(0.0, 0.25)
    lines: list[str] = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([child.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if ready:
            lines.append(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    rest, _ = child.communicate()
    lines.extend(rest.splitlines())
    acks = []
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "ACK":
            acks.append((parts[1], int(parts[2])))
    return acks


def check_history(messages: list[Message]) -> None:
    """Every tool call has exactly one result, in the message right after it."""
    for i, message in enumerate(messages):
        uses = {b.id for b in message.tool_uses}
        if uses:
            answered = {r.tool_use_id for r in messages[i + 1].tool_results}
            assert uses <= answered, (i, uses, answered)


@pytest.mark.parametrize("kind", BACKENDS)
def test_sigkill_at_random_points_loses_no_acknowledged_message(kind: str, tmp_path: Path) -> None:
    rng = random.Random(20261123)
    acknowledged: dict[str, int] = {}
    for _ in range(TRIALS):
        for session, position in run_and_kill(kind, tmp_path, rng):
            acknowledged[session] = max(acknowledged.get(session, -1), position)
        stored = asyncio.run(_lengths(make(kind, tmp_path)))
        for session, last in acknowledged.items():
            assert stored.get(session, 0) > last, (session, last, stored.get(session))
    assert acknowledged, "the child never acknowledged an append"
    asyncio.run(_next_runs_are_valid(make(kind, tmp_path)))


async def _lengths(opened: Any) -> dict[str, int]:
    """Each session's length as listed, checked against the history it loads."""
    async with opened as store:
        listed = {s.session_id: s.messages for s in await store.sessions()}
        for session, count in listed.items():
            assert len(await (await store.open(session)).get_history()) == count, session
        return listed


async def _next_runs_are_valid(opened: Any) -> None:
    async with opened as store:
        for info in await store.sessions():
            model = ScriptedTransport([Reply("ok")])
            await Agent("s", model).run("after the crash", await store.open(info.session_id))
            check_history(list(model.requests[0].messages))
