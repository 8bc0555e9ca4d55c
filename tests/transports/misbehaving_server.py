"""A real HTTP/1.1 server on 127.0.0.1 that misbehaves on cue, for transport tests.

It speaks raw bytes over ``asyncio.start_server`` so a test controls framing and timing exactly:
chunked or connection-close SSE streams, error statuses with any headers and body, connections
dropped mid-stream, slow headers, a slow first byte, redirects. Every request is recorded.

    async with MisbehavingServer(rate_limited(retry_after="2"), sse_stream(events)) as server:
        ...  # point a transport at server.url; server.requests afterwards

Replies are played one per request, in order; the last one repeats when they run out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

__all__ = [
    "Conn",
    "MisbehavingServer",
    "Recorded",
    "Reply",
    "context_too_long",
    "dropped_stream",
    "echo_authorization",
    "echo_headers",
    "error_reply",
    "json_reply",
    "overloaded",
    "rate_limited",
    "raw_reply",
    "redirect",
    "reset_before_response",
    "reset_stream",
    "server_error",
    "silent_until_closed",
    "slow_first_byte",
    "slow_headers",
    "sse_body",
    "sse_stream",
    "unauthorized",
]

_REASONS = {
    200: "OK",
    307: "Temporary Redirect",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
    529: "Site Overloaded",
}


@dataclass(frozen=True)
class Recorded:
    """One request as the server read it; header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Conn:
    """What a reply writes to: the connection's streams."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def wait_for_client_close(self, limit: float = 10.0) -> None:
        """Hold the connection open until the client closes it (or ``limit`` passes)."""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(limit):
                while await self.reader.read(65536):
                    pass


Reply = Callable[[Conn, Recorded], Awaitable[bool]]
"""Writes one response; returns whether the connection may serve another request."""


def _head(status: int, headers: Iterable[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    lines.extend(f"{k}: {v}" for k, v in headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def sse_body(events: Sequence[str | bytes | dict[str, Any]]) -> list[bytes]:
    """Each event as its wire bytes: a dict becomes ``data: <json>``, str/bytes pass through as is
    (add your own framing), every dict event ends with a blank line."""
    out: list[bytes] = []
    for e in events:
        if isinstance(e, dict):
            out.append(b"data: " + json.dumps(e).encode() + b"\n\n")
        elif isinstance(e, str):
            out.append(e.encode())
        else:
            out.append(e)
    return out


def sse_stream(
    events: Sequence[str | bytes | dict[str, Any]],
    *,
    framing: Literal["chunked", "close"] = "chunked",
    delay: float = 0.0,
    hold: bool = False,
    drop: bool = False,
    first_byte_delay: float = 0.0,
    headers: Sequence[tuple[str, str]] = (),
) -> Reply:
    """A 200 ``text/event-stream``, one write per event.

    ``framing="close"`` sends no length and ends by closing the connection. ``hold`` keeps the
    stream open after the events until the client goes away; ``drop`` closes the socket after them
    without the terminating chunk. ``delay`` sleeps between events; ``first_byte_delay`` sleeps
    after the headers, before the first body byte.
    """
    pieces = sse_body(events)

    async def reply(conn: Conn, request: Recorded) -> bool:
        head = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), *headers]
        if framing == "chunked":
            head.append(("Transfer-Encoding", "chunked"))
        else:
            head.append(("Connection", "close"))
        await conn.send(_head(200, head))
        if first_byte_delay:
            await asyncio.sleep(first_byte_delay)
        for i, piece in enumerate(pieces):
            if delay and i:
                await asyncio.sleep(delay)
            await conn.send(_chunk(piece) if framing == "chunked" else piece)
        if hold:
            await conn.wait_for_client_close()
            return False
        if drop or framing == "close":
            return False
        await conn.send(b"0\r\n\r\n")
        return True

    return reply


def dropped_stream(events: Sequence[str | bytes | dict[str, Any]]) -> Reply:
    """Some events, then the socket closes without the terminating chunk."""
    return sse_stream(events, drop=True)


def slow_first_byte(delay: float, events: Sequence[str | bytes | dict[str, Any]]) -> Reply:
    """Headers at once, then nothing for ``delay`` seconds, then the events."""
    return sse_stream(events, first_byte_delay=delay)


def slow_headers(delay: float, then: Reply | None = None) -> Reply:
    """Read the request, say nothing for ``delay`` seconds, then play ``then`` (or hang up)."""

    async def reply(conn: Conn, request: Recorded) -> bool:
        await asyncio.sleep(delay)
        if then is None:
            return False
        return await then(conn, request)

    return reply


def error_reply(
    status: int,
    body: bytes | str | dict[str, Any] = b"",
    headers: Sequence[tuple[str, str]] = (),
) -> Reply:
    """A complete response with ``Content-Length``; the connection stays open."""
    if isinstance(body, dict):
        raw = json.dumps(body).encode()
        content_type = "application/json"
    else:
        raw = body.encode() if isinstance(body, str) else body
        content_type = "text/plain; charset=utf-8"

    async def reply(conn: Conn, request: Recorded) -> bool:
        head = [("Content-Type", content_type), ("Content-Length", str(len(raw))), *headers]
        await conn.send(_head(status, head) + raw)
        return True

    return reply


def json_reply(body: Any, status: int = 200) -> Reply:
    """A whole JSON response (the non-streaming mode)."""
    raw = json.dumps(body).encode()

    async def reply(conn: Conn, request: Recorded) -> bool:
        head = [("Content-Type", "application/json"), ("Content-Length", str(len(raw)))]
        await conn.send(_head(status, head) + raw)
        return True

    return reply


def raw_reply(data: bytes, *, close: bool = True) -> Reply:
    """Exactly these bytes (status line and headers included)."""

    async def reply(conn: Conn, request: Recorded) -> bool:
        await conn.send(data)
        return not close

    return reply


def rate_limited(
    retry_after: str | None = "2",
    *,
    retry_after_ms: str | None = None,
    message: str = "Rate limit reached for requests",
) -> Reply:
    """429 with ``Retry-After`` (seconds or an HTTP-date) and/or ``retry-after-ms``."""
    headers: list[tuple[str, str]] = []
    if retry_after is not None:
        headers.append(("Retry-After", retry_after))
    if retry_after_ms is not None:
        headers.append(("retry-after-ms", retry_after_ms))
    body = {"error": {"message": message, "type": "requests", "code": "rate_limit_exceeded"}}
    return error_reply(429, body, headers)


def server_error(status: int = 500, message: str = "The server had an error") -> Reply:
    return error_reply(status, {"error": {"message": message, "type": "server_error"}})


def overloaded() -> Reply:
    """503 whose body says the provider is overloaded."""
    return error_reply(
        503, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )


def unauthorized(message: str = "Incorrect API key provided.") -> Reply:
    return error_reply(
        401,
        {"error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}},
    )


def context_too_long() -> Reply:
    return error_reply(
        400,
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, your "
                "messages resulted in 9000 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
    )


def redirect(location: str, status: int = 307) -> Reply:
    return error_reply(status, b"", [("Location", location)])


def echo_authorization(status: int = 401) -> Reply:
    """An error whose body repeats the request's Authorization header (as careless proxies do)."""

    async def reply(conn: Conn, request: Recorded) -> bool:
        said = request.headers.get("authorization", "")
        raw = json.dumps({"error": {"message": f"bad credentials: {said}"}}).encode()
        head = [("Content-Type", "application/json"), ("Content-Length", str(len(raw)))]
        await conn.send(_head(status, head) + raw)
        return True

    return reply


def echo_headers(status: int = 400) -> Reply:
    """An error whose message repeats every request header (as a debugging proxy might)."""

    async def reply(conn: Conn, request: Recorded) -> bool:
        said = "; ".join(f"{k}={v}" for k, v in request.headers.items())
        raw = json.dumps({"error": {"message": f"rejected headers: {said}"}}).encode()
        head = [("Content-Type", "application/json"), ("Content-Length", str(len(raw)))]
        await conn.send(_head(status, head) + raw)
        return True

    return reply


def _reset(conn: Conn) -> None:
    """Abort the connection with a TCP RST (SO_LINGER 0), not an orderly FIN."""
    sock = conn.writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.writer.transport.abort()


def reset_before_response() -> Reply:
    """Read the request, then reset the connection (RST) before a byte of the response."""

    async def reply(conn: Conn, request: Recorded) -> bool:
        _reset(conn)
        return False

    return reply


def reset_stream(events: Sequence[str | bytes | dict[str, Any]], *, settle: float = 0.05) -> Reply:
    """A chunked 200 ``text/event-stream`` with these events (maybe none), then, ``settle``
    seconds later (time for the client to read them), a connection reset (RST)."""
    pieces = sse_body(events)

    async def reply(conn: Conn, request: Recorded) -> bool:
        head = [
            ("Content-Type", "text/event-stream"),
            ("Cache-Control", "no-cache"),
            ("Transfer-Encoding", "chunked"),
        ]
        await conn.send(_head(200, head))
        for piece in pieces:
            await conn.send(_chunk(piece))
        await asyncio.sleep(settle)
        _reset(conn)
        return False

    return reply


def silent_until_closed() -> Reply:
    """Read the request and say nothing, not even a status line, until the client hangs up."""

    async def reply(conn: Conn, request: Recorded) -> bool:
        await conn.wait_for_client_close()
        return False

    return reply


class MisbehavingServer:
    """The server; ``url`` is ``http://127.0.0.1:<port>``. Use as an async context manager."""

    def __init__(self, *replies: Reply) -> None:
        self.replies: list[Reply] = list(replies)
        self.requests: list[Recorded] = []
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def open_connections(self) -> int:
        """Connections the server holds open right now."""
        return len(self._writers)

    def script(self, *replies: Reply) -> None:
        """Replace what the next requests get."""
        self.replies = list(replies)

    def _next_reply(self) -> Reply:
        if not self.replies:
            return error_reply(500, b"no reply scripted")
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    async def start(self) -> MisbehavingServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def __aenter__(self) -> MisbehavingServer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)  # type: ignore[arg-type]
        self._writers.add(writer)
        self.connections += 1
        conn = Conn(reader, writer)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                self.requests.append(request)
                if not await self._next_reply()(conn, request):
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            pass  # stop() cancels what is still sleeping; end quietly, as a finished task
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]
            self._writers.discard(writer)
            writer.transport.abort()


async def _read_request(reader: asyncio.StreamReader) -> Recorded | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None  # the client closed the connection between requests
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = b""
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(parts)
    return Recorded(method, path, headers, body)
