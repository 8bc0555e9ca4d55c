"""``Elicitation``: an MCP server asking the user for input in the middle of a tool call, as the
application's ``on_elicit`` answerer sees it. The answerer returns a dict (the user accepted;
checked against what was asked) or None (the user declined)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = ["Elicitation", "OnElicit"]


@dataclass(frozen=True, slots=True)
class Elicitation:
    """What a server asks: ``message`` for the user and, in ``"form"`` mode, ``schema`` (the
    requested JSON Schema: a flat object of strings, numbers, booleans and enums); in
    ``"url"`` mode ``url``, a page the user is to open (``schema`` is empty). ``server`` is the
    server's label (its command line or URL, credentials left out); ``tool`` and ``arguments``
    name the call that asked, when it is known."""

    message: str
    schema: Mapping[str, Any]
    server: str
    tool: str | None = None
    arguments: Mapping[str, Any] | None = None
    mode: Literal["form", "url"] = "form"
    url: str | None = None

    @property
    def fields(self) -> Mapping[str, Any]:
        """The fields asked for, by name (each a JSON Schema of one value)."""
        properties = self.schema.get("properties")
        return properties if isinstance(properties, Mapping) else {}


OnElicit: TypeAlias = Callable[
    [Elicitation], "Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None"
]
"""The application's answerer: a dict accepts (its missing fields take the schema's defaults),
None declines. A coroutine function is awaited; a plain function runs in a worker thread, so it
may block (``input()``)."""
