"""``RedisStore``: sessions in Redis (redis-py asyncio). An append is one atomic script: it
checks the session's next position (another writer first: ``ConflictError``) and pushes the
message. How durable a returned append is depends on the server: only with ``appendonly yes``
and ``appendfsync always`` is it on disk before Redis answers; with the defaults (snapshots, or
``appendfsync everysec``) up to the last seconds of appends can be lost in a crash of the server.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any, Self

from ..context import new_session_id
from ..errors import ConflictError
from ..messages import Message
from .base import (
    SessionInfo,
    StoredContext,
    check_session_id,
    reached,
    read_messages,
    row_message,
    stored_form,
)

__all__ = ["SCHEMA_VERSION", "RedisStore"]

SCHEMA_VERSION = 1

# KEYS: session hash, message list, index; ARGV: position, now, session id, encoded messages.
_APPEND = """
local next = tonumber(redis.call('HGET', KEYS[1], 'next'))
local count = #ARGV - 3
if next ~= tonumber(ARGV[1]) then
    -- a retry of this very append, after a lost reply: it is there already
    if next == tonumber(ARGV[1]) + count and redis.call('LINDEX', KEYS[2], -1) == ARGV[#ARGV] then
        return 1
    end
    return 0
end
redis.call('RPUSH', KEYS[2], unpack(ARGV, 4))
redis.call('HSET', KEYS[1], 'next', next + count, 'updated', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'count', count)
redis.call('ZADD', KEYS[3], 'XX', ARGV[2], ARGV[3])
return 1
"""
# KEYS: session hash, message list; ARGV: the position the clearing writer knows, now.
_CLEAR = """
local next = tonumber(redis.call('HGET', KEYS[1], 'next'))
if next ~= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'next', next + 1, 'count', 0, 'updated', ARGV[2])
return 1
"""
_CHUNK = 1000  # messages per script call when copying (Lua's unpack has a stack limit)
_SEPARATOR = "\x1f"  # between the format/role prefix and the body


def _lost(exc: Exception) -> bool:
    """A connection refused, broken or timed out, or a server still loading its data."""
    from redis.exceptions import BusyLoadingError, ConnectionError, TimeoutError  # noqa: PLC0415

    return isinstance(exc, ConnectionError | TimeoutError | BusyLoadingError)


_reached = reached("Redis", _lost)


class RedisStore:
    """Conversations in the Redis server at ``url``, under keys starting with ``prefix``."""

    def __init__(self, url: str, *, prefix: str = "tether") -> None:
        if not prefix or _SEPARATOR in prefix:
            raise ValueError("prefix must be a non-empty key prefix")
        self.url = url
        self.prefix = prefix
        self._client: Any = None
        self._append_script: Any = None
        self._clear_script: Any = None

    async def __aenter__(self) -> Self:
        await self._redis()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def _redis(self) -> Any:
        """The client, once the keys' schema is known to be one this tether reads."""
        if self._client is None:
            from redis.asyncio import Redis  # noqa: PLC0415 - the redis extra

            client = Redis.from_url(self.url, decode_responses=True)
            meta = f"{self.prefix}:meta"
            try:
                await client.hsetnx(meta, "schema", SCHEMA_VERSION)
                found: Any = await client.hget(meta, "schema")
                if int(found) > SCHEMA_VERSION:
                    raise RuntimeError(
                        f"keys under {self.prefix!r} were written by a newer tether (schema "
                        f"{found}); this one reads up to {SCHEMA_VERSION}"
                    )
            except BaseException:
                await client.aclose()
                raise
            if self._client is not None:  # another call got there first
                await client.aclose()
                return self._client
            self._append_script = client.register_script(_APPEND)
            self._clear_script = client.register_script(_CLEAR)
            self._client = client
        return self._client

    def _keys(self, session: str) -> tuple[str, str]:
        """The session's hash and list keys (a digest of the id: ids are never key syntax)."""
        digest = hashlib.sha256(session.encode()).hexdigest()[:40]
        return f"{self.prefix}:s:{digest}", f"{self.prefix}:m:{digest}"

    @property
    def _index(self) -> str:
        return f"{self.prefix}:sessions"  # session id -> last update

    # -- sessions ---------------------------------------------------------------------------------

    @_reached
    async def open(self, session_id: str | None = None) -> StoredContext:
        """The session ``session_id`` (a new id when None), created if it does not exist."""
        session = check_session_id(session_id if session_id is not None else new_session_id())
        redis, (meta, _) = await self._redis(), self._keys(session)
        now = time.time()
        async with redis.pipeline(transaction=True) as pipe:  # created whole, or left as it is
            for field, value in (("id", session), ("created", now), ("updated", now)):
                pipe.hsetnx(meta, field, value)
            pipe.hsetnx(meta, "count", 0)
            pipe.hsetnx(meta, "next", 0)
            pipe.zadd(self._index, {session: now}, nx=True)
            pipe.hget(meta, "next")
            following = (await pipe.execute())[-1]
        return StoredContext(self, session, int(following or 0))

    @_reached
    async def sessions(self) -> list[SessionInfo]:
        redis = await self._redis()
        ids = await redis.zrange(self._index, 0, -1)
        async with redis.pipeline(transaction=False) as pipe:
            for session in ids:
                pipe.hgetall(self._keys(session)[0])
            metas = await pipe.execute()
        found = [
            SessionInfo(session, float(meta["created"]), float(meta["updated"]), int(meta["count"]))
            for session, meta in zip(ids, metas, strict=True)
            if meta
        ]
        return sorted(found, key=lambda s: (s.created, s.session_id))

    @_reached
    async def delete(self, session_id: str) -> bool:
        session = check_session_id(session_id)
        redis = await self._redis()
        gone = await redis.delete(*self._keys(session))
        await redis.zrem(self._index, session)
        return bool(gone)

    async def delete_older_than(self, seconds: float) -> int:
        cutoff = time.time() - seconds
        old = await (await self._redis()).zrangebyscore(self._index, "-inf", f"({cutoff}")
        gone = 0
        for session in old:
            gone += await self.delete(session)
        return gone

    # -- for the contexts -------------------------------------------------------------------------

    async def append_at(self, session: str, position: int, message: Message) -> int:
        return await self._append_rows(session, position, [message])

    @_reached
    async def _append_rows(self, session: str, position: int, messages: Sequence[Message]) -> int:
        """Push ``messages`` at ``position`` atomically (one script), or refuse if the session
        moved on."""
        encoded = [_encoded(message) for message in messages]
        meta, rows = self._keys(session)
        await self._redis()
        done = await self._append_script(
            keys=[meta, rows, self._index], args=[position, time.time(), session, *encoded]
        )
        if not done:
            raise ConflictError(
                f"session {session!r} was appended to by another writer; reopen it to go on"
            )
        return position + len(encoded)

    @_reached
    async def history_of(self, session: str) -> list[Message]:
        rows = await (await self._redis()).lrange(self._keys(session)[1], 0, -1)
        return read_messages(session, rows, _decoded)

    @_reached
    async def clear_at(self, session: str, known: int) -> int:
        """Remove the messages if the session is still at ``known`` (one script); the position
        moves on by one, so a writer that knew the session before the clear conflicts."""
        await self._redis()
        done = await self._clear_script(keys=list(self._keys(session)), args=[known, time.time()])
        if not done:
            raise ConflictError(
                f"session {session!r} was written to by another writer; reopen it to clear it"
            )
        return known + 1

    async def copy_of(self, messages: Sequence[Message]) -> StoredContext:
        """A new session holding ``messages``, pushed a thousand at a time."""
        target = await self.open(None)
        known = 0
        for start in range(0, len(messages), _CHUNK):
            known = await self._append_rows(
                target.session_id, known, messages[start : start + _CHUNK]
            )
        return StoredContext(self, target.session_id, known)


def _encoded(message: Message) -> str:
    fmt, body = stored_form(message)
    return f"{fmt}{message.role}{_SEPARATOR}{body}"


def _decoded(row: str) -> Message:
    head, _, body = row.partition(_SEPARATOR)
    return row_message(int(head[0]), head[1:], body)
