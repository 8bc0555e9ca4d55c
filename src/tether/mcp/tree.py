"""Every process an MCP server started, ended with its session. A server is started with a mark
in its environment, which whatever it starts inherits, even a process that left its process group
(``setsid``) or lost its parent; closing the session kills whatever still carries the mark.
Where there is no ``/proc`` to search, the SDK's end of the server's process group is all."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
from pathlib import Path

__all__ = ["MARK", "end_marked", "new_mark"]

MARK = "TETHER_MCP_TREE"
_ROUNDS = 3  # searches: a process may start another while the last one is killed


def new_mark() -> str:
    """A mark no other server carries."""
    return secrets.token_hex(12)


def end_marked(mark: str) -> int:
    """Kill (SIGKILL) every process of this user whose environment carries ``mark``; returns how
    many were killed. Synchronous, so a cancelled close cannot leave it half done."""
    killed = 0
    for _ in range(_ROUNDS):
        found = _marked(f"{MARK}={mark}".encode())
        if not found:
            break
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


def _marked(entry: bytes) -> list[int]:
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    me, uid, found = os.getpid(), os.getuid(), []
    for path in proc.iterdir():
        if not path.name.isdigit() or int(path.name) == me:
            continue
        try:
            if path.stat().st_uid != uid:
                continue
            environ = (path / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if entry in environ.split(b"\0"):
            found.append(int(path.name))
    return found
