"""The HTTP side of every transport: one pooled ``httpx.AsyncClient``, credentials kept to their
host, streaming through an SSE decoder, and HTTP failures translated into tether's errors.

A wire format is a ``WireCodec``: a pure request encoder plus I/O-free response decoders.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import email.utils
import inspect
import json
import logging
import math
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

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
from ..events import IterationEnd, StreamEvent
from ..messages import Message
from ..types import ToolSpec
from .options import ModelOptions, split_options
from .sse import DEFAULT_MAX_EVENT_BYTES, SSEDecoder, SSEEvent

__all__ = [
    "CONTEXT_MARKERS",
    "DEFAULT_DEADLINE",
    "SHAPE_ERRORS",
    "HttpTransport",
    "StreamDecoder",
    "WireCodec",
    "array",
    "block_index",
    "count",
    "error_from_payload",
    "error_from_response",
    "excerpt",
    "malformed",
    "mapping",
    "quote",
    "redact_headers",
    "resolve_api_key",
    "string",
    "string_or_empty",
    "wrong",
]

T = TypeVar("T")

log = logging.getLogger("tether.http")

DEFAULT_DEADLINE = 600.0
"""Seconds one model call may take, request to last event, unless told otherwise."""

CUT = "…"
"""Marks where ``excerpt`` cut provider text."""

_QUOTE = 500  # characters of provider data quoted in an error
_MESSAGE = 1000  # characters of a provider's own error message
_ERROR_BODY = 1024 * 1024  # bytes of an error response read
_LOG_BODY = 20000  # characters of a request or response body logged
_LOG_EVENT = 2000  # characters of one SSE event logged
_DRAIN = 0.5  # seconds the rest of a body may take after its last event

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


# --- provider data is untrusted: typed errors, quoted (and cut) --------------------------------

SHAPE_ERRORS: tuple[type[Exception], ...] = (
    AttributeError,
    IndexError,
    KeyError,
    TypeError,
    ValueError,
    RecursionError,
)
"""What reading provider JSON of an unexpected shape raises; decoders turn it into ``malformed``."""


def excerpt(text: str, limit: int = _QUOTE) -> str:
    """``text`` cut to ``limit`` characters; a cut is marked with ``CUT`` and the full length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}{CUT} ({len(text)} characters)"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no {exc} field"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return excerpt(str(exc) or type(exc).__name__, 200)


def malformed(what: str, raw: str, exc: BaseException) -> StreamInterruptedError:
    """The error for provider data that could not be read: why, then (a cut of) the data."""
    return StreamInterruptedError(
        f"the provider sent a malformed {what} ({_reason(exc)}): {excerpt(raw)}"
    )


def quote(value: Any) -> str:
    """A parsed JSON value as text, for ``malformed``."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return "(a value that cannot be shown)"


def _said(value: Any, limit: int = _MESSAGE) -> str:
    """A provider's value as text for a message: a string as it is, anything else as JSON; cut."""
    return excerpt(value if isinstance(value, str) else quote(value), limit)


_KINDS_OF = {
    dict: "an object",
    list: "a list",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def _kind(value: Any) -> str:
    kind = _KINDS_OF.get(type(value), type(value).__name__)
    if type(value) in (int, float, str):
        return f"{kind} ({excerpt(repr(value), 40)})"
    return kind


def wrong(field: str, value: Any, expected: str) -> TypeError:
    """The error for a provider field of the wrong type (for ``malformed`` to quote)."""
    return TypeError(f"{field} is {_kind(value)}, not {expected}")


def string(value: Any, field: str) -> str | None:
    """``value`` if it is a string or null; else a ``TypeError`` naming ``field``."""
    if value is None or type(value) is str:
        return value
    raise wrong(field, value, "a string")


def string_or_empty(value: Any, field: str) -> str:
    """``value`` if it is a string, ``""`` if null; else a ``TypeError`` naming ``field``."""
    if type(value) is str:
        return value
    if value is None:
        return ""
    raise wrong(field, value, "a string")


def mapping(value: Any, field: str) -> dict[str, Any]:
    """``value`` if it is a JSON object; else a ``TypeError`` naming ``field``."""
    if type(value) is dict:
        return value
    raise wrong(field, value, "an object")


def array(value: Any, field: str) -> list[Any]:
    """``value`` if it is a JSON array; else a ``TypeError`` naming ``field``."""
    if type(value) is list:
        return value
    raise wrong(field, value, "a list")


def count(value: Any, field: str) -> int:
    """A token count: a non-negative integer (also sent as ``"12"`` or ``12.0``); null is 0."""
    if type(value) is int and value >= 0:
        return value
    if value is None:
        return 0
    if type(value) is str and value.isascii() and value.isdigit():
        return int(value)
    if type(value) is float and value >= 0 and value.is_integer():
        return int(value)
    raise wrong(field, value, "a token count")


def block_index(value: Any, field: str = "index") -> int:
    """A content block's index: a non-negative integer."""
    if type(value) is int and value >= 0:
        return value
    raise wrong(field, value, "a block index")


# --- errors ------------------------------------------------------------------------------------


def _provider_message(body: bytes) -> str:
    raw = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return excerpt(raw) or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or err.get("type")
            if msg:
                return _said(msg)
        elif isinstance(err, str):
            return _said(err)
        if "detail" in data:
            return _said(data["detail"])
    return excerpt(raw)


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
        return ServerError(f"the provider reported an error{where}: {_said(error)}", retryable=True)
    kind, code = _said(error.get("type") or "", 100), error.get("code")
    message = _said(error.get("message") or "no detail")
    label = _said(code or kind or "", 100)
    said = f"{label}: {message}" if label and label not in ("error", message) else message
    told = f"the provider reported an error{where}: {said}"
    if type(code) is int or (
        type(code) is str and len(code) == 3 and code.isascii() and code.isdigit()
    ):
        status = int(code)
        if 400 <= status < 600:
            mapped = error_from_response(status, httpx.Headers(), quote(error).encode())
            return type(mapped)(told, retryable=mapped.retryable, status_code=status)
    if any(m in message.lower() for m in CONTEXT_MARKERS):
        return ContextWindowExceededError(told)
    # The specific code speaks first, then the general type, then the message itself.
    for words in (label.lower() if code else "", kind.lower(), message.lower()):
        for word, cls, retryable in _KINDS:
            if word in words:
                return cls(told, retryable=retryable)
    return ServerError(told, retryable=True)


def error_from_response(status: int, headers: httpx.Headers, body: bytes) -> TransportError:
    """Translate an HTTP error response (or a redirect, not followed) into a ``TransportError``."""
    message = _provider_message(body)
    told = f"HTTP {status}: {message}"
    lowered = body.decode("utf-8", "replace").lower()
    if 300 <= status < 400:
        where = excerpt(headers.get("location", "(no location)"))
        return BadRequestError(
            f"HTTP {status}: the provider redirected to {where}; redirects are not followed "
            "(a redirect must not carry the key elsewhere): check base_url",
            status_code=status,
        )
    if status in (401, 403):
        return AuthenticationError(told, status_code=status)
    if status == 429:
        # An exhausted quota or billing limit will not lift by waiting.
        waiting_helps = "insufficient_quota" not in lowered and "billing" not in lowered
        return RateLimitError(
            told, retryable=waiting_helps, retry_after=_retry_after(headers), status_code=status
        )
    if status in (400, 413, 422) and any(m in lowered for m in CONTEXT_MARKERS):
        return ContextWindowExceededError(told, status_code=status)
    if status in (408, 409):
        return ServerError(
            told, retryable=True, retry_after=_retry_after(headers), status_code=status
        )
    if status == 529 or (status == 503 and "overload" in lowered):
        return OverloadedError(
            told, retryable=True, retry_after=_retry_after(headers), status_code=status
        )
    if status >= 500:
        return ServerError(
            told, retryable=True, retry_after=_retry_after(headers), status_code=status
        )
    return BadRequestError(told, status_code=status)


# --- credentials ---------------------------------------------------------------------------------

_SENSITIVE = re.compile(
    r"key|token|secret|auth|cookie|session|signature|password|credential", re.IGNORECASE
)
_PIECES = re.compile(r"[\s,;]+")


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers safe to log: the value of any header whose name suggests a credential is ``***``."""
    return {k: ("***" if _SENSITIVE.search(k) else v) for k, v in headers.items()}


def _split_login(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` part, and that part (None if there is none)."""
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at:
        return url, None
    return urlunsplit(parts._replace(netloc=hostport)), userinfo


def _with_login(headers: dict[str, str], userinfo: str | None) -> dict[str, str]:
    """``headers`` with the Basic ``Authorization`` httpx would derive from ``user:password@``."""
    if userinfo is None:
        return headers
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    kept = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    return {**kept, "Authorization": f"Basic {token}"}


def _login_secrets(userinfo: str | None) -> list[str]:
    if userinfo is None:
        return []
    user, _, password = userinfo.partition(":")
    return [userinfo, unquote(userinfo), user, unquote(user), password, unquote(password)]


def _secrets_of(headers: Mapping[str, str], more: Sequence[str]) -> tuple[str, ...]:
    """Every credential to blank, longest first (so a header is blanked whole before its key).

    The value of each sensitive header, the credentials inside it (``Bearer <token>``,
    ``name=<value>`` pairs), and ``more``.
    """
    found = set(more)
    for name, value in headers.items():
        if not _SENSITIVE.search(name):
            continue
        found.add(value)
        for piece in _PIECES.split(value):
            _, eq, rest = piece.partition("=")
            found.update(p for p in (piece, rest if eq else "") if len(p) >= 8)
    return tuple(sorted((s for s in found if len(s) >= 4), key=len, reverse=True))


# --- the transport -------------------------------------------------------------------------------


class _Overdue(Exception):
    """The call's deadline passed (becomes a ``TransportError`` where the call can say more)."""


class _Deadline:
    """The total time one model call may take, request to last event.

    It cancels the call's task only while the call awaits the provider, never while its caller
    holds an event: a timeout scope around ``yield`` would cancel whatever the caller awaits.
    """

    __slots__ = ("_fired", "_handle", "_inside", "_loop", "_task", "when")

    def __init__(self, seconds: float | None) -> None:
        self._loop = asyncio.get_running_loop()
        self.when = math.inf if seconds is None else self._loop.time() + seconds
        self._handle = None if seconds is None else self._loop.call_at(self.when, self._fire)
        self._task: asyncio.Task[Any] | None = None
        self._inside = False
        self._fired = False

    def _fire(self) -> None:
        task = self._task
        if self._inside and task is not None and not task.done():
            self._fired = True
            task.cancel()

    async def wait(self, step: Awaitable[T]) -> T:
        """``await step``, or raise ``_Overdue`` if the deadline passes first (or has passed)."""
        if self._loop.time() >= self.when:
            if inspect.iscoroutine(step):
                step.close()
            raise _Overdue
        self._task = asyncio.current_task()
        self._inside = True
        try:
            return await step
        except BaseException:  # after a fire, whatever the step made of the cancel is overdue
            if not self._fired or self._task is None:
                raise
            self._fired = False
            self._task.uncancel()
            raise _Overdue from None
        finally:
            self._inside = False

    def left(self) -> float:
        """Seconds until the deadline (0 once it has passed)."""
        return max(self.when - self._loop.time(), 0.0)

    def close(self) -> None:
        """The call is over: drop the timer."""
        if self._handle is not None:
            self._handle.cancel()


class HttpTransport:
    """A ``CompletionTransport`` over HTTP for one wire format (subclasses set the class fields).

    ``base_url`` defaults to the provider's; the key comes from ``api_key`` or, for the
    provider's own host only, from ``env_key``. ``stream=False`` makes one plain request per turn.
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
        **options: Any,
    ) -> None:
        if not model:
            raise ValueError("a model name is required")
        if deadline is not None and not deadline > 0:
            raise ValueError("deadline must be > 0 seconds (or None for no deadline)")
        if max_event_bytes is not None and max_event_bytes < 1:
            raise ValueError("max_event_bytes must be >= 1 (or None for no limit)")
        self.model = model
        self.base_url, login = _split_login((base_url or self.default_base_url).rstrip("/"))
        self.options = split_options(options)
        self.streaming = stream
        self.deadline = deadline
        self.max_event_bytes = max_event_bytes
        self._api_key = resolve_api_key(api_key, self.env_key, self.base_url, self.default_base_url)
        self._codec = self._make_codec()
        given = {**self._codec.headers(self._api_key), **(headers or {})}
        self._headers = _with_login(given, login)
        self._secrets = _secrets_of(self._headers, [self._api_key or "", *_login_secrets(login)])
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
            headers = redact_headers(self._headers)
            log.debug("POST %s headers=%s body=%s", url, headers, self._loggable(body, _LOG_BODY))
        deadline = _Deadline(self.deadline)
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
                        for frame in sse.feed(chunk):
                            if debug:
                                said = self._loggable(frame.data, _LOG_EVENT)
                                log.debug("SSE %s: %s", frame.event, said)
                            for event in _feed(decoder, frame):
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
            except _Overdue:
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

    async def _open(self, url: str, body: dict[str, Any]) -> httpx.Response:
        """Send the request; the response, open for reading, if its status is a success."""
        request = self._client.build_request("POST", url, json=body, headers=self._headers)
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

    async def _post(self, url: str, body: dict[str, Any]) -> Any:
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
        """``text`` with every credential this transport holds blanked, even one ``excerpt`` cut."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        if CUT in text:  # a credential's head left dangling where provider text was cut
            for secret in self._secrets:
                for end in range(len(secret) - 1, 3, -1):
                    head = secret[:end] + CUT
                    if head in text:
                        text = text.replace(head, "***" + CUT)
        return text

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
                f"the provider's stream was unreadable at its end ({_reason(exc)})"
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
