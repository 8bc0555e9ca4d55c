"""The HTTP side shared by OpenAI's media endpoints (embeddings, images): one JSON POST per call.

It reuses ``HttpTransport``'s machinery rather than a client of its own: the pooled
``httpx.AsyncClient``, the key kept to OpenAI's host, no redirects followed, HTTP failures as
tether's ``TransportError``s with every credential blanked, and ``RetryPolicy`` for retries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self, TypeVar

import httpx

from ..base.clock import SYSTEM_CLOCK, Clock
from ..errors import ConnectionFailedError, TransportError
from .codecs.media_options import merge_options
from .codecs.protocol import WireCodec
from .credentials import redact_headers
from .http import DEFAULT_DEADLINE, HttpTransport
from .openai_chat import OpenAIChatCodec, OpenAIChatTransport
from .retry import RetryPolicy

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "OpenAIMediaClient", "merge_options"]

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""The most one response may take unless told otherwise (a batch of embeddings is large)."""

T = TypeVar("T")

_DEFAULT_RETRY = RetryPolicy()
_LOG_BODY = 20000  # characters of a request body logged

log = logging.getLogger("tether.http")


class _Endpoint(HttpTransport):
    """OpenAI's host, key and connection, for plain JSON requests instead of model replies."""

    provider: ClassVar[str] = "openai"
    default_base_url: ClassVar[str] = OpenAIChatTransport.default_base_url
    env_key: ClassVar[str | None] = OpenAIChatTransport.env_key

    def _make_codec(self) -> WireCodec:
        return OpenAIChatCodec()  # only its headers are used: the key as a Bearer token

    async def post(self, path: str, body: dict[str, Any], read: Callable[[Any], T]) -> T:
        """POST ``body`` to ``path`` and ``read`` the response's JSON; failures (``read``'s too)
        as ``TransportError``s with no credential in them."""
        url = self.base_url + path
        if log.isEnabledFor(logging.DEBUG):
            said = self._loggable(body, _LOG_BODY)
            log.debug("POST %s headers=%s body=%s", url, redact_headers(self._headers), said)
        try:
            try:
                async with asyncio.timeout(self.deadline):
                    answer = await self._post(url, body)
            except TimeoutError as exc:
                said = f"the call ran past its deadline of {self.deadline} s (deadline=...)"
                raise ConnectionFailedError(f"timed out: {said}", retryable=True) from exc
            return read(answer)
        except TransportError as exc:
            self._scrub(exc)
            raise


class OpenAIMediaClient:
    """Base of the clients for OpenAI's non-chat endpoints: ``model``, host, key and connection.

    ``base_url`` defaults to OpenAI's; the key comes from ``api_key`` or, for OpenAI's own host
    only, from ``OPENAI_API_KEY``. ``deadline`` bounds each attempt in seconds (None: no bound);
    ``max_response_bytes`` bounds a response. Failed calls are retried per ``retry``, waiting on
    ``clock``. ``options`` are provider fields sent with every request (``dimensions``,
    ``size``, …).
    """

    path: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        options: Mapping[str, Any] | None = None,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        deadline: float | None = DEFAULT_DEADLINE,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
        retry: RetryPolicy = _DEFAULT_RETRY,
        clock: Clock = SYSTEM_CLOCK,
        headers: Mapping[str, str] | None = None,
        http2: bool = True,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._http = _Endpoint(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            connect_timeout=connect_timeout,
            deadline=deadline,
            max_event_bytes=max_response_bytes,
            stream=False,
            headers=headers,
            http2=http2,
            client=client,
        )
        self.options: Mapping[str, Any] = dict(options or {})
        self.retry = retry
        self.clock = clock

    @property
    def model(self) -> str:
        """The model every request names."""
        return self._http.model

    @property
    def base_url(self) -> str:
        """Where requests go (without any ``user:password@`` part)."""
        return self._http.base_url

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    async def _call(self, body: dict[str, Any], read: Callable[[Any], T]) -> T:
        """POST ``body`` here and ``read`` the answer, retrying what the policy allows."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._http.post(self.path, body, read)
            except TransportError as exc:
                if not self.retry.should_retry(exc, attempt):
                    raise
                await self.clock.sleep(self.retry.delay(attempt, exc, self.clock.random))

    async def aclose(self) -> None:
        """Close the HTTP client (when this client made it)."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
