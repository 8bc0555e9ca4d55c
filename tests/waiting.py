"""Waiting on a condition, not for a guessed time: ``until`` polls it up to a deadline."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(check: Callable[[], bool], what: str, limit: float = 15.0) -> None:
    """Wait until ``check()`` holds (a loaded machine may take seconds), or fail saying ``what``."""
    deadline = time.monotonic() + limit
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {limit} s")
        await asyncio.sleep(0.02)
