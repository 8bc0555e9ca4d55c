"""The GenAI semantic-convention attributes of a run, a model call and a tool call."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..loop.middleware import ModelRequest, RunRequest, ToolRequest
from ..messages import Message, ToolResultBlock
from ..stores.jsonforms import message_to_dict
from ..transports.base import NamesModel, NamesProvider
from ..types import Usage
from .redact import redact_value

__all__ = [
    "content",
    "model_attributes",
    "result_attributes",
    "run_attributes",
    "tool_attributes",
    "usage_attributes",
]

MAX_CONTENT = 64_000  # characters of one captured value


def _model_of(transport: object) -> dict[str, Any]:
    found: dict[str, Any] = {}
    provider = transport.provider if isinstance(transport, NamesProvider) else None
    model = transport.model if isinstance(transport, NamesModel) else None
    if isinstance(provider, str):
        found["gen_ai.provider.name"] = provider
    if isinstance(model, str):
        found["gen_ai.request.model"] = model
    return found


def run_attributes(run: RunRequest) -> dict[str, Any]:
    agent = run.agent
    found = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent.name,
        **_model_of(agent.transport),
    }
    if run.session_id is not None:
        found["gen_ai.conversation.id"] = run.session_id
    return found


def model_attributes(request: ModelRequest) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        **_model_of(request.transport),
        "tether.iteration": request.iteration,
        "tether.attempt": request.attempt,
    }


def tool_attributes(call: ToolRequest) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function" if call.tool is not None else "unknown",
        "tether.iteration": call.iteration,
    }


def usage_attributes(usage: Usage) -> dict[str, Any]:
    found = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    extra = (
        ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
        ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
    )
    found.update((name, count) for name, count in extra if count)
    return found


def result_attributes(result: ToolResultBlock) -> dict[str, Any]:
    if not result.is_error:
        return {"tether.tool.outcome": "ok"}
    return {"tether.tool.outcome": "error", "error.type": "tool_error"}


def content(value: Any, secrets: tuple[str, ...]) -> str:
    """``value`` as captured text: JSON, secrets redacted (before it is serialised), cut to
    ``MAX_CONTENT`` characters."""
    clean = redact_value(value, secrets)
    text = clean if isinstance(clean, str) else json.dumps(clean, ensure_ascii=False)
    return text if len(text) <= MAX_CONTENT else text[:MAX_CONTENT] + "…[cut]"


def messages_content(messages: Sequence[Message], secrets: tuple[str, ...]) -> str:
    """The last messages of a history, as many as fit ``MAX_CONTENT`` (a long history costs
    what the captured part costs, not the whole)."""
    kept: list[dict[str, Any]] = []
    size = 0
    for message in reversed(messages):
        data = message_to_dict(message)
        size += len(json.dumps(data, ensure_ascii=False, default=str))
        if size > MAX_CONTENT and kept:
            break
        kept.append(data)
    kept.reverse()
    left_out = len(messages) - len(kept)
    return content(kept if not left_out else [{"left_out": left_out}, *kept], secrets)
