"""How many examples a property test runs: its own quick count, or ``$TETHER_FUZZ_EXAMPLES``
when set (``bench/reliability.py`` sets it, to 10,000 by default). Imported as
``from fuzzing import fuzz`` (``tests/`` is on ``sys.path``, as the directory of its conftest)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["ENV", "examples", "fuzz"]

ENV = "TETHER_FUZZ_EXAMPLES"


def examples(quick: int) -> int:
    """``quick``, or the positive whole number in ``$TETHER_FUZZ_EXAMPLES`` when it is set."""
    given = os.environ.get(ENV, "").strip()
    if not given:
        return quick
    try:
        count = int(given)
    except ValueError:
        raise ValueError(f"${ENV} must be a whole number, not {given!r}") from None
    if count < 1:
        raise ValueError(f"${ENV} must be at least 1, not {count}")
    return count


def fuzz(quick: int) -> settings:
    """Hypothesis settings for a property test: ``examples(quick)`` examples, no deadline (a
    slow machine is no failure), and no complaint that generating them is slow."""
    return settings(
        max_examples=examples(quick),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
