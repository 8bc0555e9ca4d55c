"""The tools a run offers the model each iteration, and the dispatcher that runs their calls.

The list is read again every iteration (a ``ToolSource`` may list new tools, a selector may trim
them); the table by name, the specs sent and the dispatcher are built again only when the tools
are not the very ones offered last time, so a run whose tools do not change builds them once."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

from ..messages import Message
from ..tools.search import ToolSearch
from ..tools.selector import ListingCache, only_tools, read_tools
from ..tools.tool import Tool
from ..types import ToolSpec
from .dispatch import ToolDispatcher
from .steps import offer

if TYPE_CHECKING:
    from .config import AgentConfig

__all__ = ["Offer"]

_DEFERRED = attrgetter("deferred")
_NONE_YET: dict[str, Tool] = {}  # never handed out: ``built`` replaces it before any read


class Offer:
    """One agent's tools on offer in a run (a handoff starts a new one): the sources' last
    listings, the tools offered last, as a table and as specs, and the dispatcher made for
    them (``made``, kept by the run)."""

    __slots__ = ("listings", "made", "search", "specs", "table", "tools")

    def __init__(self) -> None:
        self.listings: ListingCache | None = None
        self.tools: Sequence[Tool] = ()  # never equal to a list: the first ``built`` builds
        self.table: dict[str, Tool] = _NONE_YET
        self.specs: list[ToolSpec] = []
        self.made: ToolDispatcher | None = None
        self.search: ToolSearch | None = None  # for deferred tools when the agent has no selector

    async def read(
        self, agent: AgentConfig, history: Sequence[Message], extra: Sequence[Tool]
    ) -> list[Tool]:
        """This iteration's tools: ``agent``'s (sources read again, then trimmed by its
        selector, which sees ``history``) and ``extra`` (transfer tools)."""
        tools = only_tools(agent.tools)  # no source to ask and none deferred: no await
        if tools is None or agent.selector is not None:
            tools = await self._listed(agent, history)
        return [*tools, *extra] if extra else tools

    async def _searched(self, history: Sequence[Message], tools: list[Tool]) -> list[Tool]:
        """``tools`` with the deferred ones behind a search of the run's own."""
        if self.search is None:
            self.search = ToolSearch(threshold=sys.maxsize)
        return await self.search.select(history, tools)

    def built(self, tools: list[Tool]) -> tuple[dict[str, Tool], list[ToolSpec]]:
        """``tools`` by name (two with one name are an error) and as sent: those of the last
        iteration when they are the same tools (``Tool`` compares by identity)."""
        if tools != self.tools:
            self.table, self.specs = offer(tools)
            self.tools, self.made = tools, None
        return self.table, self.specs

    async def _listed(self, agent: AgentConfig, history: Sequence[Message]) -> list[Tool]:
        """The tools of sources read again, then trimmed by the selector (or, with none, the
        deferred ones put behind a search)."""
        tools = only_tools(agent.tools)
        if tools is None:
            if self.listings is None:
                self.listings = {}
            tools = await read_tools(agent.tools, self.listings)
        if agent.selector is not None:
            tools = list(await agent.selector.select(history, tools))
        elif any(map(_DEFERRED, tools)):
            tools = await self._searched(history, tools)
        return tools
