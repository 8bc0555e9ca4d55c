"""A page of one workflow run's event log, as the ``events`` query answers it.

A run that continued as new holds only its own events: its log starts at ``first`` (where the
run it continued from, ``previous``, ended). The page says both, so a reader that asks for an
earlier position reads it from the earlier runs (``DurableRun.events()`` follows the chain).
A page is bounded by count and by size, so no answer nears Temporal's payload limit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..events import StreamEvent
from ..stores.jsonforms import event_to_dict

__all__ = ["PAGE_BYTES", "PAGE_EVENTS", "log_page"]

PAGE_EVENTS = 500  # events per page at most
PAGE_BYTES = 256 * 1024  # JSON bytes per page at most (a larger event comes alone); under
# the SDK's warning size for a payload (512 KiB), far under Temporal's limit (2 MB)


def log_page(
    log: Sequence[StreamEvent], first: int, after: int, previous: str | None
) -> dict[str, Any]:
    """The page of ``log`` (whose event 0 is the workflow's event ``first``) from event
    ``after``: ``events``, ``next`` (the position after them), ``first``, ``previous`` (the run
    this one continued from, or None) and ``last`` (whether the page reaches the log's end)."""
    start = max(after - first, 0)
    chosen: list[dict[str, Any]] = []
    size = 0
    for event in log[start : start + PAGE_EVENTS]:
        data = event_to_dict(event)
        size += len(json.dumps(data, ensure_ascii=False, default=str).encode())
        if chosen and size > PAGE_BYTES:
            break
        chosen.append(data)
    return {
        "events": chosen,
        "next": first + start + len(chosen),
        "first": first,
        "previous": previous,
        "last": start + len(chosen) >= len(log),
    }
