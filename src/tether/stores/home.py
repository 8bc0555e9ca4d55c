"""Where tether keeps its chats when no store is named: the SQLite file the CLI and
``tether serve`` share."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["chats_path"]


def chats_path(given: Path | None = None) -> Path:
    """``given``, else ``$TETHER_HOME/chats.db``, else ``tether/chats.db`` in the user's data
    directory (``$XDG_DATA_HOME``, else ``~/.local/share``)."""
    if given is not None:
        return given
    home = os.environ.get("TETHER_HOME")
    if home:
        return Path(home) / "chats.db"
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "tether" / "chats.db"
