"""``run_blocking``: finish a coroutine from sync code, also when an event loop is already
running in this thread (a notebook, an async app calling a sync API): then it runs on a fresh
loop in a worker thread while this thread waits."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """The value of ``coro`` (its exception raised here)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tether-sync") as pool:
        return pool.submit(asyncio.run, coro).result()
