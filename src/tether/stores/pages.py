"""Pages: many stored messages in one JSON text, so a long history loads in a few reads.

A page is ``[kinds, bodies]``: ``kinds`` has one letter per message (its role's initial, upper
case when the body is the ``jsonforms`` JSON rather than plain text) and ``bodies`` the stored
bodies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..messages import Message, text_message
from .base import MESSAGE_FORMAT, PLAIN_TEXT, row_message

__all__ = ["page_messages", "page_of"]

_PLAIN = {"u": "user", "a": "assistant", "s": "system"}
_JSON = {"U": "user", "A": "assistant", "S": "system"}


def page_of(rows: Iterable[tuple[int, str, str]]) -> str:
    """The page text holding ``rows`` of (format, role, body)."""
    kinds, bodies = [], []
    for fmt, role, body in rows:
        initial = role[0]
        kinds.append(initial if fmt == PLAIN_TEXT else initial.upper())
        bodies.append(body)
    return json.dumps(["".join(kinds), bodies], ensure_ascii=False)


def page_messages(page: str) -> list[Message]:
    """The messages of a stored page; a damaged page is a clear ``ValueError``."""
    try:
        kinds, bodies = json.loads(page)
        if type(kinds) is not str or type(bodies) is not list or len(kinds) != len(bodies):
            raise ValueError("its letters and bodies do not match")
        return [
            text_message(_PLAIN[kind], body)
            if kind in _PLAIN
            else row_message(MESSAGE_FORMAT, _JSON[kind], body)
            for kind, body in zip(kinds, bodies, strict=True)
        ]
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"a stored page of messages is damaged: {exc!r}") from None
