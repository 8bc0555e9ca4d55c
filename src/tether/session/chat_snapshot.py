"""Snapshots padwan-ai wrote itself: ``{"system", "messages", "total_usage"}``, the messages in
OpenAI's chat format (``role`` ``system``/``user``/``assistant``/``tool``; ``content`` a string,
null or a list of content parts; an assistant's ``tool_calls`` with JSON-text arguments; one
``tool`` message per result, ``tool_call_id`` naming its call), read into tether's messages.

What is read so: the leading system messages (padwan keeps the prompt there too) become the
system prompt when the snapshot gives none, and are dropped when they repeat it; a run of tool
messages becomes one user message of results, in order; arguments are read as a live call's
are (repaired where they can be; where not, the call keeps its text and the error, and is never
run). Anything else raises ``ChatMessageError`` naming the message (``snapshot.read_snapshot``
turns it into a ``SnapshotError``, then checks every result answers a call)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ..messages import ContentBlock, ImageBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..tools.repair import parse_arguments
from ..types import Usage
from .parts import content_blocks

__all__ = ["ChatMessageError", "chat_history", "chat_usage", "is_chat_snapshot"]

_SHOWN = 60  # characters of a bad value quoted in an error
_ROLES = ("system", "user", "assistant", "tool")
_MEDIA_PARTS = frozenset(("image_url", "input_audio"))
# padwan's UsageToken keys, as tether's Usage fields (``total`` is their sum: not kept)
_USAGE = {"input": "input_tokens", "output": "output_tokens"}
_USAGE_MORE = {"cached": "cache_read_tokens", "reasoning": "reasoning_tokens", "total": ""}


class ChatMessageError(ValueError):
    """Message ``index`` of a chat-format history cannot be read; the text says why."""

    def __init__(self, text: str, index: int) -> None:
        super().__init__(text)
        self.index = index


def is_chat_snapshot(data: Mapping[str, Any]) -> bool:
    """Whether ``data`` is padwan-ai's snapshot rather than tether's (which always carries a
    ``version`` and never a ``total_usage``, and whose messages hold typed blocks only)."""
    if "version" in data:
        return False
    if "total_usage" in data:
        return True
    messages = data.get("messages")
    return isinstance(messages, list) and any(_chat_shaped(m) for m in messages)


def _chat_shaped(message: Any) -> bool:
    if not isinstance(message, dict):
        return False
    if message.get("role") == "tool" or "tool_calls" in message or "tool_call_id" in message:
        return True
    content = message.get("content")
    if content is None or isinstance(content, str):
        return True
    return isinstance(content, list) and any(
        isinstance(part, dict)
        and isinstance(part.get("type"), str)
        and part["type"] in _MEDIA_PARTS
        for part in content
    )


def chat_history(
    items: list[Any], system: str | None
) -> tuple[str | None, list[Message], list[int]]:
    """The system prompt, the messages, and for each message the index of the item it was
    read from (the first of a run of tool messages)."""
    out: list[Message] = []
    origin: list[int] = []
    leading: list[tuple[int, str]] = []
    results = False  # the message before was a tool message
    for n, item in enumerate(items):
        try:
            role, read = _read(item)
        except (TypeError, ValueError) as exc:
            raise ChatMessageError(str(exc), n) from None
        if role == "system":
            if out:
                raise ChatMessageError("a system message after the conversation started", n)
            leading.append((n, read.text))
        elif role == "tool" and results:
            out[-1] = Message("user", (*out[-1].content, *read.content))
        else:
            out.append(read)
            origin.append(n)
        results = role == "tool"
    if system is None and leading:
        system, leading = "\n\n".join(text for _, text in leading), []
    kept = [(n, text) for n, text in leading if text != system]
    return (
        system,
        [Message("system", text) for _, text in kept] + out,
        [n for n, _ in kept] + origin,
    )


def _read(item: Any) -> tuple[str, Message]:
    if not isinstance(item, dict):
        raise TypeError("a message must be an object")
    role, content = item.get("role"), item.get("content")
    if role not in _ROLES:
        raise ValueError(
            f"'role' must be 'system', 'user', 'assistant' or 'tool', got {_shown(role)}"
        )
    if role == "system":
        return role, Message("system", _text(content, "a system message's"))
    if role == "user":
        if isinstance(content, str):
            return role, Message("user", content)
        if not isinstance(content, list):
            raise TypeError(
                "a user message's 'content' must be a string or a list of content parts"
            )
        return role, Message("user", content_blocks(content))
    if role == "assistant":
        return role, _assistant(item)
    return role, Message("user", (_result(item),))


def _assistant(item: dict[str, Any]) -> Message:
    content = item.get("content")
    text = "" if content is None else _text(content, "an assistant message's", ", null")
    calls = item.get("tool_calls")
    if calls is None:
        calls = []
    if not isinstance(calls, list):
        raise TypeError("'tool_calls' must be a list")
    blocks: list[ContentBlock] = [TextBlock(text)] if text or not calls else []
    blocks.extend(_call(call, k) for k, call in enumerate(calls))
    return Message("assistant", blocks)


def _call(call: Any, k: int) -> ToolUseBlock:
    at = f"tool call {k}"
    if not isinstance(call, dict):
        raise TypeError(f"{at}: a call must be an object")
    if call.get("type", "function") != "function":
        raise ValueError(f"{at}: its type is {_shown(call.get('type'))}, not 'function'")
    call_id, function = call.get("id"), call.get("function")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"{at}: 'id' must be a non-empty string")
    if not isinstance(function, dict):
        raise TypeError(f"{at}: 'function' must be an object with 'name' and 'arguments'")
    name, arguments = function.get("name"), function.get("arguments")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{at}: 'name' must be a non-empty string")
    if arguments is None:
        return ToolUseBlock(call_id, name, {})
    if isinstance(arguments, dict):
        return ToolUseBlock(call_id, name, arguments)
    if not isinstance(arguments, str):
        raise TypeError(f"{at}: 'arguments' must be JSON text or an object")
    parsed = parse_arguments(arguments)
    if parsed.value is None:
        return ToolUseBlock(call_id, name, {}, arguments, parsed.error or "unreadable arguments")
    raw = None if parsed.strategy in ("direct", "empty") else arguments
    return ToolUseBlock(call_id, name, parsed.value, raw)


def _result(item: dict[str, Any]) -> ToolResultBlock:
    call_id, content = item.get("tool_call_id"), item.get("content")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError("'tool_call_id' must be a non-empty string")
    if isinstance(content, str):
        return ToolResultBlock(call_id, content)
    if not isinstance(content, list):
        raise TypeError(
            "a tool message's 'content' must be a string or a list of text and image parts"
        )
    blocks = content_blocks(content, ("text", "image_url"))  # text and image blocks only
    return ToolResultBlock(call_id, tuple(cast(TextBlock | ImageBlock, b) for b in blocks))


def _text(content: Any, whose: str, also: str = "") -> str:
    """A message's text: a string, or a list of text parts joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise TypeError(f"{whose} 'content' must be a string{also} or a list of text parts")
    return "".join(b.text for b in content_blocks(content, ("text",)) if type(b) is TextBlock)


def chat_usage(total: Any) -> Usage | None:
    """padwan's ``total_usage`` (``input``, ``output``, maybe ``cached``, ``reasoning`` and
    ``total``) as a ``Usage``; None for none. Other keys are not read."""
    if total is None:
        return None
    if not isinstance(total, dict):
        raise TypeError(
            f"'total_usage' must be an object of token counts (input, output), got {_shown(total)}"
        )
    counts: dict[str, int] = {}
    for key, field in (*_USAGE.items(), *_USAGE_MORE.items()):
        if key not in total:
            if key in _USAGE:
                raise ValueError(f"'total_usage': {key!r} is missing")
            continue
        value = total[key]
        if type(value) is not int or value < 0:
            raise ValueError(
                f"'total_usage': {key!r} must be a count of tokens, got {_shown(value)}"
            )
        if field:
            counts[field] = value
    return Usage(**counts)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
