"""Opening files one name at a time beneath a directory descriptor (``openat``), never through
a symbolic link: the flags for that, and whether this platform can do it at all."""

from __future__ import annotations

import functools
import os

__all__ = ["DIR_FLAGS", "FILE_FLAGS", "ROOT_FLAGS", "SAFE_OPEN"]


def _flags(*names: str) -> int:
    """``os.O_RDONLY`` with the named flags (0 where the platform lacks one)."""
    return functools.reduce(int.__or__, (getattr(os, name, 0) for name in names), os.O_RDONLY)


ROOT_FLAGS = _flags("O_DIRECTORY", "O_CLOEXEC")  # the root itself may be a link
DIR_FLAGS = _flags("O_DIRECTORY", "O_NOFOLLOW", "O_CLOEXEC")
# O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused once opened).
FILE_FLAGS = _flags("O_NOFOLLOW", "O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC", "O_BINARY")
SAFE_OPEN = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
