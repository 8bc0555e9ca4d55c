"""``tether.base.interrupt``: a tool deadline and an outside cancel landing in one tick, and
``survive`` giving the caller's cancel once the work is done, even when the work failed too."""

from __future__ import annotations

import asyncio

import pytest

from tether.base.interrupt import Overrun, deadlines, survive, within


async def test_a_cancel_arriving_with_a_tool_deadline_is_not_swallowed() -> None:
    """The deadline and an outside cancel land in one tick: the run's cancel goes on (it is not
    turned into the deadline's ``Overrun``); a deadline alone still gives ``Overrun``."""

    async def stalled() -> None:
        await asyncio.get_running_loop().create_future()

    for outside in (True, False):
        task = asyncio.ensure_future(within(stalled(), 100))
        await asyncio.sleep(0)  # suspended inside: its deadline is set
        timer = deadlines()
        for entry in list(timer._live):
            entry.when = 0
        timer._tick()
        if outside:
            task.cancel()
        with pytest.raises(asyncio.CancelledError if outside else Overrun):
            await task


async def test_survive_gives_the_callers_cancel_even_when_the_work_failed_too() -> None:
    started, release = asyncio.Event(), asyncio.Event()
    ran: list[str] = []

    async def work() -> None:
        started.set()
        await release.wait()
        ran.append("finished")
        raise ValueError("the work failed as well")

    waiting = asyncio.ensure_future(survive(work()))
    await started.wait()
    waiting.cancel()
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert ran == ["finished"]  # the work was not cut short
