"""The ``append`` activity when a worker died after two (or more) appends of one workflow task:
the replay repeats every one of them, and each must find its own message where it was stored
(compared at its index, not only against the session's last message), then hand on the store's
position so the first genuinely new append lands after them. Another message at that index is
a real conflict: a non-retryable ``ConflictError``."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from tether import Agent, Message
from tether.durable.activities import AgentActivities
from tether.durable.payloads import Appended
from tether.jsonforms import message_to_dict
from tether.stores import FileStore, SQLiteStore
from tether.testing import ScriptedTransport


def appended(session: str, position: int, index: int, text: str) -> Appended:
    return Appended(session, position, message_to_dict(Message("user", text)), index)


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_a_replay_of_several_appends_finds_each_at_its_index(
    tmp_path: Path, kind: str
) -> None:
    store = SQLiteStore(tmp_path / "s.db") if kind == "sqlite" else FileStore(tmp_path / "files")
    activities = AgentActivities(Agent("", ScriptedTransport([])), "a", store)
    start = (await store.open("w")).position  # a file's positions are its sizes
    first = await activities.append(appended("w", start, 0, "one"))
    second = await activities.append(appended("w", first, 1, "two"))
    third = await activities.append(appended("w", second, 2, "three"))
    # the worker died before its workflow task completed: the replay repeats all three
    again = await activities.append(appended("w", start, 0, "one"))
    again = await activities.append(appended("w", again, 1, "two"))
    again = await activities.append(appended("w", again, 2, "three"))
    assert again == third
    after = await activities.append(appended("w", again, 3, "four"))  # the first new one lands
    history = await (await store.open("w")).get_history()
    assert [m.text for m in history] == ["one", "two", "three", "four"]
    assert after > third


async def test_another_message_at_the_index_is_a_real_conflict(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    activities = AgentActivities(Agent("", ScriptedTransport([])), "a", store)
    first = await activities.append(appended("w", 0, 0, "one"))
    await activities.append(appended("w", first, 1, "two"))
    with pytest.raises(ApplicationError) as caught:
        await activities.append(appended("w", 0, 0, "not one"))
    assert caught.value.type == "ConflictError" and caught.value.non_retryable
    with pytest.raises(ApplicationError):  # past the end, at a stale position
        await activities.append(appended("w", first, 2, "three"))
