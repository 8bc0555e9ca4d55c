"""Request bodies are sent as the bytes ``json=`` would send, whether built afresh or joined
from the chat codec's kept message texts; a long history's messages are encoded once."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tether import Message, ToolResultBlock, ToolSpec, ToolUseBlock
from tether.transports.codecs.openai_chat import OpenAIChatCodec
from tether.transports.jsonbody import Encoded, body_bytes
from tether.transports.options import ModelOptions

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def httpx_bytes(body: Any) -> bytes:
    """What httpx's ``json=`` sends (where it can: a lone surrogate, escaped instead)."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":")).encode()


@given(st.dictionaries(st.text(), json_values, max_size=6))
def test_a_plain_body_is_what_json_would_send(body: dict[str, Any]) -> None:
    assert body_bytes(body) == httpx_bytes(body)


def test_an_encoded_array_is_joined_as_kept() -> None:
    items = Encoded()
    for item in ({"a": 1}, {"b": "ü\U0001f600"}):
        items.append(item)
        items.parts.append(json.dumps(item, ensure_ascii=False, separators=(",", ":")))
    body = {"model": "m", "messages": items, "n": 2}
    assert body_bytes(body) == httpx_bytes({"model": "m", "messages": list(items), "n": 2})


def history(n: int) -> list[Message]:
    messages = [Message("user", "go \u2603 \ud800")]  # a lone surrogate too
    for i in range(n):
        messages.append(Message("assistant", (ToolUseBlock(f"c{i}", "step", {"i": i}),)))
        messages.append(Message("user", (ToolResultBlock(f"c{i}", "r" * 50),)))
    return messages


def test_the_chat_codec_sends_the_same_bytes_as_its_body_every_time() -> None:
    codec = OpenAIChatCodec()
    spec = ToolSpec("step", "One step.", {"type": "object", "properties": {}})
    messages = history(30)
    for end in (1, 11, 31, 61):  # the same message objects, encoded once and then joined
        body = codec.encode("m", messages[:end], [spec], "sys", ModelOptions(), False)
        plain = {**body, "messages": list(body["messages"])}
        assert body_bytes(body) == httpx_bytes(plain)
    fresh = OpenAIChatCodec().encode("m", messages, [spec], "sys", ModelOptions(), False)
    assert body_bytes(fresh) == body_bytes(body)
