"""A login to an MCP server (``OAuth.login``, ``tether mcp login``): the browser step, then one
connection through the new tokens to prove they work, which keeps them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from .loopback import Redirect
from .server import McpError
from .tokenfile import TokenStore

if TYPE_CHECKING:
    from .oauthflow import LoginSteps

__all__ = ["log_in"]


class Logging(Protocol):
    """What a login needs of ``OAuth``: where its tokens are kept, and the SDK's provider
    (with the browser step ``steps``)."""

    def keeper(self, url: str) -> TokenStore: ...

    def provider(self, url: str, label: str, steps: LoginSteps | None = None) -> Any: ...


async def log_in(
    oauth: Logging, url: str, browser: Callable[[str], Any], port: int, within: float
) -> int:
    """Log in to ``url`` (see ``OAuth.login``); the number of tools the server offers."""
    from mcp.shared.auth import AuthorizationCodeResult  # noqa: PLC0415

    from .oauthflow import LoginSteps  # noqa: PLC0415
    from .streamable import McpStreamable  # noqa: PLC0415

    server = McpStreamable(url, auth=oauth, connect_timeout=within)
    redirect = await _listening(port or await _kept_port(oauth, url), given=port != 0)

    async def show(authorization_url: str) -> None:
        redirect.expect(authorization_url)
        shown = browser(authorization_url)
        if inspect.isawaitable(shown):
            await shown

    async def back() -> Any:
        query = await redirect.wait()
        return AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )

    provider = oauth.provider(url, server.label, LoginSteps(redirect.uri, show, back))
    try:
        server.use_provider(provider)
        async with server:
            if provider.failure is not None:  # a later browser step of this login failed
                raise provider.failure
            if not provider.storage.logged_in:
                raise McpError(
                    f"the MCP server at {server.label} did not ask for a login (it answered "
                    "without one): use it without auth="
                )
            return len(server.tools)
    finally:
        await redirect.close()


async def _listening(port: int, *, given: bool) -> Redirect:
    """The redirect listener on ``port``; a port not ``given`` that is taken gives way to a
    free one (the client is then registered anew)."""
    redirect = Redirect(port)
    try:
        await redirect.open()
    except OSError as exc:
        if given or port == 0:
            raise McpError(
                f"cannot take the login's redirect on 127.0.0.1:{port}: {exc.strerror}; "
                "choose another port"
            ) from None
        redirect = Redirect(0)
        await redirect.open()
    return redirect


async def _kept_port(oauth: Logging, url: str) -> int:
    """The loopback port of the kept registration's redirect URI (0 when there is none), so
    a second login reuses the registration."""
    record = await oauth.keeper(url).load() or {}
    client = record.get("client")
    uris = client.get("redirect_uris") if isinstance(client, dict) else None
    for uri in uris if isinstance(uris, list) else ():
        parts = urlsplit(str(uri))
        if parts.hostname == "127.0.0.1" and parts.port:
            return parts.port
    return 0
