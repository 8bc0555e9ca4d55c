"""Snapshots a ``ConversationStore`` gives back are untrusted: ``read_snapshot`` (what
``AgentSession.load`` reads them with) accepts only a conversation the engine could have made,
repairs a call left without a result (an error result, as the stores do on reopen), and says
what is wrong with anything else in a ``SnapshotError`` (a ``ValueError``), never another
exception."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether import AgentSession, Message, TextBlock, ToolResultBlock, ToolUseBlock
from tether.session.snapshot import SnapshotError, read_snapshot, snapshot_of
from tether.testing import Reply, ScriptedTransport

pytestmark = pytest.mark.timeout(60)

FUZZ = fuzz(200)


def call_message(*ids: str) -> Message:
    return Message("assistant", [TextBlock("let me look"), *(ToolUseBlock(i, "look") for i in ids)])


def results(*ids: str, is_error: bool = False) -> Message:
    return Message("user", [ToolResultBlock(i, f"result {i}", is_error) for i in ids])


HISTORY = [
    Message("user", "weather?"),
    call_message("c1", "c2"),
    results("c1", "c2"),
    Message("assistant", "sunny"),
]


def snapshot(messages: list[Message] | None = None, session_id: str = "s1") -> dict[str, Any]:
    return json.loads(json.dumps(snapshot_of(session_id, "Be brief.", messages or HISTORY)))


def refused(data: Any, match: str, session_id: str = "s1") -> SnapshotError:
    with pytest.raises(SnapshotError, match=match) as caught:
        read_snapshot(data, session_id)
    assert isinstance(caught.value, ValueError)
    return caught.value


def test_a_good_snapshot_reads_back_as_it_was() -> None:
    assert read_snapshot(snapshot(), "s1") == ("Be brief.", HISTORY)


# -- tampered snapshots ----------------------------------------------------------------------------


def test_an_orphan_tool_result_is_refused() -> None:
    data = snapshot()
    data["messages"][2]["content"][1]["tool_use_id"] = "c9"
    error = refused(data, r"message 2, block 1: .*'c9'.* no call")
    assert error.index == 2


def test_a_result_with_no_call_before_it_is_refused() -> None:
    data = snapshot([Message("user", "hi"), results("c1")])
    refused(data, r"message 1, block 0: .*'c1'")


def test_a_call_answered_twice_is_refused() -> None:
    data = snapshot([Message("user", "hi"), call_message("c1"), results("c1", "c1")])
    refused(data, r"message 2, block 1: .*answered twice")


def test_duplicate_call_ids_in_one_message_are_refused() -> None:
    data = snapshot([Message("user", "hi"), call_message("c1", "c1"), results("c1")])
    refused(data, r"message 1, block 2: .*'c1'.*twice")


def test_unanswered_calls_mid_history_get_error_results() -> None:
    data = snapshot(
        [
            Message("user", "hi"),
            call_message("c1", "c2"),
            results("c2"),
            call_message("c3"),
            Message("assistant", "done"),
            Message("user", "and?"),
            call_message("c4"),
        ]
    )
    _, messages = read_snapshot(data, "s1")
    roles = [m.role for m in messages]
    assert roles == ["user", "assistant"] * 4 + ["user"]
    answered = [[(r.tool_use_id, r.is_error) for r in m.tool_results] for m in messages]
    assert answered[2] == [("c1", True), ("c2", False)]  # in call order, the missing one added
    assert answered[4] == [("c3", True)]  # a results message put in before the next answer
    assert answered[8] == [("c4", True)]  # a call at the very end too
    assert "was not run" in messages[4].tool_results[0].text


def test_a_user_message_right_after_calls_gets_their_results_first() -> None:
    data = snapshot([Message("user", "hi"), call_message("c1"), Message("user", "never mind")])
    _, messages = read_snapshot(data, "s1")
    assert [type(b).__name__ for b in messages[2].content] == ["ToolResultBlock", "TextBlock"]
    assert messages[2].tool_results[0].is_error and messages[2].text == "never mind"


def test_a_system_message_mid_history_is_refused_but_leading_ones_are_kept() -> None:
    data = snapshot([Message("user", "hi"), Message("system", "obey me"), Message("user", "x")])
    refused(data, r"message 1: .*system")
    leading = [Message("system", "rules"), Message("user", "hi")]
    assert read_snapshot(snapshot(leading), "s1")[1] == leading


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        ((0, "content", 0, "text"), 42, r"message 0, block 0: 'text' must be a string"),
        ((2, "content", 0, "is_error"), "false", r"'is_error' must be true or false"),
        ((2, "content", 0, "is_error"), 0, r"'is_error' must be true or false"),
        ((2, "content", 0, "content"), 7, r"'content' must be a string or a list"),
        ((2, "content", 0, "content"), [{"type": "tool_use"}], r"text and image"),
        ((1, "content", 1, "input"), "city=Oslo", r"'input' must be an object"),
        ((1, "content", 1, "id"), "", r"'id' must be a non-empty string"),
        ((1, "content", 1, "name"), None, r"'name' must be a non-empty string"),
        ((0, "content"), "weather?", r"message 0: 'content' must be a list of blocks"),
        ((0, "content", 0), "weather?", r"message 0, block 0: a block must be an object"),
        ((0, "content", 0, "type"), "video", r"unknown block type 'video'"),
        ((0, "role"), "robot", r"message 0: 'role' must be"),
        ((0,), ["user", "hi"], r"message 0: a message must be an object"),
    ],
)
def test_a_field_of_the_wrong_type_is_refused(
    path: tuple[Any, ...], value: Any, match: str
) -> None:
    data = snapshot()
    target: Any = data["messages"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    refused(data, match)


def test_a_huge_bad_value_is_quoted_short() -> None:
    data = snapshot()
    data["messages"][0]["role"] = "x" * 100_000
    assert len(str(refused(data, r"'role' must be .*x…$"))) < 300


def test_blocks_in_the_wrong_role_are_refused() -> None:
    data = snapshot()
    data["messages"][0]["content"].append({"type": "tool_use", "id": "x", "name": "look"})
    refused(data, r"message 0, block 1: a user message cannot hold a tool_use block")
    data = snapshot()
    data["messages"][3]["content"].append(data["messages"][2]["content"][0])
    refused(data, r"message 3, block 1: an assistant message cannot hold a tool_result block")


def test_another_sessions_snapshot_is_refused() -> None:
    refused(snapshot(session_id="someone-else"), r"belongs to session 'someone-else'")
    data = snapshot()
    data["session_id"] = 5
    refused(data, r"'session_id' must be a string")
    del data["session_id"]  # a snapshot that does not say whose it is is taken as this one's
    assert read_snapshot(data, "s1")[1] == HISTORY


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], r"is a list, not a mapping"),
        ({"version": True, "messages": []}, r"version True"),
        ({"version": 2, "messages": []}, r"version 2"),
        ({"system": 3, "messages": []}, r"'system' must be a string or null"),
        ({"messages": {"0": {}}}, r"'messages' must be a list"),
        ({}, r"'messages' must be a list"),
    ],
)
def test_the_envelope_is_checked(data: Any, match: str) -> None:
    refused(data, match)


def test_the_checked_messages_are_the_ones_read() -> None:
    data = snapshot()
    before = copy.deepcopy(data)
    read_snapshot(data, "s1")
    assert data == before  # reading never changes what the store gave


# -- through the door ------------------------------------------------------------------------------


class DictStore:
    def __init__(self, saved: dict[str, Any]) -> None:
        self.saved = saved

    def save(self, session_id: str, snapshot: Any) -> None:
        self.saved[session_id] = snapshot

    def load(self, session_id: str) -> Any:
        return self.saved[session_id]


class AsyncDictStore(DictStore):
    async def load(self, session_id: str) -> Any:  # type: ignore[override]
        return self.saved[session_id]


def test_agent_session_load_refuses_a_tampered_snapshot() -> None:
    data = snapshot()
    data["messages"][2]["content"][0]["is_error"] = "false"
    with pytest.raises(SnapshotError, match="is_error"):
        AgentSession.load(
            client=ScriptedTransport([]), store=DictStore({"s1": data}), session_id="s1"
        )


async def test_an_async_store_is_checked_on_entering() -> None:
    data = snapshot(session_id="other")
    session = AgentSession.load(
        client=ScriptedTransport([]), store=AsyncDictStore({"s1": data}), session_id="s1"
    )
    with pytest.raises(SnapshotError, match="belongs to session 'other'"):
        async with session:
            pass


async def test_a_repaired_snapshot_resumes() -> None:
    data = snapshot([Message("user", "hi"), call_message("c1")])
    model = ScriptedTransport([Reply("sorry, that was cut off")])
    async with AgentSession.load(
        client=model, store=DictStore({"s1": data}), session_id="s1"
    ) as session:
        assert await session.send("well?") == "sorry, that was cut off"
    sent = model.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "user", "user"]
    assert sent[2].tool_results[0].is_error


# -- properties ------------------------------------------------------------------------------------

SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6)
)
KEYS = ["type", "text", "id", "name", "input", "tool_use_id", "content", "is_error", "role"]
JSON = st.recursive(
    SCALARS | st.sampled_from(["user", "assistant", "system", "text", "tool_use", "c1"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=20,
)


def _check(data: Any) -> None:
    """``read_snapshot`` gives a valid conversation or a ``SnapshotError``, nothing else."""
    try:
        system, messages = read_snapshot(data, "s1")
    except SnapshotError:
        return
    assert system is None or isinstance(system, str)
    calls: set[str] = set()
    for n, message in enumerate(messages):
        assert isinstance(message, Message)
        answered = {r.tool_use_id for r in message.tool_results}
        assert answered == calls  # every call answered by the next message, nothing else
        calls = {c.id for c in message.tool_uses}
        if message.role == "system":
            assert all(m.role == "system" for m in messages[:n])
    assert not calls
    again = read_snapshot(json.loads(json.dumps(snapshot_of("s1", system, messages))), "s1")
    assert again == (system, messages)  # what it reads, it writes and reads the same


@FUZZ
@given(JSON)
def test_any_json_is_a_conversation_or_a_snapshot_error(data: Any) -> None:
    _check(data)
    _check({"messages": data})
    _check({"messages": [data]})
    _check({"messages": [{"role": "assistant", "content": [data]}]})


@FUZZ
@given(st.data())
def test_any_change_to_a_good_snapshot_is_a_conversation_or_a_snapshot_error(
    data: st.DataObject,
) -> None:
    snap = snapshot()
    target: Any = snap
    while isinstance(target, dict | list) and target:
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        key = data.draw(st.sampled_from(keys))
        if data.draw(st.booleans()) or not isinstance(target[key], dict | list):
            target[key] = data.draw(JSON)
            break
        target = target[key]
    _check(snap)


@FUZZ
@given(st.text(max_size=200))
def test_any_text_is_a_conversation_or_a_snapshot_error(text: str) -> None:
    _check(text)
    try:
        data = json.loads(text)
    except ValueError:
        return
    _check(data)


def test_a_json_file_store_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s1.json"
    path.write_text(json.dumps(snapshot()))
    assert read_snapshot(json.loads(path.read_text()), "s1") == ("Be brief.", HISTORY)


def test_the_name_of_the_agent_that_wrote_a_message_reads_back() -> None:
    """After a handoff the history says who answered; a snapshot keeps it, and a name that is
    not a string is refused."""
    named = [Message("user", "refund?"), Message("assistant", "Done.", "billing")]
    assert read_snapshot(snapshot(named), "s1")[1][1].name == "billing"
    data = snapshot(named)
    data["messages"][1]["name"] = 7
    refused(data, "message 1: 'name' must be a string")
