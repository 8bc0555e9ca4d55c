"""``tether.base.blocking.run_blocking`` through its public door, ``Agent.run_sync``: a run
finishes from sync code, also when called inside a running loop."""

from __future__ import annotations

from tether import Agent
from tether.testing import Reply, ScriptedTransport


def make_agent() -> Agent:
    return Agent(system="s", transport=ScriptedTransport([Reply("Hello there.")]))


def test_run_sync_without_a_running_loop() -> None:
    assert make_agent().run_sync("hi") == "Hello there."


async def test_run_sync_inside_a_running_loop() -> None:
    # an async app (or a notebook) calling the sync API: asyncio.run would refuse here
    assert make_agent().run_sync("hi") == "Hello there."
