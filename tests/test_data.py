"""The data layer: messages, blocks, usage, events, and their lossless JSON forms."""

from __future__ import annotations

import base64
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether import (
    AudioBlock,
    ContextTrimmed,
    Error,
    ImageBlock,
    IterationEnd,
    IterationStart,
    Message,
    ReasoningBlock,
    ReasoningDelta,
    Retrying,
    SessionEndEvent,
    SteeringInjected,
    StopReason,
    TextBlock,
    TextDelta,
    ToolDispatch,
    ToolInputDelta,
    ToolResult,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseStart,
    Usage,
)
from tether.errors import (
    GuardrailError,
    MaxIterationsError,
    ModelStopError,
    RemoteError,
    TransportError,
)
from tether.stores import jsonforms

# -- construction ---------------------------------------------------------------------------


def test_fixed_field_names_construct_by_keyword() -> None:
    assert TextDelta(index=0, delta="a").delta == "a"
    assert ReasoningDelta(index=1, delta="b").index == 1
    assert ToolUseStart(index=0, tool_use_id="t", name="n").name == "n"
    assert ToolInputDelta(index=0, tool_use_id="t", partial_json="{").partial_json == "{"
    assert ToolResult(tool_use_id="t", name="n", is_error=False, content="x").content == "x"
    end = IterationEnd(iteration=2, stop_reason=StopReason.END_TURN, usage=Usage(1, 2))
    assert end.usage.output_tokens == 2
    assert SessionEndEvent(stop_reason=StopReason.END_TURN, total_usage=Usage()).error is None
    assert Usage(input_tokens=3, output_tokens=4).total_tokens == 7
    assert ToolUseBlock(id="i", name="n", input={"a": 1}).input == {"a": 1}
    assert ToolResultBlock(tool_use_id="i", content="r").is_error is False
    assert TextBlock(text="t").text == "t"
    assert Message(role="user", content=[TextBlock("t")]).content == (TextBlock("t"),)


def test_message_accepts_text_and_any_iterable_and_is_immutable() -> None:
    m = Message("user", "hello")
    assert m.content == (TextBlock("hello"),)
    assert m.text == "hello"
    assert Message("assistant", (b for b in [TextBlock("a"), TextBlock("b")])).text == "ab"
    with pytest.raises(AttributeError):
        m.role = "assistant"  # type: ignore[misc]


def test_message_rejects_unknown_role() -> None:
    with pytest.raises(ValueError, match="role"):
        Message("tool", "x")  # type: ignore[arg-type]


def test_message_tool_accessors() -> None:
    use = ToolUseBlock("a", "f", {})
    res = ToolResultBlock("a", "ok")
    assert Message("assistant", [TextBlock("x"), use]).tool_uses == [use]
    assert Message("user", [res]).tool_results == [res]


def test_image_block_needs_exactly_one_source() -> None:
    with pytest.raises(ValueError):
        ImageBlock("image/png")
    with pytest.raises(ValueError):
        ImageBlock("image/png", data="eA==", url="http://x")


def test_tool_result_text_of_rich_content() -> None:
    block = ToolResultBlock(
        "a", [TextBlock("chart: "), ImageBlock.from_bytes("image/png", b"\x89")]
    )
    assert isinstance(block.content, tuple)
    assert block.text == "chart: [image image/png]"


def test_usage_adds_every_field() -> None:
    a = Usage(1, 2, 3, 4, 5)
    b = Usage(10, 20, 30, 40, 50)
    assert a + b == Usage(11, 22, 33, 44, 55)
    assert sum([a, b], Usage()) == a + b


def test_stop_reasons_are_the_documented_words() -> None:
    assert {r.value for r in StopReason} == {
        "end_turn",
        "tool_use",
        "max_tokens",
        "refusal",
        "pause_turn",
        "context_window_exceeded",
        "cancelled",
        "error",
        "unknown",
        "paused",
        "repeated_calls",
    }


def test_events_are_frozen() -> None:
    with pytest.raises(AttributeError):
        TextDelta(0, "a").delta = "b"  # type: ignore[misc]


# -- JSON round trips ----------------------------------------------------------------------

texts = st.text(max_size=40)
ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | texts
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
text_blocks = st.builds(TextBlock, texts)
audio_blocks = st.builds(AudioBlock, st.just("audio/wav"), st.just("UklGRg=="))
image_blocks = st.one_of(
    st.builds(
        ImageBlock,
        st.sampled_from(["image/png", "image/jpeg"]),
        data=st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode()),
    ),
    st.builds(ImageBlock, st.just("image/png"), url=st.just("https://example.com/a.png")),
)
reasoning_blocks = st.builds(
    ReasoningBlock, texts, st.none() | texts, st.booleans(), st.none() | ids, st.none() | ids
)
tool_uses = st.builds(
    ToolUseBlock,
    ids,
    ids,
    st.dictionaries(texts, json_values, max_size=4),
    st.none() | texts,
    st.none() | texts,
)
tool_results = st.builds(
    ToolResultBlock,
    ids,
    texts | st.lists(text_blocks | image_blocks, max_size=3).map(tuple),
    st.booleans(),
)
blocks = text_blocks | image_blocks | audio_blocks | reasoning_blocks | tool_uses | tool_results
messages = st.builds(
    Message, st.sampled_from(["user", "assistant", "system"]), st.lists(blocks, max_size=5)
)
usages = st.builds(Usage, *(st.integers(0, 10**9) for _ in range(5)))
stop_reasons = st.sampled_from(list(StopReason))


@fuzz(300)
@given(messages)
def test_message_json_round_trip(message: Message) -> None:
    text = jsonforms.message_to_json(message)
    json.loads(text)  # plain JSON
    assert jsonforms.message_from_json(text) == message


@fuzz(100)
@given(st.lists(messages, max_size=6))
def test_history_json_round_trip(history: list[Message]) -> None:
    assert jsonforms.loads_messages(jsonforms.dumps_messages(history)) == history


events = st.one_of(
    st.builds(TextDelta, st.integers(0, 9), texts),
    st.builds(
        ReasoningDelta, st.integers(0, 9), texts, st.none() | texts, st.booleans(), st.none() | ids
    ),
    st.builds(ToolUseStart, st.integers(0, 9), ids, ids),
    st.builds(ToolInputDelta, st.integers(0, 9), ids, texts),
    st.builds(IterationStart, st.integers(1, 99)),
    st.builds(
        IterationEnd, st.integers(0, 99), stop_reasons, usages, st.none() | texts, st.none() | texts
    ),
    st.builds(ToolDispatch, ids, ids, st.dictionaries(texts, json_values, max_size=3)),
    st.builds(
        ToolResult,
        ids,
        ids,
        st.booleans(),
        texts | st.lists(text_blocks | image_blocks, max_size=2).map(tuple),
    ),
    st.builds(
        Retrying, st.integers(1, 9), st.floats(0, 100, allow_nan=False).filter(math.isfinite), texts
    ),
    st.builds(SteeringInjected, st.lists(messages, max_size=2).map(tuple)),
    st.builds(ContextTrimmed, st.integers(0, 99), st.integers(0, 99)),
    st.builds(SessionEndEvent, stop_reasons, usages, st.none(), st.integers(0, 99)),
)


@fuzz(400)
@given(events)
def test_event_json_round_trip(event: object) -> None:
    data = jsonforms.event_to_dict(event)  # type: ignore[arg-type]
    again = jsonforms.event_from_dict(json.loads(json.dumps(data)))
    assert again == event


@pytest.mark.parametrize(
    "exc",
    [
        TransportError("rate limited", retryable=True, retry_after=2.5, status_code=429),
        ModelStopError("cut off", stop_reason="max_tokens", partial_text="half"),
        MaxIterationsError("too many"),
        GuardrailError("no"),
    ],
)
def test_error_events_round_trip_tether_errors(exc: Exception) -> None:
    data = json.loads(json.dumps(jsonforms.event_to_dict(Error(exc))))
    back = jsonforms.event_from_dict(data)
    assert isinstance(back, Error)
    assert type(back.exception) is type(exc)
    assert str(back.exception) == str(exc)
    for attr in ("retryable", "retry_after", "status_code", "stop_reason", "partial_text"):
        assert getattr(back.exception, attr, None) == getattr(exc, attr, None)


def test_foreign_exceptions_come_back_as_remote_errors() -> None:
    end = SessionEndEvent(StopReason.ERROR, Usage(1, 1), KeyError("k"), 3)
    back = jsonforms.event_from_dict(json.loads(json.dumps(jsonforms.event_to_dict(end))))
    assert isinstance(back, SessionEndEvent)
    assert isinstance(back.error, RemoteError)
    assert back.error.type_name == "KeyError"
    assert back == end  # error is not part of equality; everything else is
    # And a RemoteError keeps its original type name through a second round trip.
    again = jsonforms.exception_from_dict(jsonforms.exception_to_dict(back.error))
    assert isinstance(again, RemoteError) and again.type_name == "KeyError"


def test_unknown_tags_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown event type"):
        jsonforms.event_from_dict({"type": "nope"})
    with pytest.raises(ValueError, match="unknown content block type"):
        jsonforms.block_from_dict({"type": "video"})
    with pytest.raises(TypeError):
        jsonforms.event_to_dict("not an event")  # type: ignore[arg-type]


def test_reasoning_signature_survives_byte_exact() -> None:
    sig = 'EqQBCgIYAhIM+/\\u00e9\n\t"quoted" ünïcode ✓ \x00'
    m = Message("assistant", [ReasoningBlock("think", signature=sig, provider="anthropic")])
    back = jsonforms.message_from_json(jsonforms.message_to_json(m))
    block = back.content[0]
    assert isinstance(block, ReasoningBlock)
    assert block.signature == sig
