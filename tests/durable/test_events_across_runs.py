"""``DurableRun.events()`` across continue-as-new, on a real Temporal dev server: a run that
continues as new every few rounds gives every reader every event once, in order, whenever it
attached (before the first run's first step, while a run continues as new, behind by several
runs, after the workflow ended, from any position), and ``tether run --durable`` shows every
tool result."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import chained_agents as ca
import pytest
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from conftest import HERE, WorkerProcess
from tether import Agent, MemoryContextStore, StreamEvent, TextDelta, ToolResultBlock
from tether.durable import DevServer, DurableOptions, DurableRun, TemporalAgent
from tether.errors import TetherError
from tether.events import ToolResult
from tether.stores import SQLiteStore

pytestmark = pytest.mark.timeout(180)

ROUNDS = 12  # two calls each: 24 results, 25 model calls, several runs of 40 history events


@pytest.fixture
async def client(temporal: DevServer) -> Client:
    return await Client.connect(temporal.address)


def _queue(request: pytest.FixtureRequest) -> str:
    return f"q-{request.node.name}-{os.getpid()}"


def _expected_results(rounds: int = ROUNDS, pad: int = 0) -> list[tuple[str, str]]:
    """Every tool result of the plan, in order: (call id, content)."""
    return [
        (f"call_{i}_{j}", f"record of r{i}{side}" + "." * (pad if side == "a" else 0))
        for i in range(rounds)
        for j, side in enumerate("ab")
    ]


def _results(events: Sequence[StreamEvent]) -> list[tuple[str, str]]:
    """The tool results among ``events`` (call id, content), each round's in call order: the
    calls of a round run at once, so their results come as they end."""
    return _ordered([(e.tool_use_id, str(e.content)) for e in events if isinstance(e, ToolResult)])


def _ordered(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``found`` with each round's results in call order, once no round's came too early."""
    rounds = [_round(call) for call, _ in found]
    assert rounds == sorted(rounds), f"a round's result came after the next round's: {rounds}"
    return sorted(found, key=lambda result: (_round(result[0]), result[0]))


def _round(call: str) -> int:
    return int(call.split("_")[1])


def _shape(events: Sequence[StreamEvent]) -> tuple[list[StreamEvent], str]:
    """A reader's events without text deltas, and its text: a live reader may get the answer's
    text in other pieces than the log holds (as the model streamed it), never other text."""
    text = "".join(e.delta for e in events if isinstance(e, TextDelta))
    return [e for e in events if not isinstance(e, TextDelta)], text


async def _read(run: DurableRun, *, after: int = 0, lag: float = 0.0) -> list[StreamEvent]:
    """Every event from ``after`` on; ``lag``: seconds to dawdle over each (a slow reader)."""
    events: list[StreamEvent] = []
    async for event in run.events(after=after):
        events.append(event)
        if lag:
            await asyncio.sleep(lag)
    return events


async def _runs(run: DurableRun) -> int:
    """How many runs the workflow has had so far (1 + its continue-as-new count)."""
    count, run_id = 1, (await run.handle.describe()).run_id
    while True:
        handle = run.handle._client.get_workflow_handle(run.id, run_id=run_id)
        started = await anext(aiter(handle.fetch_history_events()))
        previous = started.workflow_execution_started_event_attributes.continued_execution_run_id
        if not previous:
            return count
        count, run_id = count + 1, previous


async def _once_continued(run: DurableRun, runs: int) -> list[StreamEvent]:
    """Attach once the workflow has continued as new ``runs - 1`` times."""
    while await _runs(run) < runs:  # noqa: ASYNC110 - the server is polled, nothing signals
        await asyncio.sleep(0.05)
    return await _read(run)


async def _later(run: DurableRun, delay: float) -> list[StreamEvent]:
    await asyncio.sleep(delay)
    return await _read(run)


async def test_readers_attached_before_during_and_after_get_every_event_once_in_order(
    client: Client, request: pytest.FixtureRequest
) -> None:
    queue = _queue(request)
    rng = random.Random()
    async with ca.chained.worker(client, queue):
        run = await ca.chained.start(client, ca.rounds(ROUNDS, pause=0.1), task_queue=queue)
        by_id = ca.chained.get(client, run.id)
        live = [
            asyncio.create_task(_read(run)),  # attached before the first run's first step
            asyncio.create_task(_read(by_id, lag=0.02)),  # slow: falls behind by whole runs
            asyncio.create_task(_read(by_id, lag=0.1)),
            asyncio.create_task(_once_continued(run, 2)),
            asyncio.create_task(_once_continued(run, 3)),
            *(asyncio.create_task(_later(run, rng.uniform(0.2, 3.0))) for _ in range(3)),
        ]
        answer = await run.answer()
        readers = await asyncio.gather(*live)
        transcript = await run.transcript()
        after = await _read(by_id)  # attached after the workflow ended
        count = await _runs(run)
        tails = {
            k: await _read(run, after=k)
            for k in sorted(rng.sample(range(len(after)), min(6, len(after))))
        }
    assert count >= 4, f"the run continued as new {count - 1} times only"
    stored = [
        (b.tool_use_id, str(b.content))
        for m in transcript
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert stored == _expected_results()
    assert _results(after) == stored
    for position, tail in tails.items():  # from any position: exactly the rest of the log
        assert tail == after[position:], position
    shape = _shape(after)
    assert shape[1] == answer
    for number, events in enumerate(readers):
        assert _results(events) == stored, number
        assert _shape(events) == shape, number
    plain = MemoryContextStore()
    plain_events = [e async for e in ca.chained.agent.run_stream(ca.rounds(ROUNDS), plain)]
    assert _results(plain_events) == stored


async def test_results_larger_in_all_than_a_payload_reach_a_reader_whole(
    client: Client, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Eight results of 300 KB in one run (its conversation in a store): the log passes
    Temporal's 2 MB payload limit, each ``events`` page stays well under it, and a reader
    attached after the end gets every result whole."""
    queue = _queue(request)
    store = SQLiteStore(tmp_path / "s.db")
    agent = TemporalAgent(
        Agent("You follow plans.", ca.TallyModel(), tools=[ca.fetch]),
        name="bulky",
        store=store,
        options=DurableOptions(heartbeat_timeout=5.0, retry_initial=0.2, retry_max=1.0),
    )
    async with agent.worker(client, queue):
        run = await agent.start(client, ca.rounds(8, pad=300_000), task_queue=queue)
        assert await run.answer() == "done: 16 results"
        events = await _read(run)
        page = await run.handle.query("events", 0, result_type=dict)
    assert _results(events) == _expected_results(8, pad=300_000)
    assert 0 < len(page["events"]) < len(events)
    assert len(json.dumps(page)) < 1024 * 1024


async def test_events_of_a_run_no_longer_kept_are_a_clear_error(
    client: Client, request: pytest.FixtureRequest
) -> None:
    """The workflow's first run deleted (as retention would): a reader from event 0 is told
    which events are gone and where to read from, and reading from there gives the rest."""
    queue = _queue(request)
    async with ca.chained.worker(client, queue):
        run = await ca.chained.start(client, ca.rounds(6), task_queue=queue)
        await run.answer()
        every = await _read(run)
        first = (await run.handle.describe()).raw_description.workflow_execution_info
        await client.workflow_service.delete_workflow_execution(
            DeleteWorkflowExecutionRequest(
                namespace=client.namespace,
                workflow_execution=WorkflowExecution(workflow_id=run.id, run_id=first.first_run_id),
            )
        )
        while True:  # the server deletes it in the background
            try:
                await client.get_workflow_handle(run.id, run_id=first.first_run_id).describe()
            except RPCError as exc:
                assert exc.status == RPCStatusCode.NOT_FOUND
                break
            await asyncio.sleep(0.1)
        with pytest.raises(TetherError, match=r"are gone.*read from after=(\d+)") as gone:
            await _read(run)
        kept = int(gone.value.args[0].rpartition("=")[2])
        rest = await _read(run, after=kept)
    assert 0 < kept < len(every)
    assert rest == every[kept:]


class _ChainWorker(WorkerProcess):
    """``tether worker`` serving ``chained_agents:chained`` in its own process."""

    def __init__(self, address: str, queue: str, log: Path) -> None:
        command = [
            sys.executable, "-m", "tether.cli", "worker", "--address", address,
            "--task-queue", queue, "--sticky-timeout", "1", "--agent", "chained_agents:chained",
        ]  # fmt: skip
        self.log = log
        self.process = subprocess.Popen(
            command, env=_env(), stdout=subprocess.DEVNULL, stderr=log.open("ab"),
            start_new_session=True,
        )  # fmt: skip
        self.pid = self.process.pid


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(HERE)}


KILLS = int(os.environ.get("TETHER_EVENT_KILLS", "6"))


async def test_readers_across_runs_miss_nothing_while_workers_are_killed(
    temporal: DevServer, client: Client, tmp_path: Path
) -> None:
    """Worker processes SIGKILLed at random moments while a run continues as new: live readers
    (one slow, three more attached after each kill) wait for the next worker to answer, each
    query on an earlier run included, also while the server turns queries away (its buffer
    for a run's queries is full while a lost worker's workflow task is in flight), and get what
    a reader attached after the end gets."""
    rng = random.Random()
    queue = f"kill-chain-{os.getpid()}"
    worker = _ChainWorker(temporal.address, queue, tmp_path / "w0.log").wait_ready()
    try:
        run = await ca.chained.start(client, ca.rounds(ROUNDS, pause=0.2), task_queue=queue)
        live = [asyncio.create_task(_read(run)), asyncio.create_task(_read(run, lag=0.05))]
        landed = 0  # kills while the workflow ran
        for kill in range(KILLS):
            await asyncio.sleep(rng.uniform(0.1, 1.5))
            described = await run.handle.describe()
            landed += described.status == WorkflowExecutionStatus.RUNNING
            worker.kill()
            # readers attached while no worker answers: their queries wait together
            live += [asyncio.create_task(_read(run)) for _ in range(3)]
            log = tmp_path / f"w{kill + 1}.log"
            worker = await asyncio.to_thread(_ChainWorker(temporal.address, queue, log).wait_ready)
        await run.answer()
        readers = await asyncio.gather(*live)
        after = await _read(run)
    finally:
        worker.stop()
    assert landed >= KILLS // 2, f"only {landed} kills landed mid-run"
    assert await _runs(run) >= 3
    assert _results(after) == _expected_results()
    for number, events in enumerate(readers):
        assert _shape(events) == _shape(after), number


def test_tether_run_durable_shows_every_result_of_a_run_that_continues_as_new(
    temporal: DevServer, tmp_path: Path
) -> None:
    queue = f"cli-chain-{os.getpid()}"
    worker = _ChainWorker(temporal.address, queue, tmp_path / "w.log").wait_ready()
    try:
        done = subprocess.run(
            [
                sys.executable, "-m", "tether.cli", "run", "--durable", "--agent",
                "chained_agents:chained", "--task-queue", queue, "--address", temporal.address,
                "--json", ca.rounds(ROUNDS, pause=0.05),
            ],
            env=_env(), capture_output=True, text=True, timeout=150, check=False,
        )  # fmt: skip
    finally:
        worker.stop()
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = [(e["tool_use_id"], e["content"]) for e in events if e["type"] == "tool_result"]
    assert _ordered(results) == _expected_results()
    text = "".join(e["delta"] for e in events if e["type"] == "text_delta")
    assert text == "done: " + " | ".join(content for _, content in _expected_results())
