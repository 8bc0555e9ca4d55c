"""Request bodies as bytes, with arrays whose items are kept encoded: a long run's history is
serialised once per message and joined into each later body, not encoded again every call."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

__all__ = ["Encoded", "body_bytes", "dumps"]

dumps = partial(json.dumps, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
"""JSON text as it is sent: compact, UTF-8 as it is, no NaN (what httpx's ``json=`` sends)."""


class Encoded(list[Any]):
    """A JSON array (its items, to read) whose JSON text is also kept piece by piece: ``parts``
    holds the items' encoded texts, each possibly several items joined by commas."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []


def body_bytes(body: dict[str, Any]) -> bytes:
    """``body`` as the bytes to send: the same as ``dumps(body)``, with an ``Encoded`` array's
    kept parts joined in place of encoding its items again (text UTF-8 cannot hold, a lone
    surrogate, is sent as a JSON escape rather than failing the call)."""
    pieces = [
        f"{dumps(key)}:[{','.join(value.parts)}]" if type(value) is Encoded else
        f"{dumps(key)}:{dumps(value)}"
        for key, value in body.items()
    ]  # fmt: skip
    try:
        return ("{" + ",".join(pieces) + "}").encode()
    except UnicodeEncodeError:  # a lone surrogate, which UTF-8 cannot hold: sent as an escape
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
