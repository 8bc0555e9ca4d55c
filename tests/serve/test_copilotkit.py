"""``tether serve`` behind a CopilotKit runtime (``@copilotkit/runtime`` 1.75 in node, installed by
``scripts/parts.sh``), set up as docs/doors/serving.md says: the runtime's agent is an AG-UI
``HttpAgent`` pointed at ``/agui``. A chat request sent to the runtime as CopilotKit's React
client sends it (``POST <runtime>/agent/default/run``, a ``RunAgentInput``) streams tether's run
back, a tool call included, and the session is stored; the next request goes on in it."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from parts import absent
from served import EVENT, client, kinds, serving
from tether import Agent, tool
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport

ROOT = Path(__file__).parents[2]
SCRIPT = Path(__file__).parent / "agui_client" / "copilotkit.mjs"
CACHE = Path(
    os.environ.get("TETHER_CACHE_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tether"
)
MODULES = CACHE / "npm-copilotkit" / "node_modules"
NODE = CACHE / "npm-conformance" / "node_modules" / "node" / "bin" / "node"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@asynccontextmanager
async def copilotkit(tether: str) -> AsyncIterator[str]:
    """A CopilotKit runtime in node in front of ``tether``; its URL (no telemetry sent)."""
    if not (MODULES / "@copilotkit/runtime/package.json").exists() or not NODE.exists():
        absent("@copilotkit/runtime (with its node)", "scripts/parts.sh installs it")
    env = dict(os.environ, COPILOTKIT_TELEMETRY_DISABLED="1", DO_NOT_TRACK="1")
    node = await asyncio.create_subprocess_exec(
        str(NODE),
        str(SCRIPT),
        str(MODULES),
        tether,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert node.stdin is not None and node.stdout is not None and node.stderr is not None
    try:
        line = await asyncio.wait_for(node.stdout.readline(), 60)
        assert line.startswith(b"http://127.0.0.1:"), (line, await node.stderr.read())
        yield line.decode().strip()
    finally:
        node.stdin.close()
        try:
            await asyncio.wait_for(node.wait(), 10)
        except TimeoutError:
            node.kill()
            await node.wait()


def run_input(thread: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``RunAgentInput`` as CopilotKit's React client sends it: the whole history, no tools."""
    return {
        "threadId": thread,
        "runId": os.urandom(8).hex(),
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


async def events(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    headers = {"accept": "text/event-stream"}
    async with http.stream("POST", url, json=body, headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        found = []
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                found.append(json.loads(line[5:]))
                EVENT.validate_python(found[-1])
        return found


async def test_a_copilotkit_runtime_serves_a_tether_agent(tmp_path: Path) -> None:
    model = ScriptedTransport(
        [
            Reply("Adding.", tool_calls=[Call("add", {"a": 2, "b": 3})]),
            Reply("It is 5."),
            Reply("You are welcome."),
        ]
    )
    agent = Agent("s", model, tools=[add])
    async with (
        SQLiteStore(tmp_path / "c.db") as store,
        serving(app(agent, store)) as base,
        copilotkit(base) as runtime,
        client(runtime) as http,
    ):
        info = (await http.get(f"{runtime}/info")).json()
        assert "default" in info["agents"] and info["telemetryDisabled"] is True
        thread = "copilot-thread-1"
        history: list[dict[str, Any]] = [{"id": "u1", "role": "user", "content": "2 + 3?"}]
        first = await events(http, f"{runtime}/agent/default/run", run_input(thread, history))
        assert kinds(first)[0] == "RUN_STARTED" and kinds(first)[-1] == "RUN_FINISHED"
        assert {"TOOL_CALL_START", "TOOL_CALL_RESULT", "MESSAGES_SNAPSHOT"} <= set(kinds(first))
        said = "".join(e["delta"] for e in first if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert said == "Adding.It is 5."
        history = [*first[-2]["messages"], {"id": "u2", "role": "user", "content": "thanks"}]
        second = await events(http, f"{runtime}/agent/default/run", run_input(thread, history))
        assert second[-2]["type"] == "MESSAGES_SNAPSHOT"
        async with client(base) as direct:
            shown = (await direct.get(f"/api/sessions/{thread}")).json()["messages"]
    assert second[-2]["messages"] == shown
    roles = ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert [m["role"] for m in shown] == roles
    assert shown[-1]["content"] == "You are welcome."


def test_the_docs_set_up_the_runtime_this_test_runs() -> None:
    """docs/doors/serving.md's CopilotKit set-up is the code between the script's markers."""
    script = SCRIPT.read_text()
    ran = script.split("// --8<-- [start:runtime]\n")[1].split("// --8<-- [end:runtime]")[0]
    page = (ROOT / "docs" / "doors" / "serving.md").read_text()
    blocks = re.findall(r"```js\n(.*?)```", page, re.S)
    assert ran.strip() in [block.strip() for block in blocks]
