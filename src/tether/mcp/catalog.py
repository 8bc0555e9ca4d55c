"""``ToolCatalog``: a server's last good tool list, read again in the background when it may have
changed. A caller waits for a new list only until ``budget`` seconds after its reading began;
past that (or when reading failed) it gets the last good list, and the reason is kept. While
that reason stands (the server is degraded) no caller waits at all: each gets the last good list
at once and the list is read again in the background, one reading at a time, until one
succeeds. So a server whose ``tools/list`` hangs or times out delays one model call, once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from ..tools.tool import Tool
from .listing import Listing

__all__ = ["ToolCatalog"]

log = logging.getLogger("tether.mcp")


class ToolCatalog:
    """The tools of one server: ``current()`` for callers, ``invalidate()`` when the list may
    have changed, ``refresh()`` to read it again now, ``accept()`` for a list read elsewhere,
    ``close()`` to stop reading.

    ``read()`` reads the list (raising what went wrong); ``settled()`` is told each time a
    reading ends, well or not; ``listed(tools)`` of each list taken; ``name`` names the server
    in log lines."""

    def __init__(
        self,
        read: Callable[[], Awaitable[Listing]],
        budget: float,
        settled: Callable[[], None],
        name: str,
        listed: Callable[[list[Tool]], None] | None = None,
    ) -> None:
        self.budget = budget
        self.tools: list[Tool] = []
        self.problems: tuple[str, ...] = ()  # of the last good list: tools left out
        self.failure: str | None = None  # why the last good list is all there is
        self._read = read
        self._settled = settled
        self._listed = listed
        self._name = name
        self._wanted = 1  # bumped by invalidate(); a list is fresh when read for the latest
        self._have = 0
        self._task: asyncio.Task[None] | None = None
        self._follow = False  # refresh() asked: a list that changed during a reading is read again
        self._began = 0.0

    @property
    def stale(self) -> bool:
        """Whether the list may have changed since it was last read."""
        return self._have != self._wanted

    def invalidate(self) -> None:
        """The list may have changed: the next ``current()`` reads it again."""
        self._wanted += 1

    def reset(self) -> None:
        """A new connection (the server entered again): its list is read afresh, and waited
        for as a new server's is; until then the last good list stands."""
        self.failure, self.problems = None, ()
        self.invalidate()

    def accept(self, listing: Listing) -> None:
        """Take ``listing``, read by the caller just now, as the current list."""
        self._take(listing, self._wanted)

    async def current(self) -> list[Tool]:
        """The list, read again first if it may have changed and the reading is done within
        its budget; else the last good list (``failure`` says why). While degraded (the last
        reading failed or was late) it never waits: the reading is retried in the background."""
        if not self.stale:
            return self.tools
        task = self._start()
        if self.failure is not None:
            return self.tools
        left = self._began + self.budget - asyncio.get_running_loop().time()
        if left > 0:
            await asyncio.wait((task,), timeout=left)  # the reading goes on after a timeout
        if not task.done() and self.failure is None:
            self._fail(f"tools/list has not answered within {self.budget:g} s")
        return self.tools

    def refresh(self) -> None:
        """The list changed: read it again now, in the background (a reading under way
        serves), so that ``listed`` hears of the new list without waiting for a caller."""
        self.invalidate()
        self._follow = True
        self._start()

    def _start(self) -> asyncio.Task[None]:
        task = self._task
        if task is None:
            task = self._task = asyncio.create_task(self._reading(), name="tether-mcp-tools")
            self._began = asyncio.get_running_loop().time()
        return task

    async def close(self) -> None:
        """Stop a reading still under way."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _reading(self) -> None:
        wanted, self._follow = self._wanted, False
        read = False
        try:
            listing = await self._read()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # McpError, or anything a broken server made the SDK raise
            self._fail(str(exc) or type(exc).__name__)
        else:
            self._take(listing, wanted)
            read = True
        finally:
            self._task = None
        self._settled()
        if read and self._follow and self.stale:
            self._start()  # it changed again while this reading was under way

    def _take(self, listing: Listing, wanted: int) -> None:
        if listing.problems and listing.problems != self.problems:
            for problem in listing.problems:
                log.warning("MCP server %r: %s", self._name, problem)
        self.tools, self.problems, self.failure = list(listing.tools), listing.problems, None
        self._have = wanted
        if self._listed is not None:
            self._listed(self.tools)

    def _fail(self, reason: str) -> None:
        if reason != self.failure:
            log.warning(
                "MCP server %r: %s; offering its last list (%d tools)",
                self._name,
                reason,
                len(self.tools),
            )
        self.failure = reason
