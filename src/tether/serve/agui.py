"""tether's events in the AG-UI event vocabulary (protocol 1.0): one ``RunEvents`` per run turns
each ``StreamEvent`` into the AG-UI events it stands for, as JSON-ready dicts (camelCase keys).

A reply's text is one text message (START, CONTENT..., END), its reasoning one reasoning message,
each tool call START, ARGS..., END (END once its arguments are complete), and each tool result a
TOOL_CALL_RESULT. What a model that starts on first use is doing before it answers (the local
model loading its weights: a transport's ``Phase``) is a STEP_STARTED and a STEP_FINISHED whose
``stepName`` is the phase in words. The run ends with RUN_FINISHED (its outcome says paused or
cancelled) or RUN_ERROR, every step finished before it. What AG-UI has no event for travels as
CUSTOM events named ``tether.*``; calls held for approval are the ``tether.paused`` event, then
the RUN_FINISHED interrupt outcome.

Given the run's ``Places`` (where its session's messages go), every message is streamed under
the id it is stored with (``serve/history.py``), a MESSAGES_SNAPSHOT of the session follows
RUN_STARTED (the run's new message in it) and comes again just before the run's end: a client
that merges messages by id ends with exactly what the session holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeAlias

from ..events import (
    Compacted,
    Handoff,
    IterationEnd,
    PendingCall,
    ReasoningDelta,
    Retrying,
    SessionEndEvent,
    StreamEvent,
    TextDelta,
    ToolDispatch,
    ToolInputDelta,
    ToolProgress,
    ToolResult,
    ToolUseStart,
)
from ..messages import Message, ToolResultBlock
from ..stores.jsonforms import pending_to_dict
from ..tools.results import describe_exception
from ..transports.base import Phase
from ..types import StopReason, Usage
from .frontend import is_frontend
from .history import agui_messages, reasoning_id, result_id, text_id

__all__ = [
    "PROTOCOL_VERSION",
    "Event",
    "Places",
    "RunEvents",
    "error_text",
    "interrupt",
    "messages_snapshot",
    "usage_of",
]

PROTOCOL_VERSION = "1.0"
PAUSED = "tether.paused"  # the CUSTOM event naming the calls that wait for approval

Event: TypeAlias = dict[str, Any]


def usage_of(usage: Usage, model: str | None) -> list[dict[str, Any]]:
    """A run's token counts as AG-UI ``usage`` (one entry: tether sums a run's calls)."""
    entry: dict[str, Any] = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
    }
    if usage.cache_read_tokens:
        entry["cachedInputTokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        entry["cacheWriteInputTokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        entry["reasoningTokens"] = usage.reasoning_tokens
    if model:
        entry["model"] = model
    return [entry]


def interrupt(call: PendingCall) -> dict[str, Any]:
    """The AG-UI interrupt of a call waiting for approval: answered by a resume entry whose
    ``interruptId`` is the call's id (for a call that waits for the user's input, with
    ``payload.answers``: each question's key to its fields, or null to decline)."""
    if call.asks:
        return {
            "id": call.id,
            "reason": "input_required",
            "toolCallId": call.id,
            "message": "\n".join(ask.message for ask in call.asks),
            "responseSchema": {
                "type": "object",
                "properties": {
                    "answers": {
                        "type": "object",
                        "properties": {ask.key or "": dict(ask.schema) for ask in call.asks},
                    }
                },
                "required": ["answers"],
            },
        }
    return {
        "id": call.id,
        "reason": "tool_approval",
        "toolCallId": call.id,
        "message": f"Run {call.name}?",
        "responseSchema": {
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["approved"],
        },
    }


class Places(Protocol):
    """Where a run's session puts its messages (``serve/tracked.py``'s ``Tracked``)."""

    @property
    def position(self) -> int:
        """Where the next message goes."""
        ...

    def result_id(self, call: str) -> str | None:
        """The stored id of ``call``'s result, once stored."""
        ...

    def shown(self) -> tuple[list[Message], int]:
        """The session's messages as the run knows them, and the first one's position."""
        ...


def messages_snapshot(messages: Sequence[Message], first: int, limit: int) -> Event:
    """A MESSAGES_SNAPSHOT of ``messages`` (stored from position ``first``): the last ``limit``
    of them, under their stored ids."""
    cut = max(0, len(messages) - limit)
    return {"type": "MESSAGES_SNAPSHOT", "messages": agui_messages(messages[cut:], first + cut)}


def error_text(error: BaseException) -> str:
    """What a person reads of a run's failure: the error's type and first line (tether's errors
    say what failed and carry no credentials; the traceback stays on the server)."""
    return describe_exception(error).splitlines()[0]


class RunEvents:
    """Turns one run's tether events into AG-UI events, in order."""

    __slots__ = (
        "_calls",
        "_count",
        "_limit",
        "_model",
        "_places",
        "_reasoning",
        "_reply",
        "_seen",
        "_shown",
        "_steps",
        "_text",
        "run_id",
        "thread_id",
    )

    def __init__(
        self, thread_id: str, run_id: str, places: Places | None = None, limit: int = 1000
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self._places = places  # without: ids of this run's own (``<runId>-m1``)
        self._limit = limit  # the messages a snapshot shows, at most
        self._shown = places is None  # whether the first snapshot went (none without places)
        self._reply: tuple[int, list[str], int] = (-1, [], 0)
        """The reply streaming: its stored position, its calls in order, its reasoning runs."""
        self._count = 0
        self._text: str | None = None  # the open text message's id
        self._reasoning: str | None = None  # the open reasoning message's id
        self._calls: set[str] = set()  # calls started whose TOOL_CALL_END is still to come
        self._seen: set[str] = set()  # calls started in this run (a resume runs others)
        self._model: str | None = None
        self._steps: list[str] = []  # the steps started and not finished, by name

    def started(self) -> Event:
        """RUN_STARTED."""
        return {
            "type": "RUN_STARTED",
            "threadId": self.thread_id,
            "runId": self.run_id,
            "protocolVersion": PROTOCOL_VERSION,
        }

    def of(self, event: StreamEvent) -> list[Event]:
        """The AG-UI events ``event`` stands for (none for loop bookkeeping); the first event
        of a run brings the session's snapshot before its own."""
        if not self._shown:
            self._shown = True
            return [*self.snapshot(), *self._of(event)]
        return self._of(event)

    def snapshot(self) -> list[Event]:
        """The session as the run knows it now, as a MESSAGES_SNAPSHOT (none without places)."""
        if self._places is None:
            return []
        messages, first = self._places.shown()
        return [messages_snapshot(messages, first, self._limit)]

    def _of(self, event: StreamEvent) -> list[Event]:
        match event:
            case TextDelta():
                return self._text_delta(event.delta)
            case ToolInputDelta():
                call, delta = event.tool_use_id, event.partial_json
                return [{"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": delta}]
            case ReasoningDelta():
                return self._reasoning_delta(event)
            case ToolUseStart():
                return self._call_start(event)
            case IterationEnd():
                self._model = event.model or self._model
                return self._close_all()
            case ToolDispatch():
                if event.tool_use_id not in self._seen:  # a call of an earlier run, resumed
                    return self._replayed(event.tool_use_id, event.name, event.input)
                return self._call_end(event.tool_use_id)
            case ToolResult():
                return self._result(event)
            case SessionEndEvent():
                closed = [*self._close_all(), *self.close_steps()]
                return [*closed, *self.snapshot(), *self._end(event)]
        return self._custom(event)

    @property
    def idle(self) -> bool:
        """Whether nothing is open: no message, call or step started and not ended."""
        return (
            self._text is None and self._reasoning is None and not self._calls and not self._steps
        )

    def step(self, phase: Phase) -> list[Event]:
        """STEP_STARTED for a phase that starts, STEP_FINISHED for one that is over (none for
        one never started, or already finished)."""
        name = phase.text
        if not phase.done:
            self._steps.append(name)
            return [{"type": "STEP_STARTED", "stepName": name}]
        if name not in self._steps:
            return []
        self._steps.remove(name)
        return [{"type": "STEP_FINISHED", "stepName": name}]

    def close_steps(self) -> list[Event]:
        """STEP_FINISHED for every step still open (the run ends: AG-UI ends no run inside one)."""
        steps, self._steps = self._steps, []
        return [{"type": "STEP_FINISHED", "stepName": name} for name in reversed(steps)]

    def _next_id(self, kind: str) -> str:
        self._count += 1
        return f"{self.run_id}-{kind}{self._count}"

    def _at(self) -> tuple[int, list[str], int]:
        """The streaming reply's stored position, calls and reasoning runs (a new reply when
        the session has grown since: the last one was stored)."""
        assert self._places is not None
        at = self._places.position
        if self._reply[0] != at:
            self._reply = (at, [], 0)
        return self._reply

    def _text_id(self) -> str:
        return self._next_id("m") if self._places is None else text_id(self._at()[0])

    def _reasoning_id(self) -> str:
        if self._places is None:
            return self._next_id("r")
        at, calls, runs = self._at()
        self._reply = (at, calls, runs + 1)
        return reasoning_id(at, runs)

    def _result_id(self, call: str) -> str:
        """The id the call's result is stored under: known once stored, else where the reply's
        results go next, in the order of the reply's calls."""
        if self._places is None:
            return self._next_id("t")
        stored = self._places.result_id(call)
        if stored is not None:
            return stored
        calls = self._reply[1]
        n = calls.index(call) if call in calls else 0
        return result_id(self._places.position, n)

    def _text_delta(self, delta: str) -> list[Event]:
        if not delta:
            return []
        events = self._close_reasoning()
        if self._text is None:
            self._text = self._text_id()
            events.append(
                {"type": "TEXT_MESSAGE_START", "messageId": self._text, "role": "assistant"}
            )
        events.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": self._text, "delta": delta})
        return events

    def _reasoning_delta(self, event: ReasoningDelta) -> list[Event]:
        if not event.delta or event.redacted:
            return []
        events = self._close_text()
        if self._reasoning is None:
            self._reasoning = self._reasoning_id()
            message = self._reasoning
            events.append({"type": "REASONING_START", "messageId": message})
            events.append(
                {"type": "REASONING_MESSAGE_START", "messageId": message, "role": "reasoning"}
            )
        events.append(
            {
                "type": "REASONING_MESSAGE_CONTENT",
                "messageId": self._reasoning,
                "delta": event.delta,
            }
        )
        return events

    def _call_start(self, event: ToolUseStart, replayed: bool = False) -> list[Event]:
        parent = self._text
        if self._places is not None and not replayed:  # the reply's message, text or not
            at, calls, _ = self._at()
            calls.append(event.tool_use_id)
            parent = text_id(at)
        events = [*self._close_text(), *self._close_reasoning()]
        self._calls.add(event.tool_use_id)
        self._seen.add(event.tool_use_id)
        start: Event = {
            "type": "TOOL_CALL_START",
            "toolCallId": event.tool_use_id,
            "toolCallName": event.name,
        }
        if parent is not None:
            start["parentMessageId"] = parent
        events.append(start)
        return events

    def _call_end(self, call: str) -> list[Event]:
        if call not in self._calls:
            return []
        self._calls.discard(call)
        return [{"type": "TOOL_CALL_END", "toolCallId": call}]

    def _replayed(self, call: str, name: str, arguments: Mapping[str, Any] | None) -> list[Event]:
        """A call this run did not see the model make (a resume runs or denies it): started,
        given its arguments when known, and ended here, so that its result makes sense to a
        client that sees only this run."""
        events = self._call_start(ToolUseStart(0, call, name), replayed=True)
        if arguments is not None:
            delta = json.dumps(dict(arguments), ensure_ascii=False)
            events.append({"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": delta})
        return [*events, *self._call_end(call)]

    def _result(self, event: ToolResult) -> list[Event]:
        if event.tool_use_id not in self._seen:
            return [*self._replayed(event.tool_use_id, event.name, None), *self._result(event)]
        events = self._call_end(event.tool_use_id)
        text = ToolResultBlock(event.tool_use_id, event.content).text
        result: Event = {
            "type": "TOOL_CALL_RESULT",
            "messageId": self._result_id(event.tool_use_id),
            "toolCallId": event.tool_use_id,
            "content": text,
            "role": "tool",
        }
        if event.is_error:
            result["metadata"] = {"isError": True, "toolCallName": event.name}
        else:
            result["metadata"] = {"toolCallName": event.name}
        events.append(result)
        return events

    def _close_text(self) -> list[Event]:
        if self._text is None:
            return []
        message, self._text = self._text, None
        return [{"type": "TEXT_MESSAGE_END", "messageId": message}]

    def _close_reasoning(self) -> list[Event]:
        if self._reasoning is None:
            return []
        message, self._reasoning = self._reasoning, None
        return [
            {"type": "REASONING_MESSAGE_END", "messageId": message},
            {"type": "REASONING_END", "messageId": message},
        ]

    def _close_all(self) -> list[Event]:
        events = [*self._close_text(), *self._close_reasoning()]
        for call in sorted(self._calls):
            events.append({"type": "TOOL_CALL_END", "toolCallId": call})
        self._calls.clear()
        return events

    def _end(self, end: SessionEndEvent) -> list[Event]:
        usage = usage_of(end.total_usage, self._model)
        ids = {"threadId": self.thread_id, "runId": self.run_id}
        if end.error is not None and end.stop_reason is not StopReason.CANCELLED:
            code = type(end.error).__name__
            return [
                {
                    "type": "RUN_ERROR",
                    "message": error_text(end.error),
                    "code": code,
                    "usage": usage,
                }
            ]
        finished: Event = {"type": "RUN_FINISHED", **ids, "usage": usage}
        held = [c for c in end.pending if not is_frontend(c)]  # the front end runs the others
        if end.stop_reason is StopReason.PAUSED and held:
            calls = [pending_to_dict(c) for c in held]
            finished["outcome"] = {"type": "interrupt", "interrupts": [interrupt(c) for c in held]}
            return [{"type": "CUSTOM", "name": PAUSED, "value": {"calls": calls}}, finished]
        if end.stop_reason is StopReason.CANCELLED:
            finished["outcome"] = {"type": "cancelled"}
        else:
            finished["outcome"] = {"type": "success"}
        finished["result"] = {"stopReason": str(end.stop_reason), "iterations": end.iterations}
        if end.pending:  # calls left to the front end: their results come with the next run
            finished["result"]["frontendCalls"] = [c.id for c in end.pending]
        return [finished]

    def _custom(self, event: StreamEvent) -> list[Event]:
        if isinstance(event, ToolProgress):
            value: Any = {
                "toolCallId": event.tool_use_id,
                "toolCallName": event.name,
                "progress": event.progress,
                "total": event.total,
                "message": event.message,
            }
            return [{"type": "CUSTOM", "name": "tether.tool_progress", "value": value}]
        if isinstance(event, Retrying):
            value = {"attempt": event.attempt, "delay": event.delay, "reason": event.reason}
            return [{"type": "CUSTOM", "name": "tether.retrying", "value": value}]
        if isinstance(event, Handoff):
            value = {"from": event.from_agent, "to": event.to_agent}
            return [{"type": "CUSTOM", "name": "tether.handed_off", "value": value}]
        if isinstance(event, Compacted):
            value = {"summarized": event.summarized, "kept": event.kept}
            return [{"type": "CUSTOM", "name": "tether.compacted", "value": value}]
        return []
