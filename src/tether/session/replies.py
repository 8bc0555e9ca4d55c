"""padwan-ai's words in a session: an empty reply is ``(no response)``, the session's own error
results are ``{"error": ...}`` JSON (an unknown tool, arguments that are not JSON, a handler
that raised, a denied or cancelled call), and the round limit says it was reached."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

from ..events import IterationEnd, StreamEvent, TextDelta, ToolUseStart
from ..loop import (
    Middleware,
    ModelHandler,
    ModelRequest,
    ToolHandler,
    ToolRequest,
    as_generator,
)
from ..messages import ToolResultBlock
from ..tools.results import exception_message

__all__ = [
    "NO_RESPONSE",
    "PadwanCalls",
    "PadwanReplies",
    "error_json",
    "limit_text",
    "raised_text",
]

NO_RESPONSE = "(no response)"


def error_json(text: str) -> str:
    """``text`` as padwan's error result: ``{"error": text}``."""
    return json.dumps({"error": text}, ensure_ascii=False)


def raised_text(name: str, arguments: Mapping[str, Any], exc: BaseException) -> str:
    """What the model reads when a handler raised and no ``on_tool_error`` is set."""
    return error_json(exception_message(exc))


def limit_text(rounds: int | None) -> str:
    """The answer of a send stopped by ``max_tool_rounds``."""
    return (
        f"(reached tool call limit of {rounds} rounds without a final answer; "
        "send another message to let the model go on)"
    )


class PadwanReplies(Middleware):
    """A reply with no text and no tool call reads ``(no response)``: streamed, returned and
    stored as the model's answer, as padwan's sessions do."""

    __slots__ = ()

    def wrap_model_call(
        self, request: ModelRequest, call_next: ModelHandler
    ) -> AsyncIterator[StreamEvent]:
        if request.purpose != "reply":
            return call_next(request)
        return _filled(call_next(request))


async def _filled(events: AsyncIterator[StreamEvent]) -> AsyncGenerator[StreamEvent, None]:
    said, after = False, 0  # whether the reply said anything; the index after its blocks
    async with aclosing(as_generator(events)) as stream:
        async for event in stream:
            kind = type(event)
            if isinstance(event, TextDelta):
                said = said or bool(event.delta)
            elif kind is ToolUseStart:
                said = True
            elif kind is IterationEnd and not said:
                yield TextDelta(after, NO_RESPONSE)
            index = getattr(event, "index", None)
            if type(index) is int:
                after = max(after, index + 1)
            yield event


class PadwanCalls(Middleware):
    """Calls the session answers itself, in padwan's words: one naming no tool of the session,
    and one whose arguments are not JSON (its handler never runs on guessed arguments)."""

    __slots__ = ()

    async def wrap_tool_call(self, call: ToolRequest, call_next: ToolHandler) -> ToolResultBlock:
        broken = call.block.parse_error
        if broken is not None:
            return ToolResultBlock(
                call.id, error_json(f"arguments are not valid JSON: {broken}"), True
            )
        if call.tool is None:
            return ToolResultBlock(call.id, error_json(f"Unknown tool: {call.name}"), True)
        return await call_next(call)
