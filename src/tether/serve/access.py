"""Who may use the server: an ASGI layer in front of every route.

Without a token (the server binds 127.0.0.1) only requests naming a loopback host get in, so a
web page elsewhere cannot reach the server through a rebound DNS name. With a token, a request
carries it as ``Authorization: Bearer <token>`` or in the cookie a one-time login link sets;
every comparison is in constant time. Either way a request that changes something must come from
the server's own page: no cross-site ``Origin`` or ``Sec-Fetch-Site``, unless its ``Origin`` is
one the server was told to allow (``cors``): then its preflight is answered and its answers carry
the headers that let that page read them.
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..base.hosts import is_loopback
from .cookies import cookie_values
from .cors import checked_origins, preflight_headers

__all__ = ["COOKIE", "Access", "Guard", "is_loopback"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "tether_token"
_COOKIE_SAFE = re.compile(r"[A-Za-z0-9\-_.~+/=]+")  # what a cookie value holds unquoted
LOGIN = "/login"
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def _hostname(value: str) -> str:
    """The host of a ``Host`` header value (``[::1]:8000`` -> ``[::1]``)."""
    if value.startswith("["):
        return value.split("]", 1)[0] + "]"
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


class Access:
    """The server's token (None: loopback only) and its one-time login codes."""

    __slots__ = ("_codes", "origins", "token")

    def __init__(self, token: str | None, origins: Sequence[str] = ()) -> None:
        """``origins``: the other origins whose pages may use the server (``--allow-origin``)."""
        if token is not None and len(token) < 16:
            raise ValueError("a server token needs at least 16 characters")
        if token is not None and not _COOKIE_SAFE.fullmatch(token):
            raise ValueError("a server token is letters, digits and - _ . ~ + / = only")
        self.token = token
        self.origins = checked_origins(origins)
        self._codes: list[str] = []

    def login_code(self) -> str:
        """A new code for one login link (``/login?code=...``): it works once."""
        if self.token is None:
            raise ValueError("a server without a token has no login links")
        code = secrets.token_urlsafe(24)
        self._codes.append(code)
        return code

    def redeem(self, code: str) -> bool:
        """Use up ``code``; whether it was a live one. Every live code is compared, in
        constant time, so how long this takes says nothing about which was near."""
        found = None
        for live in self._codes:
            if _same(code, live):
                found = live
        if found is None:
            return False
        self._codes.remove(found)
        return True

    def admits(self, headers: dict[str, str], cookies: Sequence[str]) -> bool:
        """Whether a request with ``headers`` and ``Cookie`` headers ``cookies`` carries the
        token (always, without one)."""
        if self.token is None:
            return True
        bearer = headers.get("authorization", "")
        scheme, _, given = bearer.partition(" ")
        if scheme.lower() == "bearer" and _same(given.strip(), self.token):
            return True
        # another app on this host may have set a cookie of the same name (a browser sends it
        # too, before ours if its path is longer or it is older): any that holds the token
        # admits, and every one is compared in constant time (no early exit on a match)
        held = [_same(value, self.token) for value in cookie_values(cookies, COOKIE)]
        return any(held)


class Guard:
    """ASGI middleware: the checks of ``Access`` before ``app`` sees a request."""

    def __init__(self, app: ASGIApp, access: Access, public: frozenset[str] = frozenset()) -> None:
        """``public``: paths anyone may GET without the token (the A2A agent card)."""
        self.app = app
        self.access = access
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        cookies = [v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"cookie"]
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _reply(send, *refusal)
            return
        allowed = self._allowed(headers)
        if allowed is not None and scope["method"] == "OPTIONS":
            asked = headers.get("access-control-request-headers", "")
            await send(
                {
                    "type": "http.response.start",
                    "status": 204,
                    "headers": preflight_headers(allowed, asked),
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        if allowed is not None:
            send = _readable_by(allowed, send)
        if scope["path"] == LOGIN and self.access.token is not None:
            await self._login(scope, send)
            return
        if not self._open(scope) and not self.access.admits(headers, cookies):
            await _reply(send, 401, "this server needs its token: open the login link it printed")
            return
        await self.app(scope, receive, send)

    def _open(self, scope: Scope) -> bool:
        return scope["path"] in self.public and scope["method"] in ("GET", "HEAD")

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        host = headers.get("host", "")
        if self.access.token is None and not is_loopback(_hostname(host)):
            return 421, f"this server answers to 127.0.0.1 and localhost only, not {host!r}"
        if scope["method"] in _SAFE or self._allowed(headers) is not None:
            return None
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return 403, "a cross-site request cannot change anything here"
        origin = headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != host:
            return 403, f"requests from {origin!r} cannot change anything here"
        return None

    def _allowed(self, headers: dict[str, str]) -> str | None:
        """The request's ``Origin`` when it is one the server was told to allow."""
        origin = headers.get("origin")
        if origin is None or origin.lower() not in self.access.origins:
            return None
        return origin

    async def _login(self, scope: Scope, send: Send) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        code = (query.get("code") or [""])[0]
        if not self.access.redeem(code):
            await _reply(send, 403, "this login link was used already or is not one of ours")
            return
        token = self.access.token or ""
        cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", b"/"),
                    (b"set-cookie", cookie.encode()),
                    (b"cache-control", b"no-store"),
                    (b"referrer-policy", b"no-referrer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _readable_by(origin: str, send: Send) -> Send:
    """``send`` with the headers that let a page of the allowed ``origin`` read the answer."""

    async def sending(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            extra = [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"vary", b"Origin"),
            ]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending


async def _reply(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-store")],
        }
    )
    await send({"type": "http.response.body", "body": body})
