"""Secrets blanked out of captured content: values that look like credentials, and the values of
environment variables whose names say they hold one. Linear-time patterns only."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "BLANK",
    "SENSITIVE_KEY_PARTS",
    "add_secret_source",
    "environment_secrets",
    "is_sensitive_key",
    "redact",
    "redact_value",
]

BLANK = "[REDACTED]"
_NAMED = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_PATTERNS = re.compile(
    r"\b(?:sk|pk|rk|ghp|gho|ghs|xox[abpr])[-_][A-Za-z0-9_-]{12,}"  # provider API keys
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key ids
    r"|\b[Bb]earer\s+[A-Za-z0-9._~+/=-]{8,}"  # Authorization header values
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWTs
)
_PAIR_NAMES = r"(?:api[_-]?key|password|passwd|secret|token|access[_-]?token|authorization)"
_PAIRS = re.compile(
    rf"""(["']?{_PAIR_NAMES}["']?\s*[:=]\s*["']?)([^"'\s,}}&]{{4,}})""", re.IGNORECASE
)
_PAIR_FIELD = re.compile(rf"{_PAIR_NAMES}$", re.IGNORECASE)  # a field whose value is blanked
MAX_DEPTH = 64  # levels of a structured value kept; deeper ones are replaced by TOO_DEEP
TOO_DEEP = "[too deep]"


# Substrings every match of the patterns above contains: texts without any skip the regex scan.
_PATTERN_HINTS = (
    *(f"{p}{s}" for p in ("sk", "pk", "rk", "ghp", "gho", "ghs") for s in "-_"),
    "xox",
    "AKIA",
    "earer",
    "eyJ",
)
_PAIR_HINTS = ("key", "passw", "secret", "token", "authorization")

SENSITIVE_KEY_PARTS = (
    "secret",
    "password",
    "passwd",
    "api_key",
    "apikey",
    "private_key",
    "token",
    "auth",
    "credential",
    "cookie",
)
"""What a field's name contains when its value is a credential (Prompty spec §3.4, plus
``passwd`` and ``private_key``); ``key`` alone is too broad to count."""


_SOURCES: list[Callable[[], Iterable[str]]] = []


def add_secret_source(source: Callable[[], Iterable[str]]) -> None:
    """Blank the values ``source()`` gives as well: a door that read values out of the
    environment under any name (Prompty's ``${env:}``) hands them to every trace this way."""
    if source not in _SOURCES:
        _SOURCES.append(source)


def environment_secrets() -> tuple[str, ...]:
    """The values of environment variables named like credentials, and those the secret
    sources give (8 characters or more), longest first. Reading the environment costs: callers
    keep this and read it again now and then (the tracing middleware: once per run)."""
    found = {v for k, v in os.environ.items() if _NAMED.search(k) and len(v) >= 8}
    for source in _SOURCES:
        found.update(v for v in source() if len(v) >= 8)
    return tuple(sorted(found, key=len, reverse=True))


def is_sensitive_key(name: str) -> bool:
    """Whether a field called ``name`` holds a credential: it contains one of
    ``SENSITIVE_KEY_PARTS``, in any case, ``-`` read as ``_`` (``x-api-key``). A plural
    ``tokens`` is a count (``max_tokens``, ``prompt_tokens``), not a token."""
    lower = name.lower().replace("-", "_")
    for part in SENSITIVE_KEY_PARTS:
        at = lower.find(part)
        while at != -1:
            end = at + len(part)
            if part != "token" or lower[end : end + 1] != "s":
                return True
            at = lower.find(part, end)
    return False


def redact(text: str, secrets: tuple[str, ...] | None = None) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED]`` (``secrets``: known
    values to blank; the environment's when None)."""
    for secret in environment_secrets() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, BLANK)
    if any(hint in text for hint in _PATTERN_HINTS):
        text = _PATTERNS.sub(BLANK, text)
    lower = text.lower()
    if any(hint in lower for hint in _PAIR_HINTS):
        text = _PAIRS.sub(lambda m: m.group(1) + BLANK, text)
    return text


def redact_value(value: Any, secrets: tuple[str, ...] | None = None, _depth: int = 0) -> Any:
    """``value`` (JSON-like data) with every string redacted and the values of fields named
    like a credential blanked, before it is serialised: JSON escaping (``"`` as ``\\"``) would
    hide a secret from ``redact``. Other objects become their ``str``; nesting stops at
    ``MAX_DEPTH``."""
    if isinstance(value, str):
        return redact(value, secrets)
    if value is None or isinstance(value, bool | int | float):
        return value
    if _depth >= MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, Mapping):
        return {
            redact(str(k), secrets): BLANK
            if isinstance(k, str) and _PAIR_FIELD.search(k)
            else redact_value(v, secrets, _depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_value(v, secrets, _depth + 1) for v in value]
    return redact(str(value), secrets)
