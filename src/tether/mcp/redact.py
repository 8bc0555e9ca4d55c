"""Secrets of an MCP server's configuration kept out of every text quoted to the model or in an
error: the values of its environment, and the parts of its command line that look like a
credential (``--api-key VALUE``, ``--token=VALUE``, ``?key=VALUE`` in a URL, a long token)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["REDACTED", "scrub", "secret_args", "secret_env"]

REDACTED = "[REDACTED]"
_WORDS = re.compile(
    r"key|token|secret|passw|pwd|auth|credential|bearer|cookie|session|signature|private", re.I
)
_TOKEN = re.compile(r"[A-Za-z0-9_\-+=]{20,}")  # no '.' or '/': not a file name, path or URL
_QUERY = re.compile(r"[?&;]([^=&#;\s]+)=([^&#;\s]+)")
_USERINFO = re.compile(r"://[^/@:\s]*:([^/@\s]+)@")
_SHORTEST = 4  # characters; a shorter "secret" would blank ordinary words


def secret_env(env: Mapping[str, str]) -> list[str]:
    """Every value of ``env`` long enough to be told apart from ordinary text."""
    return [v for k, v in env.items() if len(v) >= 6 or (_WORDS.search(k) and len(v) >= 4)]


def secret_args(args: Sequence[str]) -> list[str]:
    """The parts of a command line that look like credentials."""
    found: list[str] = []
    for i, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        if equals and _WORDS.search(name) and not name.startswith(("http:", "https:")):
            found.append(value)
        elif (
            not equals and _is_option(arg) and i + 1 < len(args) and not args[i + 1].startswith("-")
        ):
            found.append(args[i + 1])
        if _TOKEN.fullmatch(arg) and re.search(r"\d", arg) and re.search(r"[A-Za-z]", arg):
            found.append(arg)
        found += [v for k, v in _QUERY.findall(arg) if _WORDS.search(k)]
        found += _USERINFO.findall(arg)
    return found


def _is_option(arg: str) -> bool:
    return arg.startswith("-") and _WORDS.search(arg) is not None


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (long enough to tell apart) replaced by ``[REDACTED]``."""
    for secret in sorted({s for s in secrets if len(s) >= _SHORTEST}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text
