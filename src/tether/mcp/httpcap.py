"""An HTTP transport that holds every answer that is not an event stream to ``limit`` bytes: past
that, reading it fails (the SDK answers the request with an error) instead of holding a hostile
server's endless body in memory. Event streams are bounded per event by the SDK itself."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2  # the MCP SDK's HTTP client: import this module only with the SDK loaded

__all__ = ["CappedTransport"]


class CappedTransport(httpx2.AsyncBaseTransport):
    """``inner`` with each plain answer cut off (``httpx2.StreamError``) past ``limit`` bytes."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return response
        stream = response.stream
        if isinstance(stream, httpx2.AsyncByteStream):
            response.stream = _Capped(stream, self._limit)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Capped(httpx2.AsyncByteStream):
    def __init__(self, stream: httpx2.AsyncByteStream, limit: int) -> None:
        self._stream = stream
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._stream:
            seen += len(chunk)
            if seen > self._limit:
                raise httpx2.StreamError(
                    f"the server's answer was longer than the {self._limit} bytes a message "
                    "may have, and was dropped"
                )
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()
