"""A server that runs for weeks keeps in memory only what its live tasks need: after many tasks
over real HTTP (completed, failed, waiting for input) the task records' caches, the runs under
way and the SDK's active tasks hold nothing of the finished ones, and every task is still
answered by ``GetTask`` and ``ListTasks``, from the store, before and after a restart."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a.types.a2a_pb2 import CancelTaskRequest, ListTasksRequest, SubscribeToTaskRequest
from a2a_served import Served, a2a_client, events_of, load_script, served_in_thread, task_of
from a2a_served import user_message as ask
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette

from tether.serve.a2a import app as a2a_app_module
from tether.serve.a2a import handler as handler_module
from tether.serve.a2a.app import A2ARoutes
from tether.serve.a2a.executor import RunExecutor
from tether.serve.a2a.records import RECORD
from tether.serve.runs import Runs
from tether.stores import SQLiteStore
from waiting import until

TASKS = 240  # asked over real HTTP, AT_ONCE at a time
AT_ONCE = 24
HELD = 3  # tasks left waiting for approval
PARKED = 0.3  # seconds an unanswered input-required task keeps its SDK task in memory here
PARKED_GONE = "the SDK's active tasks released"


@contextlib.contextmanager
def served(db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Served, A2ARoutes]]:
    """The scripted agent's A2A routes on the SQLite file ``db``, under uvicorn in a thread."""
    monkeypatch.setattr(handler_module, "PARKED", PARKED)
    namespace = load_script()
    store = SQLiteStore(db)
    agent = namespace["agent"]
    routes = a2a_app_module.a2a_routes(
        agent, store, Runs(agent.transport), secured=False, max_body=1 << 20
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await routes.aclose()
            await store.aclose()

    app = Starlette(routes=routes.routes, lifespan=lifespan)
    with served_in_thread(app, namespace) as server:
        yield server, routes


def held_in_memory(routes: A2ARoutes) -> dict[str, int]:
    """How many entries each cache of the server holds (entries, not bytes)."""
    executor = routes.handler.agent_executor
    assert isinstance(executor, RunExecutor)
    records = executor.records
    registry = routes.handler._active_task_registry
    return {
        "live tasks": len(records._live),
        "record sessions": len(records._records),
        "runs going": len(executor._going),
        "runs reserved": len(executor.runs),
        "SDK active tasks": len(registry._active_tasks),
    }


async def every_task(base: str) -> dict[str, dict[str, Any]]:
    """Every task ``ListTasks`` gives, page by page."""
    found: dict[str, dict[str, Any]] = {}
    token = ""
    async with a2a_client(base, streaming=False) as client:
        while True:
            page = await client.list_tasks(
                ListTasksRequest(page_size=100, page_token=token, include_artifacts=True)
            )
            for task in page.tasks:
                found[task.id] = MessageToDict(task)
            token = page.next_page_token
            if not token:
                return found


@pytest.fixture(scope="module")
def monkeymodule() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("a2a-memory") / "tasks.db"


@pytest.fixture(scope="module")
def tasks(db: Path, monkeymodule: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """``TASKS`` tasks run on one server: the states it gave, and its caches after them."""
    with served(db, monkeymodule) as (server, routes):
        states = asyncio.run(_run_many(server.base))
        cached = held_in_memory(routes)
        listed = asyncio.run(every_task(server.base))
        after_list = held_in_memory(routes)
        yield {
            "states": states,
            "cached": cached,
            "listed": listed,
            "after list": after_list,
            "base": server.base,
            "routes": routes,
        }


async def _run_many(base: str) -> dict[str, str]:
    """Ask ``TASKS`` questions (a few of them wait for approval, one fails); each task's id and
    the state it ended in."""
    said = [f"hi {n}" for n in range(TASKS - HELD - 1)]
    said += [f"delete f{n}.txt" for n in range(HELD)] + ["fail"]
    states: dict[str, str] = {}
    async with a2a_client(base, streaming=False) as client:
        for start in range(0, len(said), AT_ONCE):
            batch = said[start : start + AT_ONCE]
            answers = await asyncio.gather(*(events_of(client, ask(text)) for text in batch))
            for [answer] in answers:
                states[answer["task"]["id"]] = answer["task"]["status"]["state"]
    return states


def test_finished_tasks_leave_no_entry_in_memory(tasks: dict[str, Any]) -> None:
    states = list(tasks["states"].values())
    assert len(states) == TASKS
    assert states.count("TASK_STATE_INPUT_REQUIRED") == HELD
    assert states.count("TASK_STATE_FAILED") == 1
    assert states.count("TASK_STATE_COMPLETED") == TASKS - HELD - 1
    nothing = dict.fromkeys(tasks["cached"], 0)
    assert {**tasks["cached"], "SDK active tasks": 0} == nothing
    assert tasks["cached"]["SDK active tasks"] <= HELD  # those waiting, for PARKED seconds
    assert {**tasks["after list"], "SDK active tasks": 0} == nothing  # a listing keeps nothing
    routes = tasks["routes"]
    asyncio.run(until(lambda: held_in_memory(routes)["SDK active tasks"] == 0, PARKED_GONE))


async def test_get_and_list_answer_every_task_from_the_store(tasks: dict[str, Any]) -> None:
    listed = tasks["listed"]
    assert {i: t["status"]["state"] for i, t in listed.items()} == tasks["states"]
    async with a2a_client(tasks["base"], streaming=False) as client:
        some = list(tasks["states"])[:: TASKS // 12]
        for task_id in some:
            got = await task_of(client, task_id)
            assert got["status"]["state"] == tasks["states"][task_id]
            assert got == listed[task_id]
    assert held_in_memory(tasks["routes"]) == dict.fromkeys(tasks["cached"], 0)


async def test_a_task_whose_sdk_task_was_released_is_still_answered(
    tasks: dict[str, Any],
) -> None:
    """An input-required task dropped from memory takes its approval, from the store."""
    held = [i for i, s in tasks["states"].items() if s == "TASK_STATE_INPUT_REQUIRED"]
    async with a2a_client(tasks["base"], streaming=False) as client:
        [answer] = await events_of(client, ask("approve", task=held[0]))
    assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "done: deleted f" in str(answer)
    routes = tasks["routes"]
    await until(lambda: held_in_memory(routes)["SDK active tasks"] == 0, PARKED_GONE)
    assert held_in_memory(routes) == dict.fromkeys(tasks["cached"], 0)
    tasks["states"][held[0]] = "TASK_STATE_COMPLETED"
    tasks["approved"] = [held[0]]


async def test_a_released_task_is_subscribed_to_then_answered(tasks: dict[str, Any]) -> None:
    """A subscriber to an input-required task let go from memory gets the task, then the run
    its answer starts, to its end."""
    held = [i for i, s in tasks["states"].items() if s == "TASK_STATE_INPUT_REQUIRED"]
    routes = tasks["routes"]
    await until(lambda: held_in_memory(routes)["SDK active tasks"] == 0, PARKED_GONE)
    async with a2a_client(tasks["base"]) as client:
        seen = client.subscribe(SubscribeToTaskRequest(id=held[0]))
        now = MessageToDict(await anext(seen))
        assert now["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        rest = asyncio.ensure_future(_drain(seen))
        async with a2a_client(tasks["base"], streaming=False) as answering:
            [answer] = await events_of(answering, ask("approve", task=held[0]))
        assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        streamed = await asyncio.wait_for(rest, 30)
    assert streamed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "done: deleted f" in str(streamed)
    await until(lambda: held_in_memory(routes)["SDK active tasks"] == 0, PARKED_GONE)
    assert held_in_memory(routes) == dict.fromkeys(tasks["cached"], 0)
    tasks["states"][held[0]] = "TASK_STATE_COMPLETED"
    tasks["approved"].append(held[0])


async def _drain(stream: Any) -> list[dict[str, Any]]:
    return [MessageToDict(event) async for event in stream]


async def test_a_released_task_cancelled_denies_its_calls(tasks: dict[str, Any], db: Path) -> None:
    """Cancelling an input-required task let go from memory denies its held calls (stored so,
    nothing runs), so its context takes new messages, as for one still in memory."""
    [held] = [i for i, s in tasks["states"].items() if s == "TASK_STATE_INPUT_REQUIRED"]
    routes = tasks["routes"]
    await until(lambda: held_in_memory(routes)["SDK active tasks"] == 0, PARKED_GONE)
    async with a2a_client(tasks["base"], streaming=False) as client:
        cancelled = MessageToDict(await client.cancel_task(CancelTaskRequest(id=held)))
        assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
        context = cancelled["contextId"]
        async with SQLiteStore(db) as store:
            results = [b for m in await store.history_of(context) for b in m.tool_results]
        assert [b.is_error for b in results] == [True] and "canceled" in results[0].text
        [again] = await events_of(client, ask("hi", context=context))
        assert again["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    tasks["states"][held] = "TASK_STATE_CANCELED"
    tasks["cancelled"] = held
    tasks["states"][again["task"]["id"]] = "TASK_STATE_COMPLETED"
    await until(lambda: held_in_memory(routes)["SDK active tasks"] == 0, PARKED_GONE)
    assert held_in_memory(routes) == dict.fromkeys(tasks["cached"], 0)


async def test_a_record_is_written_as_a_task_starts_here_and_as_it_stops_running(
    tasks: dict[str, Any], db: Path
) -> None:
    """Not at every status update or artifact chunk of the run: the states the record holds,
    in order (an approved task started twice: its run, then its follow-up's, each written as
    it began, so a server killed during either reads it as failed)."""
    assert len(tasks["approved"]) == 2
    async with SQLiteStore(db) as store:
        written = {i: await _states_written(store, i) for i in tasks["states"]}
    for task_id, state in tasks["states"].items():
        if task_id in tasks["approved"]:
            asked = ["SUBMITTED", "INPUT_REQUIRED"]  # then the answer joins its history
            assert written[task_id] == [*asked, "INPUT_REQUIRED", "WORKING", "COMPLETED"]
        elif task_id == tasks["cancelled"]:
            assert written[task_id] == ["SUBMITTED", "INPUT_REQUIRED", "CANCELED"]
        else:
            assert written[task_id] == ["SUBMITTED", state.removeprefix("TASK_STATE_")]


async def _states_written(store: SQLiteStore, task_id: str) -> list[str]:
    history = await store.history_of(RECORD + task_id)
    states = [json.loads(m.text)["task"]["status"]["state"] for m in history]
    return [state.removeprefix("TASK_STATE_") for state in states]


def test_after_a_restart_every_task_is_listed_and_got(
    tasks: dict[str, Any], db: Path, monkeymodule: pytest.MonkeyPatch
) -> None:
    with served(db, monkeymodule) as (server, routes):
        listed = asyncio.run(every_task(server.base))
        assert {i: t["status"]["state"] for i, t in listed.items()} == tasks["states"]

        async def get_some() -> None:
            async with a2a_client(server.base, streaming=False) as client:
                for task_id in list(tasks["states"])[:: TASKS // 12]:
                    assert await task_of(client, task_id) == listed[task_id]

        asyncio.run(get_some())
        assert held_in_memory(routes) == dict.fromkeys(held_in_memory(routes), 0)
