"""Saving and resuming a session through padwan-ai's ``ConversationStore``: plain JSON-able
snapshots (system prompt and messages) kept by any object with ``save`` and ``load``.

A loaded snapshot is untrusted: ``read_snapshot`` checks it is a conversation the engine could
have made (each block's fields, which role holds which block, every result answering a call of
the message just before it, system messages only first, the session's own id) and raises
``SnapshotError`` naming what is wrong. One thing it repairs, as the stores do on reopen: a
call left without a result gets an error result ("was not run").

Snapshots padwan-ai wrote itself (OpenAI chat-format messages and a ``total_usage``) are read
too (``chat_snapshot``), and checked the same way; ``read_usage`` gives their usage total.
Saving always writes tether's own format."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypedDict, runtime_checkable

from ..loop import RECORD, open_calls
from ..messages import ContentBlock, Message, Role, ToolResultBlock, ToolUseBlock
from ..stores.jsonforms import block_from_dict, message_to_dict
from ..tools.results import not_run_result
from ..types import Usage
from .chat_snapshot import ChatMessageError, chat_history, chat_usage, is_chat_snapshot

__all__ = [
    "SNAPSHOT_VERSION",
    "ConversationSnapshot",
    "ConversationStore",
    "SnapshotError",
    "read_snapshot",
    "read_usage",
    "snapshot_of",
]

SNAPSHOT_VERSION = 1
_UNANSWERED = "its result is not in the saved conversation."
_SHOWN = 60  # characters of a bad value quoted in an error


class SnapshotError(ValueError):
    """A snapshot that is not a conversation this tether can resume; ``index`` is the message
    at fault (None for the snapshot as a whole)."""

    def __init__(self, text: str, *, index: int | None = None) -> None:
        super().__init__(text)
        self.index = index


class ConversationSnapshot(TypedDict):
    """One session as plain data (``json.dumps`` takes it as it is)."""

    version: int
    session_id: str
    system: str | None
    messages: list[dict[str, Any]]


@runtime_checkable
class ConversationStore(Protocol):
    """Keeps snapshots by session id; either method may be a coroutine."""

    def save(self, session_id: str, snapshot: ConversationSnapshot) -> Awaitable[None] | None: ...

    def load(self, session_id: str) -> ConversationSnapshot | Awaitable[ConversationSnapshot]: ...


def snapshot_of(
    session_id: str, system: str | None, messages: Sequence[Message]
) -> ConversationSnapshot:
    """A session's snapshot."""
    return {
        "version": SNAPSHOT_VERSION,
        "session_id": session_id,
        "system": system,
        "messages": [message_to_dict(m) for m in messages],
    }


def read_snapshot(data: Any, session_id: str) -> tuple[str | None, list[Message]]:
    """The system prompt and messages of a loaded snapshot of ``session_id`` (tether's, or one
    padwan-ai wrote), checked (calls left without a result given an error result);
    ``SnapshotError`` if it is not one."""
    where = f"the snapshot of session {session_id!r}"
    if not isinstance(data, dict):
        raise SnapshotError(f"{where} is a {type(data).__name__}, not a mapping")
    if is_chat_snapshot(data):
        system, items = _header(data, session_id, where)
        try:
            system, read, origin = chat_history(items, system)
        except ChatMessageError as bad:
            text = f"{where} holds a message tether cannot read: message {bad.index}: {bad}"
            raise SnapshotError(text, index=bad.index) from None
        return system, _answered(read, where, origin)
    version = data.get("version", SNAPSHOT_VERSION)
    if type(version) is not int or version != SNAPSHOT_VERSION:
        raise SnapshotError(
            f"{where} has version {_shown(version)}; this tether reads {SNAPSHOT_VERSION}"
        )
    system, messages = _header(data, session_id, where)
    read = [_message(item, n, where) for n, item in enumerate(messages)]
    opened = open_calls(read)  # calls held for a person stay unanswered: the session is paused
    waiting = frozenset(c.id for c in opened.pending) if opened is not None else frozenset()
    return system, _answered(read, where, waiting=waiting)


def read_usage(data: Any, session_id: str) -> Usage | None:
    """The usage total a padwan-ai snapshot carries (``total_usage``); None for tether's own
    snapshots and for one without it. ``SnapshotError`` if it is not token counts."""
    if not isinstance(data, dict) or not is_chat_snapshot(data):
        return None
    try:
        return chat_usage(data.get("total_usage"))
    except (TypeError, ValueError) as exc:
        raise SnapshotError(f"the snapshot of session {session_id!r}: {exc}") from None


def _header(data: dict[str, Any], session_id: str, where: str) -> tuple[str | None, list[Any]]:
    """The snapshot's system prompt and its list of messages (still unread), its owner
    checked."""
    owner = data.get("session_id", session_id)
    if not isinstance(owner, str):
        raise SnapshotError(f"{where}: 'session_id' must be a string")
    if owner != session_id:
        raise SnapshotError(f"{where} belongs to session {_shown(owner)}")
    system, messages = data.get("system"), data.get("messages")
    if system is not None and not isinstance(system, str):
        raise SnapshotError(f"{where}: 'system' must be a string or null")
    if not isinstance(messages, list):
        raise SnapshotError(f"{where}: 'messages' must be a list")
    return system, messages


# -- one message ----------------------------------------------------------------------------------


class _Bad(Exception):
    """A problem inside one message: ``text``, and the block it is in."""

    def __init__(self, text: str, block: int | None = None) -> None:
        super().__init__(text)
        self.block = block


def _message(item: Any, n: int, where: str) -> Message:
    try:
        return _read_message(item)
    except _Bad as bad:
        at = f"message {n}" if bad.block is None else f"message {n}, block {bad.block}"
        text = f"{where} holds a message tether cannot read: {at}: {bad}"
        raise SnapshotError(text, index=n) from None


def _read_message(item: Any) -> Message:
    if not isinstance(item, dict):
        raise _Bad("a message must be an object")
    given, content = item.get("role"), item.get("content")
    role = _ROLES.get(given) if isinstance(given, str) else None
    if role is None:
        raise _Bad(f"'role' must be 'user', 'assistant' or 'system', got {_shown(given)}")
    if not isinstance(content, list):
        raise _Bad("'content' must be a list of blocks")
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise _Bad("'name' must be a string (the agent that wrote the message)")
    blocks: list[ContentBlock] = []
    for b, block in enumerate(content):
        try:
            blocks.append(_block(block, role))
        except _Bad as bad:
            raise _Bad(str(bad), b) from None
    return Message(role, tuple(blocks), name)


def _block(block: Any, role: str) -> ContentBlock:
    if not isinstance(block, dict):
        raise _Bad("a block must be an object")
    kind = block.get("type")
    check = _CHECKS.get(kind) if isinstance(kind, str) else None
    if check is None:
        raise _Bad(f"unknown block type {_shown(kind)}")
    if kind not in _HOLDS[role] and not (role == "user" and _is_record(block)):
        article = "an" if role == "assistant" else "a"
        raise _Bad(f"{article} {role} message cannot hold a {kind} block")
    check(block)
    return block_from_dict(block)


def _is_record(block: dict[str, Any]) -> bool:
    """Whether a block is an approval record (a resume's decisions, kept in a user message)."""
    return block.get("type") == "reasoning" and block.get("provider") == RECORD


def _field(block: dict[str, Any], name: str, kinds: tuple[type, ...], wanted: str) -> None:
    if name in block and not isinstance(block[name], kinds):
        raise _Bad(f"{name!r} must be {wanted}")


def _string(block: dict[str, Any], name: str, *, optional: bool = False) -> None:
    if optional:
        _field(block, name, (str, type(None)), "a string or null")
    elif not isinstance(block.get(name), str):
        raise _Bad(f"{name!r} must be a string")


def _name(block: dict[str, Any], name: str) -> None:
    value = block.get(name)
    if not isinstance(value, str) or not value:
        raise _Bad(f"{name!r} must be a non-empty string")


def _flag(block: dict[str, Any], name: str) -> None:
    _field(block, name, (bool,), "true or false")


def _text(block: dict[str, Any]) -> None:
    _string(block, "text")


def _tool_use(block: dict[str, Any]) -> None:
    _name(block, "id")
    _name(block, "name")
    _field(block, "input", (dict,), "an object")
    _string(block, "raw_arguments", optional=True)
    _string(block, "parse_error", optional=True)


def _tool_result(block: dict[str, Any]) -> None:
    _name(block, "tool_use_id")
    _flag(block, "is_error")
    content = block.get("content")
    if isinstance(content, list):
        for item in content:
            if not isinstance(item, dict) or item.get("type") not in ("text", "image"):
                raise _Bad("a tool result's content may hold only text and image blocks")
            _CHECKS[item["type"]](item)
    elif not isinstance(content, str):
        raise _Bad("'content' must be a string or a list of blocks")


def _reasoning(block: dict[str, Any]) -> None:
    _field(block, "text", (str,), "a string")
    _flag(block, "redacted")
    for name in ("signature", "id", "provider"):
        _string(block, name, optional=True)


def _image(block: dict[str, Any]) -> None:
    _string(block, "media_type")
    _string(block, "data", optional=True)
    _string(block, "url", optional=True)
    if (block.get("data") is None) == (block.get("url") is None):
        raise _Bad("an image needs exactly one of 'data' and 'url'")


def _audio(block: dict[str, Any]) -> None:
    _string(block, "media_type")
    _string(block, "data")


_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "text": _text,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
    "reasoning": _reasoning,
    "image": _image,
    "audio": _audio,
}
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system"}
_HOLDS: dict[str, frozenset[str]] = {
    "user": frozenset(("text", "tool_result", "image", "audio")),
    "assistant": frozenset(("text", "tool_use", "reasoning", "image")),
    "system": frozenset(("text",)),
}


# -- the conversation ------------------------------------------------------------------------------


def _answered(
    messages: list[Message],
    where: str,
    origin: Sequence[int] | None = None,
    waiting: frozenset[str] = frozenset(),
) -> list[Message]:
    """``messages`` with every result answering a call of the message just before it (else
    ``SnapshotError``, naming the message as ``origin`` numbers them) and every call answered
    (an error result added where none is), but those ``waiting`` for a person."""
    out: list[Message] = []
    calls: list[ToolUseBlock] = []
    started = False  # a message other than a system one was seen
    for at, message in enumerate(messages):
        n = at if origin is None else origin[at]
        if message.role == "system" and started:
            raise SnapshotError(
                f"{where}: message {n}: a system message after the conversation started",
                index=n,
            )
        started = started or message.role != "system"
        if message.role == "user":
            out.append(_with_results(message, calls, n, where))
        else:
            if calls:
                out.append(Message("user", tuple(_unanswered(c) for c in calls)))
            out.append(message)
        calls = _calls(message, n, where) if message.role == "assistant" else []
        if waiting:
            calls = [c for c in calls if c.id not in waiting]
    if calls:
        out.append(Message("user", tuple(_unanswered(c) for c in calls)))
    return out


def _calls(message: Message, n: int, where: str) -> list[ToolUseBlock]:
    seen: set[str] = set()
    for b, block in enumerate(message.content):
        if type(block) is ToolUseBlock:
            if block.id in seen:
                raise SnapshotError(
                    f"{where}: message {n}, block {b}: call id {_shown(block.id)} is used twice",
                    index=n,
                )
            seen.add(block.id)
    return message.tool_uses


def _with_results(message: Message, calls: list[ToolUseBlock], n: int, where: str) -> Message:
    """A user message after ``calls``: its results checked against them, the missing added
    (results first, in call order)."""
    made = {c.id for c in calls}
    given: dict[str, ToolResultBlock] = {}
    for b, block in enumerate(message.content):
        if type(block) is not ToolResultBlock:
            continue
        at, call = f"{where}: message {n}, block {b}", _shown(block.tool_use_id)
        if block.tool_use_id not in made:
            raise SnapshotError(
                f"{at}: a result for {call}, but the message before made no call with that id",
                index=n,
            )
        if block.tool_use_id in given:
            raise SnapshotError(f"{at}: call {call} is answered twice", index=n)
        given[block.tool_use_id] = block
    if len(given) == len(calls):
        return message
    results = [given.get(c.id) or _unanswered(c) for c in calls]
    rest = [b for b in message.content if type(b) is not ToolResultBlock]
    return Message("user", (*results, *rest))


def _shown(value: Any) -> str:
    """``repr(value)``, cut short: a tampered field may be huge."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def _unanswered(call: ToolUseBlock) -> ToolResultBlock:
    return not_run_result(call, _UNANSWERED)
