"""Remote agents for tether's A2A client to call: real ``a2a-sdk`` servers (its request handler,
task store and JSON-RPC routes) and hostile ones, all in one Starlette app on uvicorn at
127.0.0.1 in a thread of its own, so a test's event loop is free to hang or be cancelled.

Each agent lives under its own path (``/echo``, ``/slow``, ...), its card at
``<path>/.well-known/agent-card.json``. ``Seen`` records what the servers received: contexts,
cancelled tasks and the ``Authorization`` headers by host."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from tether.cli.serving import listen


@dataclass
class Seen:
    """What the servers received."""

    contexts: list[str] = field(default_factory=list)  # the echo agent's, per message
    texts: list[str] = field(default_factory=list)  # the echo agent's user texts
    cancelled: list[str] = field(default_factory=list)  # task ids the slow agent was told
    started: list[str] = field(default_factory=list)  # task ids the slow agent began
    auth: list[tuple[str, str | None]] = field(default_factory=list)  # (host, Authorization)
    hostile: list[str] = field(default_factory=list)  # paths the hostile routes answered
    paths: list[str] = field(default_factory=list)  # every request's path

    def tokens_to(self, host: str) -> list[str]:
        return [a for h, a in self.auth if h == host and a is not None]


class Echo(AgentExecutor):
    """Streams its answer in three artifact chunks after a status note; keeps the context."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        text = context.get_user_input()
        self.seen.texts.append(text)
        task = context.current_task or new_task_from_user_message(context.message)
        self.seen.contexts.append(task.context_id)
        await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        note = new_text_message("reading the request", context_id=task.context_id, task_id=task.id)
        await up.start_work(note)
        turn = len([c for c in self.seen.contexts if c == task.context_id])
        for i, piece in enumerate(["echo: ", text, f" (turn {turn})"]):
            await up.add_artifact(
                [Part(text=piece)], artifact_id="answer", append=i > 0, last_chunk=i == 2
            )
        await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


class Slow(AgentExecutor):
    """Says it is working, then waits forever; a cancel is recorded and honoured."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        self.seen.started.append(task.id)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        await up.start_work(
            new_text_message("thinking hard", context_id=task.context_id, task_id=task.id)
        )
        await asyncio.sleep(3600)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        self.seen.cancelled.append(context.task_id)
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class Ends(AgentExecutor):
    """Ends its task as the user's text says: ``fail``, ``reject``, ``auth``, ``ask`` (input
    required, then answers with what it was told), or a direct message for anything else."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        text = context.get_user_input()
        if context.current_task is not None:  # the answer to a question: done with it
            task = context.current_task
            up = TaskUpdater(event_queue, task.id, task.context_id)
            await up.add_artifact([Part(text=f"the city is {text}")])
            await up.complete()
            return
        if text == "plain":
            reply = new_text_message("a plain message", context_id=context.context_id)
            await event_queue.enqueue_event(reply)
            return
        task = new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        ends = {
            "fail": (up.failed, "the database is down"),
            "reject": (up.reject, "I only talk about weather"),
            "auth": (up.requires_auth, "sign in at the portal"),
            "ask": (up.requires_input, "Which city?"),
        }
        end, words = ends.get(text, (up.failed, f"{text}: not understood"))
        await end(new_text_message(words, context_id=task.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def card(name: str, url: str, *, description: str = "", streaming: bool = True) -> AgentCard:
    """A 1.0 card for an agent answering JSON-RPC at ``url``."""
    return AgentCard(
        name=name,
        description=description or f"The {name} agent, for tests.",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        skills=[
            AgentSkill(
                id=f"{name}-main",
                name=f"{name} skill",
                description=f"What the {name} agent does best.",
                tags=["test"],
            )
        ],
    )


def sdk_agent(executor: AgentExecutor, agent_card: AgentCard) -> list[Any]:
    """The routes of an a2a-sdk server: its card and its JSON-RPC endpoint at ``/``."""
    handler = DefaultRequestHandlerV2(executor, InMemoryTaskStore(), agent_card)
    return [*create_agent_card_routes(agent_card), *create_jsonrpc_routes(handler, "/")]


# Hostile agents: a valid card, then answers no A2A server would give.


def _card_json(request: Request, url: str | None = None) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    base = str(request.base_url).rstrip("/") + request.scope.get("root_path", "")
    return MessageToDict(card("hostile", url or base + "/"))


def hostile(kind: str, seen: Seen) -> list[Any]:
    """A card, and a JSON-RPC endpoint that answers as ``kind`` says."""

    async def card_route(request: Request) -> Response:
        return JSONResponse(_card_json(request))

    async def rpc(request: Request) -> Response:
        seen.hostile.append(kind)
        asked = json.loads(await request.body())
        if asked.get("method") != "SendStreamingMessage":  # a cancel: refused, as A2A says
            error = {"code": -32002, "message": "Task cannot be canceled"}
            return JSONResponse({"jsonrpc": "2.0", "id": asked.get("id"), "error": error})
        return _HOSTILE[kind]()

    return [
        Route("/.well-known/agent-card.json", card_route),
        Route("/", rpc, methods=["POST"]),
    ]


def _sse(chunks: Callable[[], AsyncIterator[bytes]]) -> Response:
    return StreamingResponse(chunks(), media_type="text/event-stream")


async def _endless() -> AsyncIterator[bytes]:
    n = 0
    while True:
        n += 1
        update = {
            "jsonrpc": "2.0",
            "id": "x",
            "result": {
                "statusUpdate": {
                    "taskId": "t-endless",
                    "contextId": "c-endless",
                    "status": {"state": "TASK_STATE_WORKING"},
                }
            },
        }
        yield f"data: {json.dumps(update)}\n\n".encode()
        await asyncio.sleep(0.02)


async def _garbage_events() -> AsyncIterator[bytes]:
    yield b"data: {this is not json\n\n"


async def _huge_event() -> AsyncIterator[bytes]:
    yield b"data: " + b"x" * (1024 * 1024)
    while True:  # never a blank line: one event without end
        yield b"y" * (1024 * 1024)
        await asyncio.sleep(0)


async def _naive_times() -> AsyncIterator[bytes]:
    """A task answered in A2A 1.0's shapes with timestamps that name no time zone, as
    pydantic's fasta2a 2.1 writes them (``datetime.now().isoformat()``)."""
    ids = {"taskId": "t-naive", "contextId": "c-naive"}
    text = {"artifactId": "a", "parts": [{"text": "naive but fine"}]}
    results = [
        {
            "task": {
                "id": "t-naive",
                "contextId": "c-naive",
                "status": _naive("TASK_STATE_SUBMITTED"),
            }
        },
        {"statusUpdate": {**ids, "status": _naive("TASK_STATE_WORKING")}},
        {"artifactUpdate": {**ids, "artifact": text}},
        {"statusUpdate": {**ids, "status": _naive("TASK_STATE_COMPLETED")}},
    ]
    for result in results:
        yield f"data: {json.dumps({'jsonrpc': '2.0', 'id': 'x', 'result': result})}\n\n".encode()


def _naive(state: str) -> dict[str, Any]:
    return {"state": state, "timestamp": "2026-12-07T17:05:29.123456"}


async def _hangs() -> AsyncIterator[bytes]:
    await asyncio.sleep(3600)
    yield b""


_HOSTILE: dict[str, Callable[[], Response]] = {
    "500": lambda: Response("internal trouble", status_code=500),
    "garbage": lambda: Response(b"<html>not json", media_type="application/json"),
    "garbage-events": lambda: _sse(_garbage_events),
    "endless": lambda: _sse(_endless),
    "huge": lambda: _sse(_huge_event),
    "hangs": lambda: _sse(_hangs),
    "naive-times": lambda: _sse(_naive_times),
}


class Recorder:
    """ASGI middleware noting every request's host and Authorization header."""

    def __init__(self, app: ASGIApp, seen: Seen) -> None:
        self.app, self.seen = app, seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            host = headers.get(b"host", b"").decode().split(":")[0]
            auth = headers.get(b"authorization")
            self.seen.auth.append((host, None if auth is None else auth.decode()))
            self.seen.paths.append(scope["path"])
        await self.app(scope, receive, send)


def bad_cards() -> list[Any]:
    """Cards a client must refuse, each under ``/bad-<kind>``."""

    def good(request: Request) -> dict[str, Any]:
        return _card_json(request)

    def no_name(request: Request) -> dict[str, Any]:
        data = good(request)
        del data["name"]
        return data

    def old_only(request: Request) -> dict[str, Any]:
        data = good(request)
        for face in data["supportedInterfaces"]:
            face["protocolVersion"] = "0.3"
        return data

    def grpc_only(request: Request) -> dict[str, Any]:
        data = good(request)
        for face in data["supportedInterfaces"]:
            face["protocolBinding"] = "GRPC"
        return data

    shapes: dict[str, Callable[[Request], Any]] = {
        "no-name": no_name,
        "old-only": old_only,
        "grpc-only": grpc_only,
        "not-json": lambda r: None,
        "list": lambda r: [1, 2],
    }
    routes = []
    for kind, shape in shapes.items():

        async def route(request: Request, shape: Callable[[Request], Any] = shape) -> Response:
            body = shape(request)
            if body is None:
                return Response("<html>", media_type="application/json")
            return JSONResponse(body)

        routes.append(Mount(f"/bad-{kind}", routes=[Route("/.well-known/agent-card.json", route)]))
    return routes


def build(seen: Seen, port: int) -> Starlette:
    """Every agent of the tests, each under its path."""
    base = f"http://127.0.0.1:{port}"
    elsewhere = f"http://localhost:{port}"  # the same server under another host name
    mounts = [
        Mount("/echo", routes=sdk_agent(Echo(seen), card("echo", f"{base}/echo/"))),
        Mount("/slow", routes=sdk_agent(Slow(seen), card("slow", f"{base}/slow/"))),
        Mount("/ends", routes=sdk_agent(Ends(), card("ends", f"{base}/ends/"))),
        Mount(
            "/moved",  # its card sends calls to another host
            routes=sdk_agent(Echo(seen), card("moved", f"{elsewhere}/moved/")),
        ),
        Mount(
            "/unary",  # no streaming: the client sends and waits
            routes=sdk_agent(Echo(seen), card("unary", f"{base}/unary/", streaming=False)),
        ),
        *[Mount(f"/{kind}", routes=hostile(kind, seen)) for kind in _HOSTILE],
        *bad_cards(),
    ]
    return Starlette(routes=mounts)


@dataclass
class Remotes:
    """The running server: its base URL and what it saw."""

    base: str
    port: int
    seen: Seen

    def url(self, path: str) -> str:
        return f"{self.base}/{path}"


def _serve_in_thread(seen: Seen) -> Iterator[Remotes]:
    listening = listen("127.0.0.1", 0)
    port = listening.getsockname()[1]
    app = Recorder(build(seen, port), seen)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[listening])), daemon=True
    )
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the A2A test server did not start")
        threading.Event().wait(0.01)
    try:
        yield Remotes(f"http://127.0.0.1:{port}", port, seen)
    finally:
        server.should_exit = True
        server.force_exit = True  # streams that never end (endless, slow) are not waited for
        thread.join(30)
        listening.close()


def serving() -> Iterator[Remotes]:
    """Start the servers for a module's tests (a module-scoped fixture yields from this)."""
    yield from _serve_in_thread(Seen())
