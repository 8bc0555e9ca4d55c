"""A scripted agent served over A2A by uvicorn on 127.0.0.1 in a thread of its own (one server
for a module's tests), and the real ``a2a-sdk`` client that talks to it."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
)
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Value

from tether import Agent, tool
from tether.cli.serving import listen
from tether.testing import Call, Hold, Reply, ScriptedTransport
from tether.testing.common import Request

SCRIPT = '''
import asyncio
from tether import Agent, tool
from tether.testing import Call, Hold, Reply, ScriptedTransport

ran = []  # the tools' calls, as they ran
gates = {}  # name -> asyncio.Event a held reply or tool waits on (made in the server's loop)


def gate(name):
    if name not in gates:
        gates[name] = asyncio.Event()
    return gates[name]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    ran.append(("add", a, b))
    return a + b


@tool
def delete_file(path: str) -> str:
    """Delete a file (waits for approval)."""
    ran.append(("delete_file", path))
    return f"deleted {path}"


@tool
async def wait_for(name: str) -> str:
    """Wait until the test lets the gate ``name`` open."""
    ran.append(("wait_for", name))
    await gate(name).wait()
    return f"{name} opened"


def answer(request):
    last = request.messages[-1]
    if last.tool_results:
        return Reply(f"done: {last.tool_results[-1].text}", chunks=2)
    said = last.text
    word, _, rest = said.partition(" ")
    if word == "add":
        return Reply("Adding.", tool_calls=[Call("add", {"a": 2, "b": 3})])
    if word == "delete":
        calls = [Call("delete_file", {"path": p}) for p in rest.split()]
        return Reply(tool_calls=calls)
    if word == "wait":
        return Reply("Waiting.", tool_calls=[Call("wait_for", {"name": rest})])
    if word == "hold":
        return Hold(gate(rest), Reply("held, then said", chunks=2), after_events=1)
    if word == "fail":
        return ValueError("the model broke")
    return Reply(f"Hello there: {said}", chunks=3)


agent = Agent(
    "You help.",
    ScriptedTransport([], then=answer),
    name="helper",
    tools=[add, delete_file, wait_for],
    approval=["delete_file"],
    max_iterations=6,
)
'''


def load_script() -> dict[str, Any]:
    """The scripted agent's module namespace (a fresh one per call)."""
    namespace: dict[str, Any] = {"__name__": "a2a_agent"}
    exec(compile(SCRIPT, "a2a_agent", "exec"), namespace)
    return namespace


@dataclass
class Served:
    """A server running in its own thread and event loop."""

    base: str
    loop: asyncio.AbstractEventLoop
    namespace: dict[str, Any] = field(default_factory=dict)

    def open_gate(self, name: str) -> None:
        gate = self.namespace["gate"]
        self.loop.call_soon_threadsafe(lambda: gate(name).set())


@contextmanager
def served_in_thread(
    app: Any, namespace: dict[str, Any] | None = None, closing: Any = None
) -> Iterator[Served]:
    """Serve ``app`` with uvicorn in a thread until the block ends; its base URL and loop.
    ``closing`` (a store the app was given, so not its own) is closed in the server's loop at
    the end: an open SQLite file would outlive the test (and its WAL file with it)."""
    listening = listen("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(
        target=loop.run_until_complete, args=(server.serve(sockets=[listening]),), daemon=True
    )
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive(), "the server did not start"
            threading.Event().wait(0.01)
        port = listening.getsockname()[1]
        yield Served(f"http://127.0.0.1:{port}", loop, namespace or {})
    finally:
        if closing is not None and thread.is_alive():
            asyncio.run_coroutine_threadsafe(closing.aclose(), loop).result(30)
        server.should_exit = True
        thread.join(30)
        loop.close()
        listening.close()


@asynccontextmanager
async def a2a_client(
    base: str, *, streaming: bool = True, binding: str = "JSONRPC", token: str | None = None
) -> AsyncIterator[Client]:
    """The SDK's client for the agent at ``base``, its card fetched and checked by the SDK."""
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=30, headers=headers) as http:
        config = ClientConfig(
            streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding]
        )
        client = await ClientFactory(config).create_from_url(base)
        try:
            yield client
        finally:
            await client.close()


def user_message(
    text: str | None = None,
    *,
    data: Any = None,
    task: str = "",
    context: str = "",
    message_id: str | None = None,
) -> SendMessageRequest:
    """A user's message: a text part or a data part, on a task (a follow-up) or new."""
    if data is not None:
        value = ParseDict(data, Value())
        parts = [Part(data=value)]
    else:
        parts = [Part(text=text or "")]
    message = Message(
        message_id=message_id or uuid.uuid4().hex,
        role=Role.ROLE_USER,
        parts=parts,
        task_id=task,
        context_id=context,
    )
    return SendMessageRequest(message=message)


async def events_of(client: Client, request: SendMessageRequest) -> list[dict[str, Any]]:
    """Every streamed response to ``request``, as JSON (camelCase)."""
    return [as_dict(event) async for event in client.send_message(request)]


def as_dict(event: StreamResponse | Task) -> dict[str, Any]:
    return MessageToDict(event)


def state_of(event: dict[str, Any]) -> str | None:
    """The task state a streamed response carries (a task or a status update)."""
    for key in ("task", "statusUpdate"):
        if key in event:
            return str(event[key]["status"]["state"])
    return None


async def task_of(client: Client, task_id: str) -> dict[str, Any]:
    return MessageToDict(await client.get_task(GetTaskRequest(id=task_id)))


def artifact_text(task: dict[str, Any]) -> list[str]:
    """Each artifact's text, its parts joined."""
    return ["".join(p.get("text", "") for p in a["parts"]) for a in task.get("artifacts", [])]


__all__ = [
    "Agent",
    "Call",
    "Hold",
    "Reply",
    "Request",
    "ScriptedTransport",
    "tool",
]
