"""Who may reach an agent served over Streamable HTTP: an ASGI layer in front of the SDK's app.

As the MCP specification asks against DNS rebinding, a request naming a host (``Host``) that is
neither loopback nor the address the server was bound to gets 421, and one from a web page of
another origin (``Origin``) gets 403. With a token (required off loopback) every request must
carry ``Authorization: Bearer <token>``, compared in constant time; without it, 401.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from ..base.hosts import is_loopback

__all__ = ["HttpGuard", "is_loopback"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_MIN_TOKEN = 16  # characters


def _hostname(value: str) -> str:
    """The host of a ``Host`` header or URL netloc (``[::1]:8000`` -> ``::1``), lower case."""
    if value.startswith("["):
        return value[1:].split("]", 1)[0].lower()
    return (value.rsplit(":", 1)[0] if value.count(":") == 1 else value).lower()


class HttpGuard:
    """ASGI middleware: the Host, Origin and token checks before ``app`` sees a request."""

    def __init__(self, app: ASGIApp, token: str | None, host: str) -> None:
        self.app = app
        self.token = token
        self.hosts = {"localhost", "127.0.0.1", "::1", _hostname(host)}

    @staticmethod
    def checked(token: str | None, host: str) -> tuple[str | None, str]:
        """``(token, host)`` if a server may run with them; ``ValueError`` saying why not."""
        if token is not None and len(token) < _MIN_TOKEN:
            raise ValueError(f"an MCP server token needs at least {_MIN_TOKEN} characters")
        if token is None and not is_loopback(host):
            raise ValueError(
                f"serving on {host!r}, which is not loopback, needs a token: every client must "
                "then send it as 'Authorization: Bearer <token>'"
            )
        return token, host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the SDK's session manager starts and stops
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(headers)
        if refusal is not None:
            await _reply(send, *refusal)
            return
        await self.app(scope, receive, send)

    def _refusal(self, headers: dict[str, str]) -> tuple[int, str, bool] | None:
        host = headers.get("host", "")
        if self.token is None and _hostname(host) not in self.hosts:
            return 421, f"this server does not answer to the host {host!r}", False
        origin = headers.get("origin")
        if origin is not None and not self._same_machine(origin, host):
            return 403, f"requests from the origin {origin!r} are not accepted", False
        if self.token is not None and not self._carries_token(headers):
            return 401, "this server needs its token: send 'Authorization: Bearer <token>'", True
        return None

    def _same_machine(self, origin: str, host: str) -> bool:
        """An origin of this server's own host, or of loopback (a local tool's page)."""
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        named = _hostname(parts.netloc)
        return is_loopback(named) or named in self.hosts or parts.netloc.lower() == host.lower()

    def _carries_token(self, headers: dict[str, str]) -> bool:
        assert self.token is not None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        same = hmac.compare_digest(given.strip().encode(), self.token.encode())
        return scheme.lower() == "bearer" and same


async def _reply(send: Send, status: int, message: str, challenge: bool) -> None:
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
    if challenge:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
