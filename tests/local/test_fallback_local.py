"""FallbackTransport against a real model: the primary's server is not there (connection
refused), so the real local model answers, and the run says which model did."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tether import Agent, IterationEnd, SessionEndEvent, StreamEvent, TextDelta
from tether.local import LocalModel
from tether.transports import CircuitBreaker, FallbackTransport, OpenAIChatTransport, RetryPolicy

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]

OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 7, "max_tokens": 40}


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_a_refused_primary_falls_back_to_the_real_model(local_model: LocalModel) -> None:
    primary = OpenAIChatTransport(
        "unreachable-model", base_url=f"http://127.0.0.1:{closed_port()}/v1", **OPTIONS
    )
    fallback = FallbackTransport(
        [primary, local_model.chat_transport(**OPTIONS)], breaker=CircuitBreaker(failures=3)
    )
    agent = Agent("Be brief.", fallback, retry=RetryPolicy(max_attempts=1))
    try:
        events: list[StreamEvent] = [e async for e in agent.run_stream("Say hello.")]
    finally:
        await fallback.aclose()

    end = events[-1]
    assert isinstance(end, SessionEndEvent), end
    assert end.error is None, end.error
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)).strip()
    assert [e.model for e in events if isinstance(e, IterationEnd)] == [local_model.model]
    assert fallback.model == local_model.model
    assert fallback.health[0].failures == 1  # the refused connection counted against it
    assert fallback.health[1].failures == 0
