"""The user's frame: the first one outside tether, so a tool made deep inside (``Agent(tools=
[fn])``) resolves the user's local names and a warning points at the user's line."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

__all__ = ["user_locals", "user_stacklevel"]

_COPIES = "dataclasses"  # ``replace``: a copy of a tool (``bind``, a rename), not a new one


def _ours(frame: FrameType) -> bool:
    name = frame.f_globals.get("__name__", "")
    return isinstance(name, str) and (name == "tether" or name.startswith("tether."))


def _user_frame(start: FrameType | None) -> tuple[FrameType | None, int]:
    """The first frame from ``start`` up that is not tether's, and how many frames up it is."""
    frame, level = start, 1
    while frame is not None and _ours(frame):
        frame, level = frame.f_back, level + 1
    return frame, level


def user_locals() -> dict[str, Any]:
    """The local names of the user's frame (empty when there is none)."""
    frame, _ = _user_frame(sys._getframe(1))
    return dict(frame.f_locals) if frame is not None else {}


def user_stacklevel() -> int | None:
    """The ``stacklevel`` that makes a warning raised by this function's caller point at the
    user's line; None when the user's "line" is ``dataclasses.replace`` copying a tool."""
    frame, level = _user_frame(sys._getframe(1))
    if frame is not None and frame.f_globals.get("__name__") == _COPIES:
        return None
    return level
