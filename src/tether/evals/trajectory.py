"""What a run did, read from its events: the tool calls in the order the model asked for them,
the replies, tokens, cost, time, and how it ended (a limit that stopped it included)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import LimitExceeded
from ..events import IterationEnd, SessionEndEvent, StreamEvent, ToolDispatch, ToolResult
from ..loop import reply_cost
from ..types import StopReason, Usage

__all__ = ["CallMade", "Trajectory", "trajectory_of"]


@dataclass(frozen=True, slots=True)
class CallMade:
    """One call the model asked for: its tool, the arguments it sent, and how it ended
    (``result`` is the text the tool returned; None if it never finished)."""

    name: str
    input: Mapping[str, Any]
    is_error: bool = False
    result: str | None = None


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A run's path: ``calls`` in the order asked, ``iterations`` (model replies), ``usage``
    (tokens), ``cost`` in USD (None when a model is not priced), wall-clock ``seconds``,
    ``stop_reason``, ``limit`` (the ``Limits`` field that stopped it, if one did), ``error``
    (the text of the error that ended it) and every ``event``."""

    calls: tuple[CallMade, ...] = ()
    iterations: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    seconds: float = 0.0
    stop_reason: StopReason | None = None
    limit: str | None = None
    error: str | None = None
    models: tuple[str, ...] = ()
    events: tuple[StreamEvent, ...] = field(default=(), repr=False, compare=False)

    @property
    def tools(self) -> tuple[str, ...]:
        """The names of the tools called, in order."""
        return tuple(call.name for call in self.calls)


def trajectory_of(
    events: Iterable[StreamEvent],
    seconds: float,
    prices: Mapping[str, tuple[float, ...]] | None = None,
    default_model: str | None = None,
) -> Trajectory:
    """The trajectory of a run that yielded ``events`` in ``seconds``; ``prices`` (as in
    ``Limits.prices``) give its cost."""
    kept = tuple(events)
    calls: dict[str, CallMade] = {}
    usage, cost, models, end = Usage(), 0.0 if prices else None, [], None
    for event in kept:
        if isinstance(event, ToolDispatch):
            calls.setdefault(event.tool_use_id, CallMade(event.name, dict(event.input)))
        elif isinstance(event, ToolResult):
            calls[event.tool_use_id] = _finished(event, calls.get(event.tool_use_id))
        elif isinstance(event, IterationEnd):
            usage += event.usage
            model = event.model or default_model
            if model and model not in models:
                models.append(model)
            cost = _add_cost(cost, prices, model, event.usage)
        elif isinstance(event, SessionEndEvent):
            end = event
    error = None if end is None else end.error
    return Trajectory(
        tuple(calls.values()),
        end.iterations if end is not None else _replies(kept),
        usage,
        cost,
        seconds,
        None if end is None else end.stop_reason,
        error.limit if isinstance(error, LimitExceeded) else None,
        None if error is None else f"{type(error).__name__}: {error}",
        tuple(models),
        kept,
    )


def _finished(event: ToolResult, asked: CallMade | None) -> CallMade:
    content = event.content
    text = content if isinstance(content, str) else str(content)
    arguments = asked.input if asked is not None else dict(event.input)
    return CallMade(event.name, arguments, event.is_error, text)


def _replies(events: tuple[StreamEvent, ...]) -> int:
    return sum(isinstance(event, IterationEnd) for event in events)


def _add_cost(
    cost: float | None,
    prices: Mapping[str, tuple[float, ...]] | None,
    model: str | None,
    usage: Usage,
) -> float | None:
    if cost is None or not prices:
        return None
    reply = reply_cost(prices, model, usage)
    return None if reply is None else cost + reply
