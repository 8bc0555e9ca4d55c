"""``Remote``: where a remote agent is and how to reach it: its address, the token for its own
host, how long a call may take, and its card, fetched once and kept."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

from ..transports.credentials import same_origin
from .card import card_address, chosen_interface, fetch_card
from .http import agent_client
from .lenient import lenient_jsonrpc

__all__ = ["Remote"]

log = logging.getLogger("tether.a2a")


class Remote:
    """The remote agent at ``url`` (its card at ``<url>/.well-known/agent-card.json``)."""

    __slots__ = ("_card", "on_card", "timeout", "token", "url")

    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"A2AAgent: {url!r} is not an http(s) address of an agent")
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                "A2AAgent: the address carries a login; give the credential as token= instead, "
                "so it goes only to the agent's own host and stays out of messages"
            )
        if not timeout > 0:
            raise ValueError("A2AAgent: timeout must be > 0 seconds")
        if token is not None and (not isinstance(token, str) or not token.strip()):
            raise ValueError("A2AAgent: token must be a non-empty string (or None)")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = float(timeout)
        self._card: Any = None
        self.on_card: Callable[[Any], None] | None = None  # told the card once it is fetched

    @property
    def known(self) -> Any:
        """The card, once fetched (None before)."""
        return self._card

    def label(self) -> str:
        """How messages name the agent: by its card's name once known, else its address."""
        if self._card is not None:
            return f"the remote agent {self._card.name!r}"
        return f"the remote agent at {self.url}"

    async def card(self) -> Any:
        """The checked card, fetched on first use and kept (a failure is not kept: the next use
        tries again)."""
        if self._card is None:
            async with agent_client(self.url, self.token, self.timeout) as http:
                self._card = await fetch_card(http, self.url)
            if self.on_card is not None:
                self.on_card(self._card)
        return self._card

    @asynccontextmanager
    async def client(self) -> AsyncIterator[Any]:
        """The SDK's client for one call, on the card's chosen interface; its HTTP client is
        closed when the block ends."""
        from a2a.client import ClientConfig, ClientFactory  # noqa: PLC0415

        card = await self.card()
        face = chosen_interface(card, card_address(self.url))
        if self.token is not None and not same_origin(face.url, self.url):
            log.warning(
                "%s: its card sends calls to another host (%s); its token is not sent there",
                self.label(),
                urlsplit(face.url).netloc,
            )
        pinned = type(card)()
        pinned.CopyFrom(card)
        del pinned.supported_interfaces[:]
        pinned.supported_interfaces.append(face)  # the interface chosen here, no other
        async with agent_client(self.url, self.token, self.timeout) as http:
            config = ClientConfig(
                httpx_client=http, supported_protocol_bindings=[face.protocol_binding]
            )
            factory = ClientFactory(config)
            factory.register("JSONRPC", lenient_jsonrpc)
            yield factory.create(pinned)
