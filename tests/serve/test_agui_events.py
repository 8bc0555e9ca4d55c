"""Each tether event as the AG-UI events it stands for, every one checked against the AG-UI
types (``ag-ui-protocol``): reasoning, progress, retries, handoffs, compaction and the ends; and
what a model that starts on first use is doing, as AG-UI steps."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

from served import EVENT, ask, client, kinds, run, serving
from tether import (
    Agent,
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
from tether.events import StreamEvent
from tether.messages import Message
from tether.serve import app
from tether.serve.agui import RunEvents
from tether.stores import SQLiteStore
from tether.testing import Reply, ScriptedTransport
from tether.transports.base import Phase, PhaseListener
from tether.types import StopReason, ToolSpec, Usage


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


# -- what the model is doing before it answers: AG-UI steps ---------------------------------------

LOADING = Phase("loading_model", "loading the model")


def test_a_phase_is_a_step_started_and_finished_by_its_words() -> None:
    run = RunEvents("t1", "r1")
    out = [
        run.started(),
        *run.step(LOADING),
        *run.step(Phase("other", "not under way").over()),  # never started: nothing
        *run.step(LOADING.over()),
        *run.of(TextDelta(0, "hi")),
        *run.of(SessionEndEvent(StopReason.END_TURN, Usage(1, 1), iterations=1)),
    ]
    for event in out:
        EVENT.validate_python(event)
    assert out[1] == {"type": "STEP_STARTED", "stepName": "loading the model"}
    assert out[2] == {"type": "STEP_FINISHED", "stepName": "loading the model"}
    assert [e["type"] for e in out[3:]] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


def test_a_run_that_ends_during_a_phase_finishes_its_step_first() -> None:
    for end in (
        SessionEndEvent(StopReason.CANCELLED, error=RunCancelled("the run was cancelled")),
        SessionEndEvent(StopReason.ERROR, error=ValueError("no model")),
    ):
        run = RunEvents("t1", "r1")
        out = [*run.step(LOADING), *run.of(end), *run.step(LOADING.over())]
        assert [e["type"] for e in out] == ["STEP_STARTED", "STEP_FINISHED", out[-1]["type"]]
        assert out[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR")
    run = RunEvents("t1", "r1")
    run.step(LOADING)
    assert run.close_steps() == [{"type": "STEP_FINISHED", "stepName": "loading the model"}]
    assert run.close_steps() == []


class Starting:
    """A model that starts on first use as the local model does: it reports the phase while it
    lasts (a ``ReportsProgress``), then answers as scripted."""

    def __init__(self) -> None:
        self.inner = ScriptedTransport([], then=Reply("Up and running."))
        self.listeners: list[PhaseListener] = []
        self.started = False

    def on_phase(self, listener: PhaseListener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        if not self.started:
            self.started = True
            for listener in list(self.listeners):
                listener(LOADING)
            await asyncio.sleep(0.05)
            for listener in list(self.listeners):
                listener(LOADING.over())
        async for event in self.inner.stream(messages, tools, system):
            yield event


async def test_the_server_streams_the_models_phases_as_steps(tmp_path: Path) -> None:
    model = Starting()
    async with (
        SQLiteStore(tmp_path / "chats.db") as store,
        serving(app(Agent("s", model), store)) as base,
        client(base) as http,
    ):
        first = await run(http, ask("hi"))
        second = await run(http, ask("again"))  # started already: no steps
    for event in first + second:
        EVENT.validate_python(event)
    assert kinds(first) == [
        "RUN_STARTED",
        "MESSAGES_SNAPSHOT",
        "STEP_STARTED",
        "STEP_FINISHED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert first[2]["stepName"] == first[3]["stepName"] == "loading the model"
    assert "STEP_STARTED" not in kinds(second)
    assert model.listeners == []  # each run stopped listening when it ended
