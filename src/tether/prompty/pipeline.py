"""The door's operations (§1.4, §14): ``prepare``, ``run``, ``invoke``, ``turn``, each sync and
async, as the package exports them. ``turn`` runs the agent loop (``execution.loop.agent_loop``)
whether or not tools are given."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..base.blocking import run_blocking
from ..events import IterationEnd, StreamEvent, TextDelta, ToolInputDelta, ToolUseStart
from ..transports.base import CompletionTransport
from ..types import StopReason
from .errors import ModelRefusedError, StructuredOutputError
from .execution.loop import LoopOptions, LoopOutcome, agent_loop
from .execution.streaming import PromptyStream
from .execution.tool_schemas import parameters_schemas
from .execution.tool_sessions import tool_sessions
from .execution.tools import engine_tools
from .execution.wire import transport_for
from .loading.loader import load, validate_inputs
from .messages import PromptMessage, to_tether
from .model import PromptAgent
from .render.parse import render_and_parse
from .tracing.tracer import trace

__all__ = [
    "RequestedToolCall",
    "invoke",
    "invoke_async",
    "prepare",
    "prepare_async",
    "run",
    "run_async",
    "turn",
    "turn_async",
]

T = TypeVar("T")
RICH_KINDS = frozenset(("thread", "image", "file", "audio"))


def _agent(agent_or_path: PromptAgent | str | Path) -> PromptAgent:
    if isinstance(agent_or_path, PromptAgent):
        return agent_or_path
    return load(agent_or_path)


def _transport(agent: PromptAgent, given: CompletionTransport | None) -> CompletionTransport:
    """The caller's transport, else the agent's model as one (credentials checked first)."""
    return given or transport_for(agent.model, agent.outputs or (), source=agent.source)


@trace(name="prepare")
async def prepare_async(
    agent: PromptAgent | str | Path, inputs: Mapping[str, Any] | None = None
) -> list[PromptMessage]:
    """Validate ``inputs``, render the template and parse it into messages (threads expanded)."""
    loaded = _agent(agent)
    values = validate_inputs(loaded, dict(inputs or {}))
    rich = {p.name: p.kind for p in loaded.inputs or () if p.kind in RICH_KINDS}
    return render_and_parse(
        loaded.instructions,
        loaded.template.format.kind,
        values,
        rich,
        strict=loaded.template.format.strict,
    )


def prepare(
    agent: PromptAgent | str | Path, inputs: Mapping[str, Any] | None = None
) -> list[PromptMessage]:
    """``prepare_async`` for sync code."""
    return run_blocking(prepare_async(agent, inputs))


class RequestedToolCall(dict[str, Any]):
    """A tool call the model asked for (§8.7): ``id``, ``name``, ``arguments`` (JSON text)."""


def _structured(agent: PromptAgent, text: str, target_type: Any) -> Any:
    if not agent.outputs and target_type is None:
        return text
    try:
        data = json.loads(text)
    except ValueError as exc:
        if target_type is None:
            return text  # §8: declared outputs but no JSON: the raw text, not an error
        raise StructuredOutputError(f"the answer is not JSON: {text[:200]!r}") from exc
    if target_type is None:
        return data
    from pydantic import TypeAdapter, ValidationError  # noqa: PLC0415 - only for target_type

    try:
        return TypeAdapter(target_type).validate_python(data)
    except ValidationError as exc:
        raise StructuredOutputError(f"the answer does not fit {target_type!r}: {exc}") from exc


@trace(name="run")
async def run_async(
    agent: PromptAgent | str | Path,
    messages: Sequence[PromptMessage],
    *,
    raw: bool = False,
    stream: bool = False,
    transport: CompletionTransport | None = None,
    target_type: Any = None,
) -> Any:
    """One model call on ``messages`` (no tool loop): the text, the structured value, the
    tool calls the model asked for, or with ``raw`` the engine's events. With ``stream`` a
    ``PromptyStream`` of text chunks as they arrive, then the tool calls (§8.6)."""
    loaded = _agent(agent)
    model = _transport(loaded, transport)
    specs = [t.spec for t in engine_tools(loaded, schemas=await parameters_schemas(loaded))]
    if stream:
        return PromptyStream(lambda: _chunks(model.stream(to_tether(messages), specs, "")))
    events = [e async for e in model.stream(to_tether(messages), specs, "")]
    if raw:
        return events
    calls = _tool_calls(events)
    if calls:
        return calls
    text = "".join(e.delta for e in events if type(e) is TextDelta)
    return _structured(loaded, text, target_type)


async def _chunks(
    events: AsyncIterator[StreamEvent],
) -> AsyncGenerator[str | RequestedToolCall, None]:
    """§8.6 on tether's events: text as it comes, then the accumulated tool calls; a refusal
    raises (§10.3)."""
    seen: list[StreamEvent] = []
    async for event in events:
        seen.append(event)
        if type(event) is TextDelta:
            yield event.delta
        elif type(event) is IterationEnd and event.stop_reason is StopReason.REFUSAL:
            said = "".join(e.delta for e in seen if type(e) is TextDelta)
            raise ModelRefusedError(said, [])
    for call in _tool_calls(seen):
        yield call


def _tool_calls(events: Sequence[Any]) -> list[RequestedToolCall]:
    names = {e.tool_use_id: e.name for e in events if type(e) is ToolUseStart}
    args = dict.fromkeys(names, "")
    for e in events:
        if type(e) is ToolInputDelta:
            args[e.tool_use_id] += e.partial_json
    return [RequestedToolCall(id=i, name=n, arguments=args[i] or "{}") for i, n in names.items()]


def run(agent: PromptAgent | str | Path, messages: Sequence[PromptMessage], **kw: Any) -> Any:
    """``run_async`` for sync code."""
    return run_blocking(run_async(agent, messages, **kw))


@trace(name="invoke")
async def invoke_async(
    agent: PromptAgent | str | Path,
    inputs: Mapping[str, Any] | None = None,
    **kw: Any,
) -> Any:
    """Load (if a path), prepare and run once: §1.4's one-shot."""
    loaded = _agent(agent)
    return await run_async(loaded, await prepare_async(loaded, inputs), **kw)


def invoke(
    agent: PromptAgent | str | Path, inputs: Mapping[str, Any] | None = None, **kw: Any
) -> Any:
    """``invoke_async`` for sync code."""
    return run_blocking(invoke_async(agent, inputs, **kw))


async def turn_async(
    agent: PromptAgent | str | Path,
    inputs: Mapping[str, Any] | None = None,
    tools: Mapping[str, Callable[..., Any]] | None = None,
    *,
    transport: CompletionTransport | None = None,
    target_type: Any = None,
    turn: int | None = None,
    stream: bool = False,
    **options: Any,
) -> Any:
    """One conversational round (§14): prepare, then the agent loop with the declared tools
    (handlers from ``tools``, the registries, or the tool's kind); the processed answer. A
    handler gets the arguments as one dict (``def get_weather(args)``) or as keywords
    (``def get_weather(city)``), as its signature asks.

    With ``stream`` a ``PromptyStream`` of the final answer's text as it arrives (§9.3: tool
    rounds stay buffered); its ``result`` and ``messages`` are set once it is exhausted.
    Keyword options are ``LoopOptions``: ``max_iterations``, ``max_llm_retries``, ``on_event``,
    ``cancel``, ``context_budget``, ``guardrails``, ``steering``, ``parallel_tool_calls``.
    """
    loaded = _agent(agent)
    label = "turn" if turn is None else f"turn {turn}"

    @trace(name=label)
    async def traced(inputs: Mapping[str, Any], settings: LoopOptions) -> LoopOutcome:
        messages = await prepare_async(loaded, inputs)
        values = validate_inputs(loaded, dict(inputs))
        model = _transport(loaded, transport)
        async with tool_sessions():
            declared = engine_tools(loaded, tools, values, await parameters_schemas(loaded))
            return await agent_loop(messages, model, declared, settings)

    given = dict(inputs or {})
    if not stream:
        outcome = await traced(given, LoopOptions(**options))
        return _structured(loaded, outcome.result, target_type)
    LoopOptions(**options)  # bad options fail here, not when the stream is first read

    async def produce() -> AsyncGenerator[str, None]:
        chunks: asyncio.Queue[str | None] = asyncio.Queue()
        caller = options.get("on_event")

        def on_event(kind: str, data: dict[str, Any]) -> None:
            if kind == "token":
                chunks.put_nowait(data["token"])
            if caller is not None:
                caller(kind, data)

        settings = LoopOptions(**{**options, "on_event": on_event, "stream": True})
        task = asyncio.ensure_future(traced(given, settings))
        task.add_done_callback(lambda _: chunks.put_nowait(None))
        try:
            while (chunk := await chunks.get()) is not None:
                yield chunk
            outcome = await task
        finally:
            if not task.done():  # the caller left early: stop the run, let it clean up
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        streamed.result = _structured(loaded, outcome.result, target_type)
        streamed.messages = outcome.messages

    streamed: PromptyStream[str] = PromptyStream(produce)
    return streamed


def turn(
    agent: PromptAgent | str | Path,
    inputs: Mapping[str, Any] | None = None,
    tools: Mapping[str, Callable[..., Any]] | None = None,
    **kw: Any,
) -> Any:
    """``turn_async`` for sync code (also from inside a running event loop)."""
    return run_blocking(turn_async(agent, inputs, tools, **kw))
