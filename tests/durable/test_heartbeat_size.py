"""A tool's progress reports stay within Temporal's payload limit, however large they are: the
heartbeat that carries them is bounded in bytes (the oldest reports dropped, each one's message
cut past ``REPORT_CHARS``), so a call reporting a hundred and fifty 20 KB reports runs to its end
on the dev server (its heartbeat passed 2 MB near report 100 and the activity was killed)."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import replace

import durable_agents as da
import pytest
from temporalio.client import Client

from tether import Agent, report_progress, tool
from tether.durable import DevServer, DurableOptions, TemporalAgent
from tether.durable.live import PROGRESS_BYTES, REPORT_CHARS, LiveProgress
from tether.events import ToolProgress

pytestmark = pytest.mark.timeout(300)


async def _chatty(reports: int, size: int) -> str:
    """Report ``reports`` times, each with a message of ``size`` characters."""
    for n in range(1, reports + 1):
        report_progress(n, reports, f"{n}:" + "x" * size)
        await asyncio.sleep(0.002)
    return f"reported {reports}"


chatty = replace(tool(_chatty, name="chatty"), reports_progress=True)
talker = TemporalAgent(
    Agent("You follow plans.", da.PlanModel(), tools=[chatty]),
    name="talker",
    options=DurableOptions(heartbeat_timeout=30.0, retry_initial=0.2, retry_max=1.0),
)


def test_the_details_stay_within_their_byte_budget_and_count_what_they_dropped() -> None:
    live = LiveProgress("key", "call", 1)
    for n in range(1, 301):
        live.add(ToolProgress("call", "chatty", n, 300, "y" * (n * 1000)))
        details = live.details()
        assert len(json.dumps(details).encode()) <= PROGRESS_BYTES + 1024
    kept = details["reports"]
    assert details["first"] + len(kept) == 300  # the newest kept, the rest counted
    assert kept[-1]["progress"] == 300
    assert all(len(r["message"]) <= REPORT_CHARS + 100 for r in kept)
    assert kept[-1]["message"].startswith("y" * 100)


async def test_large_progress_reports_never_kill_the_call(temporal: DevServer) -> None:
    client = await Client.connect(temporal.address)
    queue = f"heartbeat-{os.getpid()}"
    prompt = da.plan([("chatty", {"reports": 150, "size": 20_000})])
    async with talker.worker(client, queue):
        run = await talker.start(client, prompt, task_queue=queue)
        answer = await asyncio.wait_for(run.answer(), 120)
    assert answer == "done: reported 150"
