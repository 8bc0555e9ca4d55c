"""Prompty's message shape (spec §6.5) and its conversion to and from tether's ``Message``.

Prompty messages carry roles tether's engine does not (``developer``, ``tool``) and the
attributes of their role markers (``metadata``); the door parses into these and converts to
tether messages only at the engine's edge.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..messages import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from .serial import OMIT_EMPTY, JsonShape, SparseJsonShape

__all__ = ["Part", "PromptMessage", "from_tether", "to_tether"]

_ROLES = frozenset(("system", "user", "assistant", "developer", "tool"))
_PART_KINDS = frozenset(("text", "image", "audio", "file"))


@dataclass(frozen=True, slots=True)
class Part(SparseJsonShape):
    """One content part: ``kind`` text/image/audio/file; ``value`` the text, URL or base64."""

    kind: str
    value: str
    media_type: str | None = None
    detail: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Part:
        """A part from the spec's JSON shape (``source`` accepted for ``value``)."""
        kind = data.get("kind", "text")
        if kind not in _PART_KINDS:
            raise ValueError(f"unknown content part kind {kind!r}")
        value = data.get("value", data.get("source", ""))
        if not isinstance(value, str):
            raise ValueError(f"a {kind} part's value must be a string, not {type(value).__name__}")
        return cls(kind, value, data.get("mediaType"), data.get("detail"))


@dataclass(frozen=True, slots=True)
class PromptMessage(JsonShape):
    """A message as Prompty parses it: a role, its parts, and role-marker attributes."""

    role: str
    content: tuple[Part, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict, metadata=OMIT_EMPTY)

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise ValueError(f"unknown message role {self.role!r}")

    @classmethod
    def text(cls, role: str, value: str, **metadata: Any) -> PromptMessage:
        """A message of one text part."""
        return cls(role, (Part("text", value),), metadata)

    @property
    def text_value(self) -> str:
        """The text of all text parts, joined."""
        return "".join(p.value for p in self.content if p.kind == "text")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PromptMessage:
        """A message from the spec's JSON shape; ``content`` may be a plain string."""
        role = data.get("role")
        if not isinstance(role, str):
            raise ValueError(f"a message needs a string role, got {role!r}")
        content = data.get("content", "")
        if isinstance(content, str):
            parts: tuple[Part, ...] = (Part("text", content),)
        elif isinstance(content, list):
            parts = tuple(Part.from_dict(p) for p in content)
        else:
            raise ValueError("a message's content must be a string or a list of parts")
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise ValueError("a message's metadata must be an object")
        return cls(role, parts, dict(metadata))


def _block(part: Part) -> ContentBlock:
    if part.kind == "text":
        return TextBlock(part.value)
    if part.kind == "image":
        if part.value.startswith(("http://", "https://", "data:")):
            return ImageBlock(part.media_type or "image/*", url=part.value)
        return ImageBlock(part.media_type or "image/png", data=part.value)
    if part.kind == "audio":
        return AudioBlock(part.media_type or "audio/wav", part.value)
    raise ValueError(f"tether's engine takes no {part.kind!r} parts in a message")


def to_tether(messages: Iterable[PromptMessage]) -> list[Message]:
    """Prompty messages as the engine's: ``developer`` becomes ``system``; a ``tool`` message
    becomes a user message of one result, and consecutive ones merge into one message."""
    out: list[Message] = []
    for m in messages:
        if m.role == "tool":
            call_id = str(m.metadata.get("tool_call_id", ""))
            block = ToolResultBlock(call_id, m.text_value)
            if out and out[-1].role == "user" and out[-1].tool_results:
                out[-1] = Message("user", [*out[-1].content, block])
            else:
                out.append(Message("user", [block]))
            continue
        role = "system" if m.role == "developer" else m.role
        tool_calls = m.metadata.get("tool_calls") if m.role == "assistant" else None
        blocks = [_block(p) for p in m.content if not (p.kind == "text" and not p.value)]
        if tool_calls:
            blocks.extend(_tool_use(c) for c in tool_calls)
        out.append(Message(role, blocks or [TextBlock("")]))  # type: ignore[arg-type]
    return out


def _tool_use(call: Mapping[str, Any]) -> ToolUseBlock:
    function = call.get("function", call)
    raw = function.get("arguments", "{}")
    try:
        args = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except ValueError:
        args = {}
    return ToolUseBlock(str(call.get("id", "")), str(function.get("name", "")), args)


def _call_dict(block: ToolUseBlock) -> dict[str, Any]:
    return {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": json.dumps(block.input)},
    }


def _part(block: ContentBlock) -> Part | None:
    if isinstance(block, TextBlock):
        return Part("text", block.text)
    if isinstance(block, ImageBlock):
        return Part("image", block.url or block.data or "", block.media_type)
    if isinstance(block, AudioBlock):
        return Part("audio", block.data, block.media_type)
    return None


def from_tether(messages: Sequence[Message]) -> list[PromptMessage]:
    """The engine's messages in Prompty's shape: an assistant turn's calls go to
    ``metadata.tool_calls``; each tool result becomes its own ``tool`` message."""
    out: list[PromptMessage] = []
    for m in messages:
        results = m.tool_results
        if results:
            out.extend(
                PromptMessage.text("tool", r.text, tool_call_id=r.tool_use_id) for r in results
            )
            continue
        parts = tuple(p for p in (_part(b) for b in m.content) if p is not None)
        calls = m.tool_uses
        if calls:
            text = "".join(p.value for p in parts if p.kind == "text")
            out.append(
                PromptMessage(
                    "assistant",
                    (Part("text", text),),
                    {"tool_calls": [_call_dict(c) for c in calls]},
                )
            )
            continue
        out.append(PromptMessage(m.role, parts or (Part("text", ""),)))
    return out
