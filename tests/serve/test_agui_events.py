"""Each tether event as the AG-UI events it stands for, every one checked against the AG-UI
types (``ag-ui-protocol``): reasoning, progress, retries, handoffs, compaction and the ends."""

from __future__ import annotations

from served import EVENT
from tether import (
    Compacted,
    Handoff,
    IterationEnd,
    PendingCall,
    ReasoningDelta,
    Retrying,
    SessionEndEvent,
    TextDelta,
    ToolInputDelta,
    ToolProgress,
    ToolResult,
    ToolUseStart,
)
from tether.errors import RunCancelled
from tether.serve.agui import RunEvents
from tether.types import StopReason, Usage


def translated(*events: object) -> list[dict[str, object]]:
    run = RunEvents("t1", "r1")
    out = [run.started()]
    for event in events:
        out.extend(run.of(event))  # type: ignore[arg-type]
    for event in out:
        EVENT.validate_python(event)
    return out


def test_reasoning_then_text_are_two_messages() -> None:
    out = translated(
        ReasoningDelta(0, "think"),
        ReasoningDelta(0, "ing", signature="sig"),
        ReasoningDelta(0, "", redacted=True),
        TextDelta(1, "answer"),
        TextDelta(1, ""),
        IterationEnd(1, StopReason.END_TURN, Usage(3, 4), model="m1"),
        SessionEndEvent(StopReason.END_TURN, Usage(3, 4), iterations=1),
    )
    assert [e["type"] for e in out] == [
        "RUN_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert out[-1]["usage"] == [
        {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7, "model": "m1"}
    ]


def test_what_ag_ui_has_no_event_for_is_a_custom_event() -> None:
    out = translated(
        Retrying(1, 0.5, "429"),
        ToolUseStart(0, "c1", "search"),
        ToolInputDelta(0, "c1", '{"q": "x"}'),
        IterationEnd(1, StopReason.TOOL_USE),
        ToolProgress("c1", "search", 0.5, 1.0, "half"),
        ToolResult("c1", "search", is_error=True, content="broke"),
        Handoff("triage", "billing"),
        Compacted(10, 4, 900, 300, "summary"),
    )
    custom = {e["name"]: e["value"] for e in out if e["type"] == "CUSTOM"}
    assert custom["tether.retrying"] == {"attempt": 1, "delay": 0.5, "reason": "429"}
    assert custom["tether.tool_progress"]["message"] == "half"
    assert custom["tether.handed_off"] == {"from": "triage", "to": "billing"}
    assert custom["tether.compacted"] == {"summarized": 10, "kept": 4}
    result = next(e for e in out if e["type"] == "TOOL_CALL_RESULT")
    assert result["metadata"] == {"isError": True, "toolCallName": "search"}


def test_paused_cancelled_and_failed_runs_end_as_ag_ui_says() -> None:
    paused = translated(
        SessionEndEvent(StopReason.PAUSED, pending=(PendingCall("c1", "rm", {"path": "x"}),))
    )
    assert paused[-2]["name"] == "tether.paused"
    outcome = paused[-1]["outcome"]
    assert isinstance(outcome, dict) and outcome["interrupts"][0]["toolCallId"] == "c1"
    cancelled = translated(
        SessionEndEvent(StopReason.CANCELLED, error=RunCancelled("the run was cancelled"))
    )
    assert cancelled[-1]["type"] == "RUN_FINISHED"
    assert cancelled[-1]["outcome"] == {"type": "cancelled"}
    failed = translated(SessionEndEvent(StopReason.ERROR, error=ValueError("bad\nsecond line")))
    assert failed[-1]["type"] == "RUN_ERROR"
    assert failed[-1]["message"] == "ValueError: bad" and failed[-1]["code"] == "ValueError"
