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

from ..codec import message_from_json
from ..context import new_session_id
from ..errors import ConflictError
from ..messages import Message, Role
from .base import PLAIN_TEXT, SessionInfo, StoredContext, check_session_id, stored_form

__all__ = ["RedisStore"]

# KEYS: session hash, message list, index; ARGV: position, now, encoded message.
_APPEND = """
local next = tonumber(redis.call('HGET', KEYS[1], 'next'))
if next ~= tonumber(ARGV[1]) then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('HSET', KEYS[1], 'next', next + 1, 'updated', ARGV[2])
redis.call('HINCRBY', KEYS[1], 'count', 1)
redis.call('ZADD', KEYS[3], 'XX', ARGV[2], ARGV[4])
return 1
"""
_SEPARATOR = "\x1f"  # between the format/role prefix and the body


class RedisStore:
    """Conversations in the Redis server at ``url``, under keys starting with ``prefix``."""

    def __init__(self, url: str, *, prefix: str = "tether") -> None:
        if not prefix or _SEPARATOR in prefix:
            raise ValueError("prefix must be a non-empty key prefix")
        self.url = url
        self.prefix = prefix
        self._client: Any = None
        self._append_script: Any = None

    async def __aenter__(self) -> Self:
        self._redis()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _redis(self) -> Any:
        if self._client is None:
            from redis.asyncio import Redis  # noqa: PLC0415 - the redis extra

            self._client = Redis.from_url(self.url, decode_responses=True)
            self._append_script = self._client.register_script(_APPEND)
        return self._client

    def _keys(self, session: str) -> tuple[str, str]:
        """The session's hash and list keys (a digest of the id: ids are never key syntax)."""
        digest = hashlib.sha256(session.encode()).hexdigest()[:40]
        return f"{self.prefix}:s:{digest}", f"{self.prefix}:m:{digest}"

    @property
    def _index(self) -> str:
        return f"{self.prefix}:sessions"  # session id -> last update

    # -- sessions ---------------------------------------------------------------------------------

    async def open(self, session_id: str | None = None) -> StoredContext:
        """The session ``session_id`` (a new id when None), created if it does not exist."""
        session = check_session_id(session_id if session_id is not None else new_session_id())
        redis, (meta, _) = self._redis(), self._keys(session)
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

    async def sessions(self) -> list[SessionInfo]:
        redis = self._redis()
        found = []
        for session in await redis.zrange(self._index, 0, -1):
            meta = await redis.hgetall(self._keys(session)[0])
            if meta:
                found.append(
                    SessionInfo(
                        session, float(meta["created"]), float(meta["updated"]), int(meta["count"])
                    )
                )
        return sorted(found, key=lambda s: (s.created, s.session_id))

    async def delete(self, session_id: str) -> bool:
        session = check_session_id(session_id)
        redis = self._redis()
        gone = await redis.delete(*self._keys(session))
        await redis.zrem(self._index, session)
        return bool(gone)

    async def delete_older_than(self, seconds: float) -> int:
        cutoff = time.time() - seconds
        old = await self._redis().zrangebyscore(self._index, "-inf", f"({cutoff}")
        gone = 0
        for session in old:
            gone += await self.delete(session)
        return gone

    # -- for the contexts -------------------------------------------------------------------------

    async def append_at(self, session: str, position: int, message: Message) -> int:
        fmt, body = stored_form(message)
        encoded = f"{fmt}{message.role}{_SEPARATOR}{body}"
        meta, messages = self._keys(session)
        self._redis()
        done = await self._append_script(
            keys=[meta, messages, self._index], args=[position, time.time(), encoded, session]
        )
        if not done:
            raise ConflictError(
                f"session {session!r} was appended to by another writer; reopen it to go on"
            )
        return position + 1

    async def history_of(self, session: str) -> list[Message]:
        rows = await self._redis().lrange(self._keys(session)[1], 0, -1)
        return [_decoded(row) for row in rows]

    async def clear_at(self, session: str, known: int) -> int:
        meta, messages = self._keys(session)
        async with self._redis().pipeline(transaction=True) as pipe:
            pipe.delete(messages)
            pipe.hset(meta, mapping={"count": 0, "updated": time.time()})
            await pipe.execute()
        return known

    async def copy_of(self, messages: Sequence[Message]) -> StoredContext:
        target = await self.open(None)
        for message in messages:
            await target.append(message)
        return target


def _decoded(row: str) -> Message:
    head, _, body = row.partition(_SEPARATOR)
    fmt, role = int(head[0]), head[1:]
    if fmt == PLAIN_TEXT:
        return Message(_role(role), body)
    return message_from_json(body)


def _role(role: str) -> Role:
    if role not in ("user", "assistant", "system"):
        raise ValueError(f"a stored message has role {role!r}")
    return role  # type: ignore[return-value]
