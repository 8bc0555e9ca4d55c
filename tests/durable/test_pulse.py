"""``Pulse`` ends when its block ends, even when news came just before (a tool that reports its
last progress and returns at once): the heartbeat loop must not swallow the cancellation that
stops it, or the activity never finishes and runs into its start-to-close timeout."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tether.durable import pulse


@pytest.mark.parametrize("turns", [0, 1, 2, 3])
async def test_a_pulse_ends_right_after_news(monkeypatch: pytest.MonkeyPatch, turns: int) -> None:
    beats: list[Any] = []
    monkeypatch.setattr(pulse.activity, "heartbeat", lambda *details: beats.append(details))
    for _ in range(5):  # each ends within the timeout (it hung for ever before)
        async with asyncio.timeout(5):
            async with pulse.Pulse(lambda: {"n": len(beats)}, keepalive=30.0) as beating:
                await asyncio.sleep(pulse.FLUSH * 2)  # the loop waits for news now
                beating.news()
                for _ in range(turns):
                    await asyncio.sleep(0)


async def test_a_pulse_keeps_beating_without_news(monkeypatch: pytest.MonkeyPatch) -> None:
    beats: list[Any] = []
    monkeypatch.setattr(pulse.activity, "heartbeat", lambda *details: beats.append(details))
    async with pulse.Pulse(dict, keepalive=0.05):
        await asyncio.sleep(0.5)
    assert 3 <= len(beats) <= 11
