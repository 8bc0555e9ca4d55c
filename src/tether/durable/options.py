"""``DurableOptions``: timeouts, retries and history limits of a durable agent's workflow."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from temporalio.common import RetryPolicy

__all__ = ["DurableOptions"]


@dataclass(frozen=True, slots=True)
class DurableOptions:
    """How a durable run calls its activities and when it starts afresh.

    - ``model_timeout``: seconds one model call attempt may take.
    - ``tool_timeout``: seconds one tool call attempt may take when neither the tool nor the
      agent sets a timeout.
    - ``heartbeat_timeout``: seconds without a heartbeat before a call counts as lost (its
      worker died): the call is then retried, or for a tool that is not idempotent, answered
      with an error result.
    - ``model_attempts`` / ``tool_attempts``: attempts per model call and per idempotent tool
      call (a tool that is not idempotent gets one).
    - ``retry_initial`` / ``retry_max``: the first and the longest wait between attempts.
    - ``approval_timeout``: seconds to wait for an approval (None: as long as it takes); no
      decision in time is a denial.
    - ``max_history_events`` / ``max_history_bytes``: past either, the run continues as new at
      the next iteration (Temporal's own limits are 51,200 events and 50 MB).
    - ``load_page`` / ``load_bytes``: messages and JSON bytes per activity, at most, when a
      run reads its session back from the store (a single larger message comes alone).
    - ``offload_bytes``: a payload (an activity's input or result, a continue-as-new input, a
      query's answer) over this many bytes goes to the store or ``blobs`` and Temporal keeps a
      reference (``OffloadCodec``).
    - ``payload_limit``: the most bytes Temporal takes in one payload (its default, 2 MB); with
      nowhere to offload, a value past it ends the run with ``PayloadTooLargeError``.
    - ``store_attempts``: attempts per store read and write (an append, a page of the session).
    """

    model_timeout: float = 300.0
    tool_timeout: float = 3600.0
    heartbeat_timeout: float = 30.0
    model_attempts: int = 10
    tool_attempts: int = 10
    retry_initial: float = 1.0
    retry_max: float = 60.0
    approval_timeout: float | None = None
    max_history_events: int = 10_000
    max_history_bytes: int = 8 * 1024 * 1024
    load_page: int = 500
    load_bytes: int = 1024 * 1024
    offload_bytes: int = 128 * 1024
    payload_limit: int = 2 * 1024 * 1024
    store_attempts: int = 5

    def __post_init__(self) -> None:
        for name in ("model_timeout", "tool_timeout", "heartbeat_timeout", "retry_initial"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        if self.retry_max < self.retry_initial:
            raise ValueError("retry_max must be >= retry_initial")
        for name in (
            "model_attempts",
            "tool_attempts",
            "max_history_events",
            "load_page",
            "load_bytes",
            "store_attempts",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_history_bytes < 1024:
            raise ValueError("max_history_bytes must be >= 1024")
        if not 1024 <= self.offload_bytes < self.payload_limit:
            raise ValueError("offload_bytes must be >= 1024 and < payload_limit")
        if self.approval_timeout is not None and not self.approval_timeout > 0:
            raise ValueError("approval_timeout must be > 0 (or None to wait as long as it takes)")

    def activity_retry(self, attempts: int, final: Sequence[str] = ()) -> RetryPolicy:
        """The retry policy of an activity tried ``attempts`` times, ``retry_initial`` to
        ``retry_max`` apart; errors of the ``final`` types are not retried."""
        return RetryPolicy(
            initial_interval=timedelta(seconds=self.retry_initial),
            maximum_interval=timedelta(seconds=self.retry_max),
            maximum_attempts=attempts,
            non_retryable_error_types=list(final) or None,
        )
