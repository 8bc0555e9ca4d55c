"""When and how long to wait before retrying a failed model call (exponential backoff + jitter)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import TransportError

__all__ = ["RetryPolicy", "is_retryable"]


def is_retryable(exc: BaseException) -> bool:
    """Default: a ``TransportError`` says so itself; connection and timeout errors are transient."""
    if isinstance(exc, TransportError):
        return exc.retryable
    return isinstance(exc, ConnectionError | TimeoutError)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retries for a model call that fails before its first event.

    Attempt ``n`` (1-based) waits ``min(initial_delay * multiplier**(n-1), max_delay)`` scaled by a
    random factor in ``[1 - jitter, 1]``; a server's ``retry_after`` wins when larger, capped at
    ``max_retry_after``. ``max_attempts`` counts the first try.
    """

    max_attempts: int = 3
    initial_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 60.0
    jitter: float = 0.25
    max_retry_after: float = 60.0
    retry_on: Callable[[BaseException], bool] = is_retryable

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter must be between 0 and 1")

    def should_retry(self, exc: BaseException, attempt: int) -> bool:
        """Whether failure number ``attempt`` (1-based) may be retried."""
        return attempt < self.max_attempts and self.retry_on(exc)

    def backoff(self, attempt: int, rand: Callable[[], float]) -> float:
        """The wait after failure ``attempt`` before a server's ``retry_after`` is considered."""
        base = min(self.initial_delay * self.multiplier ** (attempt - 1), self.max_delay)
        return base * (1.0 - self.jitter * rand())

    def delay(
        self,
        attempt: int,
        exc: BaseException | None = None,
        rand: Callable[[], float] = random.random,
    ) -> float:
        """Seconds to wait after failure number ``attempt``; ``rand`` draws the jitter (a clock's
        random source, so a replayed run waits the same)."""
        wait = self.backoff(attempt, rand)
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(retry_after, int | float) and retry_after > 0:
            wait = max(wait, min(float(retry_after), self.max_retry_after))
        return wait


NO_RETRY = RetryPolicy(max_attempts=1)
