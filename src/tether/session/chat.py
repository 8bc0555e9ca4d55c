"""padwan-ai's client protocol as a tether transport: any object with ``stream_chat(messages,
tools)`` (padwan's ``LLMClient``, or the fakes people test with) can drive an ``AgentSession``.

How a turn goes (padwan's ``ChatStream``): ``stream_chat`` returns the stream (or an awaitable of
it); the stream is an async iterable of text chunks, or an async context manager giving one (left
when the turn ends). After iteration, never before ("ChatStream.tool_calls is only populated
after iteration completes"), its ``tool_calls`` and ``usage`` are read.

What is read back, leniently, as attributes or keys:

- a chunk: a ``str``, or anything whose ``text`` or ``content`` is a string (None adds nothing);
- a tool call: padwan's ``ToolCall``, OpenAI's ``{"id", "type": "function", "function": {"name",
  "arguments"}}``, or flat ``{"id", "name", "arguments"}``; arguments are JSON text or a mapping;
- usage: padwan's ``UsageToken`` (``input``, ``output``, ``cached``, ``reasoning``),
  ``input_tokens``/``output_tokens`` or ``prompt_tokens``/``completion_tokens``; None is none.

What the client is given, as padwan's own session gives it:

- ``messages``: plain dicts in OpenAI's chat format (padwan's ``ChatMessage`` family): the system
  prompt first as ``{"role": "system", "content": ...}``; text as ``{"role", "content"}``; an
  assistant's calls as ``{"role": "assistant", "content": text or None, "tool_calls": [...]}``
  with JSON-text arguments; each result as ``{"role": "tool", "tool_call_id", "name",
  "content"}``. Images and audio go as OpenAI content parts. The dicts are new each turn.
- ``tools``: padwan's ``ToolDefinition`` dicts (``name``, ``description``, ``parameters``: the
  JSON Schema), or None when the session has no tools.

Arguments reach the engine as the model wrote them, so JSON that needs repair is repaired and JSON
that cannot be read is answered with the same error result as from any other transport.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import StreamContractError
from ..events import IterationEnd, StreamEvent, TextDelta, ToolInputDelta, ToolUseStart
from ..messages import Message
from ..transports.codecs.openai_chat import OpenAIChatCodec
from ..transports.options import ModelOptions
from ..types import StopReason, ToolSpec, Usage

__all__ = ["ChatClient", "ChatClientTransport", "chat_messages", "chat_tools"]

_SHOWN = 80  # characters of a bad value quoted in an error
_NO_OPTIONS = ModelOptions()
_CODEC = OpenAIChatCodec()  # its message encoding keeps no state


@runtime_checkable
class ChatClient(Protocol):
    """padwan-ai's client: ``stream_chat`` starts one model turn (see the module's docstring)."""

    def stream_chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> Any:
        """The turn's chat stream, or an awaitable of it."""
        ...


class ChatClientTransport:
    """A ``CompletionTransport`` that runs each model turn through ``client.stream_chat``."""

    __slots__ = ("client",)

    def __init__(self, client: ChatClient) -> None:
        if not callable(getattr(client, "stream_chat", None)):
            raise TypeError(f"a chat client needs a stream_chat method, got {_shown(client)}")
        self.client = client

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        """One turn: the client's text chunks, then its calls and usage, then the end."""
        made = self.client.stream_chat(chat_messages(messages, system), chat_tools(tools))
        if inspect.isawaitable(made) and not _is_stream(made):
            made = await made
        if hasattr(type(made), "__aenter__") and hasattr(type(made), "__aexit__"):
            async with made as entered:
                async for event in _events(made if entered is None else entered):
                    yield event
        else:
            async for event in _events(made):
                yield event


def chat_messages(messages: Sequence[Message], system: str) -> list[dict[str, Any]]:
    """The conversation as ``stream_chat`` takes it: OpenAI chat-format dicts, system first, each
    result named after its call and a call-only assistant message with ``content`` None."""
    body = _CODEC.encode("", messages, (), system, _NO_OPTIONS, False)
    wire: list[dict[str, Any]] = body["messages"]
    names: dict[str, str] = {}
    for message in wire:
        calls = message.get("tool_calls")
        if calls is not None:
            message.setdefault("content", None)
            names.update((c["id"], c["function"]["name"]) for c in calls)
        elif message["role"] == "tool":
            message["name"] = names.get(message["tool_call_id"], "")
    return wire


def chat_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]] | None:
    """The tools as ``stream_chat`` takes them (None for none, as padwan's session sends)."""
    if not tools:
        return None
    return [
        {"name": t.name, "description": t.description, "parameters": dict(t.schema)} for t in tools
    ]


def _is_stream(value: Any) -> bool:
    kind = type(value)
    return hasattr(kind, "__aiter__") or hasattr(kind, "__aenter__")


async def _events(stream: Any) -> AsyncIterator[StreamEvent]:
    if not hasattr(type(stream), "__aiter__"):
        raise StreamContractError(
            "stream_chat must give an async iterable of text chunks (or an async context "
            f"manager giving one), got {_shown(stream)}"
        )
    chunks = stream.__aiter__()
    try:
        while True:
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                break
            text = _text(chunk)
            if text:
                yield TextDelta(0, text)
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()
    calls = _calls(getattr(stream, "tool_calls", None))
    for index, (call_id, name, arguments) in enumerate(calls, start=1):
        yield ToolUseStart(index, call_id, name)
        yield ToolInputDelta(index, call_id, arguments)
    stop = StopReason.TOOL_USE if calls else StopReason.END_TURN
    yield IterationEnd(0, stop, _usage(getattr(stream, "usage", None)))


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _text(chunk: Any) -> str | None:
    """A chunk's text; None for a chunk that carries none this time (``text=None``)."""
    if isinstance(chunk, str):
        return chunk
    if isinstance(chunk, Mapping):
        fields = [chunk.get(name) for name in ("text", "content") if name in chunk]
    else:
        fields = [getattr(chunk, name) for name in ("text", "content") if hasattr(chunk, name)]
    if fields and all(isinstance(f, str) or f is None for f in fields):
        return next((f for f in fields if f), None)
    raise StreamContractError(
        "a stream_chat chunk must be text (a str, or with a string text or content), "
        f"got {type(chunk).__name__}: {_shown(chunk)}"
    )


def _calls(given: Any) -> list[tuple[str, str, str]]:
    """The stream's tool calls as ``(id, name, arguments text)``."""
    if given is None:
        return []
    if isinstance(given, str | bytes | Mapping) or not isinstance(given, Iterable):
        raise StreamContractError(f"the stream's tool_calls must be a list, got {_shown(given)}")
    calls = []
    for n, call in enumerate(given, start=1):
        function = _field(call, "function")
        source = call if function is None else function
        name, arguments = _field(source, "name"), _field(source, "arguments")
        if not isinstance(name, str) or not name:
            raise StreamContractError(f"tool call {n} of the stream has no name: {_shown(call)}")
        call_id = _field(call, "id")
        calls.append(("" if call_id is None else str(call_id), name, _arguments(arguments)))
    return calls


def _arguments(arguments: Any) -> str:
    """The arguments as JSON text; text is kept as written, for the engine to read or repair."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    if isinstance(arguments, Mapping):
        arguments = dict(arguments)
    return json.dumps(arguments, ensure_ascii=False, default=str)


def _usage(given: Any) -> Usage:
    if given is None:
        return Usage()
    return Usage(
        input_tokens=_tokens(given, "input", "input_tokens", "prompt_tokens"),
        output_tokens=_tokens(given, "output", "output_tokens", "completion_tokens"),
        cache_read_tokens=_tokens(given, "cached", "cache_read_tokens"),
        reasoning_tokens=_tokens(given, "reasoning", "reasoning_tokens"),
    )


def _tokens(usage: Any, *names: str) -> int:
    for key in names:
        value = _field(usage, key)
        if value is None:
            continue
        if type(value) is not int or value < 0:
            raise StreamContractError(
                f"the stream's usage {key} must be a count of tokens, got {_shown(value)}"
            )
        return value
    return 0


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
