"""``Tracing``: spans for every run (``invoke_agent``), model call (``chat``) and tool call
(``execute_tool``), written to a sink, through the engine's middleware seam."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from ..events import (
    Compacted,
    CompactionFailed,
    Handoff,
    IterationEnd,
    SessionEndEvent,
    StreamEvent,
    TextDelta,
    ToolUseStart,
)
from ..loop.middleware import (
    Middleware,
    ModelHandler,
    ModelRequest,
    RunHandler,
    RunRequest,
    ToolHandler,
    ToolRequest,
    as_generator,
)
from ..messages import ToolResultBlock
from ..transports.base import NamesModel
from .attributes import (
    content,
    messages_content,
    model_attributes,
    result_attributes,
    run_attributes,
    tool_attributes,
    usage_attributes,
)
from .redact import environment_secrets
from .spans import CURRENT, Span, SpanSink

__all__ = ["Tracing"]


class Tracing(Middleware):
    """Traces runs and calls into ``sink``. ``capture_content`` adds prompts, answers,
    arguments and results (secrets redacted); off, only names, ids, counts and timings."""

    def __init__(self, sink: SpanSink, *, capture_content: bool = False) -> None:
        self.sink = sink
        self.capture_content = capture_content
        self._runs: dict[RunRequest, Span] = {}
        self._answering: dict[RunRequest, str] = {}  # a handed-off run's current agent
        self._secrets = environment_secrets() if capture_content else ()

    def _parent(self, run: RunRequest | None) -> Span | None:
        found = self._runs.get(run) if run is not None else None
        return found if found is not None else self._open_tool()

    def _open_tool(self) -> Span | None:
        """The innermost tool call this middleware traces in this context, if any."""
        for owner, span in reversed(CURRENT.get()):
            if owner is self:
                return span
        return None

    async def wrap_run(
        self, run: RunRequest, call_next: RunHandler
    ) -> AsyncGenerator[StreamEvent, None]:
        if self.capture_content:
            self._secrets = environment_secrets()  # read again once per run
        name = f"invoke_agent {run.agent.name}"
        span = self.sink.start("run", name, self._open_tool(), run_attributes(run))
        self._runs[run] = span
        error: BaseException | None = None
        try:
            async with aclosing(as_generator(call_next(run))) as events:
                async for event in events:
                    if type(event) is SessionEndEvent:
                        span.set(_end_attributes(event))
                        error = event.error
                    elif type(event) is Handoff:
                        self._handed_off(run, span, event)
                    elif type(event) is Compacted or type(event) is CompactionFailed:
                        span.event("tether.compaction", _compaction_attributes(event))
                    yield event
        except BaseException as exc:
            error = exc
            raise
        finally:
            del self._runs[run]
            self._answering.pop(run, None)
            span.end(error)

    def _handed_off(self, run: RunRequest, span: Span, handoff: Handoff) -> None:
        """The run goes on as another agent: an event on its span, and the model calls from
        now on name the agent that makes them."""
        self._answering[run] = handoff.to_agent
        span.event(
            "tether.handoff",
            {"tether.handoff.from": handoff.from_agent, "tether.handoff.to": handoff.to_agent},
        )
        span.set({"tether.agent.final": handoff.to_agent})

    async def wrap_model_call(
        self, request: ModelRequest, call_next: ModelHandler
    ) -> AsyncGenerator[StreamEvent, None]:
        named = request.transport.model if isinstance(request.transport, NamesModel) else None
        model = named or type(request.transport).__name__
        span = self.sink.start(
            "model",
            f"chat {model}",
            self._parent(request.run),
            {
                **model_attributes(request),
                **self._speaker(request.run),
                **self._prompt(request),
                **({"tether.purpose": request.purpose} if request.purpose != "reply" else {}),
            },
        )
        started, first = time.perf_counter(), None
        text: list[str] = []
        calls: list[str] = []
        error: BaseException | None = None
        try:
            async with aclosing(as_generator(call_next(request))) as events:
                async for event in events:
                    if first is None:
                        first = time.perf_counter() - started
                        span.set({"tether.time_to_first_token": first})
                    kind = type(event)
                    if kind is TextDelta and self.capture_content:
                        text.append(event.delta)  # type: ignore[union-attr]
                    elif kind is ToolUseStart:
                        calls.append(event.name)  # type: ignore[union-attr]
                    elif kind is IterationEnd:
                        span.set(self._answer(event, text, calls))  # type: ignore[arg-type]
                    yield event
        except BaseException as exc:
            error = exc
            raise
        finally:
            span.end(error)

    def _speaker(self, run: RunRequest | None) -> dict[str, Any]:
        """The agent making a model call: the run's own, or the one a handoff gave it to."""
        if run is None:
            return {}
        name = self._answering.get(run) or run.agent.name
        return {} if name is None else {"gen_ai.agent.name": name}

    async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        attributes = tool_attributes(call)
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = content(dict(call.input), self._secrets)
        span = self.sink.start(
            "tool", f"execute_tool {call.name}", self._parent(call.run), attributes
        )
        token = CURRENT.set((*CURRENT.get(), (self, span)))
        try:
            with span.active():
                result = await call_next(call)
        except BaseException as exc:
            span.end(exc)
            raise
        finally:
            CURRENT.reset(token)
        found = result_attributes(result)
        if self.capture_content:
            found["gen_ai.tool.call.result"] = content(_result_text(result), self._secrets)
        span.set(found)
        span.end("tool_error" if result.is_error else None)
        return result

    def _prompt(self, request: ModelRequest) -> dict[str, Any]:
        if not self.capture_content:
            return {}
        return {
            "gen_ai.system_instructions": content(request.system, self._secrets),
            "gen_ai.input.messages": messages_content(request.messages, self._secrets),
        }

    def _answer(self, end: IterationEnd, text: list[str], calls: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {
            "gen_ai.response.finish_reasons": [end.raw_stop_reason or end.stop_reason.value],
            **usage_attributes(end.usage),
        }
        if end.model:
            found["gen_ai.response.model"] = end.model
        if calls:
            found["tether.tool_calls"] = calls
        if self.capture_content:
            found["gen_ai.output.messages"] = content("".join(text), self._secrets)
        return found


def _compaction_attributes(event: Compacted | CompactionFailed) -> dict[str, Any]:
    """A compaction (or its failure) as attributes of the run span's event."""
    if type(event) is CompactionFailed:
        return {"tether.compaction.error": event.reason, "tether.compaction.tokens": event.tokens}
    assert type(event) is Compacted
    return {
        "tether.compaction.summarized": event.summarized,
        "tether.compaction.kept": event.kept,
        "tether.compaction.tokens": event.tokens_before,
        "tether.compaction.tokens_after": event.tokens_after,
    }


def _end_attributes(end: SessionEndEvent) -> dict[str, Any]:
    return {
        "tether.stop_reason": end.stop_reason.value,
        "tether.iterations": end.iterations,
        **usage_attributes(end.total_usage),
    }


def _result_text(result: ToolResultBlock) -> Any:
    if isinstance(result.content, str):
        return result.content
    return [getattr(part, "text", type(part).__name__) for part in result.content]
