"""Runs of a served agent stopped, left or killed at random points, many times: every session's
history stays one a model accepts (each call answered once), nothing stored is lost, and the
next message in the session runs. The model checks every request it gets."""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from served import ask, client, events_of, run, serving
from tether import Message
from tether.serve import app
from tether.stores import SQLiteStore

pytestmark = pytest.mark.timeout(300)

MODEL = '''
import asyncio
from tether import Agent, tool
from tether.testing import Call, Reply, ScriptedTransport
from tether.testing.common import Request


@tool
async def slow(n: int) -> str:
    """Wait a little."""
    await asyncio.sleep(0.01 * (n % 7))
    return f"slept {n}"


def answer(request: Request) -> Reply:
    check(request.messages)
    turns = sum(1 for m in request.messages if m.role == "assistant")
    if turns % 3 == 2:
        return Reply("The answer, in a few pieces of text. " * 4, chunks=12)
    return Reply("calling", tool_calls=[Call("slow", {"n": turns}), Call("slow", {"n": turns + 1})])


def check(messages):
    open_calls = []
    for message in messages:
        if message.role == "assistant":
            assert not open_calls, f"calls {open_calls} have no result"
            open_calls = [b.id for b in message.tool_uses]
        for result in message.tool_results:
            assert result.tool_use_id in open_calls, f"result of an unknown call {result}"
            open_calls.remove(result.tool_use_id)
    assert not open_calls, f"calls {open_calls} were never answered"


agent = Agent("s", ScriptedTransport([], then=answer), tools=[slow], max_iterations=6)
'''


def load_model() -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(MODEL, "served_model", "exec"), namespace)  # the same model both ways
    return namespace


def check(history: Sequence[Message]) -> None:
    load_model()["check"](history)


async def test_runs_stopped_or_left_at_random_points(tmp_path: Path) -> None:
    rng = random.Random(27)
    model = load_model()
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(model["agent"], store)) as base,
        client(base) as http,
    ):
        for round_ in range(30):
            how = rng.choice(["stop", "leave", "leave and cancel"])
            body = ask(f"round {round_}")
            if how == "leave and cancel":
                body["forwardedProps"] = {"cancelOnDisconnect": True}
            async with http.stream("POST", "/agui", json=body) as response:
                stream = events_of(response)
                thread = (await anext(stream))["threadId"]
                await asyncio.sleep(rng.uniform(0, 0.08))
                if how == "stop":
                    await http.post(f"/api/sessions/{thread}/cancel")
                    rest = [e async for e in stream]
                    assert rest[-1]["type"] == "RUN_FINISHED", rest[-1]
            await settled(http, thread)
            check(await (await store.open(thread)).get_history())
            after = await run(http, ask("go on", thread))
            assert after[-1]["type"] == "RUN_FINISHED", after[-1]
            check(await (await store.open(thread)).get_history())


async def settled(http: httpx.AsyncClient, thread: str) -> None:
    for _ in range(1000):
        if not (await http.get(f"/api/sessions/{thread}")).json()["running"]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the run never ended")


def test_a_server_killed_at_random_points_loses_nothing_stored(tmp_path: Path) -> None:
    """SIGKILL the ``tether serve`` process while eight runs stream, five times: after each
    restart on the same store every session is still there with at least what it had, its
    history is valid, and a new message in it runs."""
    module = tmp_path / "killed_model.py"
    module.write_text(MODEL)
    store = tmp_path / "c.db"
    rng = random.Random(26)
    seen: dict[str, int] = {}
    for _ in range(5):
        with started(module, store) as server:
            asyncio.run(streams_killed(server, seen, rng.uniform(0.05, 0.4)))
        with started(module, store) as server:
            asyncio.run(all_go_on(server.base, seen))


class started:
    """``tether serve`` in a process of its own on ``store``; SIGKILLed when the block ends."""

    def __init__(self, module: Path, store: Path) -> None:
        command = [sys.executable, "-m", "tether.cli", "serve", "--agent", f"{module}:agent"]
        command += ["--port", "0", "--store", str(store)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )

    def __enter__(self) -> started:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        port = re.search(r":(\d+)/ ", line)
        assert port, line
        self.base = f"http://127.0.0.1:{port.group(1)}"
        return self

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def __exit__(self, *exc: object) -> None:
        self.kill()


async def streams_killed(server: started, seen: dict[str, int], after: float) -> None:
    """Eight runs at once, the server killed ``after`` seconds in (the streams break)."""
    async with client(server.base) as http:

        async def one(n: int) -> None:
            thread = next(iter(seen), None) if n == 0 else None
            try:
                async with http.stream("POST", "/agui", json=ask(f"run {n}", thread)) as answer:
                    async for event in events_of(answer):
                        if event.get("threadId"):  # RUN_STARTED names it; most events do not
                            seen.setdefault(event["threadId"], 0)
            except (httpx.HTTPError, AssertionError):
                pass  # the server died under it

        runs = [asyncio.create_task(one(n)) for n in range(8)]
        await asyncio.sleep(after)
        server.kill()
        await asyncio.wait(runs, timeout=30)


async def all_go_on(base: str, seen: dict[str, int]) -> None:
    async with client(base) as http:
        listed = {s["id"]: s["messages"] for s in (await http.get("/api/sessions")).json()}
        for thread, count in seen.items():
            assert listed.get(thread, -1) >= count, (thread, count, listed.get(thread))
            after = await run(http, ask("go on", thread))
            assert after[-1]["type"] == "RUN_FINISHED", after[-1]
        listed = {s["id"]: s["messages"] for s in (await http.get("/api/sessions")).json()}
        seen.update({thread: listed[thread] for thread in seen})
