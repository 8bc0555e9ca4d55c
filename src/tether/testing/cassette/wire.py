"""Where a cassette sits: ``handle_async_request`` of the connection-pool transport of httpx (every
model transport, the local model) and of httpx2 (the MCP SDK's client), replaced while a cassette
is active. That is beneath every client tether makes, whenever and in whichever task it was made
(a durable run's activities included), and above the connection, where a streamed body still
arrives chunk by chunk."""

from __future__ import annotations

import asyncio
import base64
import importlib
import importlib.util
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import Any

__all__ = ["Handler", "Library", "install", "uninstall"]

_LIBRARIES = ("httpx", "httpx2")
_NOT_RECORDED = frozenset({
    "host", "user-agent", "content-length", "accept-encoding", "connection", "keep-alive",
    "transfer-encoding", "traceparent", "tracestate", "baggage", "date", "server", "alt-svc",
})  # fmt: skip

Send = Callable[[Any, Any], Awaitable[Any]]
Handler = Callable[["Library", Send, Any, Any], Awaitable[Any]]


class Library:
    """One HTTP library (httpx or httpx2): its classes, and how its requests and responses
    become records and records responses."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.pool: Any = module.AsyncHTTPTransport
        self.original: Any = self.pool.handle_async_request
        self.recording, self.replaying = _stream_classes(module)

    async def request_record(self, request: Any) -> dict[str, Any]:
        """``request`` as recorded, before any redaction (its body read, and kept readable)."""
        body = await request.aread()
        record: dict[str, Any] = {
            "method": request.method,
            "url": str(request.url),
            "headers": _headers(request.headers),
        }
        record.update(body_record(body))
        return record

    def replayed(self, response: dict[str, Any], kept: bool) -> Any:
        """A response of this library playing the recorded ``response``."""
        stream = self.replaying(response, kept)
        headers = list(response["headers"].items())
        return self.module.Response(response["status"], headers=headers, stream=stream)

    def failure(self, failure: dict[str, Any]) -> Exception:
        """The library's own exception for a recorded failure (a transport error)."""
        kind = getattr(self.module, str(failure.get("type")), None)
        if not (isinstance(kind, type) and issubclass(kind, self.module.TransportError)):
            kind = self.module.TransportError
        return kind(str(failure.get("message", "")))  # type: ignore[no-any-return]


def body_record(body: bytes) -> dict[str, Any]:
    """A body as recorded: its JSON, else its text, else its bytes in base64."""
    if not body:
        return {}
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(body).decode("ascii")}
    try:
        import json  # noqa: PLC0415 - json is cheap; kept beside its one use

        return {"json": json.loads(text)}
    except ValueError:
        return {"text": text}


def chunk_record(chunk: bytes, after: float) -> dict[str, Any]:
    """One streamed chunk as recorded: the seconds since the one before, its text (or bytes)."""
    seconds = round(after, 4)
    try:
        return {"after": seconds, "text": chunk.decode("utf-8")}
    except UnicodeDecodeError:
        return {"after": seconds, "base64": base64.b64encode(chunk).decode("ascii")}


def chunk_bytes(chunk: dict[str, Any]) -> bytes:
    if "text" in chunk:
        return str(chunk["text"]).encode("utf-8")
    return base64.b64decode(chunk["base64"])


def _headers(headers: Any) -> dict[str, str]:
    kept: dict[str, str] = {}
    for given, value in headers.multi_items():
        name = given.lower()
        if name not in _NOT_RECORDED:
            kept[name] = f"{kept[name]}, {value}" if name in kept else value
    return kept


def response_headers(response: Any) -> dict[str, str]:
    return _headers(response.headers)


def _stream_classes(module: ModuleType) -> tuple[Any, Any]:
    """The library's byte-stream classes that record a live body and replay a recorded one."""
    base: Any = module.AsyncByteStream

    class Recording(base):  # type: ignore[misc]
        """The live body, each chunk appended to ``response`` as it arrives."""

        def __init__(self, inner: Any, response: dict[str, Any]) -> None:
            self._inner = inner
            self._response = response

        async def __aiter__(self) -> AsyncIterator[bytes]:
            last = time.monotonic()
            try:
                async for chunk in self._inner:
                    now = time.monotonic()
                    self._response["chunks"].append(chunk_record(chunk, now - last))
                    last = now
                    yield chunk
            except Exception as exc:
                self._response["end"] = "error"
                self._response["error"] = {"type": type(exc).__name__, "message": str(exc)}
                raise
            self._response["end"] = "complete"

        async def aclose(self) -> None:
            await self._inner.aclose()

    class Replaying(base):  # type: ignore[misc]
        """The recorded body, chunk by chunk (each after its recorded pause when ``kept``)."""

        def __init__(self, response: dict[str, Any], kept: bool) -> None:
            self._response = response
            self._kept = kept

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in self._response["chunks"]:
                if self._kept and chunk["after"] > 0:
                    await asyncio.sleep(chunk["after"])
                yield chunk_bytes(chunk)
            end = self._response["end"]
            if end == "error":
                error = self._response.get("error", {})
                kind = getattr(module, str(error.get("type")), None)
                if not (isinstance(kind, type) and issubclass(kind, module.TransportError)):
                    kind = module.ReadError
                raise kind(str(error.get("message", "")))
            if end == "open":  # the server had not ended it when the client stopped reading
                await asyncio.Event().wait()

    return Recording, Replaying


def _available() -> list[ModuleType]:
    return [importlib.import_module(name) for name in _LIBRARIES if importlib.util.find_spec(name)]


_installed: list[Library] = []


def install(handler: Handler) -> None:
    """Route every request of both libraries' pool transports through ``handler``."""
    for module in _available():
        library = Library(module)

        async def handle(
            self: Any, request: Any, _library: Library = library
        ) -> Any:  # the pool transport's method, now the cassette's
            return await handler(_library, _library.original, self, request)

        library.pool.handle_async_request = handle
        _installed.append(library)


def uninstall() -> None:
    """Give each pool transport its own method back."""
    while _installed:
        library = _installed.pop()
        library.pool.handle_async_request = library.original
