"""Parsing rendered prompt text into messages (spec §6): role markers and their attributes,
the pre-render nonce defence against injected markers, blank-line trimming, and the expansion
of rich-kind nonces; plus ``render_and_parse``, the render→parse pipeline a turn runs.

Rendered text is untrusted (it holds input values), so every scan here is linear: role markers
are recognised by hand rather than by the spec's backtracking regex.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...messages import Message
from ..errors import ParseError, RichInputError, RoleInjectionError, StrictViolation
from ..messages import Part, PromptMessage, from_tether
from ..tracing.tracer import trace
from .base import MAX_INPUT_DEPTH, MAX_OUTPUT_CHARS, NONCE_PREFIX, RichInput
from .markers import ROLES, RoleMarker, check_seals, match_role_marker, sign
from .templates import forges_role_boundary, render

__all__ = [
    "MAX_RENDERED_CHARS",
    "ROLES",
    "ParseError",
    "RoleInjectionError",
    "RoleMarker",
    "expand_threads",
    "match_role_marker",
    "parse",
    "pre_render",
    "render_and_parse",
    "resolve_parts",
]

MAX_RENDERED_CHARS = MAX_OUTPUT_CHARS


# --- parsing ------------------------------------------------------------------------------


def pre_render(template: str, nonce: str) -> str:
    """The template with every role marker signed with ``nonce`` (spec §6.3) at both ends of
    its attribute list, so markers the author wrote can be told from markers that arrive
    inside input values, and an attribute value cannot end its marker early."""
    return sign(template, nonce).template


@trace(name="parse", ignore_params=["nonce"])
def parse(
    rendered: str,
    *,
    nonce: str | None = None,
    threads: Mapping[str, Any] | None = None,
) -> list[PromptMessage]:
    """Split rendered text into messages at role markers (spec §6.4). With ``nonce`` (strict
    mode), only markers carrying it split; markers without a nonce stay text, and a marker with
    another nonce raises ``RoleInjectionError``. ``threads`` maps thread nonces to messages."""
    if not isinstance(rendered, str):
        raise ParseError(f"rendered text must be a string, not {type(rendered).__name__}")
    if len(rendered) > MAX_RENDERED_CHARS:
        raise ParseError(
            f"rendered text is {len(rendered)} characters; the cap is {MAX_RENDERED_CHARS}"
        )
    messages = _split(rendered, nonce)
    return expand_threads(messages, threads) if threads else messages


def _split(rendered: str, nonce: str | None) -> list[PromptMessage]:
    out: list[PromptMessage] = []
    role: str | None = None
    attrs: Mapping[str, Any] = {}
    lines: list[str] = []
    for number, line in enumerate(rendered.split("\n"), start=1):
        marker = _boundary(line, nonce, number)
        if marker is None:
            lines.append(line)
            continue
        _flush(out, role, attrs, lines)
        role, attrs, lines = marker.role, marker.attrs, []
    _flush(out, role, attrs, lines)
    return out


def _boundary(line: str, nonce: str | None, number: int) -> RoleMarker | None:
    marker = match_role_marker(line)
    if marker is None or nonce is None:
        return marker
    if marker.nonce is None:
        return None  # strict mode: an unsigned marker is text, not a boundary
    if not secrets.compare_digest(marker.nonce.encode(), nonce.encode()):
        raise RoleInjectionError(f"Role marker nonce mismatch — possible injection (line {number})")
    return marker


def _flush(
    out: list[PromptMessage], role: str | None, attrs: Mapping[str, Any], lines: list[str]
) -> None:
    text = _trim_blank_lines("\n".join(lines))
    if role is None:
        if text.strip():
            out.append(PromptMessage.text("system", text))
        return
    out.append(PromptMessage(role, (Part("text", text),), dict(attrs)))


def _trim_blank_lines(text: str) -> str:
    """Drops leading and trailing empty lines; whitespace on kept lines stays (spec §6.6)."""
    return text.strip("\r\n")


# --- rich nonces --------------------------------------------------------------------------


def expand_threads(
    messages: Sequence[PromptMessage], threads: Mapping[str, Any]
) -> list[PromptMessage]:
    """Replaces each thread nonce by its thread's messages (spec §6.7): text before and after
    it stays as messages of the containing role. A nonce whose value is not a message list stays
    literal text."""
    known = {n: msgs for n, v in threads.items() if (msgs := _thread_messages(v, n)) is not None}
    if not known:
        return list(messages)
    out: list[PromptMessage] = []
    for message in messages:
        out.extend(_expand(message, known))
    return out


def _expand(
    message: PromptMessage, known: Mapping[str, list[PromptMessage]]
) -> Iterator[PromptMessage]:
    pieces = list(_pieces(message.text_value, known))
    if len(pieces) == 1 or any(p.kind != "text" for p in message.content):
        yield message
        return
    for piece in pieces:
        if isinstance(piece, _Hit):
            yield from known[piece.nonce]
        elif (text := _trim_blank_lines(piece)).strip():
            yield PromptMessage(message.role, (Part("text", text),), dict(message.metadata))


def resolve_parts(
    messages: Sequence[PromptMessage], parts: Mapping[str, Part]
) -> list[PromptMessage]:
    """Replaces image/file/audio nonces in text parts by their parts, in place, splitting the
    text around them (blank pieces dropped)."""
    return [_with_parts(message, parts) for message in messages]


def _with_parts(message: PromptMessage, parts: Mapping[str, Part]) -> PromptMessage:
    content = tuple(p for part in message.content for p in _resolved(part, parts))
    if content == message.content:
        return message
    return PromptMessage(message.role, content or (Part("text", ""),), message.metadata)


def _resolved(part: Part, parts: Mapping[str, Part]) -> Iterator[Part]:
    if part.kind != "text":
        yield part
        return
    pieces = list(_pieces(part.value, parts))
    if len(pieces) == 1:
        yield part
        return
    for piece in pieces:
        if isinstance(piece, _Hit):
            yield parts[piece.nonce]
        elif (text := _trim_blank_lines(piece)).strip():
            yield Part("text", text)


@dataclass(frozen=True, slots=True)
class _Hit:
    nonce: str


def _pieces(text: str, known: Collection[str]) -> Iterator[str | _Hit]:
    """``text`` split around the known nonces in it (one linear scan for the common prefix)."""
    start = scan = 0
    while (at := text.find(NONCE_PREFIX, scan)) >= 0:
        hit = next((n for n in known if text.startswith(n, at)), None)
        if hit is None:
            scan = at + 1
            continue
        yield text[start:at]
        yield _Hit(hit)
        start = scan = at + len(hit)
    yield text[start:]


def _thread_messages(value: Any, nonce: str) -> list[PromptMessage] | None:
    """A thread value as messages: a list of ``PromptMessage``s, of tether ``Message``s or of
    dicts in the spec's shape (or ``{"messages": [...]}``); ``None`` if it is not a list."""
    if isinstance(value, Mapping) and isinstance(value.get("messages"), (list, tuple)):
        value = value["messages"]
    if not isinstance(value, (list, tuple)):
        return None
    out: list[PromptMessage] = []
    for i, item in enumerate(value):
        if isinstance(item, PromptMessage):
            out.append(item)
        elif isinstance(item, Message):
            out.extend(from_tether([item]))
        elif isinstance(item, Mapping):
            try:
                out.append(PromptMessage.from_dict(item))
            except ValueError as exc:
                raise RichInputError(f"thread {_name(nonce)!r}, message {i}: {exc}") from exc
        else:
            raise RichInputError(
                f"thread {_name(nonce)!r}, message {i}: expected a message, "
                f"got {type(item).__name__}"
            )
    return out


def _name(nonce: str) -> str:
    """The input name inside a nonce (for error messages)."""
    return nonce[len(NONCE_PREFIX) :].partition("_")[2].removesuffix("__")


# --- the pipeline -------------------------------------------------------------------------


def render_and_parse(
    instructions: str,
    engine: str,
    inputs: Mapping[str, Any],
    rich_kinds: Mapping[str, str],
    *,
    strict: bool = False,
    strict_inputs: Collection[str] = (),
    nonce_defence: bool = True,
) -> list[PromptMessage]:
    """Render ``instructions`` and parse them into messages: role markers signed with a fresh
    nonce first (so markers inside input values stay text), threads expanded, and image, file
    and audio inputs turned into parts where their nonce landed. A value of a strict input
    (every non-rich input when ``strict``, as ``format.strict`` asks) holding a
    role-marker-like line raises ``StrictViolation``."""
    checked = [n for n in inputs if n not in rich_kinds] if strict else strict_inputs
    _check_strict(inputs, checked)
    signed = sign(instructions, secrets.token_hex(16)) if nonce_defence else None
    template = instructions if signed is None else signed.template
    rendered = render(template, inputs, engine=engine, rich_kinds=rich_kinds)
    if signed is not None:
        check_seals(rendered.text, signed)
    threads: dict[str, Any] = {}
    parts: dict[str, Part] = {}
    for key, rich in rendered.rich.items():
        if rich.kind == "thread":
            threads[key] = _require_thread(rich, key)
        else:
            parts[key] = _as_part(rich)
    nonce = None if signed is None else signed.nonce
    messages = parse(rendered.text, nonce=nonce, threads=threads)
    return resolve_parts(messages, parts) if parts else messages


def _require_thread(rich: RichInput, nonce: str) -> list[PromptMessage]:
    messages = _thread_messages(rich.value, nonce)
    if messages is None:
        raise RichInputError(
            f"input {rich.name!r} is a thread: give a list of messages, "
            f"not {type(rich.value).__name__}"
        )
    return messages


def _as_part(rich: RichInput) -> Part:
    """An image/file/audio input as a part: a URL/data/base64 string, a ``Part``, or a mapping
    with ``value`` (or ``source``/``url``) and optional ``mediaType``/``detail``."""
    value = rich.value
    if isinstance(value, Part):
        return value
    if isinstance(value, str):
        return Part(rich.kind, value)
    if isinstance(value, Mapping):
        text = value.get("value", value.get("source", value.get("url")))
        media = value.get("mediaType", value.get("media_type"))
        detail = value.get("detail")
        if isinstance(text, str) and all(x is None or isinstance(x, str) for x in (media, detail)):
            return Part(rich.kind, text, media, detail)
    raise RichInputError(
        f"input {rich.name!r} is {_article(rich.kind)} {rich.kind}: give a URL or base64 string, "
        "a Part, or an object with 'value' (and optional 'mediaType', 'detail')"
    )


def _article(kind: str) -> str:
    return "an" if kind[:1] in "aeiou" else "a"


def _check_strict(inputs: Mapping[str, Any], strict_inputs: Collection[str]) -> None:
    for name in strict_inputs:
        if name not in inputs:
            continue
        for text in _strings(inputs[name], 0):
            for number, line in enumerate(text.split("\n"), start=1):
                if forges_role_boundary(line):
                    raise StrictViolation(
                        f"strict input {name!r} forges a role boundary on line {number} "
                        "of its value"
                    )


def _strings(value: Any, depth: int) -> Iterator[str]:
    if depth > MAX_INPUT_DEPTH:
        raise StrictViolation(f"a strict input is nested over {MAX_INPUT_DEPTH} deep")
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            yield from _strings(item, depth + 1)
