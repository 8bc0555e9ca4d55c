"""What one run has produced so far (``RunState``, which ``AgentStream`` reads) and what a run
may start from (``UserInput``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..context import ContextStore
from ..events import SessionEndEvent
from ..messages import ContentBlock, Message
from ..types import ZERO_USAGE, StopReason, Usage

__all__ = ["RunState", "UserInput"]

UserInput: TypeAlias = str | Message | Sequence[ContentBlock] | None


@dataclass(slots=True)
class RunState:
    """What a run has produced so far; ``AgentStream`` reads it."""

    context: ContextStore
    final_text: str = ""
    stop_reason: StopReason | None = None
    usage: Usage = ZERO_USAGE
    error: BaseException | None = None
    iterations: int = 0
    done: bool = False
    end: SessionEndEvent | None = None
    output: Any = None
    notes: dict[str, Any] | None = None  # what its tools keep between calls (``run_notes``)

    def tool_notes(self) -> dict[str, Any]:
        """The notes its tools keep between calls, made on first use (a run without tools
        makes none)."""
        if self.notes is None:
            self.notes = {}
        return self.notes

    def add_usage(self, usage: Usage) -> None:
        """Count tokens spent outside the run's own model calls (a sub-agent a tool ran)."""
        self.usage = self.usage + usage
