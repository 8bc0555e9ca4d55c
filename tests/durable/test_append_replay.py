"""The ``append`` activity when a worker died after two (or more) appends of one workflow task:
the replay repeats every one of them, and each must find its own message where it was stored
(compared at its index, not only against the session's last message), then hand on the store's
position so the first genuinely new append lands after them. Another message at that index is
a real conflict: a non-retryable ``ConflictError``."""

from __future__ import annotations

import asyncio
import os
from contextlib import aclosing
from pathlib import Path

import durable_agents as da
import kill_agents
import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from conftest import WorkerProcess
from tether import Agent, Message
from tether.durable import DevServer, DurableRun
from tether.durable.activities import AgentActivities
from tether.durable.payloads import Appended
from tether.events import ToolProgress
from tether.stores import FileStore, SQLiteStore
from tether.stores.jsonforms import message_to_dict
from tether.testing import ScriptedTransport


def appended(session: str, position: int, index: int, text: str) -> Appended:
    return Appended(session, position, message_to_dict(Message("user", text)), index)


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_a_replay_of_several_appends_finds_each_at_its_index(
    tmp_path: Path, kind: str
) -> None:
    store = SQLiteStore(tmp_path / "s.db") if kind == "sqlite" else FileStore(tmp_path / "files")
    activities = AgentActivities(Agent("", ScriptedTransport([])), "a", store)
    start = (await store.open("w")).position  # a file's positions are its sizes
    first = await activities.append(appended("w", start, 0, "one"))
    second = await activities.append(appended("w", first, 1, "two"))
    third = await activities.append(appended("w", second, 2, "three"))
    # the worker died before its workflow task completed: the replay repeats all three
    again = await activities.append(appended("w", start, 0, "one"))
    again = await activities.append(appended("w", again, 1, "two"))
    again = await activities.append(appended("w", again, 2, "three"))
    assert again == third
    after = await activities.append(appended("w", again, 3, "four"))  # the first new one lands
    history = await (await store.open("w")).get_history()
    assert [m.text for m in history] == ["one", "two", "three", "four"]
    assert after > third


async def test_another_message_at_the_index_is_a_real_conflict(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    activities = AgentActivities(Agent("", ScriptedTransport([])), "a", store)
    first = await activities.append(appended("w", 0, 0, "one"))
    await activities.append(appended("w", first, 1, "two"))
    with pytest.raises(ApplicationError) as caught:
        await activities.append(appended("w", 0, 0, "not one"))
    assert caught.value.type == "ConflictError" and caught.value.non_retryable
    with pytest.raises(ApplicationError):  # past the end, at a stale position
        await activities.append(appended("w", first, 2, "three"))


async def test_a_worker_killed_between_two_appends_of_one_task_loses_nothing(
    temporal: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the dev server: two messages sent while a tool runs are appended in one workflow task,
    after the tool's results; the worker dies right after storing the first of them. The next
    worker replays the task (every append again) and the run ends as an uninterrupted one."""
    store_path, flag, gate = tmp_path / "kill.db", tmp_path / "kill-flag", tmp_path / "gate"
    monkeypatch.setenv("TETHER_TEST_STORE", str(store_path))
    monkeypatch.setenv("TETHER_TEST_KILL_AFTER", "second")
    monkeypatch.setenv("TETHER_TEST_KILL_FLAG", str(flag))
    flag.touch()
    queue = f"append-kill-{os.getpid()}"
    client = await Client.connect(temporal.address)
    prompt = da.plan([("crunch", {"steps": 2, "gate": str(gate)})])
    agent = "kill_agents:appender"
    worker = WorkerProcess(temporal.address, queue, agent, log=tmp_path / "w0.log").wait_ready()
    try:
        run = await kill_agents.appender.start(client, prompt, task_queue=queue)
        await _tool_running(run)  # the messages sent now are taken at the next iteration
        await run.send("second")
        await run.send("third")
        gate.touch()
        await asyncio.to_thread(worker.process.wait, 60)  # it killed itself after "second"
        assert not flag.exists()
        worker = WorkerProcess(
            temporal.address, queue, "kill_agents:appender", log=tmp_path / "w1.log"
        )
        await asyncio.to_thread(worker.wait_ready)
        answer = await asyncio.wait_for(run.answer(), 120)
    finally:
        worker.stop()
    assert answer == "done: crunched 2"
    history = await (await SQLiteStore(store_path).open(run.id)).get_history()
    assert [m.role for m in history] == ["user", "assistant", "user", "user", "user", "assistant"]
    assert [m.text for m in history[3:5]] == ["second", "third"]


async def _tool_running(run: DurableRun) -> None:
    """Wait until the run's tool reports progress (it then waits on its gate)."""
    async with asyncio.timeout(60), aclosing(run.events()) as events:
        async for event in events:
            if isinstance(event, ToolProgress):
                return
    raise AssertionError("the run ended before its tool ran")
