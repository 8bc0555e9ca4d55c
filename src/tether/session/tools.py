"""The session's tools as one ``ToolSource``: the user's ``mcp_tools`` list, read again each round
(so a tool or a server appended mid-session is picked up; a server is entered first), local
tools first, then every server's in the list's order, names made unique when sources collide."""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any

from ..mcp.names import fitted
from ..mcp.prefix import prefix_of
from ..mcp.tool import McpTool
from ..tools.tool import Tool

__all__ = ["SessionTools", "is_server"]

log = logging.getLogger("tether.session")

OnConnect = Callable[[Any], Any]


def is_server(item: Any) -> bool:
    """Whether ``item`` is an MCP server transport (``McpStdio``, ``McpStreamable``, or one like
    them): entered with ``async with``, pinged, and listed."""
    return all(hasattr(item, name) for name in ("__aenter__", "__aexit__", "ping", "list_tools"))


class SessionTools:
    """The tools of ``items`` (``McpTool``, ``Tool`` and server transports; a list is kept as
    the user's own, not copied). When a server's tool has a name another source offers too,
    every tool of that server is offered as ``prefix__name`` from then on; its prefix is the
    server's own (``prefix``), numbered ``-2``, ``-3``... when two servers share one. Local
    tools keep their names, and so does a server with a ``name_prefix`` (its tools are named
    by it already, as padwan-ai's are: a name still taken is left out, never prefixed twice)."""

    def __init__(self, items: Sequence[Any]) -> None:
        self.items: Sequence[Any] = items if isinstance(items, list) else tuple(items)
        self._exits: AsyncExitStack | None = None
        self._on_connect: OnConnect | None = None
        self._entered: dict[int, Any] = {}  # servers entered (or found open) in this session
        self._ready: dict[int, Any] = {}  # ... and pinged
        self._prefixes: dict[int, str] = {}  # each server's prefix, unique in the session
        self._known: dict[int, Any] = {}  # the servers of _prefixes, held so ids stay theirs
        self._prefixed: set[int] = set()  # servers whose tools carry their prefix
        self._made: dict[int, tuple[McpTool, Tool]] = {}  # each McpTool as the loop runs it
        self._renamed: dict[int, tuple[Tool, Tool]] = {}  # each prefixed tool, by its original
        self._left_out: set[str] = set()  # names already warned about
        self._by_name: dict[str, Tool] = {}
        self._local()  # bad items are refused now, not at the first round

    @property
    def servers(self) -> list[Any]:
        """The servers in the list now."""
        return [item for item in self.items if is_server(item)]

    async def enter(self, exits: AsyncExitStack, on_connect: OnConnect | None) -> None:
        """Connect the servers of the list, in order: each entered into ``exits`` (so it
        closes with it; one already open is left to its owner), pinged, then reported to
        ``on_connect``. A server appended later is connected so at the next round."""
        self._exits, self._on_connect = exits, on_connect
        exits.callback(self._left)
        for server in self.servers:
            await self._connect(server)

    def _left(self) -> None:
        self._exits = None
        self._entered.clear()
        self._ready.clear()

    async def _connect(self, server: Any) -> None:
        key = id(server)
        if key in self._ready:
            return
        if key not in self._entered:
            if self._exits is None:
                raise RuntimeError(
                    f"{server!r} is a server: enter the session first "
                    "(`async with AgentSession(...) as s`)"
                )
            if not getattr(server, "is_open", False):
                await self._exits.enter_async_context(server)
            self._entered[key] = server
        await server.ping()
        if self._on_connect is not None:
            done = self._on_connect(server)
            if inspect.isawaitable(done):
                await done
        self._ready[key] = server
        if key not in self._prefixes:
            self._prefixes[key] = self._unique(prefix_of(str(getattr(server, "prefix", "mcp"))))
            self._known[key] = server

    def _unique(self, prefix: str) -> str:
        taken = set(self._prefixes.values())
        number, unique = 1, prefix
        while unique in taken:
            number += 1
            unique = f"{prefix}-{number}"
        return unique

    async def list_tools(self) -> list[Tool]:
        local = self._local()
        listings: list[tuple[int, list[Tool]]] = []
        for server in self.servers:
            await self._connect(server)
            try:
                listed = server.list_tools()
                if inspect.isawaitable(listed):
                    listed = await listed
            except Exception as exc:  # a server that cannot list now: the others still can
                log.warning(
                    "the tools of %s are left out this round: %s", self._prefixes[id(server)], exc
                )
                continue
            listings.append((id(server), list(listed)))
        tools = self._named(local, listings)
        self._by_name = {t.name: t for t in tools}
        return tools

    def _local(self) -> list[Tool]:
        """The list's own tools, as the loop runs them (each ``McpTool`` made once)."""
        tools: list[Tool] = []
        made: dict[int, tuple[McpTool, Tool]] = {}
        for item in self.items:
            if isinstance(item, McpTool):
                kept = self._made.get(id(item))
                made[id(item)] = kept if kept is not None else (item, item.as_tool())
                tools.append(made[id(item)][1])
            elif isinstance(item, Tool):
                tools.append(item)
            elif not is_server(item):
                raise TypeError(
                    f"mcp_tools takes McpTool, Tool, McpStdio and McpStreamable items, got {item!r}"
                )
        self._made = made
        names = Counter(t.name for t in tools)
        repeated = sorted(n for n, count in names.items() if count > 1)
        if repeated:
            raise ValueError(f"two tools of the session share the name(s) {', '.join(repeated)}")
        return tools

    def _named(self, local: list[Tool], listings: list[tuple[int, list[Tool]]]) -> list[Tool]:
        """Local tools, then each server's, the servers whose names collide prefixed."""
        while True:  # prefixing one server may make its names collide with another's
            names = Counter(t.name for t in local)
            for key, listed in listings:
                names.update({self._name(key, t) for t in listed})
            colliding = {
                key
                for key, listed in listings
                if key not in self._prefixed
                and not self._named_by_itself(key)
                and any(names[t.name] > 1 for t in listed)
            }
            if not colliding:
                break
            self._prefixed |= colliding
        tools = list(local)
        taken = {t.name for t in tools}
        renamed: dict[int, tuple[Tool, Tool]] = {}
        for key, listed in listings:
            for tool in listed:
                offered = self._offered(key, tool, renamed)
                if offered.name in taken:
                    self._leave_out(offered.name)
                    continue
                taken.add(offered.name)
                tools.append(offered)
        self._renamed = renamed
        return tools

    def _named_by_itself(self, key: int) -> bool:
        """Whether the server names its own tools (``name_prefix``, as padwan-ai's)."""
        return getattr(self._known.get(key), "name_prefix", None) is not None

    def _name(self, key: int, tool: Tool) -> str:
        if key not in self._prefixed:
            return tool.name
        return fitted(f"{self._prefixes[key]}__{tool.name}")

    def _offered(self, key: int, tool: Tool, renamed: dict[int, tuple[Tool, Tool]]) -> Tool:
        """``tool`` under its name in the session (the same copy each round it is unchanged)."""
        name = self._name(key, tool)
        if name == tool.name:
            return tool
        kept = self._renamed.get(id(tool))
        if kept is None or kept[0] is not tool or kept[1].name != name:
            kept = (tool, dataclasses.replace(tool, name=name))
        renamed[id(tool)] = kept
        return kept[1]

    def _leave_out(self, name: str) -> None:
        if name not in self._left_out:
            self._left_out.add(name)
            log.warning(
                "a server's tool %r is left out: another tool of the session has that name", name
            )

    def named(self, name: str) -> Tool:
        """The tool offered under ``name`` in the latest listing."""
        return self._by_name[name]

    def offered(self, name: str) -> Tool | None:
        """The tool offered under ``name`` in the latest listing, if any."""
        return self._by_name.get(name)
