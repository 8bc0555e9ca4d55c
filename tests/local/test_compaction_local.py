"""Compaction on the real local model: a tool loop past its budget is summarised by the same
model, the run goes on from summary + recent and answers, and every call and result stays
stored."""

from __future__ import annotations

from typing import Any

import pytest

from tether import Agent, Compacted, Compaction, CompactionFailed, MemoryContextStore, tool
from tether.context.records import kept_of
from tether.local import LocalModel

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(600)]

OPTIONS: dict[str, Any] = {"temperature": 0, "seed": 3, "max_tokens": 200}
CITIES = ["Oslo", "Lima", "Cairo", "Perth", "Quito"]


@tool
def weather(city: str) -> str:
    """Today's weather report for one city."""
    at = CITIES.index(city) if city in CITIES else 0
    notes = "Station notes: routine readings. " * 12
    after = (
        f"Now call the weather tool for {CITIES[at + 1]}."
        if at + 1 < len(CITIES)
        else "That was the last city: now answer with every temperature."
    )
    return f"{city}: {10 + 3 * at} C, light wind. {notes}{after}"


async def test_a_long_tool_loop_compacts_and_answers(local_model: LocalModel) -> None:
    transport = local_model.chat_transport(**OPTIONS)
    agent = Agent(
        "You report the weather. Call the weather tool for one city per reply, in the order "
        "the results ask for, then answer with every temperature.",
        transport,
        tools=[weather],
        context_policy=Compaction(max_tokens=700, keep_last=2),
        max_iterations=10,
    )
    context = MemoryContextStore()
    try:
        events = [
            e
            async for e in agent.run_stream(
                "Weather in Oslo, Lima, Cairo, Perth and Quito?", context
            )
        ]
    finally:
        await transport.aclose()

    assert not [e for e in events if isinstance(e, CompactionFailed)]
    compacted = [e for e in events if isinstance(e, Compacted)]
    assert compacted, "the loop never passed its budget"
    assert all(len(e.summary) > 20 for e in compacted)  # the model wrote a summary
    stored = context.messages
    assert sum(kept_of(m) is not None for m in stored) == len(compacted)
    asked = [b.id for m in stored for b in m.tool_uses]
    answered = [r.tool_use_id for m in stored for r in m.tool_results]
    assert asked and sorted(asked) == sorted(answered)  # nothing stored was lost
