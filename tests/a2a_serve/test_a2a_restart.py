"""``tether serve --a2a`` killed (SIGKILL) mid-run and started again on the same SQLite file:
every task is still there, the one cut off reads as failed, the one waiting for approval is
approved after the restart, a replayed message runs nothing, and the chat page and AG-UI are
served beside A2A by the same process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from a2a_served import SCRIPT, a2a_client, as_dict, events_of, task_of, user_message

from tether.serve.a2a.records import CUT_OFF


class started:
    """``tether serve --a2a`` in a process of its own; SIGKILLed when the block ends."""

    def __init__(self, module: Path, store: Path) -> None:
        command = [sys.executable, "-m", "tether.cli", "serve", "--a2a"]
        command += ["--agent", f"{module}:agent", "--port", "0", "--store", str(store)]
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
        assert "agent-card.json" in self.process.stdout.readline()
        return self

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def __exit__(self, *exc: object) -> None:
        self.kill()


async def test_a_restart_loses_no_task_and_runs_none_twice(tmp_path: Path) -> None:
    module, store = tmp_path / "agent.py", tmp_path / "chats.db"
    module.write_text(SCRIPT)
    with started(module, store) as server:
        async with a2a_client(server.base, streaming=False) as client:
            [asked] = await events_of(client, user_message("delete z.txt"))
        held = asked["task"]
        async with a2a_client(server.base) as client:
            request = user_message("wait forever", message_id="m-cut")
            cut = await _until_the_tool_runs(client.send_message(request))
            server.kill()
    with started(module, store) as server:
        async with a2a_client(server.base, streaming=False) as client:
            gone = await task_of(client, cut["id"])
            assert gone["status"]["state"] == "TASK_STATE_FAILED"
            assert gone["status"]["message"]["parts"][0]["text"] == CUT_OFF
            assert (await task_of(client, held["id"]))["status"][
                "state"
            ] == "TASK_STATE_INPUT_REQUIRED"
            [again] = await events_of(client, request)  # the same message id: nothing runs
            assert again["task"]["id"] == cut["id"]
            assert again["task"]["status"]["state"] == "TASK_STATE_FAILED"
            [done] = await events_of(client, user_message("approve", task=held["id"]))
            assert done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            assert "done: deleted z.txt" in str(done)
            # the cut-off run's context goes on: the call it left open was answered
            [next_one] = await events_of(client, user_message("hi", context=cut["contextId"]))
            assert next_one["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        await _the_page_and_agui_are_served_beside(server.base, cut["contextId"])


async def _until_the_tool_runs(stream: Any) -> dict[str, Any]:
    """The task of ``stream`` once its tool call has started (the stream left open)."""
    task: dict[str, Any] = {}
    async for event in stream:
        seen = as_dict(event)
        task = seen.get("task", task)
        if "toolCall" in str(seen):
            return task
    raise AssertionError("the stream ended before the tool was called")


async def _the_page_and_agui_are_served_beside(base: str, context: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        assert (await http.get("/")).status_code == 200
        listed = [session["id"] for session in (await http.get("/api/sessions")).json()]
        assert context in listed  # an A2A context is a session the page shows
        assert not [i for i in listed if i.startswith("a2a-")], listed  # task records are not
        body = {"messages": [{"id": "u1", "role": "user", "content": "hi"}]}
        async with http.stream("POST", "/agui", json=body) as response:
            text = (await response.aread()).decode()
        assert response.status_code == 200 and "RUN_FINISHED" in text
        assert "TEXT_MESSAGE_CONTENT" in text and "RUN_ERROR" not in text
