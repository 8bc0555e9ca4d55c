"""Evaluators of the trajectory: which tools were called, in which order and with which
arguments, and whether the run kept within its replies, tokens, cost, time and stop reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .grading import EvalContext, Verdict
from .trajectory import CallMade

__all__ = ["Expected", "ToolCalls", "Within"]

Order = Literal["in_order", "exact", "any"]


@dataclass(frozen=True, slots=True)
class Expected:
    """A call a case expects: the tool's ``name`` and, if given, arguments it must have been
    called with (only these keys are compared unless ``ToolCalls(arguments="exact")``)."""

    name: str
    input: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """The run called ``calls`` (names, ``(name, arguments)`` pairs or ``Expected``).

    ``order``: ``"in_order"`` (these calls appear in this order, others may come between),
    ``"exact"`` (these calls and no others, in this order), ``"any"`` (each appears somewhere).
    ``ToolCalls([], order="exact")`` checks that no tool was called.
    """

    calls: Sequence[Any]
    order: Order = "in_order"
    arguments: Literal["subset", "exact"] = "subset"
    name: str = "tool_calls"

    def __post_init__(self) -> None:
        if self.order not in ("in_order", "exact", "any"):
            raise ValueError(f"ToolCalls order must be in_order, exact or any, not {self.order!r}")
        if self.arguments not in ("subset", "exact"):
            raise ValueError(f"ToolCalls arguments must be subset or exact, not {self.arguments!r}")
        object.__setattr__(self, "calls", tuple(_expected(c) for c in self.calls))

    def evaluate(self, ctx: EvalContext) -> Verdict:
        made = ctx.trajectory.calls
        wanted: tuple[Expected, ...] = tuple(self.calls)
        if self.order == "exact":
            ok = len(made) == len(wanted) and all(map(self._fits, wanted, made))
        elif self.order == "any":
            ok = all(any(self._fits(w, m) for m in made) for w in wanted)
        else:
            ok = self._in_order(wanted, made)
        if ok:
            return Verdict(True)
        return Verdict(False, reason=f"expected {self.order} {_show(wanted)}; called {_made(made)}")

    def _in_order(self, wanted: tuple[Expected, ...], made: tuple[CallMade, ...]) -> bool:
        at = 0
        for call in made:
            if at < len(wanted) and self._fits(wanted[at], call):
                at += 1
        return at == len(wanted)

    def _fits(self, wanted: Expected, call: CallMade) -> bool:
        if wanted.name != call.name:
            return False
        if wanted.input is None:
            return True
        if self.arguments == "exact":
            return dict(call.input) == dict(wanted.input)
        return all(k in call.input and call.input[k] == v for k, v in wanted.input.items())


def _expected(call: Any) -> Expected:
    if isinstance(call, Expected):
        return call
    if isinstance(call, str):
        return Expected(call)
    if isinstance(call, Mapping) and isinstance(call.get("name"), str):
        extra = set(call) - {"name", "input"}
        if extra:
            raise ValueError(f"an expected call has name and input, not {sorted(extra)}")
        return Expected(call["name"], call.get("input"))
    if isinstance(call, Sequence) and len(call) == 2 and isinstance(call[0], str):
        return Expected(call[0], call[1])
    raise ValueError(f"an expected call is a name, (name, arguments) or Expected, not {call!r}")


def _show(calls: tuple[Expected, ...]) -> str:
    return (
        "["
        + ", ".join(c.name if c.input is None else f"{c.name}({dict(c.input)})" for c in calls)
        + "]"
    )


def _made(calls: tuple[CallMade, ...]) -> str:
    return (
        "[" + ", ".join(f"{c.name}({dict(c.input)})" for c in calls) + "]" if calls else "nothing"
    )


@dataclass(frozen=True, slots=True)
class Within:
    """The run kept within bounds: at most ``iterations`` model replies, ``tool_calls`` calls,
    ``tokens`` (input + output), ``cost`` USD (needs prices) and ``seconds``; ended with
    ``stop_reason`` if given; ``limit``: False (no ``Limits`` field stopped it), True (one did)
    or a field's name (that one did)."""

    iterations: int | None = None
    tool_calls: int | None = None
    tokens: int | None = None
    cost: float | None = None
    seconds: float | None = None
    stop_reason: str | None = None
    limit: bool | str | None = None
    name: str = "within"

    @property
    def accepts_errors(self) -> bool:
        """A run this expects to be stopped (by a limit, or with a stop reason) passes with the
        error that stopped it."""
        return bool(self.limit) or self.stop_reason is not None

    def evaluate(self, ctx: EvalContext) -> Verdict:
        path = ctx.trajectory
        tokens = path.usage.input_tokens + path.usage.output_tokens
        over = [
            f"{what} {got:g} > {most:g}"
            for what, got, most in (
                ("iterations", path.iterations, self.iterations),
                ("tool_calls", len(path.calls), self.tool_calls),
                ("tokens", tokens, self.tokens),
                ("seconds", path.seconds, self.seconds),
            )
            if most is not None and got > most
        ]
        over += self._cost(path.cost) + self._ending(path.stop_reason, path.limit)
        return Verdict(not over, reason="; ".join(over))

    def _cost(self, cost: float | None) -> list[str]:
        if self.cost is None:
            return []
        if cost is None:
            return ["cost unknown (give evaluate() prices for the models)"]
        return [f"cost {cost:g} > {self.cost:g}"] if cost > self.cost else []

    def _ending(self, stop: Any, limit: str | None) -> list[str]:
        found: list[str] = []
        if self.stop_reason is not None and str(stop) != self.stop_reason:
            found.append(f"stopped by {stop}, not {self.stop_reason}")
        if self.limit is False and limit is not None:
            found.append(f"the {limit} limit stopped it")
        elif self.limit is True and limit is None:
            found.append("no limit stopped it")
        elif isinstance(self.limit, str) and limit != self.limit:
            found.append(f"stopped by limit {limit}, not {self.limit}")
        return found
