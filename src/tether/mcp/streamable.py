"""``McpStreamable``: an MCP server over Streamable HTTP. Its credentials go to its own URL only:
redirects are not followed. No message from it may pass ``MAX_MESSAGE`` bytes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol
from urllib.parse import urlsplit

from .elicitation import OnElicit
from .limits import MAX_MESSAGE
from .prefix import host_prefix, prefix_of
from .sampling import Sampling
from .server import McpError, McpServer

__all__ = ["HttpAuth", "McpStreamable"]


class HttpAuth(Protocol):
    """What ``auth=`` takes (``OAuth``): the SDK's httpx2 ``Auth`` for connections to ``url``
    (``label`` names the server in what it says)."""

    def provider(self, url: str, label: str) -> Any: ...


class McpStreamable(McpServer):
    """The MCP server at ``url``; ``token`` is sent as a bearer token, ``headers`` as given.
    Its ``auto_prefix`` is ``name``, else its host (``mcp.example.com`` is
    ``mcp_example_com``); its ``prefix`` is ``name``, else ``name_prefix``, else the name the
    server gives itself on connecting, else its host. With ``name_prefix`` every tool is
    offered as ``{name_prefix}__{tool}``, as padwan-ai's is. Past ``tool_search`` tools (40;
    ``False``: never) the model is offered a search for them instead of every schema.
    ``on_elicit`` answers the server when it asks the user for input (``Elicitation``).
    ``auth=OAuth(...)`` logs in with OAuth 2.1 instead of a fixed token (see ``OAuth``)."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        name_prefix: str | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 30.0,
        list_timeout: float = 5.0,
        tool_search: int | bool = 40,
        on_elicit: OnElicit | None = None,
        on_sampling: Sampling | None = None,
        auth: HttpAuth | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"McpStreamable needs an http(s) URL, got {url!r}")
        if parts.username or parts.password:
            raise ValueError("McpStreamable: put credentials in token= or headers=, not the URL")
        if auth is not None and token is not None:
            raise ValueError("McpStreamable takes token= or auth=, not both")
        super().__init__(
            host_prefix(url),
            timeout,
            connect_timeout,
            list_timeout,
            name=name,
            name_prefix=name_prefix,
            tool_search=tool_search,
            on_elicit=on_elicit,
            on_sampling=on_sampling,
        )
        self._named = name is not None or name_prefix is not None
        self.url = url
        self.headers = dict(headers or {})
        self._token = token
        self.auth = auth
        self._provider: Any = None  # the SDK's OAuth provider, made on first connecting

    def describe(self) -> str:
        parts = urlsplit(self.url)  # without the query, which may hold a key
        return f"MCP server {self.prefix!r} ({parts.scheme}://{parts.netloc}{parts.path})"

    def __repr__(self) -> str:
        return f"McpStreamable({self.url!r}, token={'***' if self._token else None})"

    @property
    def label(self) -> str:
        """The URL as configured, without its query (which may hold a key)."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}{parts.path}"

    def _named_itself(self, name: str) -> None:
        if not self._named:
            self.prefix = prefix_of(name)

    def _transport(self) -> AbstractAsyncContextManager[tuple[Any, Any]]:
        if self.auth is not None and self._provider is None:
            self._provider = self.auth.provider(self.url, self.label)
        return _http(
            self.url, self._request_headers(), self.connect_timeout, self.timeout, self._provider
        )

    def _cause(self) -> McpError | None:
        return None if self._provider is None else self._provider.failure

    def use_provider(self, provider: Any) -> None:
        """Connect through ``provider`` (the SDK's OAuth ``Auth``; a login's, with the
        browser step) instead of the one ``auth`` makes."""
        self._provider = provider

    def _request_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _secrets(self) -> Sequence[str]:
        kept = [] if self._provider is None else self._provider.storage.secrets()
        return (
            [v for v in self._request_headers().values() if len(v) >= 8]
            + ([self._token] if self._token else [])
            + kept
        )


@asynccontextmanager
async def _http(
    url: str, headers: dict[str, str], connect: float, read: float, auth: Any = None
) -> AsyncIterator[tuple[Any, Any]]:
    import httpx2  # noqa: PLC0415 - the MCP SDK's HTTP client
    from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415

    from .httpcap import CappedTransport  # noqa: PLC0415 - imports httpx2

    timeout = httpx2.Timeout(connect, read=read + connect)
    transport = CappedTransport(httpx2.AsyncHTTPTransport(), MAX_MESSAGE)
    http = httpx2.AsyncClient(
        headers=headers, timeout=timeout, follow_redirects=False, transport=transport, auth=auth
    )
    client = streamable_http_client(url, http_client=http, max_sse_event_size=MAX_MESSAGE)
    async with http, client as streams:
        yield streams
