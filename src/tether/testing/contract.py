"""``assert_stream_contract``: checks the events a transport yields against the contract."""

from __future__ import annotations

from collections.abc import (
    AsyncIterable,
    Iterable,
    Iterator,
)

from ..events import (
    Compacted,
    CompactionFailed,
    ContextTrimmed,
    Error,
    IterationEnd,
    IterationStart,
    ReasoningDelta,
    Retrying,
    SessionEndEvent,
    SteeringInjected,
    StreamEvent,
    TextDelta,
    ToolDispatch,
    ToolInputDelta,
    ToolResult,
    ToolUseStart,
)
from ..types import StopReason

_LOOP_EVENTS: tuple[type, ...] = (
    IterationStart,
    ToolDispatch,
    ToolResult,
    Retrying,
    SteeringInjected,
    ContextTrimmed,
    Compacted,
    CompactionFailed,
    Error,
    SessionEndEvent,
)


async def collect(stream: AsyncIterable[StreamEvent]) -> list[StreamEvent]:
    """All events of ``stream`` in a list."""
    return [event async for event in stream]


def _fail(position: int, event: object, problem: str) -> AssertionError:
    return AssertionError(f"stream contract violated at event #{position} ({event!r}): {problem}")


def assert_stream_contract(events: Iterable[StreamEvent]) -> None:
    """Check that ``events`` are one well-formed model turn, as a transport must yield.

    Raises ``AssertionError`` naming the first offending event (0-based position) when:

    - an event is not a model event (loop events such as ``IterationStart``, ``ToolResult`` or
      ``SessionEndEvent`` come from the agent, never from a transport);
    - an index is used by two kinds of block (text, reasoning, tool use);
    - a ``ToolInputDelta`` has no earlier ``ToolUseStart`` with the same index and id;
    - two ``ToolUseStart`` share an index or a ``tool_use_id``;
    - there is no ``IterationEnd``, more than one, or any event after it;
    - the stop reason is ``TOOL_USE`` but no tool call was started.
    """
    blocks = _Blocks()
    end: tuple[int, IterationEnd] | None = None
    position = -1
    for position, event in _enumerate(events):
        problem = _after_end(end, event) or blocks.problem(event)
        if problem is not None:
            raise _fail(position, event, problem)
        if isinstance(event, IterationEnd):
            end = (position, event)
    if end is None:
        raise AssertionError(
            f"stream contract violated: the stream ended after {position + 1} event(s) "
            f"with no IterationEnd"
        )
    if end[1].stop_reason == StopReason.TOOL_USE and not blocks.tool_ids:
        raise _fail(
            end[0], end[1], "stop reason is TOOL_USE but no tool call was started (ToolUseStart)"
        )


def _after_end(end: tuple[int, IterationEnd] | None, event: object) -> str | None:
    """What is wrong with ``event`` coming after the turn's end, if the end has come."""
    if end is None:
        return None
    if isinstance(event, IterationEnd):
        return f"a second IterationEnd (the first was event #{end[0]})"
    return f"event after the IterationEnd at event #{end[0]}"


class _Blocks:
    """The content blocks a turn has opened so far: which kind holds each index, and where each
    tool call started."""

    def __init__(self) -> None:
        self.kinds: dict[int, str] = {}  # index -> "text" | "reasoning" | "tool use"
        self.tool_ids: dict[str, int] = {}  # tool_use_id -> index

    def problem(self, event: object) -> str | None:
        """What is wrong with ``event`` given the blocks before it, or None (and it is noted)."""
        if isinstance(event, _LOOP_EVENTS):
            return (
                f"{type(event).__name__} is a loop event, emitted by the agent; "
                f"a transport must not yield it"
            )
        if isinstance(event, IterationEnd):
            return None
        if isinstance(event, TextDelta | ReasoningDelta):
            return self._content(event)
        if isinstance(event, ToolUseStart):
            return self._tool_start(event)
        if isinstance(event, ToolInputDelta):
            return self._tool_input(event)
        return f"{type(event).__name__} is not a stream event"

    def _content(self, event: TextDelta | ReasoningDelta) -> str | None:
        kind = "text" if isinstance(event, TextDelta) else "reasoning"
        seen = self.kinds.setdefault(event.index, kind)
        if seen != kind:
            return (
                f"index {event.index} already belongs to a {seen} block; "
                f"each content block needs its own index"
            )
        return None

    def _tool_start(self, event: ToolUseStart) -> str | None:
        if event.tool_use_id in self.tool_ids:
            return (
                f"tool_use_id {event.tool_use_id!r} was already started "
                f"(at index {self.tool_ids[event.tool_use_id]})"
            )
        seen_kind = self.kinds.get(event.index)
        if seen_kind == "tool use":
            return (
                f"a second ToolUseStart at index {event.index}; each tool call needs its own index"
            )
        if seen_kind is not None:
            return (
                f"index {event.index} already belongs to a {seen_kind} block; "
                f"each content block needs its own index"
            )
        self.kinds[event.index] = "tool use"
        self.tool_ids[event.tool_use_id] = event.index
        return None

    def _tool_input(self, event: ToolInputDelta) -> str | None:
        started_at = self.tool_ids.get(event.tool_use_id)
        if started_at is None:
            return (
                f"ToolInputDelta for tool_use_id {event.tool_use_id!r} with no earlier "
                f"ToolUseStart for that id"
            )
        if started_at != event.index:
            return (
                f"ToolInputDelta for tool_use_id {event.tool_use_id!r} has index "
                f"{event.index} but its ToolUseStart has index {started_at}"
            )
        return None


def _enumerate(events: Iterable[StreamEvent]) -> Iterator[tuple[int, object]]:
    # Typed as object so a stray non-event is reported instead of confusing the checker.
    yield from enumerate(events)
