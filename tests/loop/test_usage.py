"""Token usage: per iteration on ``IterationEnd``, summed over the run, and ``Usage``'s sum."""

from __future__ import annotations

import pytest

from agent_runs import end_of, of_type
from tether import Agent, IterationEnd, Usage, tool
from tether.testing import Call, Reply, ScriptedTransport


async def test_usage_per_iteration_and_totals() -> None:
    @tool
    def noop() -> str:
        return "ok"

    u1 = Usage(10, 5, cache_read_tokens=2)
    u2 = Usage(20, 7, reasoning_tokens=3, cache_write_tokens=1)
    model = ScriptedTransport([Reply(tool_calls=[Call("noop")], usage=u1), Reply("a", usage=u2)])
    stream = Agent("sys", model, tools=[noop]).run_stream("go")
    events = [e async for e in stream]
    assert [e.usage for e in of_type(events, IterationEnd)] == [u1, u2]
    total = Usage(30, 12, cache_read_tokens=2, cache_write_tokens=1, reasoning_tokens=3)
    assert end_of(events).total_usage == total
    assert stream.usage == total
    assert end_of(events).iterations == 2


def test_usage_addition() -> None:
    a = Usage(1, 2, 3, 4, 5)
    b = Usage(10, 20, 30, 40, 50)
    assert a + b == Usage(11, 22, 33, 44, 55)
    assert (a + b).total_tokens == 33
    assert a + Usage() == a
    with pytest.raises(TypeError):
        _ = a + 1  # type: ignore[operator]
