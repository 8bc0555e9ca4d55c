"""``RetryPolicy``: its backoff delays (``Retry-After`` honoured up to its cap, jitter within
bounds, a property test) and which failures it retries."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether import RetryPolicy, TransportError


def test_retry_policy_honours_retry_after_and_its_cap() -> None:
    policy = RetryPolicy(initial_delay=1.0, multiplier=2.0, jitter=0.0, max_retry_after=30.0)
    assert policy.delay(1) == pytest.approx(1.0)
    assert policy.delay(3) == pytest.approx(4.0)
    assert policy.delay(1, TransportError("x", retry_after=5.0)) == pytest.approx(5.0)
    # A smaller retry_after does not shorten the backoff.
    assert policy.delay(3, TransportError("x", retry_after=0.5)) == pytest.approx(4.0)
    # A huge retry_after is capped.
    assert policy.delay(1, TransportError("x", retry_after=1000.0)) == pytest.approx(30.0)
    assert RetryPolicy(initial_delay=1, max_delay=3, jitter=0).delay(10) == pytest.approx(3.0)


def test_retry_policy_should_retry_counts_the_first_try() -> None:
    policy = RetryPolicy(max_attempts=3)
    retryable = TransportError("x", retryable=True)
    assert policy.should_retry(retryable, 1)
    assert policy.should_retry(retryable, 2)
    assert not policy.should_retry(retryable, 3)
    assert not policy.should_retry(TransportError("x"), 1)
    assert policy.should_retry(ConnectionError("reset"), 1)
    assert not policy.should_retry(ValueError("bug"), 1)


@fuzz(200)
@given(
    attempt=st.integers(1, 12),
    initial=st.floats(0.001, 10.0),
    multiplier=st.floats(1.0, 4.0),
    max_delay=st.floats(0.001, 120.0),
    jitter=st.floats(0.0, 1.0),
    retry_after=st.one_of(st.none(), st.floats(0.001, 500.0)),
    cap=st.floats(0.001, 100.0),
)
def test_retry_delay_within_jitter_bounds(
    attempt: int,
    initial: float,
    multiplier: float,
    max_delay: float,
    jitter: float,
    retry_after: float | None,
    cap: float,
) -> None:
    policy = RetryPolicy(
        initial_delay=initial,
        multiplier=multiplier,
        max_delay=max_delay,
        jitter=jitter,
        max_retry_after=cap,
    )
    base = min(initial * multiplier ** (attempt - 1), max_delay)
    low, high = base * (1 - jitter), base
    exc = None if retry_after is None else TransportError("x", retry_after=retry_after)
    delay = policy.delay(attempt, exc)
    if retry_after is not None:
        floor = min(retry_after, cap)
        low, high = max(low, floor), max(high, floor)
    tol = 1e-9 * max(1.0, high)
    assert low - tol <= delay <= high + tol
    assert math.isfinite(delay)
