"""The HTTP side of every transport: one pooled ``httpx.AsyncClient``, credentials kept to their
host, streaming through an SSE decoder, and HTTP failures translated into tether's errors.

A wire format is a ``WireCodec``: a pure request encoder plus I/O-free response decoders.
"""

from __future__ import annotations

import datetime
import email.utils
import json
import logging
import math
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

import httpx

from ..errors import (
    AuthenticationError,
    BadRequestError,
    ConnectionFailedError,
    ContextWindowExceededError,
    OverloadedError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    TransportError,
)
from ..events import StreamEvent
from ..messages import Message
from ..types import ToolSpec
from .options import ModelOptions, split_options
from .sse import SSEDecoder, SSEEvent

__all__ = [
    "CONTEXT_MARKERS",
    "HttpTransport",
    "StreamDecoder",
    "WireCodec",
    "error_from_payload",
    "error_from_response",
    "resolve_api_key",
]

log = logging.getLogger("tether.http")

CONTEXT_MARKERS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "exceed_context_size",
    "exceeds the available context",
)


class StreamDecoder(Protocol):
    """Turns one response's server-sent events into tether events."""

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        """Events completed by this SSE event (raise a ``TransportError`` for an error event)."""
        ...

    def finish(self) -> list[StreamEvent]:
        """The stream ended: the final events (the ``IterationEnd``), or raise if incomplete."""
        ...


class WireCodec(Protocol):
    """One provider wire format: request bodies out, events in. No I/O."""

    path: str

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Authentication and version headers."""
        ...

    def encode(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        system: str,
        options: ModelOptions,
        stream: bool,
    ) -> dict[str, Any]:
        """The JSON request body."""
        ...

    def decoder(self) -> StreamDecoder:
        """A fresh decoder for one streamed response."""
        ...

    def parse(self, body: Any) -> list[StreamEvent]:
        """A whole (non-streamed) response as the events a stream would have given."""
        ...


def _host(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def resolve_api_key(
    explicit: str | None, env_var: str | None, base_url: str, default_base_url: str
) -> str | None:
    """The key to send: the one given, else the environment's, but only to the provider's own host.

    A key read from the environment is never sent to a custom ``base_url`` on another host.
    """
    if explicit is not None:
        return explicit
    if env_var is None or _host(base_url) != _host(default_base_url):
        return None
    return os.environ.get(env_var) or None


def _seconds(value: str, scale: float = 1.0) -> float | None:
    try:
        seconds = float(value) * scale
    except ValueError:
        return None
    return max(seconds, 0.0) if math.isfinite(seconds) else None


def _retry_after(headers: httpx.Headers) -> float | None:
    """The server's advice in seconds: ``retry-after-ms``, else ``Retry-After`` as seconds or an
    HTTP-date. Anything unreadable is no advice (never an exception)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        seconds = _seconds(ms, 0.001)
        if seconds is not None:
            return seconds
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # "-0000": UTC with no zone said
        when = when.replace(tzinfo=datetime.UTC)
    return max(when.timestamp() - time.time(), 0.0)


def _provider_message(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500] or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or err.get("type")
            if msg:
                return str(msg)
        elif isinstance(err, str):
            return err
        if "detail" in data:
            return str(data["detail"])
    return text[:500]


# An error sent inside a stream (or a 200 body) names its kind in words, not a status.
_KINDS: tuple[tuple[str, type[TransportError], bool], ...] = (
    ("insufficient_quota", RateLimitError, False),
    ("billing", BadRequestError, False),
    ("context_length", ContextWindowExceededError, False),
    ("overload", OverloadedError, True),
    ("rate_limit", RateLimitError, True),
    ("authentication", AuthenticationError, False),
    ("api_key", AuthenticationError, False),
    ("permission", AuthenticationError, False),
    ("not_found", BadRequestError, False),
    ("request_too_large", BadRequestError, False),
    ("invalid_request", BadRequestError, False),
    ("bad_request", BadRequestError, False),
    ("invalid", BadRequestError, False),
    ("server_error", ServerError, True),
    ("api_error", ServerError, True),
)


def error_from_payload(error: Any, where: str = "") -> TransportError:
    """The ``TransportError`` for an error object a provider sent in a stream or a 200 body.

    Accepts ``{"type", "code", "message"}`` objects and the ``{"error": {...}}`` wrapper; a
    numeric ``code`` is read as an HTTP status. Unknown kinds count as retryable server errors.
    """
    if isinstance(error, Mapping) and isinstance(error.get("error"), Mapping):
        error = error["error"]
    if not isinstance(error, Mapping):
        return ServerError(f"the provider reported an error{where}: {error}", retryable=True)
    kind, code = str(error.get("type") or ""), error.get("code")
    message = str(error.get("message") or "no detail")
    label = str(code or kind or "")
    said = f"{label}: {message}" if label and label not in ("error", message) else message
    text = f"the provider reported an error{where}: {said}"
    if isinstance(code, int) or (isinstance(code, str) and code.isdigit()):
        status = int(code)
        if 400 <= status < 600:
            mapped = error_from_response(status, httpx.Headers(), json.dumps(error).encode())
            return type(mapped)(text, retryable=mapped.retryable, status_code=status)
    if any(m in message.lower() for m in CONTEXT_MARKERS):
        return ContextWindowExceededError(text)
    # The specific code speaks first, then the general type, then the message itself.
    for words in (str(code or "").lower(), kind.lower(), message.lower()):
        for word, cls, retryable in _KINDS:
            if word in words:
                return cls(text, retryable=retryable)
    return ServerError(text, retryable=True)


def error_from_response(status: int, headers: httpx.Headers, body: bytes) -> TransportError:
    """Translate an HTTP error response (or a redirect, not followed) into a ``TransportError``."""
    message = _provider_message(body)
    text = f"HTTP {status}: {message}"
    lowered = body.decode("utf-8", "replace").lower()
    if 300 <= status < 400:
        where = headers.get("location", "(no location)")
        return BadRequestError(
            f"HTTP {status}: the provider redirected to {where}; redirects are not followed "
            "(a redirect must not carry the key elsewhere): check base_url",
            status_code=status,
        )
    if status in (401, 403):
        return AuthenticationError(text, status_code=status)
    if status == 429:
        # An exhausted quota or billing limit will not lift by waiting.
        waiting_helps = "insufficient_quota" not in lowered and "billing" not in lowered
        return RateLimitError(
            text, retryable=waiting_helps, retry_after=_retry_after(headers), status_code=status
        )
    if status in (400, 413, 422) and any(m in lowered for m in CONTEXT_MARKERS):
        return ContextWindowExceededError(text, status_code=status)
    if status in (408, 409):
        return ServerError(
            text, retryable=True, retry_after=_retry_after(headers), status_code=status
        )
    if status == 529 or (status == 503 and "overload" in lowered):
        return OverloadedError(
            text, retryable=True, retry_after=_retry_after(headers), status_code=status
        )
    if status >= 500:
        return ServerError(
            text, retryable=True, retry_after=_retry_after(headers), status_code=status
        )
    return BadRequestError(text, status_code=status)


_REDACT = frozenset(("authorization", "x-api-key", "api-key", "cookie", "proxy-authorization"))


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers safe to log: credentials replaced by ``***``."""
    return {k: ("***" if k.lower() in _REDACT else v) for k, v in headers.items()}


class HttpTransport:
    """A ``CompletionTransport`` over HTTP for one wire format (subclasses set the class fields).

    ``base_url`` defaults to the provider's; the key comes from ``api_key`` or, for the
    provider's own host only, from ``env_key``. ``stream=False`` makes one plain request per turn.
    Options (``temperature``, ``max_tokens``, …) are ``ModelOptions`` fields.
    """

    provider: ClassVar[str]
    default_base_url: ClassVar[str]
    env_key: ClassVar[str | None]

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        stream: bool = True,
        headers: Mapping[str, str] | None = None,
        http2: bool = True,
        client: httpx.AsyncClient | None = None,
        **options: Any,
    ) -> None:
        if not model:
            raise ValueError("a model name is required")
        self.model = model
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.options = split_options(options)
        self.streaming = stream
        self._api_key = resolve_api_key(api_key, self.env_key, self.base_url, self.default_base_url)
        self._codec = self._make_codec()
        self._headers = {**self._codec.headers(self._api_key), **(headers or {})}
        self._own_client = client is None
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            http2=http2 and _has_h2(),
            follow_redirects=False,  # a redirect must never carry the key to another host
        )

    def _make_codec(self) -> WireCodec:
        raise NotImplementedError

    @property
    def codec(self) -> WireCodec:
        """The wire format this transport speaks."""
        return self._codec

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def build_request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> dict[str, Any]:
        """The body this transport would send (for inspection and tests)."""
        return self._codec.encode(self.model, messages, tools, system, self.options, self.streaming)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        body = self.build_request(messages, tools, system)
        url = self.base_url + self._codec.path
        debug = log.isEnabledFor(logging.DEBUG)
        if debug:
            log.debug(
                "POST %s headers=%s body=%s",
                url,
                redact_headers(self._headers),
                self._redact(json.dumps(body)[:20000]),
            )
        if not self.streaming:
            for event in self._parse(await self._post(url, body)):
                yield event
            return
        started = False
        try:
            async with self._client.stream("POST", url, json=body, headers=self._headers) as resp:
                if resp.status_code >= 300:  # redirects are not followed: they are errors too
                    raise self._error(resp.status_code, resp.headers, await resp.aread())
                if debug:
                    log.debug("HTTP %s %s", resp.status_code, redact_headers(resp.headers))
                sse = SSEDecoder()
                decoder = self._codec.decoder()
                async for chunk in resp.aiter_bytes():
                    for frame in sse.feed(chunk):
                        if debug:
                            log.debug("SSE %s: %s", frame.event, self._redact(frame.data[:2000]))
                        for event in _feed(decoder, frame):
                            started = True
                            yield event
                for frame in sse.flush():
                    for event in _feed(decoder, frame):
                        yield event
                try:
                    final = decoder.finish()
                except ValueError as exc:
                    raise StreamInterruptedError(
                        f"the provider's stream was unreadable: {exc}"
                    ) from exc
                for event in final:
                    yield event
        except httpx.TimeoutException as exc:
            raise _interrupted(exc, started, "timed out") from exc
        except httpx.RequestError as exc:  # connection, protocol and content-decoding failures
            raise _interrupted(exc, started, "connection failed") from exc

    async def _post(self, url: str, body: dict[str, Any]) -> Any:
        try:
            resp = await self._client.post(url, json=body, headers=self._headers)
        except httpx.TimeoutException as exc:
            raise ConnectionFailedError(f"request timed out: {exc!r}", retryable=True) from exc
        except httpx.RequestError as exc:
            raise ConnectionFailedError(f"connection failed: {exc!r}", retryable=True) from exc
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "HTTP %s %s body=%s",
                resp.status_code,
                redact_headers(resp.headers),
                self._redact(resp.text[:20000]),
            )
        if resp.status_code >= 300:
            raise self._error(resp.status_code, resp.headers, resp.content)
        try:
            return resp.json()
        except ValueError as exc:
            raise StreamInterruptedError(f"the provider sent malformed JSON: {exc}") from exc

    def _parse(self, body: Any) -> list[StreamEvent]:
        try:
            return self._codec.parse(body)
        except ValueError as exc:
            raise StreamInterruptedError(f"the provider's response was unreadable: {exc}") from exc

    def _redact(self, text: str) -> str:
        """``text`` with every credential this transport holds blanked out (for logs)."""
        for secret in self._secrets():
            text = text.replace(secret, "***")
        return text

    def _error(self, status: int, headers: httpx.Headers, body: bytes) -> TransportError:
        """``error_from_response``, with any credential the provider echoed back blanked out."""
        error = error_from_response(status, headers, body)
        text = str(error)
        scrubbed = text
        for secret in self._secrets():
            scrubbed = scrubbed.replace(secret, "***")
        if scrubbed == text:
            return error
        return type(error)(
            scrubbed,
            retryable=error.retryable,
            retry_after=error.retry_after,
            status_code=error.status_code,
        )

    def _secrets(self) -> list[str]:
        found = [v for k, v in self._headers.items() if k.lower() in _REDACT]
        if self._api_key:
            found.append(self._api_key)
        # the longest first, so a header value is blanked whole before the key inside it
        return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)

    async def aclose(self) -> None:
        """Close the HTTP client (when this transport made it)."""
        if self._own_client:
            await self._client.aclose()

    async def __aenter__(self) -> HttpTransport:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _feed(decoder: StreamDecoder, frame: SSEEvent) -> list[StreamEvent]:
    try:
        return decoder.feed(frame)
    except ValueError as exc:  # e.g. truncated JSON; the decoder's own TransportErrors pass on
        raise StreamInterruptedError(
            f"the provider sent a malformed event ({exc}): {frame.data[:200]!r}"
        ) from exc


def _interrupted(exc: Exception, started: bool, what: str) -> TransportError:
    if started:
        return StreamInterruptedError(f"the response stream broke ({what}): {exc!r}")
    return ConnectionFailedError(f"{what}: {exc!r}", retryable=True)


def _has_h2() -> bool:
    try:
        import h2  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True
