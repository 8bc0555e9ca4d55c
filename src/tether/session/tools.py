"""The session's tools as one ``ToolSource``: its local tools and every server's, listed again
each round (a server refreshes its own list when it says the list changed)."""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Sequence
from typing import Any

from ..mcp.names import fitted
from ..tools.tool import Tool

__all__ = ["SessionTools"]

log = logging.getLogger("tether.session")


class SessionTools:
    """Local tools first, then each server's in order; a name already taken gets the server's
    ``prefix`` (``prefix__name``), so two servers with a ``search`` tool both stay usable."""

    def __init__(self, local: Sequence[Tool], servers: Sequence[Any]) -> None:
        names = [t.name for t in local]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"two tools of the session share the name(s) {', '.join(repeated)}")
        self.local = list(local)
        self.servers = list(servers)
        self._by_name: dict[str, Tool] = {t.name: t for t in self.local}

    async def list_tools(self) -> list[Tool]:
        tools = list(self.local)
        taken = {t.name for t in tools}
        for server in self.servers:
            try:
                listed = server.list_tools()
                if inspect.isawaitable(listed):
                    listed = await listed
            except Exception as exc:  # a server that cannot list now: the others still can
                log.warning("the tools of %s are left out this round: %s", server.prefix, exc)
                continue
            for offered in listed:
                tool = offered
                if tool.name in taken:  # a prefixed name still fits what providers take
                    tool = dataclasses.replace(tool, name=fitted(f"{server.prefix}__{tool.name}"))
                if tool.name in taken:
                    continue  # the prefixed name is taken too: the first tool keeps it
                taken.add(tool.name)
                tools.append(tool)
        self._by_name = {t.name: t for t in tools}
        return tools

    def named(self, name: str) -> Tool:
        """The tool offered under ``name`` in the latest listing."""
        return self._by_name[name]

    def offered(self, name: str) -> Tool | None:
        """The tool offered under ``name`` in the latest listing, if any."""
        return self._by_name.get(name)
