"""Tool progress: a running call's reports stream as ``ToolProgress`` events, before its result."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tether import (
    Agent,
    StreamEvent,
    Tool,
    ToolDispatch,
    ToolProgress,
    ToolResult,
    report_progress,
)
from tether.stores.jsonforms import event_from_dict, event_to_dict
from tether.testing import Call, Reply, ScriptedTransport


async def stepping(steps: int, tag: str) -> str:
    for i in range(steps):
        await asyncio.sleep(0.01)
        report_progress(i + 1, steps, f"{tag} step {i + 1}")
    return f"{tag} done"


def agent(execution: str, reports: bool = True) -> Agent:
    model = ScriptedTransport(
        [
            Reply(
                tool_calls=[
                    Call("work", {"steps": 2, "tag": "a"}),
                    Call("work", {"steps": 3, "tag": "b"}),
                ]
            ),
            Reply("ok"),
        ]
    )
    return Agent(
        "s", model, tools=[Tool("work", stepping, reports_progress=reports)], execution=execution
    )  # type: ignore[arg-type]


async def events_of(a: Agent) -> list[StreamEvent]:
    return [e async for e in a.run_stream("go")]


def calls_view(events: list[StreamEvent]) -> list[tuple[str, Any]]:
    view: list[tuple[str, Any]] = []
    for e in events:
        if isinstance(e, ToolDispatch):
            view.append(("dispatch", e.input["tag"]))
        elif isinstance(e, ToolProgress):
            view.append(("progress", (e.progress, e.total, e.message)))
        elif isinstance(e, ToolResult):
            view.append(("result", e.content))
    return view


async def test_sequential_calls_stream_their_progress_in_order() -> None:
    assert calls_view(await events_of(agent("sequential"))) == [
        ("dispatch", "a"),
        ("progress", (1.0, 2.0, "a step 1")),
        ("progress", (2.0, 2.0, "a step 2")),
        ("result", "a done"),
        ("dispatch", "b"),
        ("progress", (1.0, 3.0, "b step 1")),
        ("progress", (2.0, 3.0, "b step 2")),
        ("progress", (3.0, 3.0, "b step 3")),
        ("result", "b done"),
    ]


async def test_parallel_calls_report_each_with_its_own_id_before_its_result() -> None:
    events = await events_of(agent("parallel"))
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert len(progress) == 5
    by_call: dict[str, list[float]] = {}
    for e in progress:
        by_call.setdefault(e.tool_use_id, []).append(e.progress)
    assert sorted(by_call.values(), key=len) == [[1.0, 2.0], [1.0, 2.0, 3.0]]
    for result in (e for e in events if isinstance(e, ToolResult)):
        last = max(
            i
            for i, e in enumerate(events)
            if isinstance(e, ToolProgress) and e.tool_use_id == result.tool_use_id
        )
        assert last < events.index(result)


@pytest.mark.parametrize("execution", ["sequential", "parallel"])
async def test_reports_from_a_tool_not_made_to_report_are_dropped(execution: str) -> None:
    events = await events_of(agent(execution, reports=False))
    assert not [e for e in events if isinstance(e, ToolProgress)]
    assert [e.content for e in events if isinstance(e, ToolResult)] == ["a done", "b done"]


def test_report_progress_outside_a_call_is_a_no_op() -> None:
    report_progress(1, 2, "nobody listens")


def test_progress_events_round_trip_as_json() -> None:
    event = ToolProgress("call_1", "work", 0.5, None, "half")
    assert event_from_dict(event_to_dict(event)) == event
