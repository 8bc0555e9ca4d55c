"""Front ends served from another origin (``tether serve --allow-origin URL``): a browser's
preflight from one of the allowed origins is answered, and its requests pass the cross-site
checks and get the headers that let the page read the answer. Every other origin is refused as
before; the token rule is not touched (a preflight carries no credentials; the request after it
must)."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

__all__ = ["ALLOWED_HEADERS", "ALLOWED_METHODS", "checked_origins", "preflight_headers"]

ALLOWED_METHODS = "GET, POST, DELETE, OPTIONS"
ALLOWED_HEADERS = frozenset({"authorization", "content-type", "accept", "last-event-id"})
_MAX_AGE = "600"


def checked_origins(origins: Iterable[str]) -> frozenset[str]:
    """``origins`` as a browser sends them in ``Origin`` (``scheme://host[:port]``); a
    ``ValueError`` naming one that is not an http(s) origin (a path, a wildcard, credentials)."""
    allowed = set()
    for origin in origins:
        parts = urlsplit(origin)
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.path not in ("", "/")
            or parts.query
            or parts.fragment
            or parts.username is not None
        ):
            raise ValueError(
                f"--allow-origin takes an origin such as http://localhost:3000 "
                f"(scheme, host and port only), got {origin!r}"
            )
        allowed.add(f"{parts.scheme}://{parts.netloc}".lower())
    return frozenset(allowed)


def preflight_headers(origin: str, asked: str) -> list[tuple[bytes, bytes]]:
    """The answer to a preflight from the allowed ``origin`` that asked for the headers
    ``asked`` (``Access-Control-Request-Headers``): those of them the server reads."""
    wanted = [h.strip().lower() for h in asked.split(",") if h.strip()]
    granted = ", ".join(h for h in wanted if h in ALLOWED_HEADERS)
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
        (b"access-control-allow-headers", granted.encode("latin-1")),
        (b"access-control-max-age", _MAX_AGE.encode()),
        (b"vary", b"Origin"),
    ]
