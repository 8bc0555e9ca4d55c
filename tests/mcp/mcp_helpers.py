"""Helpers for the MCP tests: free ports, waiting for a server, this process's children."""

from __future__ import annotations

import gc
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listened on port {port} within {limit} s")


def children() -> list[int]:
    """The pids of this process's children (the stdio servers still running), from /proc."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # it exited meanwhile
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == me and fields[0] != "Z":
            found.append(int(entry))
    return found


def other_tasks() -> set[object]:
    """The asyncio tasks alive besides the current one (none may outlive a session)."""
    import asyncio

    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()}


def open_fds() -> int:
    """How many file descriptors this process holds open (garbage collected first, so what
    an earlier test left to the collector is not counted against a later one)."""
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


def large_open_files(limit: int = 1 << 20) -> list[str]:
    """The regular files this process holds open that are larger than ``limit`` bytes."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            info = os.stat(f"/proc/self/fd/{fd}")
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            found.append(f"{target} ({info.st_size} bytes)")
    return found


def dead(pid: int) -> bool:
    """Whether process ``pid`` is gone (or a zombie waiting to be reaped)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat_line.rsplit(")", 1)[1].split()[0] == "Z"


def texts(messages: list[Any]) -> list[str]:
    """The text of every tool result in ``messages`` (a session's), in order."""
    return [str(r.content) for m in messages for r in m.tool_results]


@contextmanager
def http_server(script: Path, *after: str) -> Iterator[str]:
    """``python SCRIPT http PORT AFTER...`` (a test server of the SDK's over Streamable HTTP) on
    a free port of 127.0.0.1, until the block ends; its URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), "http", str(port), *after],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()
