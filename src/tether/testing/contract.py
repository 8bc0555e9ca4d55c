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
    kinds: dict[int, str] = {}  # index -> "text" | "reasoning" | "tool use"
    tool_ids: dict[str, int] = {}  # tool_use_id -> index
    end: tuple[int, IterationEnd] | None = None
    position = -1
    for position, event in _enumerate(events):
        if end is not None:
            if isinstance(event, IterationEnd):
                raise _fail(
                    position, event, f"a second IterationEnd (the first was event #{end[0]})"
                )
            raise _fail(position, event, f"event after the IterationEnd at event #{end[0]}")
        if isinstance(event, _LOOP_EVENTS):
            raise _fail(
                position,
                event,
                f"{type(event).__name__} is a loop event, emitted by the agent; "
                f"a transport must not yield it",
            )
        if isinstance(event, IterationEnd):
            end = (position, event)
        elif isinstance(event, TextDelta | ReasoningDelta):
            kind = "text" if isinstance(event, TextDelta) else "reasoning"
            seen = kinds.setdefault(event.index, kind)
            if seen != kind:
                raise _fail(
                    position,
                    event,
                    f"index {event.index} already belongs to a {seen} block; "
                    f"each content block needs its own index",
                )
        elif isinstance(event, ToolUseStart):
            if event.tool_use_id in tool_ids:
                raise _fail(
                    position,
                    event,
                    f"tool_use_id {event.tool_use_id!r} was already started "
                    f"(at index {tool_ids[event.tool_use_id]})",
                )
            seen_kind = kinds.get(event.index)
            if seen_kind == "tool use":
                raise _fail(
                    position,
                    event,
                    f"a second ToolUseStart at index {event.index}; "
                    f"each tool call needs its own index",
                )
            if seen_kind is not None:
                raise _fail(
                    position,
                    event,
                    f"index {event.index} already belongs to a {seen_kind} block; "
                    f"each content block needs its own index",
                )
            kinds[event.index] = "tool use"
            tool_ids[event.tool_use_id] = event.index
        elif isinstance(event, ToolInputDelta):
            started_at = tool_ids.get(event.tool_use_id)
            if started_at is None:
                raise _fail(
                    position,
                    event,
                    f"ToolInputDelta for tool_use_id {event.tool_use_id!r} with no earlier "
                    f"ToolUseStart for that id",
                )
            if started_at != event.index:
                raise _fail(
                    position,
                    event,
                    f"ToolInputDelta for tool_use_id {event.tool_use_id!r} has index "
                    f"{event.index} but its ToolUseStart has index {started_at}",
                )
        else:
            raise _fail(position, event, f"{type(event).__name__} is not a stream event")
    if end is None:
        raise AssertionError(
            f"stream contract violated: the stream ended after {position + 1} event(s) "
            f"with no IterationEnd"
        )
    if end[1].stop_reason == StopReason.TOOL_USE and not tool_ids:
        raise _fail(
            end[0], end[1], "stop reason is TOOL_USE but no tool call was started (ToolUseStart)"
        )


def _enumerate(events: Iterable[StreamEvent]) -> Iterator[tuple[int, object]]:
    # Typed as object so a stray non-event is reported instead of confusing the checker.
    yield from enumerate(events)
