"""The declared seams: every tether store is a ``SessionStore``, and the optional transport
attributes (``model``, ``provider``, ``aclose``) are told by their protocols."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from tether.context import MemoryContextStore, SessionOpener
from tether.events import StreamEvent
from tether.messages import Message
from tether.stores import FileStore, PostgresStore, RedisStore, SQLiteStore
from tether.stores.base import SessionRows, SessionStore
from tether.transports.base import ClosableTransport, NamesModel, NamesProvider
from tether.types import ToolSpec

STORES: list[type[SessionStore]] = [SQLiteStore, FileStore, PostgresStore, RedisStore]


def test_every_tether_store_is_a_session_store_that_opens_sessions() -> None:
    for kind in STORES:
        assert issubclass(kind, SessionStore), kind
        assert issubclass(kind, SessionRows), kind
        assert issubclass(kind, SessionOpener), kind


class _Opener:
    async def open(self, session_id: str) -> MemoryContextStore:
        return MemoryContextStore(session_id=session_id)


def test_a_store_that_only_opens_sessions_is_an_opener_not_a_tether_store() -> None:
    assert isinstance(_Opener(), SessionOpener)
    assert not isinstance(_Opener(), SessionStore)
    assert not isinstance(object(), SessionOpener)


class _Bare:
    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        return
        yield


class _Described(_Bare):
    model = "m-1"
    provider = "acme"

    async def aclose(self) -> None:
        return None


def test_the_optional_transport_attributes_are_told_by_their_protocols() -> None:
    bare, described = _Bare(), _Described()
    assert not isinstance(bare, NamesModel | NamesProvider | ClosableTransport)
    assert isinstance(described, NamesModel)
    assert isinstance(described, NamesProvider)
    assert isinstance(described, ClosableTransport)
    closed_as_none = _Bare()
    closed_as_none.aclose = None  # type: ignore[attr-defined]
    assert not isinstance(closed_as_none, ClosableTransport)  # as getattr(..., None) read it
