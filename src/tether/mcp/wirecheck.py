"""``tools/list`` answers checked tool by tool on their way in. The SDK refuses a whole list for
one tool it cannot read, so every tool of the server would vanish; a tool that would not pass is
taken out of the answer here (and reported), and the rest of the list goes on to the SDK. The
listings of resources, resource templates and prompts are checked the same way."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ListingCheck"]

log = logging.getLogger("tether.mcp")

# method: (the key of its entries, the SDK's model of one, the word for one)
_LISTINGS = {
    "tools/list": ("tools", "Tool", "tool"),
    "resources/list": ("resources", "Resource", "resource"),
    "resources/templates/list": ("resourceTemplates", "ResourceTemplate", "resource template"),
    "prompts/list": ("prompts", "Prompt", "prompt"),
}


class ListingCheck:
    """Notes the ids of ``tools/list`` requests going out (``sent``) and checks the answers to
    them coming in (``received``); ``report(name, reason)`` hears of each tool taken out.
    ``version()`` is the protocol version negotiated, once it is. ``others(kind, name,
    reason)``, when given, hears of each entry taken out of the other listings (``kind`` is
    ``resource``, ``resource template`` or ``prompt``); without it they are not checked."""

    __slots__ = ("_others", "_pending", "_report", "_version")

    def __init__(
        self,
        version: Callable[[], str | None],
        report: Callable[[str, str], None],
        others: Callable[[str, str, str], None] | None = None,
    ) -> None:
        self._version = version
        self._report = report
        self._others = others
        self._pending: dict[str, str] = {}  # request id: method

    def sent(self, item: Any) -> None:
        """Called with each ``SessionMessage`` written to the server."""
        message: Any = getattr(item, "message", None)
        method = getattr(message, "method", None)
        wanted = method == "tools/list" or (self._others is not None and method in _LISTINGS)
        if wanted and hasattr(message, "id"):
            self._pending[str(message.id)] = str(method)

    def received(self, item: Any) -> None:
        """Called with each ``SessionMessage`` (or ``Exception``) read from the server."""
        from mcp_types import JSONRPCError, JSONRPCResponse  # noqa: PLC0415

        message = getattr(item, "message", None)
        if not isinstance(message, JSONRPCResponse | JSONRPCError):
            return
        method = self._pending.pop(str(message.id), None)
        if method is None or not isinstance(message, JSONRPCResponse):
            return
        key = _LISTINGS[method][0]
        if isinstance(message.result.get(key), list):
            message.result[key] = self._readable(method, message.result)

    def _readable(self, method: str, result: dict[str, Any]) -> list[Any]:
        """The entries of ``result`` the SDK can read, each checked on its own."""
        key, _, kind = _LISTINGS[method]
        kept = []
        for entry in result[key]:
            reason = self._problem(method, result, entry)
            if reason is None:
                kept.append(entry)
                continue
            name = entry.get("name") if isinstance(entry, Mapping) else None
            if method == "tools/list":
                self._report(name if isinstance(name, str) else repr(name)[:80], reason)
            elif self._others is not None:
                shown = name if isinstance(name, str) else repr(entry)[:80]
                self._others(kind, shown, reason)
        return kept

    def _problem(self, method: str, result: dict[str, Any], entry: Any) -> str | None:
        import mcp_types  # noqa: PLC0415
        from mcp_types.methods import validate_server_result  # noqa: PLC0415
        from pydantic import ValidationError  # noqa: PLC0415

        key, model, _ = _LISTINGS[method]
        try:
            getattr(mcp_types, model).model_validate(entry, by_name=False)
            version = self._version()
            if version is not None:
                validate_server_result(method, version, {**result, key: [entry]})
        except KeyError:
            return None  # a version without a table for tools/list: the SDK checks nothing more
        except (ValidationError, ValueError) as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) else None
            if first is None:
                return str(exc)[:300]
            where = ".".join(str(p) for p in first["loc"])
            return f"the SDK cannot read it ({where}: {first['msg']})"[:300]
        return None
