"""What crosses Temporal's wire: a model turn's events, merged and read back, lose nothing."""

from __future__ import annotations

from tether.durable.payloads import ModelTurn, coalesce, events_of, spec_from_dict, spec_to_dict
from tether.events import IterationEnd, TextDelta, ToolInputDelta, ToolUseStart
from tether.types import StopReason, ToolSpec, Usage


def test_deltas_of_one_block_merge_and_the_rest_stay_in_order() -> None:
    events = [
        TextDelta(0, "Hel"),
        TextDelta(0, "lo"),
        TextDelta(1, " there"),
        ToolUseStart(2, "c1", "add"),
        ToolInputDelta(2, "c1", '{"a": '),
        ToolInputDelta(2, "c1", "1}"),
        ToolUseStart(3, "c2", "add"),
        ToolInputDelta(3, "c2", "{}"),
        IterationEnd(1, StopReason.TOOL_USE, Usage(3, 4)),
    ]
    back = events_of(ModelTurn(coalesce(events)))
    assert back == [
        TextDelta(0, "Hello"),
        TextDelta(1, " there"),
        ToolUseStart(2, "c1", "add"),
        ToolInputDelta(2, "c1", '{"a": 1}'),
        ToolUseStart(3, "c2", "add"),
        ToolInputDelta(3, "c2", "{}"),
        IterationEnd(1, StopReason.TOOL_USE, Usage(3, 4)),
    ]


def test_many_deltas_merge_in_linear_time() -> None:
    merged = coalesce([TextDelta(0, "x")] * 200_000)
    assert merged == [{"type": "text_delta", "index": 0, "delta": "x" * 200_000}]


def test_a_tool_spec_round_trips() -> None:
    spec = ToolSpec("add", "Adds.", {"type": "object", "properties": {}}, True)
    assert spec_from_dict(spec_to_dict(spec)) == spec
