"""``tools/list`` answers checked tool by tool on their way in. The SDK refuses a whole list for
one tool it cannot read, so every tool of the server would vanish; a tool that would not pass is
taken out of the answer here (and reported), and the rest of the list goes on to the SDK."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ListingCheck"]

log = logging.getLogger("tether.mcp")


class ListingCheck:
    """Notes the ids of ``tools/list`` requests going out (``sent``) and checks the answers to
    them coming in (``received``); ``report(name, reason)`` hears of each tool taken out.
    ``version()`` is the protocol version negotiated, once it is."""

    __slots__ = ("_pending", "_report", "_version")

    def __init__(
        self, version: Callable[[], str | None], report: Callable[[str, str], None]
    ) -> None:
        self._version = version
        self._report = report
        self._pending: set[str] = set()

    def sent(self, item: Any) -> None:
        """Called with each ``SessionMessage`` written to the server."""
        message: Any = getattr(item, "message", None)
        if getattr(message, "method", None) == "tools/list" and hasattr(message, "id"):
            self._pending.add(str(message.id))

    def received(self, item: Any) -> None:
        """Called with each ``SessionMessage`` (or ``Exception``) read from the server."""
        from mcp_types import JSONRPCError, JSONRPCResponse  # noqa: PLC0415

        message = getattr(item, "message", None)
        if not isinstance(message, JSONRPCResponse | JSONRPCError):
            return
        key = str(message.id)
        if key not in self._pending:
            return
        self._pending.discard(key)
        if isinstance(message, JSONRPCResponse) and isinstance(message.result.get("tools"), list):
            message.result["tools"] = self._readable(message.result)

    def _readable(self, result: dict[str, Any]) -> list[Any]:
        """The tools of ``result`` the SDK can read, each checked on its own."""
        kept = []
        for entry in result["tools"]:
            reason = self._problem(result, entry)
            if reason is None:
                kept.append(entry)
                continue
            name = entry.get("name") if isinstance(entry, Mapping) else None
            self._report(name if isinstance(name, str) else repr(name)[:80], reason)
        return kept

    def _problem(self, result: dict[str, Any], entry: Any) -> str | None:
        from mcp_types import Tool  # noqa: PLC0415
        from mcp_types.methods import validate_server_result  # noqa: PLC0415
        from pydantic import ValidationError  # noqa: PLC0415

        try:
            Tool.model_validate(entry, by_name=False)
            version = self._version()
            if version is not None:
                validate_server_result("tools/list", version, {**result, "tools": [entry]})
        except KeyError:
            return None  # a version without a table for tools/list: the SDK checks nothing more
        except (ValidationError, ValueError) as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) else None
            if first is None:
                return str(exc)[:300]
            where = ".".join(str(p) for p in first["loc"])
            return f"the SDK cannot read it ({where}: {first['msg']})"[:300]
        return None
