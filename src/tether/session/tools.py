"""The session's tools as one ``ToolSource``: the user's ``mcp_tools`` list, read again each round
(so a tool or a server appended mid-session is picked up; a server is entered first), local
tools first, then every server's in the list's order, names made unique when sources collide.
A server is any object that behaves as padwan-ai's transports do (``tether``'s or not)."""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

from ..mcp.names import fitted
from ..mcp.tool import McpTool
from ..tools.tool import Tool
from .prefixes import derived_prefix, named_by_itself

__all__ = ["SessionTools", "is_server"]

log = logging.getLogger("tether.session")

OnConnect = Callable[[Any], Any]


def is_server(item: Any) -> bool:
    """Whether ``item`` is an MCP server transport (``McpStdio``, ``McpStreamable``, or any
    object that behaves as padwan-ai's transports): entered with ``async with``, pinged, and
    listed (``list_tools()``, else its ``tools``: a list of ``McpTool``s)."""
    if not all(hasattr(item, name) for name in ("__aenter__", "__aexit__", "ping")):
        return False
    return hasattr(item, "list_tools") or hasattr(item, "tools")


def _duplicate(name: str, prefixed: bool) -> ValueError:
    where = " after prefixing the colliding servers" if prefixed else ""
    return ValueError(
        f"Duplicate tool name {name!r} in mcp_tools{where}: give each server a name_prefix= "
        "of its own, or rename a local tool, so that every tool has a name of its own"
    )


class SessionTools:
    """The tools of ``items`` (``McpTool``, ``Tool`` and server transports; a list is kept as
    the user's own, not copied). When a server's tool has a name another source offers too,
    every tool of that server is offered as ``prefix__name`` from then on; its prefix is
    ``derived_prefix``'s, numbered ``-2``, ``-3``... when two servers share one. Local tools
    keep their names, and so does a server with a ``name_prefix`` (its tools are named by it
    already, as padwan-ai's are) or with ``auto_prefix=False``. A name still taken then is a
    ``ValueError`` naming it, on entering the session or at the round that lists it."""

    def __init__(self, items: Sequence[Any], lent: Mapping[str, Any] | None = None) -> None:
        """``lent``: the session's answerers by attribute (``on_elicit``, ``on_sampling``),
        each lent to a server the session enters that has none of its own, while the session
        holds it."""
        self.items: Sequence[Any] = items if isinstance(items, list) else tuple(items)
        self.lent = {name: value for name, value in (lent or {}).items() if value is not None}
        self._exits: AsyncExitStack | None = None
        self._on_connect: OnConnect | None = None
        self._entered: dict[int, Any] = {}  # servers entered (or found open) in this session
        self._ready: dict[int, Any] = {}  # ... and pinged
        self._prefixes: dict[int, str] = {}  # each server's prefix, unique in the session
        self._known: dict[int, Any] = {}  # the servers of _prefixes, held so ids stay theirs
        self._prefixed: set[int] = set()  # servers whose tools carry their prefix
        self._made: dict[int, tuple[McpTool, Tool]] = {}  # each McpTool as the loop runs it
        self._served: dict[int, tuple[McpTool, Tool]] = {}  # ... those of servers' ``tools``
        self._renamed: dict[int, tuple[Tool, Tool]] = {}  # each prefixed tool, by its original
        self._by_name: dict[str, Tool] = {}
        self._local()  # bad items are refused now, not at the first round

    @property
    def servers(self) -> list[Any]:
        """The servers in the list now."""
        return [item for item in self.items if is_server(item)]

    @property
    def unopened(self) -> list[Any]:
        """The servers in the list that the session would have to open (and so enter first)."""
        return [s for s in self.servers if id(s) not in self._entered and not _open(s)]

    async def enter(self, exits: AsyncExitStack, on_connect: OnConnect | None) -> None:
        """Connect the servers of the list, in order: each entered into ``exits`` (so it
        closes with it; one already open is left to its owner), pinged, then reported to
        ``on_connect``; then list every tool once, so that a name left taken is refused now.
        A server appended later is connected so at the next round."""
        self._exits, self._on_connect = exits, on_connect
        exits.callback(self._left)
        for server in self.servers:
            await self._connect(server)
        await self.list_tools()

    def _left(self) -> None:
        self._exits = None
        self._entered.clear()
        self._ready.clear()

    async def _connect(self, server: Any) -> None:
        key = id(server)
        if key in self._ready:
            return
        if self._exits is None:  # the session is not entered: a server open already is used
            if not _open(server):
                raise RuntimeError(
                    f"{server!r} is a server: enter the session first "
                    "(`async with AgentSession(...) as s`)"
                )
            self._name(server)
            return
        if key not in self._entered:
            if not _open(server):
                self._lend(server, self._exits)
                await self._exits.enter_async_context(server)
            else:
                self._unlent(server)
            self._entered[key] = server
        await server.ping()
        if self._on_connect is not None:
            done = self._on_connect(server)
            if inspect.isawaitable(done):
                await done
        self._ready[key] = server
        self._name(server)

    def _lend(self, server: Any, exits: AsyncExitStack) -> None:
        """Give ``server`` each of the session's answerers it has none of, until the session
        leaves it."""
        for name, value in self.lent.items():
            if getattr(server, name, False) is None:
                setattr(server, name, value)
                exits.callback(setattr, server, name, None)

    def _unlent(self, server: Any) -> None:
        """A server its owner entered already cannot take the session's answerers: say so."""
        for name in self.lent:
            if getattr(server, name, False) is None:
                log.warning(
                    "%s was entered before the session: the session's %s cannot reach it "
                    "(give the server %s= of its own)",
                    getattr(server, "label", server),
                    name,
                    name,
                )

    def _name(self, server: Any) -> None:
        """Give ``server`` its prefix in this session, once (None: never prefixed)."""
        key = id(server)
        if key not in self._known:
            derived = derived_prefix(server)
            if derived is not None:
                self._prefixes[key] = self._unique(derived)
            self._known[key] = server

    def _unique(self, prefix: str) -> str:
        taken = set(self._prefixes.values())
        number, unique = 1, prefix
        while unique in taken:
            number += 1
            unique = f"{prefix}-{number}"
        return unique

    def named_servers(self) -> list[tuple[str, Any]]:
        """The servers in the list now, each with its name in the session (its prefix, unique
        in the session, once it was connected; else the one it derives)."""
        named = []
        for server in self.servers:
            name = self._prefixes.get(id(server)) or derived_prefix(server)
            named.append((name or repr(server), server))
        return named

    async def list_tools(self) -> list[Tool]:
        local = self._local()
        listings: list[tuple[int, list[Tool]]] = []
        served: dict[int, tuple[McpTool, Tool]] = {}
        for server in self.servers:
            await self._connect(server)
            try:
                listed = await self._listed(server, served)
            except Exception as exc:  # a server that cannot list now: the others still can
                shown = getattr(server, "label", None) or self._prefixes.get(id(server), "")
                log.warning("the tools of %s are left out this round: %s", shown, exc)
                continue
            listings.append((id(server), listed))
        self._served = served
        tools = self._named(local, listings)
        self._by_name = {t.name: t for t in tools}
        return tools

    async def _listed(self, server: Any, served: dict[int, tuple[McpTool, Tool]]) -> list[Tool]:
        """``server``'s tools now: its ``list_tools()``, else its ``tools`` (padwan's kind of
        transport: ``McpTool``s, each made once into the tool the loop runs)."""
        lister = getattr(server, "list_tools", None)
        if callable(lister):
            listed = lister()
            if inspect.isawaitable(listed):
                listed = await listed
            return list(listed)
        tools: list[Tool] = []
        for item in list(server.tools):
            if isinstance(item, Tool):
                tools.append(item)
                continue
            if not isinstance(item, McpTool):
                raise TypeError(f"a server's tools must be McpTool definitions, got {item!r}")
            kept = self._served.get(id(item))
            served[id(item)] = (
                kept if kept is not None and kept[0] is item else (item, item.as_tool())
            )
            tools.append(served[id(item)][1])
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
        return tools

    def _named(self, local: list[Tool], listings: list[tuple[int, list[Tool]]]) -> list[Tool]:
        """Local tools, then each server's, the servers whose names collide prefixed; a name
        still taken after that is a ``ValueError``."""
        self._prefix_colliding(local, listings)
        tools = list(local)
        taken: set[str] = set()
        for tool in tools:
            if tool.name in taken:
                raise _duplicate(tool.name, prefixed=False)
            taken.add(tool.name)
        renamed: dict[int, tuple[Tool, Tool]] = {}
        for key, listed in listings:
            for tool in listed:
                offered = self._offered(key, tool, renamed)
                if offered.name in taken:
                    raise _duplicate(offered.name, prefixed=bool(self._prefixed))
                taken.add(offered.name)
                tools.append(offered)
        self._renamed = renamed
        return tools

    def _prefix_colliding(self, local: list[Tool], listings: list[tuple[int, list[Tool]]]) -> None:
        """Prefix every server one of whose tools' names another tool also has, until none
        that may be prefixed collides."""
        while True:  # prefixing one server may make its names collide with another's
            names = Counter(t.name for t in local)
            for key, listed in listings:
                names.update(self._offered_name(key, t) for t in listed)
            colliding = {
                key
                for key, listed in listings
                if key not in self._prefixed
                and self._prefixable(key)
                and any(names[t.name] > 1 for t in listed)
            }
            if not colliding:
                return
            self._prefixed |= colliding

    def _prefixable(self, key: int) -> bool:
        """Whether the session may prefix the server's tools: not when it names them itself
        (``name_prefix``, as padwan-ai's) or asks never to be (``auto_prefix=False``)."""
        return key in self._prefixes and not named_by_itself(self._known.get(key))

    def _offered_name(self, key: int, tool: Tool) -> str:
        if key not in self._prefixed:
            return tool.name
        return fitted(f"{self._prefixes[key]}__{tool.name}")

    def _offered(self, key: int, tool: Tool, renamed: dict[int, tuple[Tool, Tool]]) -> Tool:
        """``tool`` under its name in the session (the same copy each round it is unchanged)."""
        name = self._offered_name(key, tool)
        if name == tool.name:
            return tool
        kept = self._renamed.get(id(tool))
        if kept is None or kept[0] is not tool or kept[1].name != name:
            kept = (tool, dataclasses.replace(tool, name=name))
        renamed[id(tool)] = kept
        return kept[1]

    def named(self, name: str) -> Tool:
        """The tool offered under ``name`` in the latest listing."""
        return self._by_name[name]

    def offered(self, name: str) -> Tool | None:
        """The tool offered under ``name`` in the latest listing, if any."""
        return self._by_name.get(name)


def _open(server: Any) -> bool:
    """Whether ``server`` is open already (its owner entered it)."""
    return getattr(server, "is_open", False) is True
