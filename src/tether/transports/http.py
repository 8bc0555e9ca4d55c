"""The HTTP side of every transport: one pooled ``httpx.AsyncClient``, credentials kept to their
host, streaming through an SSE decoder, and HTTP failures translated into tether's errors.

A wire format is a ``WireCodec``: a pure request encoder plus I/O-free response decoders.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import httpx

from ..errors import ConnectionFailedError, StreamInterruptedError, TransportError
from ..events import IterationEnd, StreamEvent
from ..messages import Message
from ..types import ToolSpec
from .codecs.protocol import StreamDecoder, WireCodec
from .credentials import (
    carries_credentials,
    login_secrets,
    missing_key,
    redact,
    redact_headers,
    resolve_api_key,
    same_origin,
    secrets_of,
    split_login,
    with_login,
)
from .deadline import Overdue, RequestDeadline
from .fields import SHAPE_ERRORS, excerpt, malformed, quote, reason_of
from .jsonbody import body_bytes
from .options import split_options
from .sse import DEFAULT_MAX_EVENT_BYTES, SSEDecoder, SSEEvent
from .status import error_from_response

__all__ = ["DEFAULT_DEADLINE", "HttpTransport"]

log = logging.getLogger("tether.http")

DEFAULT_DEADLINE = 600.0
"""Seconds one model call may take, request to last event, unless told otherwise."""

_ERROR_BODY = 1024 * 1024  # bytes of an error response read
_LOG_BODY = 20000  # characters of a request or response body logged
_LOG_EVENT = 2000  # characters of one SSE event logged
_DRAIN = 0.5  # seconds the rest of a body may take after its last event


class HttpTransport:
    """A ``CompletionTransport`` over HTTP for one wire format (subclasses set the class fields).

    ``base_url`` defaults to the provider's; the key comes from ``api_key`` or, for the
    provider's own host only, from ``env_key`` (``key_env``, for a hosted provider whose own
    address is ``base_url``: ``transport("groq:...")`` passes it). A request to the provider's
    own host with no key (nor a credential header, nor a client with ``auth``) is an
    ``AuthenticationError`` before anything is sent; another host may need none.
    ``stream=False`` makes one plain request per reply.
    ``deadline`` bounds one whole model call in seconds (None: no bound); ``max_event_bytes``
    bounds one SSE event (and a whole non-streamed response). Options (``temperature``,
    ``max_tokens``, …) are ``ModelOptions`` fields.
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
        deadline: float | None = DEFAULT_DEADLINE,
        max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES,
        stream: bool = True,
        headers: Mapping[str, str] | None = None,
        http2: bool = True,
        client: httpx.AsyncClient | None = None,
        key_env: str | None = None,
        **options: Any,
    ) -> None:
        if not model:
            raise ValueError("a model name is required")
        if deadline is not None and not deadline > 0:
            raise ValueError("deadline must be > 0 seconds (or None for no deadline)")
        if max_event_bytes is not None and max_event_bytes < 1:
            raise ValueError("max_event_bytes must be >= 1 (or None for no limit)")
        self.model = model
        self.base_url, login = split_login((base_url or self.default_base_url).rstrip("/"))
        self.options = split_options(options)
        self.streaming = stream
        self.deadline = deadline
        self.max_event_bytes = max_event_bytes
        env_var, home = (
            (key_env, self.base_url) if key_env else (self.env_key, self.default_base_url)
        )
        self._api_key = resolve_api_key(api_key, env_var, self.base_url, home)
        self._codec = self._make_codec()
        given = {**self._codec.headers(self._api_key or None), **(headers or {})}
        self._headers = with_login({"content-type": "application/json", **given}, login)
        self._no_key = self._needs_key(env_var, home, client)
        self._secrets = secrets_of(self._headers, [self._api_key or "", *login_secrets(login)])
        self._own_client = client is None
        self._url: tuple[str, httpx.URL] | None = None  # the URL posted to, parsed once
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            http2=http2 and _has_h2(),
            follow_redirects=False,  # a redirect must never carry the key to another host
        )

    def _make_codec(self) -> WireCodec:
        raise NotImplementedError

    def _needs_key(
        self, env_var: str | None, home: str, client: httpx.AsyncClient | None
    ) -> str | None:
        """The variable a key was wanted from and is not: the provider's own host needs one,
        and neither ``api_key``, the environment, a header nor the client's auth gives it."""
        if env_var is None or self._api_key or not same_origin(self.base_url, home):
            return None
        if carries_credentials(self._headers):
            return None
        if client is not None and (client.auth is not None or carries_credentials(client.headers)):
            return None
        return env_var

    @property
    def codec(self) -> WireCodec:
        """The wire format this transport speaks."""
        return self._codec

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def with_options(self, **changes: Any) -> HttpTransport:
        """A copy with ``changes`` to its ``ModelOptions``, sharing this one's HTTP client:
        closing the copy leaves the client to this transport."""
        clone = copy.copy(self)
        clone.options = dataclasses.replace(self.options, **changes)
        clone._codec = clone._make_codec()
        clone._own_client = False
        return clone

    def with_response_format(self, response_format: Mapping[str, Any]) -> HttpTransport:
        """A copy asking for ``response_format`` (typed output), sharing this one's client."""
        return self.with_options(response_format=response_format)

    def build_request(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> dict[str, Any]:
        """The body this transport would send (for inspection and tests)."""
        return self._codec.encode(self.model, messages, tools, system, self.options, self.streaming)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        body = self.build_request(messages, tools, system)
        url = self._post_url()
        debug = log.isEnabledFor(logging.DEBUG)
        if debug:
            headers = redact_headers(self._headers)
            log.debug("POST %s headers=%s body=%s", url, headers, self._loggable(body, _LOG_BODY))
        deadline = RequestDeadline(self.deadline)
        started = False
        try:
            try:
                if not self.streaming:
                    for event in self._parse(await deadline.wait(self._post(url, body))):
                        yield event
                    return
                response = await deadline.wait(self._open(url, body))
                try:
                    sse = SSEDecoder(self.max_event_bytes)
                    decoder = self._codec.decoder()
                    chunks = response.aiter_bytes()
                    while (chunk := await deadline.wait(anext(chunks, None))) is not None:
                        for event in self._chunk_events(sse, decoder, chunk, debug):
                            started = True
                            yield event
                            if type(event) is IterationEnd:  # nothing may follow it
                                await _drain(chunks, min(_DRAIN, deadline.left()))
                                return
                    for frame in sse.flush():
                        for event in _feed(decoder, frame):
                            started = True
                            yield event
                    for event in _finish(decoder, started):
                        yield event
                finally:
                    await response.aclose()
            except Overdue:
                raise _overdue(self.deadline, started) from None
            except httpx.TimeoutException as exc:
                raise _interrupted(exc, started, "timed out") from exc
            except httpx.RequestError as exc:  # connection, protocol and content-decoding failures
                raise _interrupted(exc, started, "connection failed") from exc
        except TransportError as exc:  # the one place errors leave: no credential leaves with them
            self._scrub(exc)
            raise
        finally:
            deadline.close()

    def _chunk_events(
        self, sse: SSEDecoder, decoder: StreamDecoder, chunk: bytes, debug: bool
    ) -> Iterator[StreamEvent]:
        """The events of the frames ``chunk`` completes (each frame logged when debugging)."""
        for frame in sse.feed(chunk):
            if debug:
                log.debug("SSE %s: %s", frame.event, self._loggable(frame.data, _LOG_EVENT))
            yield from _feed(decoder, frame)

    def _post_url(self) -> httpx.URL:
        """The URL requests go to, parsed once (httpx parses a URL text every request)."""
        text = self.base_url + self._codec.path
        if self._url is None or self._url[0] != text:
            self._url = (text, httpx.URL(text))
        return self._url[1]

    async def _open(self, url: httpx.URL | str, body: dict[str, Any]) -> httpx.Response:
        """Send the request; the response, open for reading, if its status is a success."""
        if self._no_key is not None:  # checked here, where every request goes out
            raise missing_key(self._no_key, self.base_url)
        request = self._client.build_request(
            "POST", url, content=body_bytes(body), headers=self._headers
        )
        response = await self._client.send(request, stream=True)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("HTTP %s %s", response.status_code, redact_headers(response.headers))
        if response.status_code < 300:  # redirects are not followed: they are errors too
            return response
        try:
            content, _ = await _read(response, _ERROR_BODY)
        finally:
            await response.aclose()
        if log.isEnabledFor(logging.DEBUG):
            log.debug("HTTP %s body=%s", response.status_code, self._loggable(content, _LOG_BODY))
        raise error_from_response(response.status_code, response.headers, content)

    async def _post(self, url: httpx.URL | str, body: dict[str, Any]) -> Any:
        """One plain request: the response's JSON."""
        try:
            response = await self._open(url, body)
            try:
                content, whole = await _read(response, self.max_event_bytes)
            finally:
                await response.aclose()
        except httpx.TimeoutException as exc:
            raise ConnectionFailedError(f"request timed out: {exc!r}", retryable=True) from exc
        except httpx.RequestError as exc:
            raise ConnectionFailedError(f"connection failed: {exc!r}", retryable=True) from exc
        if log.isEnabledFor(logging.DEBUG):
            log.debug("HTTP %s body=%s", response.status_code, self._loggable(content, _LOG_BODY))
        if not whole:
            raise StreamInterruptedError(
                f"the provider's response exceeded {self.max_event_bytes} bytes (max_event_bytes)"
            )
        try:
            return json.loads(content)
        except (ValueError, RecursionError) as exc:
            raise malformed("JSON response", content.decode("utf-8", "replace"), exc) from exc

    def _parse(self, body: Any) -> list[StreamEvent]:
        try:
            return self._codec.parse(body)
        except SHAPE_ERRORS as exc:
            raise malformed("response", quote(body), exc) from exc

    def _redact(self, text: str) -> str:
        """``text`` with every credential this transport holds blanked."""
        return redact(text, self._secrets)

    def _loggable(self, data: str | bytes | dict[str, Any], limit: int) -> str:
        """``data`` for a debug log: redacted first, then cut (so no credential is cut in half)."""
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        elif not isinstance(data, str):
            data = json.dumps(data)
        return excerpt(self._redact(data), limit)

    def _scrub(self, exc: BaseException) -> None:
        """Blank every credential in ``exc``'s text and in that of the exceptions behind it."""
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            args = tuple(self._redact(a) if type(a) is str else a for a in current.args)
            if args != current.args:
                current.args = args
            current = current.__cause__ or (
                None if current.__suppress_context__ else current.__context__
            )

    async def aclose(self) -> None:
        """Close the HTTP client (when this transport made it)."""
        if self._own_client:
            await self._client.aclose()

    async def __aenter__(self) -> HttpTransport:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _read(response: httpx.Response, limit: int | None) -> tuple[bytes, bool]:
    """The body and True; or its first ``limit`` bytes and False when it is longer."""
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if limit is not None and size > limit:
            return b"".join(parts)[:limit], False
    return b"".join(parts), True


async def _drain(chunks: AsyncIterator[bytes], seconds: float) -> None:
    """Read the rest of a finished response for a moment, so its connection can be reused.

    A provider that holds the stream open past its last event, or drops it, only loses the
    connection: the answer is complete.
    """
    with contextlib.suppress(TimeoutError, httpx.HTTPError):
        async with asyncio.timeout(seconds):
            async for _ in chunks:
                pass


def _feed(decoder: StreamDecoder, frame: SSEEvent) -> list[StreamEvent]:
    try:
        return decoder.feed(frame)
    except SHAPE_ERRORS as exc:  # a decoder's own TransportErrors pass on
        raise malformed("event", frame.data, exc) from exc


def _finish(decoder: StreamDecoder, started: bool) -> list[StreamEvent]:
    """The decoder's last events. A stream that ended unfinished before giving any event is a
    retryable ``ConnectionFailedError``, as a connection dropped there is (with no length or
    chunking said, the two cannot be told apart)."""
    try:
        try:
            return decoder.finish()
        except SHAPE_ERRORS as exc:
            raise StreamInterruptedError(
                f"the provider's stream was unreadable at its end ({reason_of(exc)})"
            ) from exc
    except StreamInterruptedError as exc:
        if started:
            raise
        raise ConnectionFailedError(
            f"the response ended before any event: {exc}", retryable=True
        ) from exc


def _interrupted(exc: Exception, started: bool, what: str) -> TransportError:
    if started:
        return StreamInterruptedError(f"the response stream broke ({what}): {exc!r}")
    return ConnectionFailedError(f"{what}: {exc!r}", retryable=True)


def _overdue(seconds: float | None, started: bool) -> TransportError:
    what = f"the model call ran past its deadline of {seconds} s (HttpTransport(deadline=...))"
    if started:
        return StreamInterruptedError(f"the response stream broke (timed out): {what}")
    return ConnectionFailedError(f"timed out: {what}", retryable=True)


def _has_h2() -> bool:
    try:
        import h2  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True
