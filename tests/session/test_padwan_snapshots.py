"""Snapshots padwan-ai wrote itself load: ``{system, messages, total_usage}`` with messages in
OpenAI's chat format (the system prompt first, assistant ``tool_calls`` with JSON-text
arguments, one ``tool`` message per result) are read into tether's messages, and the usage
total is restored. Saving writes tether's own format; anything else stays a ``SnapshotError``."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether import (
    AgentSession,
    AudioBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from tether.session.snapshot import SnapshotError, read_snapshot, read_usage, snapshot_of
from tether.testing import Reply, ScriptedTransport

SYSTEM = "You are a weather assistant."


class JsonStore:
    """The seed's store: one JSON file per session."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def save(self, session_id: str, snapshot: Any) -> None:
        (self.path / f"{session_id}.json").write_text(json.dumps(snapshot))

    def load(self, session_id: str) -> Any:
        return json.loads((self.path / f"{session_id}.json").read_text())


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def padwan_snapshot() -> dict[str, Any]:
    """What padwan-ai's ``ConversationState.snapshot()`` gives after one tool round."""
    return {
        "system": SYSTEM,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    call("call_1", "get_weather", '{"city": "Paris"}'),
                    call("call_2", "get_weather", '{"city": "Oslo"}'),
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "22C"},
            {"role": "tool", "tool_call_id": "call_2", "name": "get_weather", "content": "4C"},
            {"role": "assistant", "content": "Paris 22C, Oslo 4C."},
        ],
        "total_usage": {"total": 150, "input": 120, "output": 30, "cached": 10},
    }


CONVERTED = [
    Message("user", "Weather in Paris and Oslo?"),
    Message(
        "assistant",
        (
            ToolUseBlock("call_1", "get_weather", {"city": "Paris"}),
            ToolUseBlock("call_2", "get_weather", {"city": "Oslo"}),
        ),
    ),
    Message("user", (ToolResultBlock("call_1", "22C"), ToolResultBlock("call_2", "4C"))),
    Message("assistant", "Paris 22C, Oslo 4C."),
]


async def test_a_padwan_snapshot_loads_and_the_model_gets_its_history(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    store.save("user-42", padwan_snapshot())
    model = ScriptedTransport([Reply("We talked about the weather.")])
    async with AgentSession.load(store=store, session_id="user-42", client=model) as session:
        assert session.system == SYSTEM
        assert session.messages == CONVERTED
        assert session.total_usage == Usage(120, 30, cache_read_tokens=10)
        assert await session.send("What were we talking about?") == "We talked about the weather."
        session.save()
    (request,) = model.requests
    assert request.system == SYSTEM
    assert list(request.messages) == [*CONVERTED, Message("user", "What were we talking about?")]
    saved = json.loads((tmp_path / "user-42.json").read_text())
    assert saved["version"] == 1  # saved again in tether's own format, and it reads back
    assert read_snapshot(saved, "user-42") == (SYSTEM, session.messages)


def test_a_leading_system_message_is_the_system_prompt_when_none_is_given() -> None:
    data = padwan_snapshot()
    data["system"] = None
    assert read_snapshot(data, "s") == (SYSTEM, CONVERTED)
    del data["system"]
    assert read_snapshot(data, "s") == (SYSTEM, CONVERTED)


def test_a_leading_system_message_other_than_the_prompt_is_kept_as_one() -> None:
    data = padwan_snapshot()
    data["messages"][0]["content"] = "Also: answer in French."
    system, messages = read_snapshot(data, "s")
    assert system == SYSTEM
    assert messages == [Message("system", "Also: answer in French."), *CONVERTED]


def test_multimodal_user_content_and_text_parts_are_read() -> None:
    png = base64.b64encode(b"png bytes").decode("ascii")
    wav = base64.b64encode(b"wav bytes").decode("ascii")
    data = {
        "system": None,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
                    {"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        ],
        "total_usage": {"total": 0, "input": 0, "output": 0},
    }
    _, messages = read_snapshot(data, "s")
    assert messages == [
        Message(
            "user",
            (
                TextBlock("What is this?"),
                ImageBlock("image/png", png),
                AudioBlock("audio/wav", wav),
            ),
        ),
        Message("assistant", "A cat."),
    ]


def test_text_with_calls_and_arguments_as_an_object_or_empty() -> None:
    data = padwan_snapshot()
    assistant = data["messages"][2]
    assistant["content"] = "Let me look."
    assistant["tool_calls"][0]["function"]["arguments"] = {"city": "Paris"}
    assistant["tool_calls"][1]["function"]["arguments"] = ""
    _, messages = read_snapshot(data, "s")
    assert messages[1] == Message(
        "assistant",
        (
            TextBlock("Let me look."),
            ToolUseBlock("call_1", "get_weather", {"city": "Paris"}),
            ToolUseBlock("call_2", "get_weather", {}),
        ),
    )


def test_arguments_that_are_no_json_are_kept_as_a_call_whose_arguments_failed() -> None:
    data = padwan_snapshot()
    data["messages"][2]["tool_calls"][0]["function"]["arguments"] = '{"city": Paris'
    _, messages = read_snapshot(data, "s")
    bad = messages[1].tool_uses[0]
    assert (bad.input, bad.raw_arguments) == ({}, '{"city": Paris')
    assert bad.parse_error  # as a live call with such arguments: never run, its text kept
    assert messages[2].tool_results[0].text == "22C"  # what padwan answered stays


def test_a_call_padwan_left_without_its_result_gets_an_error_result() -> None:
    data = padwan_snapshot()
    del data["messages"][4]  # call_2's result
    _, messages = read_snapshot(data, "s")
    first, second = messages[2].tool_results
    assert (first.tool_use_id, first.is_error) == ("call_1", False)
    assert (second.tool_use_id, second.is_error) == ("call_2", True)
    assert "was not run" in second.text


def test_usage_is_read_only_from_padwans_total() -> None:
    assert read_usage(padwan_snapshot(), "s") == Usage(120, 30, cache_read_tokens=10)
    no_usage = padwan_snapshot()
    del no_usage["total_usage"]
    assert read_usage(no_usage, "s") is None
    assert read_usage({"version": 1, "messages": []}, "s") is None


def edited(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(padwan_snapshot())
    *parents, last = path
    target: Any = data
    for key in parents:
        target = target[key]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "match", "index"),
    [
        (("messages", 3, "tool_call_id"), KeyError, r"message 3: 'tool_call_id' must be", 3),
        (("messages", 3, "tool_call_id"), "call_9", r"message 3.*'call_9'.*no call", 3),
        (("messages", 4, "tool_call_id"), "call_1", r"message 3.*answered twice", 3),
        (("messages", 2, "tool_calls", 1, "function", "name"), "", r"message 2: tool call 1", 2),
        (("messages", 2, "tool_calls", 0, "function"), None, r"message 2: tool call 0", 2),
        (("messages", 2, "tool_calls", 0, "id"), 7, r"message 2: tool call 0: 'id'", 2),
        (("messages", 2, "tool_calls", 0, "type"), "web", r"tool call 0: its type", 2),
        (("messages", 2, "tool_calls", 1, "function", "arguments"), 3, r"'arguments' must", 2),
        (("messages", 2, "tool_calls", 1, "id"), "call_1", r"message 2.*'call_1'.*twice", 2),
        (("messages", 2, "tool_calls"), "call_1", r"message 2: 'tool_calls' must be a list", 2),
        (("messages", 1, "role"), "robot", r"message 1: 'role' must be", 1),
        (("messages", 1, "content"), None, r"message 1: a user message's 'content'", 1),
        (("messages", 1, "content"), [{"type": "video"}], r"message 1: content part 0", 1),
        (("messages", 3, "content"), 5, r"message 3: a tool message's 'content'", 3),
        (("messages", 5, "content"), 5, r"message 5: an assistant message's 'content'", 5),
        (("messages", 5, "role"), "system", r"message 5: a system message after", 5),
        (("messages", 5), "Paris 22C", r"message 5: a message must be an object", 5),
        (("total_usage",), "lots", r"'total_usage' must be", None),
        (("total_usage", "input"), "120", r"'total_usage'.*'input'", None),
        (("total_usage", "output"), -1, r"'total_usage'.*'output'", None),
        (("total_usage", "output"), KeyError, r"'total_usage'.*'output'", None),
        (("system",), 3, r"'system' must be a string or null", None),
    ],
)
def test_what_padwan_could_not_have_written_is_refused_naming_the_message(
    path: tuple[Any, ...], value: Any, match: str, index: int | None
) -> None:
    data = edited(path, value)
    with pytest.raises(SnapshotError, match=match) as caught:
        read_snapshot(data, "s")
        read_usage(data, "s")
    assert caught.value.index == index


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([{"role": "user", "content": "hi"}], r"is a list, not a mapping"),
        ({"history": [{"role": "user", "content": "hi"}]}, r"'messages' must be a list"),
        ({"messages": {"role": "user"}}, r"'messages' must be a list"),
        ({"version": 1, "messages": [{"role": "user", "content": "hi"}]}, r"list of blocks"),
    ],
)
def test_unknown_shapes_stay_a_clear_error(data: Any, match: str) -> None:
    with pytest.raises(SnapshotError, match=match):
        read_snapshot(data, "s")


async def test_loading_a_bad_padwan_snapshot_says_which_message(tmp_path: Path) -> None:
    store = JsonStore(tmp_path)
    store.save("u", edited(("messages", 3, "tool_call_id"), "call_9"))
    with pytest.raises(SnapshotError, match=r"message 3"):
        AgentSession.load(store=store, session_id="u", client=ScriptedTransport([]))


# -- properties ------------------------------------------------------------------------------------

KEYS = ["role", "content", "tool_calls", "tool_call_id", "id", "type", "function", "name"]
KEYS += ["arguments", "text", "image_url", "url", "input", "output", "total_usage", "messages"]
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.text(max_size=6)
    | st.sampled_from(["user", "assistant", "system", "tool", "function", "text", "call_1"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=20,
)


def conversation_or_snapshot_error(data: Any) -> None:
    """A padwan-shaped snapshot reads as a valid conversation (which tether saves and reads
    back the same) or raises ``SnapshotError``, nothing else."""
    try:
        system, messages = read_snapshot(data, "s")
        read_usage(data, "s")
    except SnapshotError:
        return
    calls: set[str] = set()
    for message in messages:
        assert {r.tool_use_id for r in message.tool_results} == calls
        calls = {c.id for c in message.tool_uses}
    assert not calls
    again = read_snapshot(json.loads(json.dumps(snapshot_of("s", system, messages))), "s")
    assert again == (system, messages)


@fuzz(200)
@given(st.data())
def test_any_change_to_a_padwan_snapshot_is_a_conversation_or_a_snapshot_error(
    data: st.DataObject,
) -> None:
    snap = padwan_snapshot()
    target: Any = snap
    while isinstance(target, dict | list) and target:
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        key = data.draw(st.sampled_from(keys))
        if data.draw(st.booleans()) or not isinstance(target[key], dict | list):
            target[key] = data.draw(JSON)
            break
        target = target[key]
    conversation_or_snapshot_error(snap)


@fuzz(200)
@given(JSON)
def test_any_chat_shaped_json_is_a_conversation_or_a_snapshot_error(data: Any) -> None:
    conversation_or_snapshot_error({"messages": [data], "total_usage": None})
    conversation_or_snapshot_error({"messages": [{"role": "assistant", "tool_calls": [data]}]})
    conversation_or_snapshot_error({"messages": [{"role": "user", "content": [data]}]})
