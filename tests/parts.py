"""The real parts some tests need: servers, node, a browser, the local model. ``scripts/test.sh``
installs and starts every one of them and sets ``TETHER_TEST_ALL_PARTS=1``, under which a missing
part fails its tests. A bare ``pytest`` skips them instead, naming the part, and ends with one
line saying how to get them."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["ALL_PARTS", "HOW", "absent", "needs", "require", "server", "skipped"]

ALL_PARTS = "TETHER_TEST_ALL_PARTS"
HOW = "scripts/test.sh installs and starts every part and runs the whole suite"
SERVERS = {"postgres": ("PostgreSQL", "TETHER_PG_DSN"), "redis": ("Redis", "TETHER_REDIS_URL")}

skipped: dict[str, int] = {}  # part -> tests skipped for want of it, in this process


def absent(part: str, detail: str = "") -> NoReturn:
    """``part`` is not here: fail when every part is promised, else skip (and count it)."""
    why = f"{part} is not here" + (f" ({detail})" if detail else "")
    if os.environ.get(ALL_PARTS):
        pytest.fail(f"{why}; {ALL_PARTS} is set, so every part must be")
    skipped[part] = skipped.get(part, 0) + 1
    pytest.skip(f"{why}: {HOW}")


def server(kind: str) -> str:
    """The address of the test server of ``kind`` (``postgres`` or ``redis``)."""
    part, variable = SERVERS[kind]
    found = os.environ.get(variable)
    if not found:
        absent(part, f"{variable} is not set")
    return found


def needs(kind: str) -> pytest.MarkDecorator:
    """Mark a test (or a parameter) as needing the server ``kind``: checked in the test process
    before the test runs, so a child process it starts never meets the absence."""
    return pytest.mark.needs(kind)


def require(item: pytest.Item) -> None:
    """Skip or fail ``item`` before it runs when a server it is marked with is absent."""
    for mark in item.iter_markers("needs"):
        server(str(mark.args[0]))
