"""What every store shares: session ids checked before use, and what ``sessions()`` reports."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn, ParamSpec, Protocol, TypeAlias, TypeVar, runtime_checkable

from ..base.interrupt import survive
from ..errors import StoreDamagedError, StoreUnavailableError
from ..messages import Message, TextBlock, text_message
from .jsonforms import message_from_json, message_to_dict, message_to_json

__all__ = [
    "MAX_SESSION_ID",
    "MESSAGE_FORMAT",
    "PLAIN_TEXT",
    "SessionInfo",
    "SessionRows",
    "SessionStore",
    "StoredContext",
    "check_session_id",
    "damaged",
    "reached",
    "reaching",
    "read_messages",
    "row_message",
    "stored_form",
    "stored_row",
]

T = TypeVar("T")
P = ParamSpec("P")

MAX_SESSION_ID = 256
PLAIN_TEXT = 0  # a message of one text block: its text as it is (no JSON to read back)
MESSAGE_FORMAT = 1  # any other message: its ``jsonforms`` JSON


def stored_form(message: Message) -> tuple[int, str]:
    """How a row-per-message store keeps ``message``: its format and body. The body is always
    valid UTF-8: text that UTF-8 cannot hold (a lone surrogate) is kept as a JSON escape."""
    content = message.content
    if len(content) == 1 and type(content[0]) is TextBlock and message.name is None:
        text = content[0].text
        if text.isascii() or _utf8(text):
            return PLAIN_TEXT, text
    else:
        body = message_to_json(message)
        if body.isascii() or _utf8(body):
            return MESSAGE_FORMAT, body
    return MESSAGE_FORMAT, json.dumps(message_to_dict(message), separators=(",", ":"))  # escaped


def _utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def row_message(fmt: int, role: str, body: str) -> Message:
    """The message a stored row holds; a format this tether does not know is a clear error."""
    if fmt == PLAIN_TEXT:
        return text_message(role, body)
    if fmt == MESSAGE_FORMAT:
        message = message_from_json(body)
        if message.role != role:
            raise ValueError(f"its role is {role!r} but its body says {message.role!r}")
        return message
    raise ValueError(f"a stored message has format {fmt}; this tether reads up to {MESSAGE_FORMAT}")


@contextmanager
def reaching(server: str, lost: Callable[[Exception], bool]) -> Iterator[None]:
    """Turn what ``lost`` says is a lost or refused connection into ``StoreUnavailableError``."""
    try:
        yield
    except Exception as exc:
        if lost(exc):
            raise StoreUnavailableError(f"{server} is unavailable: {exc}") from exc
        raise


Method: TypeAlias = Callable[P, Coroutine[Any, Any, T]]


def reached(
    server: str, lost: Callable[[Exception], bool]
) -> Callable[[Method[P, T]], Method[P, T]]:
    """``reaching`` around every call of an async method."""

    def wrap(method: Method[P, T]) -> Method[P, T]:
        @functools.wraps(method)
        async def call(*args: P.args, **kwargs: P.kwargs) -> T:
            with reaching(server, lost):
                return await method(*args, **kwargs)

        return call

    return wrap


_DAMAGE = (ValueError, TypeError, KeyError, IndexError, AttributeError)


def damaged(session: str, position: int | None, reason: object) -> StoreDamagedError:
    """The error for a stored record of ``session`` that cannot be read (at ``position``, the
    message's index in the session, when known)."""
    where = "" if position is None else f" at message {position}"
    return StoreDamagedError(
        f"stored session {session!r} is damaged{where}: {reason}",
        session_id=session,
        position=position,
    )


def read_messages(
    session: str, rows: Sequence[T], decode: Callable[[T], Message], first: int = 0
) -> list[Message]:
    """The messages ``decode`` makes of ``rows`` (the first is message ``first`` of the
    session); a row it cannot read is a ``StoreDamagedError`` naming its position."""
    try:
        return [decode(row) for row in rows]
    except _DAMAGE:
        for at, row in enumerate(rows, first):
            try:
                decode(row)
            except _DAMAGE as exc:
                raise damaged(session, at, exc) from None
        raise


def stored_row(row: tuple[int, str, str]) -> Message:
    """The message of a stored (format, role, body) row."""
    return row_message(*row)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One stored session: its id, when it was created and last appended to (Unix seconds), and
    how many messages it holds."""

    session_id: str
    created: float
    updated: float
    messages: int


def check_session_id(session_id: object) -> str:
    """``session_id`` if it can name a session; a clear ``ValueError`` otherwise. Ids are data
    only: never part of a path or an SQL text."""
    if not isinstance(session_id, str):
        raise TypeError(f"a session id is a string, got {type(session_id).__name__}")
    if not 1 <= len(session_id) <= MAX_SESSION_ID:
        raise ValueError(f"a session id has 1 to {MAX_SESSION_ID} characters")
    if "\x00" in session_id or not session_id.isprintable():
        raise ValueError(f"a session id must be printable text, got {session_id!r}")
    return session_id


@runtime_checkable
class SessionRows(Protocol):
    """What a store does for its contexts. ``known`` is where a writer last left a session (its
    next position, or a file's size); a store refuses an append at a stale ``known`` with
    ``ConflictError`` and returns the new one."""

    async def append_at(self, session: str, known: int, message: Message) -> int: ...

    async def history_of(self, session: str) -> list[Message]: ...

    async def clear_at(self, session: str, known: int) -> int: ...

    async def copy_of(self, messages: Sequence[Message]) -> StoredContext: ...

    async def open(self, session_id: str | None = None) -> StoredContext: ...


@runtime_checkable
class SessionStore(SessionRows, Protocol):
    """A tether store (``SQLiteStore``, ``FileStore``, ``PostgresStore``, ``RedisStore``):
    sessions opened by id, listed and deleted."""

    async def sessions(self) -> list[SessionInfo]:
        """Every stored session, as ``SessionInfo``."""
        ...

    async def delete(self, session_id: str) -> bool:
        """Remove the session ``session_id``; whether there was one."""
        ...


class StoredContext:
    """One session of a store: a ``ContextStore``. An append is durable when it returns (as the
    store defines it) and a ``ConflictError`` if another writer appended since this one did."""

    __slots__ = ("_known", "_session", "_store", "_unsure")

    def __init__(self, store: SessionRows, session: str, known: int) -> None:
        self._store = store
        self._session = session
        self._known = known
        self._unsure: Message | None = None  # an append whose outcome a lost server hid

    @property
    def session_id(self) -> str:
        return self._session

    @property
    def position(self) -> int:
        """Where this writer's next append goes (the store's count of appends so far)."""
        return self._known

    async def append(self, message: Message) -> None:
        """Append ``message``. A cancelled append is finished first, so its outcome is never
        ambiguous: it either landed (and the next goes after it) or it did not."""
        await survive(self._append(message))

    async def _append(self, message: Message) -> None:
        if self._unsure is not None:
            await self._settle()
        try:
            self._known = await self._store.append_at(self._session, self._known, message)
        except StoreUnavailableError:
            self._unsure = message
            raise

    async def _settle(self) -> None:
        """Find out whether the append a lost connection hid did land: it did if the session
        moved on and ends with that message (then this writer goes on after it)."""
        now = await self._store.open(self._session)
        if now.position != self._known and (await now.get_history())[-1:] == [self._unsure]:
            self._known = now.position
        self._unsure = None

    async def get_history(self) -> list[Message]:
        """Every message of the session, read from the store now: the one way to read a session
        back, as on every ``ContextStore``."""
        return await self._store.history_of(self._session)

    @property
    def messages(self) -> NoReturn:
        """Not here: a stored session is read from its store, so ``await get_history()``
        (``MemoryContextStore.messages`` is the in-memory store's copy, with nothing to read)."""
        raise AttributeError(
            f"a stored session has no .messages: read it with `await context.get_history()` "
            f"(session {self._session!r}, {type(self._store).__name__})"
        )

    async def get_context(self) -> list[Message]:
        """The messages from the last compaction's kept ones on: read from there by a store
        that keeps where they begin (``context_of``), else the whole history."""
        reader = getattr(self._store, "context_of", None)
        if reader is None:
            return await self._store.history_of(self._session)
        found: list[Message] = await reader(self._session)
        return found

    async def fork(self) -> StoredContext:
        return await self._store.copy_of(await self.get_history())

    async def clear(self) -> None:
        """Remove every message; a ``ConflictError`` if another writer wrote since this one."""
        await survive(self._clear())

    async def _clear(self) -> None:
        if self._unsure is not None:
            await self._settle()
        self._known = await self._store.clear_at(self._session, self._known)

    def __repr__(self) -> str:
        return f"StoredContext({self._session!r}, {type(self._store).__name__})"
