"""HTTP failures and provider error objects translated into tether's ``TransportError`` kinds."""

from __future__ import annotations

import datetime
import email.utils
import json
import math
import time
from collections.abc import Mapping
from typing import Any

from ..errors import (
    AuthenticationError,
    BadRequestError,
    ContextWindowExceededError,
    OverloadedError,
    RateLimitError,
    ServerError,
    TransportError,
)
from .fields import excerpt, quote

__all__ = ["CONTEXT_MARKERS", "error_from_payload", "error_from_response"]

_MESSAGE = 1000  # characters of a provider's own error message

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


def _seconds(value: str, scale: float = 1.0) -> float | None:
    try:
        seconds = float(value) * scale
    except ValueError:
        return None
    return max(seconds, 0.0) if math.isfinite(seconds) else None


def _retry_after(headers: Mapping[str, str]) -> float | None:
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


def _said(value: Any, limit: int = _MESSAGE) -> str:
    """A provider's value as text for a message: a string as it is, anything else as JSON; cut."""
    return excerpt(value if isinstance(value, str) else quote(value), limit)


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
    status = _http_status(code)
    if status is not None:
        mapped = error_from_response(status, {}, quote(error).encode())
        return type(mapped)(told, retryable=mapped.retryable, status_code=status)
    if any(m in message.lower() for m in CONTEXT_MARKERS):
        return ContextWindowExceededError(told)
    # The specific code speaks first, then the general type, then the message itself.
    return _by_words(told, (label.lower() if code else "", kind.lower(), message.lower()))


def _http_status(code: Any) -> int | None:
    """An error ``code`` that is an HTTP error status (a number, or three digits as text)."""
    if type(code) is int or (
        type(code) is str and len(code) == 3 and code.isascii() and code.isdigit()
    ):
        status = int(code)
        if 400 <= status < 600:
            return status
    return None


def _by_words(told: str, said: tuple[str, ...]) -> TransportError:
    """The error kind the first of ``said`` that names one names; else a retryable server error."""
    for words in said:
        for word, cls, retryable in _KINDS:
            if word in words:
                return cls(told, retryable=retryable)
    return ServerError(told, retryable=True)


def error_from_response(status: int, headers: Mapping[str, str], body: bytes) -> TransportError:
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
