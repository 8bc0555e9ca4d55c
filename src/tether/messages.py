"""Conversation data: content blocks and messages. Immutable; no I/O; imports nothing of tether."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "AudioBlock",
    "ContentBlock",
    "ImageBlock",
    "Message",
    "ReasoningBlock",
    "Role",
    "TextBlock",
    "ToolResultBlock",
    "ToolResultContent",
    "ToolUseBlock",
    "text_message",
]

Role: TypeAlias = Literal["user", "assistant", "system"]
_ROLES = frozenset(("user", "assistant", "system"))


def _wrong(owner: str, field_name: str, expected: str, value: object) -> TypeError:
    return TypeError(f"{owner}.{field_name} is {expected}, got {type(value).__name__}")


def _check_text(owner: str, field_name: str, value: object) -> None:
    if not isinstance(value, str):
        raise _wrong(owner, field_name, "a string", value)


def _check_optional_text(owner: str, field_name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise _wrong(owner, field_name, "a string or None", value)


def _check_flag(owner: str, field_name: str, value: object) -> None:
    if type(value) is not bool:
        raise _wrong(owner, field_name, "True or False", value)


# Blocks check their fields' types when built, so a message that could not be stored and read
# back (text that is None, bytes or a dict) never exists at all.


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Plain text."""

    text: str

    def __post_init__(self) -> None:
        if type(self.text) is not str:
            _check_text("TextBlock", "text", self.text)


@dataclass(frozen=True, slots=True)
class ImageBlock:
    """An image: inline base64 ``data`` or a ``url`` (http(s) or a ``data:`` URI), never both."""

    media_type: str
    data: str | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        _check_text("ImageBlock", "media_type", self.media_type)
        _check_optional_text("ImageBlock", "data", self.data)
        _check_optional_text("ImageBlock", "url", self.url)
        if (self.data is None) == (self.url is None):
            raise ValueError("ImageBlock needs exactly one of data= (base64) or url=")

    @classmethod
    def from_bytes(cls, media_type: str, raw: bytes) -> ImageBlock:
        """An inline image from its bytes."""
        return cls(media_type, base64.b64encode(raw).decode("ascii"))


@dataclass(frozen=True, slots=True)
class AudioBlock:
    """Audio input as base64 ``data`` (e.g. ``audio/wav``, ``audio/mpeg``)."""

    media_type: str
    data: str

    def __post_init__(self) -> None:
        _check_text("AudioBlock", "media_type", self.media_type)
        _check_text("AudioBlock", "data", self.data)


@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    """Model reasoning. ``signature`` is the provider's opaque payload, replayed byte-exact.

    ``redacted`` marks reasoning the provider only returns encrypted (the payload is then in
    ``signature``); ``id`` is the provider's item id where it has one; ``provider`` names the
    wire format that produced it, so another provider can leave it out.
    """

    text: str = ""
    signature: str | None = None
    redacted: bool = False
    id: str | None = None
    provider: str | None = None

    def __post_init__(self) -> None:
        _check_text("ReasoningBlock", "text", self.text)
        _check_flag("ReasoningBlock", "redacted", self.redacted)
        for name in ("signature", "id", "provider"):
            _check_optional_text("ReasoningBlock", name, getattr(self, name))


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A tool call the model made.

    ``raw_arguments`` keeps the argument text exactly as streamed when it was not plain JSON;
    ``parse_error`` is set when no repair strategy could read it (``input`` is then empty and the
    call is never run).
    """

    id: str
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    parse_error: str | None = None

    def __post_init__(self) -> None:
        if (  # the usual call, checked at a glance; anything else is looked at field by field
            type(self.id) is str
            and type(self.name) is str
            and type(self.input) is dict
            and self.raw_arguments is None
            and self.parse_error is None
        ):
            return
        _check_text("ToolUseBlock", "id", self.id)
        _check_text("ToolUseBlock", "name", self.name)
        if type(self.input) is not dict and not isinstance(self.input, Mapping):
            raise _wrong("ToolUseBlock", "input", "a mapping", self.input)
        _check_optional_text("ToolUseBlock", "raw_arguments", self.raw_arguments)
        _check_optional_text("ToolUseBlock", "parse_error", self.parse_error)


ToolResultContent: TypeAlias = str | tuple[TextBlock | ImageBlock, ...]


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """The result of one tool call, matched to it by ``tool_use_id``."""

    tool_use_id: str
    content: ToolResultContent
    is_error: bool = False

    def __post_init__(self) -> None:
        if (  # the usual result, checked at a glance
            type(self.content) is str
            and type(self.tool_use_id) is str
            and type(self.is_error) is bool
        ):
            return
        _check_text("ToolResultBlock", "tool_use_id", self.tool_use_id)
        _check_flag("ToolResultBlock", "is_error", self.is_error)
        content = self.content
        if isinstance(content, str):
            return
        if not isinstance(content, tuple):
            if not isinstance(content, Iterable) or isinstance(content, bytes | Mapping):
                raise _wrong("ToolResultBlock", "content", "a string or blocks", content)
            content = tuple(content)
            object.__setattr__(self, "content", content)
        for block in content:
            if type(block) is not TextBlock and type(block) is not ImageBlock:
                raise _wrong("ToolResultBlock", "content", "text and image blocks", block)

    @property
    def text(self) -> str:
        """The content as plain text (images shown as a placeholder)."""
        if isinstance(self.content, str):
            return self.content
        return "".join(
            b.text if isinstance(b, TextBlock) else f"[image {b.media_type}]" for b in self.content
        )


ContentBlock: TypeAlias = (
    TextBlock | ImageBlock | AudioBlock | ReasoningBlock | ToolUseBlock | ToolResultBlock
)
_BLOCK_TYPES = frozenset(
    (TextBlock, ImageBlock, AudioBlock, ReasoningBlock, ToolUseBlock, ToolResultBlock)
)


@dataclass(frozen=True, slots=True)
class Message:
    """One message of the conversation; ``content`` may be given as a string or any iterable of
    blocks. ``name`` says which agent wrote an assistant message, in a run that hands off."""

    role: Role
    content: tuple[ContentBlock, ...]
    name: str | None

    def __init__(
        self, role: Role, content: str | Iterable[ContentBlock], name: str | None = None
    ) -> None:
        if role not in _ROLES:
            raise ValueError(f"Message role must be one of user, assistant, system; got {role!r}")
        if name is not None and (type(name) is not str or not name):
            raise _wrong("Message", "name", "a non-empty string or None", name)
        _set_role(self, role)  # the slots' own setters: cheaper than object.__setattr__
        _set_name(self, name)
        if isinstance(content, str):
            _set_content(self, (TextBlock(content),))
            return
        if type(content) is not tuple:
            if not isinstance(content, Iterable) or isinstance(content, bytes | Mapping):
                raise _wrong("Message", "content", "a string or content blocks", content)
            content = tuple(content)
        for block in content:
            if type(block) not in _BLOCK_TYPES:
                raise _wrong("Message", "content", "content blocks", block)
        _set_content(self, content)

    @property
    def text(self) -> str:
        """All text blocks joined (reasoning and tool blocks left out)."""
        return "".join(b.text for b in self.content if type(b) is TextBlock)

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        """The tool calls in this message, in order."""
        return [b for b in self.content if type(b) is ToolUseBlock]

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        """The tool results in this message, in order."""
        return [b for b in self.content if type(b) is ToolResultBlock]


_ROLE_NAMES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system"}
_new_message = Message.__new__
_new_text = TextBlock.__new__
_set_role = vars(Message)["role"].__set__  # the slots' own setters: frozen classes refuse setattr
_set_content = vars(Message)["content"].__set__
_set_name = vars(Message)["name"].__set__
_set_text = vars(TextBlock)["text"].__set__


def text_message(role: str, text: str) -> Message:
    """``Message(role, text)`` at half the cost: stores build thousands of these per load."""
    if type(text) is not str:
        raise TypeError(f"a message's text is a string, got {type(text).__name__}")
    try:
        checked = _ROLE_NAMES[role]
    except KeyError:
        raise ValueError(
            f"Message role must be one of user, assistant, system; got {role!r}"
        ) from None
    block = _new_text(TextBlock)
    _set_text(block, text)
    message = _new_message(Message)
    _set_role(message, checked)
    _set_content(message, (block,))
    _set_name(message, None)
    return message
