"""Credentials: which key goes where, and keeping every credential out of logs and errors."""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping, Sequence
from urllib.parse import unquote, urlsplit, urlunsplit

from ..errors import AuthenticationError
from .fields import CUT

__all__ = [
    "carries_credentials",
    "login_secrets",
    "missing_key",
    "redact",
    "redact_headers",
    "resolve_api_key",
    "same_origin",
    "secrets_of",
    "split_login",
    "with_login",
]


def _host(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def same_origin(url: str, other: str) -> bool:
    """Whether the two URLs name one scheme, host and port (the only place a key may go)."""
    return _host(url) == _host(other)


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


_SENSITIVE = re.compile(
    r"key|token|secret|auth|cookie|session|signature|password|credential", re.IGNORECASE
)
_PIECES = re.compile(r"[\s,;]+")


def carries_credentials(headers: Mapping[str, str]) -> bool:
    """Whether any header is a credential (``Authorization``, ``x-api-key``, ``api-key``...)."""
    return any(_SENSITIVE.search(name) and value for name, value in headers.items())


def missing_key(env_var: str, base_url: str) -> AuthenticationError:
    """The error for a request to a hosted provider with no key: it names where a key comes
    from (never a value), and says that nothing was sent."""
    _, name, port = _host(base_url)
    host = name if port is None else f"{name}:{port}"
    return AuthenticationError(
        f"no API key for {host}: set the {env_var} environment variable or pass api_key= to "
        "the transport; nothing was sent"
    )


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers safe to log: the value of any header whose name suggests a credential is ``***``."""
    return {k: ("***" if _SENSITIVE.search(k) else v) for k, v in headers.items()}


def split_login(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` part, and that part (None if there is none)."""
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at:
        return url, None
    return urlunsplit(parts._replace(netloc=hostport)), userinfo


def with_login(headers: dict[str, str], userinfo: str | None) -> dict[str, str]:
    """``headers`` with the Basic ``Authorization`` httpx would derive from ``user:password@``."""
    if userinfo is None:
        return headers
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    kept = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    return {**kept, "Authorization": f"Basic {token}"}


def login_secrets(userinfo: str | None) -> list[str]:
    """The credentials inside ``user:password`` (as given and unquoted), to blank."""
    if userinfo is None:
        return []
    user, _, password = userinfo.partition(":")
    return [userinfo, unquote(userinfo), user, unquote(user), password, unquote(password)]


def secrets_of(headers: Mapping[str, str], more: Sequence[str]) -> tuple[str, ...]:
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


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every one of ``secrets`` (longest first) blanked, even one ``excerpt`` cut."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "***")
    if CUT in text:  # a credential's head left dangling where provider text was cut
        for secret in secrets:
            for end in range(len(secret) - 1, 3, -1):
                head = secret[:end] + CUT
                if head in text:
                    text = text.replace(head, "***" + CUT)
    return text
