"""Durable runs stream (on the real dev server): ``DurableRun.events()`` gives a model call's
text while the model activity still runs and a tool's progress while the tool activity runs;
each piece of text once, also when workers are killed mid-stream and the call is retried
elsewhere (a retry that says something else is announced by ``Retrying``); ``tether run
--durable`` prints the text as it comes."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import durable_agents as da
import pytest
from temporalio.client import Client

from conftest import HERE, WorkerProcess
from tether import StreamEvent, TextDelta
from tether.durable import DevServer, DurableRun
from tether.events import (
    IterationEnd,
    ReasoningDelta,
    Retrying,
    SessionEndEvent,
    ToolProgress,
    ToolResult,
)

pytestmark = pytest.mark.timeout(180)

ANSWER = "Streams flow a few characters at a time, from the worker to whoever reads the run."


@pytest.fixture
async def client(temporal: DevServer) -> Client:
    return await Client.connect(temporal.address)


def _queue(request: pytest.FixtureRequest) -> str:
    return f"s-{request.node.name}-{os.getpid()}"


async def _until(events: AsyncIterator[StreamEvent], test: Any, within: float = 15.0) -> list[Any]:
    """Events read until one passes ``test`` (that one included)."""
    seen: list[StreamEvent] = []
    async with asyncio.timeout(within):
        async for event in events:
            seen.append(event)
            if test(seen):
                return seen
    raise AssertionError(f"the run ended first: {seen}")


async def _read(run: DurableRun) -> list[StreamEvent]:
    return [e async for e in run.events()]


def _text(events: list[StreamEvent]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextDelta))


def _shown(events: list[StreamEvent]) -> tuple[str, str]:
    """The text and reasoning a reader shows at the end: ``Retrying`` discards the partial
    reply of the call it interrupts (what came since the call's last ``IterationEnd``)."""
    done, reply, reasoning = "", "", ""
    for event in events:
        if isinstance(event, TextDelta):
            reply += event.delta
        elif isinstance(event, ReasoningDelta):
            reasoning += event.delta
        elif isinstance(event, Retrying):
            reply = ""
        elif isinstance(event, IterationEnd):
            done, reply = done + reply, ""
    return done + reply, reasoning


async def test_text_arrives_while_the_model_call_runs(
    client: Client, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    gate = tmp_path / "gate"
    queue = _queue(request)
    async with da.dripping.worker(client, queue):
        run = await da.dripping.start(
            client, da.drip(ANSWER, size=5, before=3, gate=str(gate)), task_queue=queue
        )
        events = run.events()
        early = await _until(events, lambda seen: len(_text(seen)) >= 15)
        # the model activity waits on the gate: what came so far came while it runs
        assert _text(early) == ANSWER[:15]
        assert (await run.progress()).status == "running" and not gate.exists()
        gate.touch()
        rest = [e async for e in events]
    everything = early + rest
    assert _text(everything) == ANSWER == await run.answer()
    assert not any(isinstance(e, Retrying) for e in everything)
    assert isinstance(everything[-1], SessionEndEvent)


async def test_tool_progress_arrives_while_the_tool_runs(
    client: Client, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    gate = tmp_path / "gate"
    queue = _queue(request)
    prompt = da.drip("crunched.", rounds=[[("crunch", {"steps": 3, "gate": str(gate)})]])
    async with da.dripping.worker(client, queue):
        run = await da.dripping.start(client, prompt, task_queue=queue)
        events = run.events()
        early = await _until(events, lambda seen: isinstance(seen[-1], ToolProgress))
        assert early[-1] == ToolProgress("call_0_0", "crunch", 1, 3, "step 1")
        assert not any(isinstance(e, ToolResult) for e in early)  # the tool still runs
        assert (await run.progress()).status == "running" and not gate.exists()
        gate.touch()
        rest = [e async for e in events]
    reports = [e.progress for e in early + rest if isinstance(e, ToolProgress)]
    assert reports == sorted(set(reports)) and reports[0] == 1  # each once, in order
    (result,) = [e for e in rest if isinstance(e, ToolResult)]
    assert result.content == "crunched 3"
    assert await run.answer() == "crunched."


async def test_each_piece_of_text_is_given_once_over_many_runs(
    client: Client, request: pytest.FixtureRequest
) -> None:
    """Several runs at once, some with a tool round first and reasoning before the answer: the
    live text joined is the answer exactly, and it came in pieces (not only at the end)."""
    queue = _queue(request)
    asks = [
        da.drip(f"{i}: {ANSWER}", size=3, every=0.04, **extra)
        for i in range(4)
        for extra in [
            {"think": f"thinking {i} through, slowly" if i % 2 else ""},
            {"rounds": [[("lookup", {"name": f"n{i}"})]]},
        ]
    ]
    async with da.dripping.worker(client, queue):
        runs = []
        readers = []
        for ask in asks:  # each read from its start
            runs.append(await da.dripping.start(client, ask, task_queue=queue))
            readers.append(asyncio.create_task(_read(runs[-1])))
        streams = await asyncio.gather(*readers)
        answers = [await run.answer() for run in runs]
    for ask, events, answer in zip(asks, streams, answers, strict=True):
        assert not any(isinstance(e, Retrying) for e in events)
        text, reasoning = _shown(events)
        assert _text(events) == text == answer, ask
        assert reasoning == da.json.loads(ask).get("think", "")
        deltas = [e for e in events if isinstance(e, TextDelta)]
        assert len(deltas) > 1, ask  # streamed live, not one delta at the end


async def test_workers_killed_mid_stream_show_no_text_twice(
    temporal: DevServer, tmp_path: Path
) -> None:
    """SIGKILLs at random moments while runs stream; each time another worker takes over and
    the model call is retried. A retry that says the same (steady runs) shows nothing twice;
    one that says something else (fickle runs, their text names the worker) is announced by
    ``Retrying`` and then shown from its start."""
    rng = random.Random(int(os.environ.get("TETHER_KILL_SEED", "11")))
    queue = f"kill-stream-{os.getpid()}"
    client = await Client.connect(temporal.address)
    logs = tmp_path / "workers"
    logs.mkdir()
    worker = WorkerProcess(temporal.address, queue, "flaky_drip", log=logs / "w0.log").wait_ready()
    runs: list[tuple[DurableRun, str, bool, asyncio.Task[list[StreamEvent]]]] = []

    try:
        for trial in range(4):
            for k in range(4):
                fickle = k % 2 == 1
                say = f"{trial}.{k} {ANSWER} {ANSWER}"
                ask = da.drip(say, size=4, every=0.03, fickle=fickle)
                run = await da.flaky_drip.start(client, ask, task_queue=queue)
                runs.append((run, say, fickle, asyncio.create_task(_read(run))))
                await asyncio.sleep(rng.uniform(0.05, 0.3))
            await asyncio.sleep(rng.uniform(0.2, 1.0))
            worker.kill()
            log = logs / f"w{trial + 1}.log"
            worker = await asyncio.to_thread(
                WorkerProcess(temporal.address, queue, "flaky_drip", log=log).wait_ready
            )
        streams = await asyncio.wait_for(asyncio.gather(*(t for *_, t in runs)), 120)
        answers = [await run.answer() for run, *_ in runs]
        attempts = [await _model_attempts(client, run.id) for run, *_ in runs]
    finally:
        worker.stop()

    retried_steady = announced = 0
    for (run, say, fickle, _), events, answer, tries in zip(
        runs, streams, answers, attempts, strict=True
    ):
        text, _ = _shown(events)
        assert text == answer, (run.id, events)
        kinds = [type(e).__name__ for e in events if not isinstance(e, TextDelta | Retrying)]
        assert kinds == ["IterationStart", "IterationEnd", "SessionEndEvent"], run.id
        retries = [e for e in events if isinstance(e, Retrying)]
        if not fickle:
            assert answer == say and _text(events) == say and not retries, run.id
            retried_steady += max(tries) > 1
        else:
            assert len(retries) < max(tries), run.id  # one per attempt that was shown, at most
            if retries:
                before = events[: events.index(retries[0])]
                assert _text(before) and not answer.startswith(_text(before)), run.id
                announced += 1
        assert len([e for e in events if isinstance(e, TextDelta)]) > 1, run.id  # live
    print(
        f"\n{len(runs)} runs, 4 kills: {retried_steady} steady runs retried (no text twice), "
        f"{announced} fickle runs announced a retry that said something else"
    )
    assert retried_steady, "no kill landed while a steady run streamed: nothing was shown"
    assert announced, "no fickle run was retried after it showed text: nothing was shown"


async def _model_attempts(client: Client, workflow_id: str) -> list[int]:
    """The attempt that finished each model call of the run (its history keeps the last)."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    names: dict[int, str] = {}
    attempts = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            scheduled = event.activity_task_scheduled_event_attributes
            names[event.event_id] = scheduled.activity_type.name
        elif event.HasField("activity_task_started_event_attributes"):
            started = event.activity_task_started_event_attributes
            if names[started.scheduled_event_id].endswith(".model"):
                attempts.append(started.attempt)
    return attempts


def test_tether_run_durable_prints_text_as_it_comes(temporal: DevServer, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    queue = f"cli-stream-{os.getpid()}"
    worker = WorkerProcess(temporal.address, queue, "dripping", log=tmp_path / "w.log")
    worker.wait_ready()
    command = [
        sys.executable, "-m", "tether.cli", "run", "--durable", "--agent",
        "durable_agents:dripping", "--task-queue", queue, "--address", temporal.address,
        da.drip(ANSWER, size=5, before=4, gate=str(gate)),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    cli = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert cli.stdout is not None
        os.set_blocking(cli.stdout.fileno(), False)
        printed = b""
        deadline = time.monotonic() + 60
        while len(printed) < 20 and time.monotonic() < deadline and cli.poll() is None:
            printed += cli.stdout.read() or b""
            time.sleep(0.02)
        # the model waits on the gate: these 20 characters were printed while it ran
        assert printed.decode() == ANSWER[:20] and not gate.exists()
        gate.touch()
        os.set_blocking(cli.stdout.fileno(), True)
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
        worker.stop()
    assert cli.returncode == 0, err
    assert (printed + out).decode().startswith(ANSWER + "\n")
