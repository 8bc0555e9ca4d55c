"""``Limits``: one budget for a run (tool calls, tokens, cost, wall-clock time) and the checks the
loop makes at the moment each can be passed: tokens and cost after each model reply, the tool
calls of a reply before any is dispatched, time while the model streams and tools run.

Past a limit the run ends with ``LimitExceeded`` and a history in which every stored call has a
result (``repeated_calls`` too, whose count and notices are kept by ``tether.loop.notices``).
``tool_calls_per_turn`` is a cap, not an end: the calls of one reply past it are answered
with an error result and never run, and the run goes on.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..errors import LimitExceeded, RunCancelled
from ..tools.progress import metering
from ..transports.base import CompletionTransport, NamesModel
from .control import LinkedToken

if TYPE_CHECKING:
    from ..types import Usage
    from .control import CancellationToken

__all__ = ["NO_LIMITS", "Limits", "RunBudget", "budget_for", "linked", "reply_cost"]


@dataclass(frozen=True, slots=True)
class Limits:
    """The most a run may use; every field is optional (None: no limit).

    ``prices`` maps a model name to (USD per million input tokens, USD per million output
    tokens), optionally followed by the price of a million input tokens read from the prompt
    cache and of a million written to it (uncached input otherwise); ``cost`` (USD) needs a
    price for every model that answers. ``tool_calls_per_turn``
    caps the calls of one model reply; ``seconds`` is wall-clock time for the whole run.
    ``repeated_calls`` ends the run at its N-th repeated call (the same call with the same
    arguments and the same result since the user's last message), each earlier repeat told to
    the model (``tether.loop.notices.Repeats``).
    """

    tool_calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None
    prices: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    tool_calls_per_turn: int | None = None
    seconds: float | None = None
    repeated_calls: int | None = None

    def __post_init__(self) -> None:
        for name in ("tool_calls", "input_tokens", "output_tokens", "total_tokens"):
            _count(name, getattr(self, name))
        if self.tool_calls_per_turn is not None and self.tool_calls_per_turn < 1:
            raise ValueError("Limits.tool_calls_per_turn must be >= 1")
        repeats = self.repeated_calls
        if repeats is not None and (type(repeats) is not int or repeats < 1):
            raise ValueError(
                f"Limits.repeated_calls must be a whole number >= 1 (the repeat that ends the "
                f"run), or None for no limit; not {repeats!r}"
            )
        _positive("cost", self.cost)
        _positive("seconds", self.seconds)
        if self.cost is not None and not self.prices:
            raise ValueError("Limits.cost needs prices: {model: (input USD/M, output USD/M)}")
        for model, price in self.prices.items():
            _price_pair(model, price)


def _count(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or value < 0):
        raise ValueError(f"Limits.{name} must be a count >= 0, not {value!r}")


def _positive(name: str, value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ValueError(f"Limits.{name} must be a finite number > 0, not {value!r}")


def _price_pair(model: str, price: tuple[float, ...]) -> None:
    if not 2 <= len(price) <= 4 or any(not (math.isfinite(p) and p >= 0) for p in price):
        raise ValueError(
            f"the price of {model!r} must be 2 to 4 numbers >= 0 (input, output, cached input, "
            f"cache write; USD per million tokens), not {price!r}"
        )


@dataclass(slots=True)
class RunBudget:
    """What one run has spent against its ``Limits``, and the first limit it passed.

    A limit passed is recorded, not raised at once: the reply that passed it still ends as usual
    (its ``IterationEnd`` reaches the caller), the calls it asked for are answered without
    running, and the loop then raises ``exceeded``. A run started inside a call of another
    (a sub-agent) has that run's budget as ``parent``: each reply, token and call is counted
    against every budget up the chain as it happens, and a limit passed anywhere up the chain
    ends the sub-run too.
    """

    limits: Limits
    parent: RunBudget | None = None
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    exceeded: LimitExceeded | None = None
    failure: ValueError | None = None  # a delegated reply that could not be priced here
    reply: int = 0  # the iteration whose calls ``reply_calls`` counts
    reply_calls: int = 0
    ends_at: float | None = None  # loop time
    timer: asyncio.TimerHandle | None = None

    def charge_reply(self, usage: Usage, model: str | None, transport: CompletionTransport) -> None:
        """Count one reply (``usage``) here and up the chain; its cost at the price of
        ``model``, else of the model ``transport`` names (a budget whose prices lack it uses
        this run's own). Raises ``ValueError`` for a model priced nowhere a cost is limited."""
        if model is None and isinstance(transport, NamesModel):
            model = transport.model
        own_prices = self.limits.prices
        budget: RunBudget | None = self
        while budget is not None:
            budget._spend(usage, model, own_prices, origin=budget is self)
            budget = budget.parent

    def charge_tokens(self, usage: Usage) -> None:
        """Count tokens spent outside a reply (``report_usage``) here and up the chain."""
        budget: RunBudget | None = self
        while budget is not None:
            budget._count_tokens(usage)
            budget = budget.parent

    def _spend(
        self,
        usage: Usage,
        model: str | None,
        own_prices: Mapping[str, tuple[float, ...]],
        *,
        origin: bool,
    ) -> None:
        self._count_tokens(usage)
        limits = self.limits
        if limits.cost is None:
            return
        try:
            self.cost += _price(limits.prices, model, usage, own_prices)
        except ValueError as exc:
            if not origin:
                self.failure = self.failure or exc
            raise
        self._over("cost", self.cost, limits.cost)

    def _count_tokens(self, usage: Usage) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        limits = self.limits  # each compared here first: most replies pass no limit
        most = limits.input_tokens
        if most is not None:
            self._over("input_tokens", self.input_tokens, most)
        most = limits.output_tokens
        if most is not None:
            self._over("output_tokens", self.output_tokens, most)
        most = limits.total_tokens
        if most is not None:
            self._over("total_tokens", self.input_tokens + self.output_tokens, most)

    def admit(self, iteration: int) -> str | None:
        """Whether a call of ``iteration``'s reply may run: None, or why it may not. Called as
        each call is dispatched, in the reply's order, before any of it runs; the call counts
        against every budget up the chain."""
        stop = self._stopped()
        if stop is not None:
            return _refusal(stop)
        if iteration != self.reply:
            self.reply, self.reply_calls = iteration, 0
        cap = self.limits.tool_calls_per_turn
        if cap is not None and self.reply_calls >= cap:
            return f"only {cap} calls of one reply may run (tool_calls_per_turn)."
        budget: RunBudget | None = self
        while budget is not None:
            most = budget.limits.tool_calls
            if most is not None and budget.tool_calls >= most:
                budget._over("tool_calls", budget.tool_calls + 1, most)
                return "the run passed its tool_calls limit."
            budget = budget.parent
        self.reply_calls += 1
        budget = self
        while budget is not None:
            budget.tool_calls += 1
            budget = budget.parent
        return None

    def remaining(self) -> float | None:
        """Seconds the run has left, its callers' time limits included (None: no limit)."""
        left: float | None = None
        budget: RunBudget | None = self
        while budget is not None:
            if budget.ends_at is not None:
                mine = max(budget.ends_at - asyncio.get_running_loop().time(), 0.0)
                left = mine if left is None else min(left, mine)
            budget = budget.parent
        return left

    def past_time(self) -> bool:
        """Whether the run's time is up."""
        return self.ends_at is not None and asyncio.get_running_loop().time() >= self.ends_at

    def start(self, cancel: CancellationToken | None) -> None:
        """Start the run's clock: at ``seconds`` the limit is passed and ``cancel`` fired (it
        stops a model stream at once; calls in flight end by their own deadline)."""
        seconds = self.limits.seconds
        if seconds is None:
            return
        assert cancel is not None, "a run with a time limit has its own token"
        loop = asyncio.get_running_loop()
        self.ends_at = loop.time() + seconds

        def time_up() -> None:
            self._time_up()
            cancel.cancel()

        self.timer = loop.call_at(self.ends_at, time_up)

    def stop(self) -> None:
        """Stop the run's clock."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def check(self) -> None:
        """Raise the limit the run (or a caller up the chain) passed, if any (after its calls
        were answered)."""
        stop = self._stopped()
        if stop is not None:
            raise stop

    def instead_of(self, error: BaseException) -> BaseException:
        """What a run that ``error`` ended reports: the limit, when the run's own clock is what
        cancelled it."""
        if isinstance(error, RunCancelled) and self.exceeded is not None:
            return self.exceeded
        return error

    def _stopped(self) -> LimitExceeded | ValueError | None:
        """The first limit passed (or pricing failure) here or up the chain, if any."""
        if self.exceeded is None and self.ends_at is not None and self.past_time():
            self._time_up()
        budget: RunBudget | None = self
        while budget is not None:
            stop = budget.exceeded or budget.failure
            if stop is not None:
                return stop
            budget = budget.parent
        return None

    def _time_up(self) -> None:
        if self.exceeded is None:
            seconds = self.limits.seconds
            assert seconds is not None
            self.exceeded = LimitExceeded("seconds", seconds, seconds)

    def _over(self, limit: str, value: float, maximum: float) -> bool:
        if value <= maximum:
            return False
        if self.exceeded is None:
            self.exceeded = LimitExceeded(limit, value, maximum)
        return True


NO_LIMITS = Limits()
"""The limits of a run that has none of its own but spends from a caller's budget."""


def budget_for(limits: Limits | None) -> RunBudget | None:
    """The budget of a run with ``limits``, linked to the budget of the run whose call it is
    part of (if any); None when neither limits it (``repeated_calls`` spends nothing: a run
    limited by it alone has no budget to keep)."""
    meter = metering()
    parent = meter if isinstance(meter, RunBudget) else None
    if (
        limits is not None
        and limits.repeated_calls is not None
        and replace(limits, repeated_calls=None) == NO_LIMITS
    ):
        limits = None
    if limits is None:
        return None if parent is None else RunBudget(NO_LIMITS, parent)
    return RunBudget(limits, parent)


def _refusal(stop: BaseException) -> str:
    """What a call refused for ``stop`` is answered."""
    if isinstance(stop, LimitExceeded):
        return f"the run passed its {stop.limit} limit."
    return f"the run's cost could not be counted ({stop})."


def linked(limits: Limits, cancel: CancellationToken | None) -> CancellationToken | None:
    """The token a run with ``limits`` watches: with a time limit, one of its own that its clock
    cancels, linked to the caller's ``cancel`` (which it never cancels); else ``cancel``."""
    return cancel if limits.seconds is None else LinkedToken(cancel)


def reply_cost(
    prices: Mapping[str, tuple[float, ...]], model: str | None, usage: Usage
) -> float | None:
    """What one reply's ``usage`` cost in USD at ``model``'s price in ``prices`` (as in
    ``Limits.prices``); None when the model has no price there."""
    try:
        return _price(prices, model, usage, {})
    except ValueError:
        return None


def _price(
    prices: Mapping[str, tuple[float, ...]],
    model: str | None,
    usage: Usage,
    fallback: Mapping[str, tuple[float, ...]],
) -> float:
    """What ``usage`` cost in USD at ``model``'s price (from ``prices``, else ``fallback``):
    cache reads and writes at their own prices where given (``input_tokens`` counts them too)."""
    price = prices.get(model or "") or fallback.get(model or "")
    if price is None:
        known = ", ".join(sorted(prices)) or "none"
        raise ValueError(f"Limits.cost: no price for model {model!r} (priced: {known})")
    read, written = usage.cache_read_tokens, usage.cache_write_tokens
    read_price = price[2] if len(price) > 2 else price[0]
    write_price = price[3] if len(price) > 3 else price[0]
    fresh = usage.input_tokens - read - written
    total = fresh * price[0] + read * read_price + written * write_price
    return (total + usage.output_tokens * price[1]) / 1_000_000
