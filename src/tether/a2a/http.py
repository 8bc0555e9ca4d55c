"""The HTTP client an ``A2AAgent`` talks through (httpx, as the SDK's client is): its token only
to the card's own origin, and every answer held to a size, so a hostile server's endless body or
endless event cannot fill memory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator

import httpx

from ..transports.credentials import same_origin

__all__ = ["MAX_ANSWER_BYTES", "agent_client"]

MAX_ANSWER_BYTES = 16 * 1024 * 1024  # a plain answer, or one event of a stream


def agent_client(origin: str, token: str | None, timeout: float) -> httpx.AsyncClient:
    """A client for the agent whose card is at ``origin``: ``token`` goes as a bearer token to
    that origin only (never to an interface or a redirect on another host)."""
    return httpx.AsyncClient(
        auth=_ScopedBearer(origin, token) if token else None,
        transport=_Capped(httpx.AsyncHTTPTransport(), MAX_ANSWER_BYTES),
        timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
        follow_redirects=False,
    )


class _ScopedBearer(httpx.Auth):
    """``Authorization: Bearer <token>`` on requests to ``origin``, on nothing else."""

    def __init__(self, origin: str, token: str) -> None:
        self._origin = origin
        self._header = f"Bearer {token}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if same_origin(str(request.url), self._origin):
            request.headers["Authorization"] = self._header
        yield request


class _Capped(httpx.AsyncBaseTransport):
    """``inner`` with each answer cut off (``httpx.StreamError``) past ``limit`` bytes, or, for
    an event stream, past ``limit`` bytes in one event."""

    def __init__(self, inner: httpx.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        events = response.headers.get("content-type", "").startswith("text/event-stream")
        if isinstance(response.stream, httpx.AsyncByteStream):
            response.stream = _Bounded(response.stream, self._limit, events)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Bounded(httpx.AsyncByteStream):
    def __init__(self, stream: httpx.AsyncByteStream, limit: int, events: bool) -> None:
        self._stream, self._limit, self._events = stream, limit, events

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._stream:
            seen += len(chunk)
            if self._events:  # count from the last event's end (a blank line)
                end = max(chunk.rfind(b"\n\n"), chunk.rfind(b"\r\n\r\n"))
                if end >= 0:
                    seen = len(chunk) - end
            if seen > self._limit:
                what = "one event of its stream" if self._events else "its answer"
                raise httpx.StreamError(
                    f"the remote agent sent more than {self._limit} bytes in {what}; "
                    "the rest was not read"
                )
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()
