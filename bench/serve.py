"""Many sessions streaming at once from one ``tether serve`` process: ``--sessions`` AG-UI runs
(``POST /agui``, each a new session) opened at the same moment against ``tether.serve.app`` under
uvicorn in a process of its own, on a scripted model that takes its time (a tool call that sleeps
100 ms, then 40 words of text in 20 deltas 5 ms apart). Every stream must end with RUN_FINISHED
and the whole text, and ``GET /api/sessions`` must list every session with its 4 messages.

Figures: time to the first event (RUN_STARTED) and to the last, from the moment all the requests
go out; streams per second; the server's CPU time per stream; its memory (VmRSS, from /proc)
after a warm-up and then with every stream held open at once (the model waits after its first
delta until this process releases it), the difference per open stream. Beside them,
the same streams from a bare Starlette SSE endpoint (same delays, same events, no agent and no
store) in a process of its own, as a baseline.

The tether server also serves A2A (``app(..., a2a=True)``, as ``tether serve --a2a``): the same
number of streams, at once, as A2A ``SendStreamingMessage`` requests (JSON-RPC at ``/a2a``) to the
same agent; each must end with a completed task whose streamed text is the whole text, and its
context must be stored as a session with its 4 messages. Their figures are printed beside the
AG-UI ones, and beside those of the bare ``a2a-sdk`` server in a process of its own (its
JSON-RPC routes, ``DefaultRequestHandlerV2``, ``InMemoryTaskStore``, an ``AgentExecutor`` sending
the events tether sends with the same delays; no agent, no store), so the A2A figure reads as
tether ÷ the SDK it is built on.

    python bench/serve.py                  # 200 sessions at once, 5 rounds
    python bench/serve.py --quick          # 100 sessions, 1 round (CI)
    python bench/serve.py --sessions 500   # more at once

Exits 1 when a stream (AG-UI or A2A) is lost or incomplete, a session is missing, or a server
writes anything to its stderr. Needs the ``serve`` and ``a2a`` extras.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tether import Agent, Message, StreamEvent, TextBlock, tool
from tether.events import IterationEnd, TextDelta, ToolInputDelta, ToolUseStart
from tether.types import StopReason, ToolSpec, Usage

TOOL_MS = 100  # the tool call's sleep
CHUNK_MS = 5  # between two text deltas
TEXT = (
    "Streams from one server process: each of these words reaches every client in order, "
    "twenty deltas a few milliseconds apart, while the other sessions stream theirs at the "
    "same time, and the whole reply is stored with the session for a later read of it."
)
CHUNKS = 20
MESSAGES = 4  # a session's messages after one run: user, tool call, tool result, answer
EXPECTED = [
    "RUN_STARTED",
    "MESSAGES_SNAPSHOT",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_RESULT",
    "TEXT_MESSAGE_START",
    *["TEXT_MESSAGE_CONTENT"] * CHUNKS,
    "TEXT_MESSAGE_END",
    "MESSAGES_SNAPSHOT",
    "RUN_FINISHED",
]
STREAM_TIMEOUT = 120  # seconds a stream may take before it counts as lost
HOLD, GO = "hold", "go"  # the user's message: wait after the first delta, or stream straight on


def pieces(text: str, count: int) -> list[str]:
    """``text`` in ``count`` consecutive pieces of about the same length."""
    size = -(-len(text) // count)
    return [text[i : i + size] for i in range(0, len(text), size)]


# The server side: run as ``python bench/serve.py --server tether|bare FOLDER``.


class Gate:
    """Where held streams wait; ``release`` lets every one waiting now go on."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    async def wait(self) -> None:
        await self._event.wait()

    def release(self) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()


class Paced:
    """The scripted model: the first call of a run calls ``wait``; the next streams ``TEXT`` in
    ``CHUNKS`` deltas ``CHUNK_MS`` apart (after the first, a run whose user said ``HOLD`` waits
    at the gate). Deterministic, and it keeps nothing of the requests it answers."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        if not messages[-1].tool_results:
            yield ToolUseStart(0, "call_1", "wait")
            yield ToolInputDelta(0, "call_1", json.dumps({"ms": TOOL_MS}))
            yield IterationEnd(0, StopReason.TOOL_USE, Usage(10, 5))
            return
        said = next(b.text for b in messages[0].content if isinstance(b, TextBlock))
        for number, piece in enumerate(pieces(TEXT, CHUNKS)):
            yield TextDelta(0, piece)
            if number == 0 and said == HOLD:
                await self.gate.wait()
            else:
                await asyncio.sleep(CHUNK_MS / 1000)
        yield IterationEnd(0, StopReason.END_TURN, Usage(20, CHUNKS))


@tool
async def wait(ms: int) -> str:
    """Wait ``ms`` milliseconds."""
    await asyncio.sleep(ms / 1000)
    return "waited"


def sse(event: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"


def bare_app(gate: Gate) -> Any:
    """The baseline: a hand-written Starlette SSE endpoint sending the events tether sends, with
    the same delays, and storing nothing."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    async def events(said: str) -> AsyncIterator[bytes]:
        thread, run = secrets.token_hex(16), secrets.token_hex(8)
        yield sse({"type": "RUN_STARTED", "threadId": thread, "runId": run})
        user = {"id": "s0", "role": "user", "content": said}
        yield sse({"type": "MESSAGES_SNAPSHOT", "messages": [user]})
        args = json.dumps({"ms": TOOL_MS})
        yield sse({"type": "TOOL_CALL_START", "toolCallId": "call_1", "toolCallName": "wait"})
        yield sse({"type": "TOOL_CALL_ARGS", "toolCallId": "call_1", "delta": args})
        yield sse({"type": "TOOL_CALL_END", "toolCallId": "call_1"})
        await asyncio.sleep(TOOL_MS / 1000)
        result = {"type": "TOOL_CALL_RESULT", "messageId": f"{run}-t1", "toolCallId": "call_1"}
        yield sse({**result, "content": "waited", "role": "tool"})
        message = f"{run}-m2"
        yield sse({"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"})
        for number, piece in enumerate(pieces(TEXT, CHUNKS)):
            yield sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": piece})
            if number == 0 and said == HOLD:
                await gate.wait()
            else:
                await asyncio.sleep(CHUNK_MS / 1000)
        yield sse({"type": "TEXT_MESSAGE_END", "messageId": message})
        call = {"id": "call_1", "type": "function", "function": {"name": "wait", "arguments": args}}
        stored = [
            user,
            {"id": "s1", "role": "assistant", "content": "", "toolCalls": [call]},
            {"id": "s2.0", "role": "tool", "toolCallId": "call_1", "content": "waited"},
            {"id": "s3", "role": "assistant", "content": TEXT},
        ]
        yield sse({"type": "MESSAGES_SNAPSHOT", "messages": stored})
        yield sse({"type": "RUN_FINISHED", "threadId": thread, "runId": run})

    async def agui(request: Request) -> Response:
        body = await request.json()
        said = body["messages"][-1]["content"]
        if not isinstance(said, str) or not said:
            return JSONResponse({"error": "no message"}, status_code=400)
        return StreamingResponse(events(said), media_type="text/event-stream")

    return Starlette(routes=[Route("/agui", agui, methods=["POST"])])


def sdk_app(gate: Gate) -> Any:
    """The A2A baseline: the bare ``a2a-sdk`` server (its JSON-RPC routes,
    ``DefaultRequestHandlerV2``, ``InMemoryTaskStore``) with an ``AgentExecutor`` that sends the
    events tether sends for one run, with the same delays: the task, ``working``, a tool call
    and its result as status updates, the text in the same chunks, the whole text as the last
    chunk, ``completed`` with the answer. No agent, no store."""
    from a2a.helpers.proto_helpers import new_task
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandlerV2
    from a2a.server.routes import create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types.a2a_pb2 import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        Part,
        Role,
        TaskState,
    )
    from a2a.types.a2a_pb2 import Message as A2AMessage
    from google.protobuf.json_format import ParseDict
    from google.protobuf.struct_pb2 import Value
    from starlette.applications import Starlette

    def said(text: str, task_id: str, context_id: str, data: Any = None) -> A2AMessage:
        parts = [Part(text=text)]
        if data is not None:
            parts.append(Part(data=ParseDict(data, Value())))
        return A2AMessage(
            message_id=secrets.token_hex(8),
            role=Role.ROLE_AGENT,
            parts=parts,
            task_id=task_id,
            context_id=context_id,
        )

    class Paced(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            assert context.message is not None and context.task_id and context.context_id
            task_id, context_id = context.task_id, context.context_id
            submitted = TaskState.TASK_STATE_SUBMITTED
            task = new_task(task_id, context_id, submitted, history=[context.message])
            await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task_id, context_id)
            await updater.start_work()
            call = {"id": "call_1", "name": "wait", "input": {"ms": TOOL_MS}}
            working = TaskState.TASK_STATE_WORKING
            await updater.update_status(
                working, said("calling wait", task_id, context_id, {"toolCall": call})
            )
            await asyncio.sleep(TOOL_MS / 1000)
            result = {"id": "call_1", "name": "wait", "isError": False, "content": "waited"}
            await updater.update_status(
                working, said("wait returned", task_id, context_id, {"toolResult": result})
            )
            text = "".join(m.parts[0].text for m in [context.message])
            for number, piece in enumerate(pieces(TEXT, CHUNKS)):
                await updater.add_artifact(
                    [Part(text=piece)], artifact_id="text-1", name="answer", append=number > 0
                )
                if number == 0 and text == HOLD:
                    await gate.wait()
                else:
                    await asyncio.sleep(CHUNK_MS / 1000)
            await updater.add_artifact(
                [Part(text=TEXT)], artifact_id="text-1", name="answer", last_chunk=True
            )
            await updater.complete(said(TEXT, task_id, context_id))

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            raise NotImplementedError

    card = AgentCard(
        name="paced",
        description="the bare a2a-sdk baseline",
        version="0",
        supported_interfaces=[
            AgentInterface(
                url="http://127.0.0.1/a2a", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="wait", name="wait", description="waits", tags=["tool"])],
    )
    handler = DefaultRequestHandlerV2(Paced(), InMemoryTaskStore(), card)
    return Starlette(routes=create_jsonrpc_routes(handler, "/a2a"))


async def serve(kind: str, folder: Path) -> None:
    """Serve on 127.0.0.1 (a free port, printed on stdout once listening); each ``release`` line
    on stdin releases the held streams; the end of stdin stops the server."""
    import uvicorn

    from tether.cli.serving import listen
    from tether.serve import app
    from tether.stores import SQLiteStore

    gate = Gate()
    store = SQLiteStore(folder / "chats.db") if kind == "tether" else None
    if store is not None:
        agent = Agent("You answer at length.", Paced(gate), tools=[wait])
        served = app(agent, store, a2a=True)
    elif kind == "sdk":
        served = sdk_app(gate)
    else:
        served = bare_app(gate)
    listening = listen("127.0.0.1", 0)  # as tether serve listens (TCP_NODELAY on connections)
    config = uvicorn.Config(served, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    loop = asyncio.get_running_loop()

    def commands() -> None:  # a thread: reading stdin blocks
        for line in sys.stdin:
            if line.strip() == "release":
                loop.call_soon_threadsafe(gate.release)
        loop.call_soon_threadsafe(setattr, server, "should_exit", True)

    task = asyncio.create_task(server.serve(sockets=[listening]))
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        print(listening.getsockname()[1], flush=True)
        threading.Thread(target=commands, daemon=True).start()
        await task
    finally:
        listening.close()
        if store is not None:
            await store.aclose()


# The client side.


class Server:
    """A server process of ``kind``: its port, its memory and CPU time, and its held streams."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind = kind
        self.log = folder / f"{kind}.stderr"
        self._err = self.log.open("wb")
        command = [sys.executable, str(Path(__file__).resolve()), "--server", kind, str(folder)]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
        )
        self.port = 0

    def ready(self) -> None:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"the {self.kind} server did not start:\n{self.said()}")
        self.port = int(line)

    def memory(self, key: str = "VmRSS") -> int:
        """KiB, from /proc (``VmRSS`` now, ``VmHWM`` the peak)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
        raise RuntimeError(f"no {key} for the {self.kind} server")

    def cpu(self) -> float:
        """Seconds of CPU it has used (user and system)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def release(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("release\n")
        self.process.stdin.flush()

    def stop(self) -> int | None:
        """Close its stdin (it stops), wait for it; kill it if it does not. Its exit status."""
        if self.process.poll() is None:
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()
                return self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
                return None
            finally:
                self._err.close()
        self._err.close()
        return self.process.returncode

    def said(self) -> str:
        return self.log.read_text(errors="replace").strip()


@dataclass(slots=True)
class Stream:
    """What one client read of one run."""

    first: float = float("nan")  # seconds from the round's start to the first event
    last: float = float("nan")  # to the last
    thread: str = ""
    types: list[str] = field(default_factory=list)
    text: str = ""
    problem: str = ""


async def events_of(
    port: int, body: bytes, path: str = "/agui", extra: str = ""
) -> AsyncIterator[dict[str, Any]]:
    """POST ``body`` to ``path`` (with the ``extra`` header lines) on a connection of its own;
    each event of the answer. HTTP/1.1 by hand: httpx spends more CPU on a stream than the server
    does, and on 2 cores the client would be what is measured."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n{extra}"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n".encode()
            + body
        )
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        if not head.startswith("http/1.1 200 "):
            raise RuntimeError(f"{head.splitlines()[0]}: {(await reader.read())[:200]!r}")
        if "content-type: text/event-stream" not in head:
            raise RuntimeError(f"not an event stream: {head!r}")
        chunked = "transfer-encoding: chunked" in head
        waiting = b""
        while True:
            if chunked:
                size = int(await reader.readline(), 16)
                piece = (await reader.readexactly(size + 2))[:-2]
            else:
                piece = await reader.read(65536)
            if not piece:
                break
            # sse-starlette (A2A) ends lines with CRLF, tether's AG-UI with LF
            *events, waiting = (waiting + piece).replace(b"\r\n", b"\n").split(b"\n\n")
            for event in events:
                data = [line[5:] for line in event.split(b"\n") if line.startswith(b"data:")]
                if data:
                    yield json.loads(b"\n".join(data))
        if waiting.strip():
            raise RuntimeError(f"the stream ended inside an event: {waiting[:200]!r}")
    finally:
        writer.close()


async def read_one(
    port: int, said: str, start: float, on_text: asyncio.Event | None = None
) -> Stream:
    """Ask for one run and read its stream to the end; ``on_text`` is set at its first delta
    (or at its end, if it has none)."""
    got = Stream()
    body = json.dumps({"messages": [{"id": "u1", "role": "user", "content": said}]}).encode()
    try:
        async with asyncio.timeout(STREAM_TIMEOUT):
            async for event in events_of(port, body):
                now = time.perf_counter() - start
                if not got.types:
                    got.first = now
                    got.thread = event.get("threadId", "")
                got.last = now
                got.types.append(event["type"])
                if event["type"] == "TEXT_MESSAGE_CONTENT":
                    got.text += event["delta"]
                    if on_text is not None:
                        on_text.set()
                        on_text = None
                elif event["type"] == "RUN_ERROR":
                    got.problem = f"RUN_ERROR: {event.get('message')}"
    except TimeoutError:
        got.problem = f"no end after {STREAM_TIMEOUT} s ({len(got.types)} events)"
    except (OSError, ValueError, RuntimeError, asyncio.IncompleteReadError) as exc:
        got.problem = f"{type(exc).__name__}: {exc}"
    finally:
        if on_text is not None:
            on_text.set()
    if not got.problem and got.types != EXPECTED:
        got.problem = f"events {got.types[:3]}...{got.types[-2:]} ({len(got.types)})"
    elif not got.problem and got.text != TEXT:
        got.problem = f"text {got.text[:40]!r}... ({len(got.text)} characters)"
    return got


A2A_DONE = "TASK_STATE_COMPLETED"


def a2a_body(said: str) -> bytes:
    """An A2A ``SendStreamingMessage`` request: a new task asking ``said``."""
    message = {"messageId": secrets.token_hex(8), "role": "ROLE_USER", "parts": [{"text": said}]}
    request = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage"}
    return json.dumps({**request, "params": {"message": message}}).encode()


async def read_a2a(port: int, start: float) -> Stream:
    """Ask for one A2A task and read its stream to the end: the task first, then status and
    artifact updates, the text as appended artifact chunks, the last a completed status."""
    got = Stream()
    try:
        async with asyncio.timeout(STREAM_TIMEOUT):
            extra = "a2a-version: 1.0\r\n"
            async for event in events_of(port, a2a_body(GO), "/a2a", extra):
                now = time.perf_counter() - start
                if not got.types:
                    got.first = now
                got.last = now
                if "error" in event:
                    got.problem = f"error: {event['error']}"
                    break
                _a2a_event(event["result"], got)
    except TimeoutError:
        got.problem = f"no end after {STREAM_TIMEOUT} s ({len(got.types)} events)"
    except (OSError, ValueError, RuntimeError, KeyError, asyncio.IncompleteReadError) as exc:
        got.problem = f"{type(exc).__name__}: {exc}"
    if not got.problem and (got.types[:1] != ["task"] or got.types[-1:] != [A2A_DONE]):
        got.problem = f"events {got.types[:3]}...{got.types[-2:]} ({len(got.types)})"
    elif not got.problem and got.text != TEXT:
        got.problem = f"text {got.text[:40]!r}... ({len(got.text)} characters)"
    return got


def _a2a_event(result: dict[str, Any], got: Stream) -> None:
    """Note one A2A stream response: its kind (a status update by its state), and the text its
    artifact chunks append (the last chunk, the whole text again, is checked, not added)."""
    if "task" in result:
        got.types.append("task")
        got.thread = result["task"]["contextId"]
    elif "statusUpdate" in result:
        got.types.append(result["statusUpdate"]["status"]["state"])
    elif "artifactUpdate" in result:
        update = result["artifactUpdate"]
        got.types.append("artifactUpdate")
        text = "".join(part.get("text", "") for part in update["artifact"]["parts"])
        if update.get("lastChunk"):
            if text != got.text:
                got.problem = f"the last chunk {text[:40]!r} is not the text streamed"
        else:
            got.text += text


@dataclass(slots=True)
class Figures:
    """One server's figures over the rounds."""

    streams: list[Stream] = field(default_factory=list)  # of the timed rounds
    rates: list[float] = field(default_factory=list)  # streams per second, each timed round
    cpu: float = 0.0  # the server's CPU seconds in the timed rounds
    held: list[Stream] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    idle_kib: int = 0
    open_kib: int = 0
    after_kib: int = 0
    peak_kib: int = 0

    def note(self, streams: list[Stream], label: str) -> None:
        for stream in streams:
            if stream.problem:
                self.problems.append(f"{label}: {stream.problem}")


async def timed_round(server: Server, count: int, figures: Figures) -> None:
    used = server.cpu()
    start = time.perf_counter()
    streams = await asyncio.gather(*(read_one(server.port, GO, start) for _ in range(count)))
    figures.rates.append(count / (time.perf_counter() - start))
    figures.cpu += server.cpu() - used
    figures.streams += streams
    figures.note(streams, "timed round")


async def a2a_round(server: Server, count: int, figures: Figures) -> None:
    used = server.cpu()
    start = time.perf_counter()
    streams = await asyncio.gather(*(read_a2a(server.port, start) for _ in range(count)))
    figures.rates.append(count / (time.perf_counter() - start))
    figures.cpu += server.cpu() - used
    figures.streams += streams
    figures.note(streams, "A2A round")


async def held_round(server: Server, count: int, figures: Figures) -> None:
    """``count`` streams held open at once after their first delta: the server's memory then,
    beside before; then released and read to the end."""
    figures.idle_kib = server.memory()
    flags = [asyncio.Event() for _ in range(count)]
    start = time.perf_counter()
    tasks = [asyncio.create_task(read_one(server.port, HOLD, start, flag)) for flag in flags]
    waiting = [asyncio.create_task(flag.wait()) for flag in flags]
    _, late = await asyncio.wait(waiting, timeout=60)
    for task in late:
        task.cancel()
    await asyncio.sleep(0.2)  # anything the server does after sending a delta, done
    figures.open_kib = server.memory()
    if late:
        figures.problems.append(f"held round: {len(late)} of {count} streams got no delta in 60 s")
    server.release()
    figures.held = list(await asyncio.gather(*tasks))
    figures.note(figures.held, "held round")


async def check_sessions(server: Server, streams: list[Stream], figures: Figures) -> None:
    """Every run's session is listed, with its ``MESSAGES`` messages, and none is running."""
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as http:
        answer = await http.get("/api/sessions")
    listed = {s["id"]: s for s in answer.json()}
    for stream in streams:
        if stream.problem:
            continue
        found = listed.get(stream.thread)
        if found is None:
            figures.problems.append(f"session {stream.thread!r} is not listed")
        elif found["messages"] != MESSAGES or found["running"]:
            figures.problems.append(f"session {stream.thread!r}: {found}")
    threads = [s.thread for s in streams]
    if len(set(threads)) != len(threads):
        figures.problems.append("two runs got the same session")


async def measure(every: dict[str, Server], count: int, rounds: int) -> dict[str, Figures]:
    """The figures of each kind: ``tether`` and ``bare`` (AG-UI), ``a2a`` (tether's A2A) and
    ``sdk`` (the bare a2a-sdk server's)."""
    sdk = every["sdk"]
    servers = {kind: every[kind] for kind in ("tether", "bare")}  # the AG-UI ones
    figures = {kind: Figures() for kind in (*servers, "a2a", "sdk")}
    warm: dict[str, list[Stream]] = {}
    for kind, server in servers.items():  # the first runs import and open what they use
        warm[kind] = [await read_one(server.port, GO, time.perf_counter()) for _ in range(3)]
        warm[kind] += await asyncio.gather(
            *(read_one(server.port, GO, time.perf_counter()) for _ in range(10))
        )
        figures[kind].note(warm[kind], "warm-up")
    tether = servers["tether"]
    warm["a2a"] = [await read_a2a(tether.port, time.perf_counter()) for _ in range(3)]
    figures["a2a"].note(warm["a2a"], "A2A warm-up")
    figures["sdk"].note([await read_a2a(sdk.port, time.perf_counter()) for _ in range(3)], "SDK")
    for kind, server in servers.items():
        await held_round(server, count, figures[kind])
    for number in range(rounds):  # in turn, each first every other round
        kinds = list(servers) if number % 2 == 0 else list(reversed(servers))
        for kind in kinds:
            await timed_round(servers[kind], count, figures[kind])
        a2a = [(tether, figures["a2a"]), (sdk, figures["sdk"])]
        for server, into in a2a if number % 2 == 0 else reversed(a2a):
            await a2a_round(server, count, into)
    for kind, server in servers.items():
        figures[kind].after_kib = server.memory()
        figures[kind].peak_kib = server.memory("VmHWM")
    every = warm["tether"] + figures["tether"].held + figures["tether"].streams
    await check_sessions(tether, every, figures["tether"])
    await check_sessions(tether, warm["a2a"] + figures["a2a"].streams, figures["a2a"])
    return figures


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered)) - 1))]


def report(figures: dict[str, Figures], count: int, rounds: int) -> None:
    tether, bare = figures["tether"], figures["bare"]

    def ms(f: Figures, which: str, p: float) -> float:
        done = [getattr(s, which) * 1000 for s in f.streams if not s.problem]
        return percentile(done, p) if done else float("nan")

    def per_stream(f: Figures) -> float:
        return (f.open_kib - f.idle_kib) / count

    rows: list[tuple[str, float, float, str]] = [
        ("first event p50, ms", ms(tether, "first", 50), ms(bare, "first", 50), ".0f"),
        ("first event p99, ms", ms(tether, "first", 99), ms(bare, "first", 99), ".0f"),
        ("last event p50, ms", ms(tether, "last", 50), ms(bare, "last", 50), ".0f"),
        ("last event p99, ms", ms(tether, "last", 99), ms(bare, "last", 99), ".0f"),
        (
            "streams per second",
            statistics.median(tether.rates),
            statistics.median(bare.rates),
            ".0f",
        ),
        (
            "server CPU per stream, ms",
            tether.cpu * 1000 / len(tether.streams),
            bare.cpu * 1000 / len(bare.streams),
            ".2f",
        ),
        ("server RSS idle, MiB", tether.idle_kib / 1024, bare.idle_kib / 1024, ".1f"),
        (f"RSS, {count} held open, MiB", tether.open_kib / 1024, bare.open_kib / 1024, ".1f"),
        ("KiB per open stream", per_stream(tether), per_stream(bare), ".0f"),
        ("RSS after all, MiB", tether.after_kib / 1024, bare.after_kib / 1024, ".1f"),
        ("peak RSS, MiB", tether.peak_kib / 1024, bare.peak_kib / 1024, ".1f"),
    ]
    print(
        f"{count} sessions streaming at once, {rounds} timed round(s) and 1 held open; "
        f"a {TOOL_MS} ms tool call, then {CHUNKS} deltas {CHUNK_MS} ms apart"
    )
    print("| | tether serve | bare Starlette SSE | ratio |")
    print("| --- | ---: | ---: | ---: |")
    lost = [len(f.problems) for f in (tether, bare)]
    done = " | ".join("yes" if n == 0 else f"no ({n} problems)" for n in lost)
    print(f"| all {count * (rounds + 1)} streams complete (and stored) | {done} | |")
    for label, mine, theirs, form in rows:
        ratio = f"{mine / theirs:.2f}" if theirs else "-"
        print(f"| {label} | {mine:{form}} | {theirs:{form}} | {ratio} |")
    report_a2a(tether, figures["a2a"], figures["sdk"], count, rounds)


def report_a2a(agui: Figures, a2a: Figures, sdk: Figures, count: int, rounds: int) -> None:
    """The A2A streams beside the AG-UI ones (the same agent, server and number at once), and
    beside the bare a2a-sdk server's (the same events and delays, no agent, no store)."""

    def ms(f: Figures, which: str, p: float) -> float:
        done = [getattr(s, which) * 1000 for s in f.streams if not s.problem]
        return percentile(done, p) if done else float("nan")

    def cpu(f: Figures) -> float:
        return f.cpu * 1000 / max(1, len(f.streams))

    def row(label: str, figure: Any, form: str) -> tuple[str, list[float], str]:
        return label, [figure(f) for f in (agui, a2a, sdk)], form

    rows = [
        row("first event p50, ms", lambda f: ms(f, "first", 50), ".0f"),
        row("first event p99, ms", lambda f: ms(f, "first", 99), ".0f"),
        row("last event p50, ms", lambda f: ms(f, "last", 50), ".0f"),
        row("last event p99, ms", lambda f: ms(f, "last", 99), ".0f"),
        row("streams per second", lambda f: statistics.median(f.rates), ".0f"),
        row("server CPU per stream, ms", cpu, ".2f"),
    ]
    print()
    print(
        f"the same server and agent: {count} AG-UI runs or {count} A2A tasks streaming at once; "
        "beside them, the bare a2a-sdk server (its own routes, DefaultRequestHandlerV2, "
        "InMemoryTaskStore) sending the same events with the same delays"
    )
    print(
        "| | AG-UI (POST /agui) | A2A (SendStreamingMessage) | bare a2a-sdk | "
        "A2A ÷ AG-UI | tether ÷ bare SDK |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    done = " | ".join(
        "yes" if not f.problems else f"no ({len(f.problems)})" for f in (agui, a2a, sdk)
    )
    print(f"| all {count * rounds} timed streams complete (and stored) | {done} | | |")
    for label, (first, second, third), form in rows:
        ratio = f"{second / first:.2f}" if first else "-"
        to_sdk = f"{second / third:.2f}" if third else "-"
        shown = " | ".join(f"{value:{form}}" for value in (first, second, third))
        print(f"| {label} | {shown} | {ratio} | {to_sdk} |")


def main(count: int, rounds: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 2 * count + 256  # a socket per stream on each side, and the rest
    if soft != resource.RLIM_INFINITY and soft < wanted:  # the servers inherit it
        raise_to = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raise_to, hard))
    with tempfile.TemporaryDirectory() as tmp:
        servers = {kind: Server(kind, Path(tmp)) for kind in ("tether", "bare", "sdk")}
        statuses: dict[str, int | None] = {}
        try:
            for server in servers.values():
                server.ready()
            figures = asyncio.run(measure(servers, count, rounds))
        except BaseException:
            for kind, server in servers.items():
                statuses[kind] = server.stop()
                print(f"the {kind} server wrote:\n{server.said()[-4000:]}", file=sys.stderr)
            raise
        finally:
            for kind, server in servers.items():
                if kind not in statuses:
                    statuses[kind] = server.stop()
        report(figures, count, rounds)
        failed = False
        for kind, server in servers.items():
            problems = figures[kind].problems + (
                figures["a2a"].problems if kind == "tether" else []
            )
            for problem in problems[:10]:
                print(f"{kind}: {problem}", file=sys.stderr)
            if len(problems) > 10:
                print(f"{kind}: ... {len(problems) - 10} more", file=sys.stderr)
            said = server.said()
            if said:
                print(f"the {kind} server wrote to stderr:\n{said[-4000:]}", file=sys.stderr)
            if statuses[kind] != 0:
                print(f"the {kind} server exited with {statuses[kind]}", file=sys.stderr)
            failed = failed or bool(problems or said) or statuses[kind] != 0
        return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 sessions, 1 round")
    parser.add_argument("--sessions", type=int, help="runs at once (default 200; 100 --quick)")
    parser.add_argument("--rounds", type=int, help="timed rounds (default 5; 1 --quick)")
    parser.add_argument("--server", nargs=2, metavar=("KIND", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.server:
        asyncio.run(serve(args.server[0], Path(args.server[1])))
        sys.exit(0)
    sessions = args.sessions or (100 if args.quick else 200)
    rounds = args.rounds or (1 if args.quick else 5)
    sys.exit(main(sessions, rounds))
