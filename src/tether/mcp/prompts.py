"""An MCP server's prompts as tether values: ``Prompt`` (listed with its arguments, or got with
its messages as tether ``Message``s, ready to be put into a conversation)."""

from __future__ import annotations

import binascii
from base64 import b64decode
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..messages import AudioBlock, ContentBlock, ImageBlock, Message, TextBlock
from .resources import MAX_DESCRIPTION

__all__ = ["Prompt", "PromptArgument", "check_arguments", "prompt_messages", "prompt_of"]

MAX_MESSAGES = 1_000  # messages of one prompt kept
MAX_PROMPT_CHARS = 1_000_000  # characters of one prompt's text, all its messages together
_IMAGES = frozenset(("image/png", "image/jpeg", "image/gif", "image/webp"))


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument a prompt takes (every argument's value is a string)."""

    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt of an MCP server. Listed, it has its ``arguments`` and no ``messages``; got
    (``get_prompt``), its ``messages`` are tether ``Message``s (user and assistant turns) to put
    into a conversation: e.g. send the last as the user's message, the ones before it as the
    history. ``server`` names the server it came from."""

    name: str
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    messages: tuple[Message, ...] = ()
    server: str | None = None


def prompt_of(entry: Any, server: str | None) -> Prompt:
    """A listed prompt (the SDK's ``Prompt``)."""
    arguments = tuple(
        PromptArgument(str(a.name), _cut(a.description), bool(a.required))
        for a in entry.arguments or ()
    )
    return Prompt(str(entry.name), _cut(entry.description), arguments, server=server)


def check_arguments(name: str, arguments: Mapping[str, Any] | None) -> dict[str, str]:
    """``arguments`` as MCP takes them (strings by name), or a ``TypeError`` naming the bad one."""
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping):
        raise TypeError(
            f"the arguments of prompt {name!r} are a dict of strings, got {arguments!r}"
        )
    for key, value in arguments.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"prompt {name!r}: argument {key!r} must be a string (MCP prompt arguments "
                f"are strings), got {type(value).__name__}; convert it with str()"
            )
    return dict(arguments)


def prompt_messages(result: Any) -> tuple[Message, ...]:
    """The messages of a ``prompts/get`` answer as tether messages, capped in number and text."""
    items = list(result.messages or ())
    if len(items) > MAX_MESSAGES:
        raise ValueError(f"the prompt has {len(items)} messages, more than {MAX_MESSAGES}")
    messages = tuple(Message(m.role, (_block(m.content),)) for m in items)
    chars = sum(len(b.text) for m in messages for b in m.content if type(b) is TextBlock)
    if chars > MAX_PROMPT_CHARS:
        raise ValueError(f"the prompt is {chars} characters, more than {MAX_PROMPT_CHARS}")
    return messages


def _block(item: Any) -> ContentBlock:
    kind = getattr(item, "type", None)
    if kind == "text":
        return TextBlock(str(item.text))
    if kind in ("image", "audio"):
        return _media(kind, item)
    if kind == "resource":
        return _embedded(item.resource)
    if kind == "resource_link":
        return TextBlock(f"[resource {item.name}: {item.uri}]")
    return TextBlock(f"[{kind or 'content'} the prompt sent, not shown]")


def _media(kind: str, item: Any) -> ContentBlock:
    mime, data = item.mime_type, item.data
    if _base64(data) and (kind == "audio" or mime in _IMAGES):
        return ImageBlock(mime, data) if kind == "image" else AudioBlock(mime, data)
    return TextBlock(f"[{kind} ({mime or 'no type'}) the prompt sent, not shown]")


def _embedded(resource: Any) -> ContentBlock:
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return TextBlock(text)
    blob, mime = getattr(resource, "blob", None), getattr(resource, "mime_type", None) or ""
    if _base64(blob):
        if mime in _IMAGES:
            return ImageBlock(mime, blob)
        if mime.startswith("text/"):
            try:
                return TextBlock(b64decode(str(blob)).decode("utf-8"))
            except UnicodeDecodeError:
                pass
    size = len(blob) * 3 // 4 if isinstance(blob, str) else 0
    return TextBlock(f"[resource {resource.uri} ({mime or 'no type'}), {size} bytes not shown]")


def _base64(data: Any) -> bool:
    if not isinstance(data, str):
        return False
    try:
        b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _cut(text: Any) -> str | None:
    return text[:MAX_DESCRIPTION] if isinstance(text, str) and text else None
