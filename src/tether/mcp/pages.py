"""A paginated MCP listing read whole, and bounded: a server that answers page after page forever,
or the same cursor again, is cut off, and the cut is reported with what was read."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_ENTRIES", "MAX_PAGES", "Pages", "read_pages"]

MAX_PAGES = 100  # pages read of one listing
MAX_ENTRIES = 1_000  # entries kept of one listing


@dataclass(frozen=True, slots=True)
class Pages:
    """The entries of a listing, and why it may not be whole (empty when it is)."""

    entries: list[Any]
    problems: tuple[str, ...] = ()


async def read_pages(fetch: Callable[[str | None], Awaitable[Any]], key: str, what: str) -> Pages:
    """Every page of a listing: ``fetch(cursor)`` gives one page, whose ``key`` holds its
    entries and ``next_cursor`` the next page's cursor."""
    entries: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        entries.extend(getattr(page, key) or ())
        cursor = page.next_cursor
        if len(entries) > MAX_ENTRIES or (cursor and len(entries) == MAX_ENTRIES):
            return Pages(entries[:MAX_ENTRIES], (f"{what} cut: more than {MAX_ENTRIES} entries",))
        if not cursor:
            return Pages(entries)
        if cursor in seen:
            return Pages(entries, (f"{what} cut: the server sent cursor {cursor[:40]!r} twice",))
        seen.add(cursor)
    return Pages(entries, (f"{what} cut after {MAX_PAGES} pages",))
