"""Sampling: a server asks the client's model to write a message (``sampling/createMessage``:
a request of its own in the handshake era, an input request of a call in the 2026 era; both
reach the same callback). ``Sampling`` names the model (a tether transport), a cap on
tokens, and the application's consent, asked for each request; without it the client does not
declare the capability, and a server cannot ask. A refusal is answered as the specification
says (error -1, "User rejected sampling request"); a request is never given more tokens than the
cap, whatever it asks for."""

from __future__ import annotations

import asyncio
import binascii
import inspect
import logging
from base64 import b64decode
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..events import IterationEnd, TextDelta
from ..messages import AudioBlock, ContentBlock, ImageBlock, Message, TextBlock
from ..transports.base import CompletionTransport, NamesModel, TakesOptions

__all__ = ["Consent", "Sampling", "SamplingRequest", "sampling_callback"]

log = logging.getLogger("tether.mcp")

USER_REJECTED = -1  # the specification's code for a sampling request the user refused
_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603
_AT_ONCE = 4  # requests of one connection asked about or answered at a time; more are refused
_MAX_MESSAGES = 100  # messages of one request
_MAX_CHARS = 1_000_000  # characters of one request's text, all its messages together
_CHARS_PER_TOKEN = 4  # the cap on a reply's text when the model takes no max_tokens
_STOPS = {"end_turn": "endTurn", "max_tokens": "maxTokens", "stop_sequence": "stopSequence"}
_IMAGES = frozenset(("image/png", "image/jpeg", "image/gif", "image/webp"))


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """What a server asks the model, as the consent callback sees it: ``server`` (the server,
    as configured), the ``messages`` and ``system`` prompt it sends, the tokens it asked for
    (``max_tokens``) and those it will get at most (``granted_tokens``), and its preferences
    (``temperature``, ``stop_sequences``, ``model_hints``)."""

    server: str
    messages: tuple[Message, ...]
    system: str | None
    max_tokens: int
    granted_tokens: int
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_hints: tuple[str, ...] = ()


Consent = Callable[[SamplingRequest], bool | Awaitable[bool]]
"""Says whether a server's sampling request may go to the model: ``True`` lets it, anything
else refuses it (a callback that raises refuses it too)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sampling:
    """The model that answers a server's sampling requests (``on_sampling=`` of ``McpStdio``,
    ``McpStreamable`` and ``AgentSession``): ``model`` (a tether transport), ``consent`` (asked
    for every request: see ``Consent``), ``max_tokens`` (the most any request gets; one asking
    for more is given this many) and ``timeout`` (seconds the model may take to answer). A
    model that takes no ``max_tokens`` option has its reply's text cut at four characters a
    token of the cap."""

    model: CompletionTransport
    consent: Consent
    max_tokens: int = 1024
    timeout: float = 120.0

    def __post_init__(self) -> None:
        if not callable(getattr(self.model, "stream", None)):
            raise TypeError(f"Sampling(model=) takes a tether transport, got {self.model!r}")
        if not callable(self.consent):
            raise TypeError(
                "Sampling(consent=) takes a callable that sees each request and returns True to "
                f"let it through, got {self.consent!r}"
            )
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise TypeError(f"Sampling(max_tokens=) is an int, got {self.max_tokens!r}")
        if self.max_tokens < 1 or not self.timeout > 0:
            raise ValueError("Sampling needs max_tokens of at least 1 and a positive timeout")


def sampling_callback(sampling: Sampling, server: Callable[[], str]) -> Any:
    """The SDK's sampling callback answering with ``sampling``'s model; ``server()`` names the
    server asking. A server sending more than a few requests at once has the others refused
    (a storm of them never reaches the consent callback)."""
    busy = 0

    async def answer(context: Any, params: Any) -> Any:
        from mcp_types import ErrorData  # noqa: PLC0415

        nonlocal busy
        if busy >= _AT_ONCE:
            said = f"too many sampling requests at once (at most {_AT_ONCE}): try again later"
            return ErrorData(code=_INTERNAL_ERROR, message=said)
        busy += 1
        try:
            return await _answer(sampling, server(), params)
        finally:
            busy -= 1

    return answer


async def _answer(sampling: Sampling, server: str, params: Any) -> Any:
    """One sampling request answered: checked, consented to, then sent to the model."""
    from mcp_types import ErrorData  # noqa: PLC0415

    try:
        request = _request(params, sampling, server)
    except ValueError as exc:
        return ErrorData(code=_INVALID_PARAMS, message=str(exc))
    if not await _consented(sampling.consent, request):
        return ErrorData(code=USER_REJECTED, message="User rejected sampling request")
    try:
        return await asyncio.wait_for(_reply(sampling.model, request), sampling.timeout)
    except TimeoutError:
        message = f"the model did not answer within {sampling.timeout:g} s"
    except Exception as exc:  # the model failed: its details stay here (they may name keys)
        log.warning("sampling for %s failed: %s", request.server, exc)
        message = f"the model failed ({type(exc).__name__})"
    return ErrorData(code=_INTERNAL_ERROR, message=message)


def _request(params: Any, sampling: Sampling, server: str) -> SamplingRequest:
    if getattr(params, "tools", None):
        raise ValueError("this client does not offer tools to sampling requests")
    asked = params.max_tokens
    if not isinstance(asked, int) or asked < 1:
        raise ValueError(f"maxTokens must be a positive integer, got {asked!r}")
    items = list(params.messages or ())
    if not items or len(items) > _MAX_MESSAGES:
        raise ValueError(f"a sampling request has 1 to {_MAX_MESSAGES} messages, got {len(items)}")
    messages = tuple(Message(m.role, _blocks(m.content)) for m in items)
    chars = sum(len(b.text) for m in messages for b in m.content if type(b) is TextBlock)
    if chars > _MAX_CHARS:
        raise ValueError(f"the request's text is {chars} characters, more than {_MAX_CHARS}")
    hints = getattr(params.model_preferences, "hints", None) or ()
    return SamplingRequest(
        server=server,
        messages=messages,
        system=params.system_prompt,
        max_tokens=asked,
        granted_tokens=min(asked, sampling.max_tokens),
        temperature=params.temperature,
        stop_sequences=tuple(params.stop_sequences or ()),
        model_hints=tuple(h.name for h in hints if isinstance(getattr(h, "name", None), str)),
    )


def _blocks(content: Any) -> tuple[ContentBlock, ...]:
    items = content if isinstance(content, list) else [content]
    return tuple(_block(item) for item in items)


def _block(item: Any) -> ContentBlock:
    kind = getattr(item, "type", None)
    if kind == "text":
        return TextBlock(str(item.text))
    data, mime = getattr(item, "data", None), getattr(item, "mime_type", None)
    if kind in ("image", "audio") and isinstance(mime, str) and _base64(data):
        if kind == "image" and mime in _IMAGES:
            return ImageBlock(mime, data)
        if kind == "audio":
            return AudioBlock(mime, str(data))
    raise ValueError(f"this client reads text, images and audio in sampling requests, not {kind!r}")


def _base64(data: Any) -> bool:
    try:
        b64decode(str(data), validate=True)
    except (binascii.Error, ValueError):
        return False
    return isinstance(data, str)


async def _consented(consent: Consent, request: SamplingRequest) -> bool:
    try:
        said = consent(request)
        if inspect.isawaitable(said):
            said = await said
    except Exception:
        log.exception("the sampling consent callback raised: the request is refused")
        return False
    return said is True


async def _reply(model: CompletionTransport, request: SamplingRequest) -> Any:
    from mcp_types import CreateMessageResult, TextContent  # noqa: PLC0415

    capped = isinstance(model, TakesOptions)
    transport = _capped(model, request) if isinstance(model, TakesOptions) else model
    pieces: list[str] = []
    end: IterationEnd | None = None
    async for event in transport.stream(request.messages, (), request.system or ""):
        if isinstance(event, TextDelta):
            pieces.append(event.delta)
        elif isinstance(event, IterationEnd):
            end = event
    text = "".join(pieces)
    stop = _STOPS.get(str(end.stop_reason), str(end.stop_reason)) if end else "endTurn"
    limit = request.granted_tokens * _CHARS_PER_TOKEN
    if not capped and len(text) > limit:
        text, stop = text[:limit], "maxTokens"
    named = end.model if end is not None and end.model else None
    model_name = named or (model.model if isinstance(model, NamesModel) else "unknown")
    return CreateMessageResult(
        role="assistant",
        content=TextContent(type="text", text=text),
        model=str(model_name),
        stop_reason=stop,
    )


def _capped(model: TakesOptions, request: SamplingRequest) -> CompletionTransport:
    """``model`` asking for at most the granted tokens, with what it can take of the server's
    preferences."""
    changes: dict[str, Any] = {"max_tokens": request.granted_tokens}
    if request.temperature is not None and 0 <= request.temperature <= 2:
        changes["temperature"] = request.temperature
    if request.stop_sequences:
        changes["stop"] = request.stop_sequences
    return model.with_options(**changes)
