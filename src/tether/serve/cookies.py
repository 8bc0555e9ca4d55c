"""Cookies read as browsers send them: ``name=value`` pairs split at ``;``, nothing else.

A browser shares cookies across every port of a host, so the ``Cookie`` header a server gets
may hold what other apps on localhost set: values with spaces, quotes, backslashes or JSON, and
even a cookie with the server's own cookie's name. A strict parser (``http.cookies``) gives up
at the first such value and loses the cookies after it; this one never gives up.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["cookie_values"]


def cookie_values(headers: Iterable[str], name: str) -> list[str]:
    """Every value a cookie named exactly ``name`` has in ``headers`` (the ``Cookie`` headers of
    a request), in the order sent. Names and values are trimmed of spaces as browsers trim
    them; a value wholly in double quotes loses them (RFC 6265 allows the quotes)."""
    found = []
    for header in headers:
        for pair in header.split(";"):
            key, equals, value = pair.partition("=")
            if equals and key.strip(" \t") == name:
                found.append(_unquoted(value.strip(" \t")))
    return found


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value
