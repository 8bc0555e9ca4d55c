"""The browser step's way back (RFC 8252, a native app's loopback redirect): a listener on
127.0.0.1 that takes the one redirect carrying the authorization code, answers the browser with
a short page, and hands the code and state on (one redirect per browser step: a login whose
server asks for more scope at once takes another). Anything else is answered 404."""

from __future__ import annotations

import asyncio
import contextlib
import html
from urllib.parse import parse_qs, urlsplit

from .server import McpError

__all__ = ["Redirect", "RedirectRefused"]

_PATH = "/callback"
_MAX_REQUEST = 16_384  # bytes of a request line and headers
_DONE = "You are logged in. You may close this window and go back to the terminal."


class RedirectRefused(McpError):
    """The authorization server sent the person back with an error instead of a code."""


class Redirect:
    """A listener for the redirect back from the authorization server; ``uri`` is where to
    send it once ``open`` has bound a port (``port``, or a free one when 0)."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[dict[str, str]] | None = None
        self._state: str | None = None

    def expect(self, authorization_url: str) -> None:
        """Take only the redirect carrying the ``state`` of ``authorization_url``: another
        program on this machine that calls the listener first is turned away."""
        states = parse_qs(urlsplit(authorization_url).query).get("state")
        self._state = states[0] if states else None
        if self._result is not None and self._result.done():  # a login's next browser step
            self._result = asyncio.get_running_loop().create_future()

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{_PATH}"

    async def open(self) -> None:
        """Bind 127.0.0.1 (``OSError`` when the port is taken)."""
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()

    async def wait(self) -> dict[str, str]:
        """The redirect's query (``code``, ``state``, ``iss``); ``RedirectRefused`` when the
        authorization server sent an error."""
        assert self._result is not None, "open the listener first"
        return await asyncio.shield(self._result)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            writer.close()
            return
        line = head[:_MAX_REQUEST].split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = line.partition(" ")
        target = rest.rpartition(" ")[0]
        parts = urlsplit(target)
        if method != "GET" or parts.path != _PATH or self._result is None or self._result.done():
            await _answer(writer, 404, "Not here.")
            return
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if self._state is not None and query.get("state") != self._state:
            await _answer(writer, 400, "This redirect is not the one of this login.")
            return
        if "error" in query:
            why = query.get("error_description") or query["error"]
            self._result.set_exception(
                RedirectRefused(f"the authorization server refused the login: {why}")
            )
            await _answer(writer, 400, f"The login was refused: {why}")
            return
        if "code" not in query:
            await _answer(writer, 400, "This redirect carries no authorization code.")
            return
        self._result.set_result(query)
        await _answer(writer, 200, _DONE)


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    body = f"<!doctype html><title>tether</title><p>{html.escape(text)}</p>".encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/html; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n"
    )
    writer.write(head.encode() + body)
    with contextlib.suppress(Exception):
        await writer.drain()
    writer.close()
