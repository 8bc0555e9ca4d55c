"""Provider JSON is untrusted: whatever types its fields have, the three codecs' decoders raise only
tether's own errors (quoting the offending data) and never emit an event of the wrong shape."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether.errors import StreamInterruptedError, TetherError
from tether.events import (
    IterationEnd,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
)
from tether.transports.anthropic import AnthropicCodec
from tether.transports.codecs.protocol import WireCodec
from tether.transports.openai_chat import OpenAIChatCodec
from tether.transports.openai_responses import OpenAIResponsesCodec
from tether.transports.sse import SSEDecoder, SSEEvent
from tether.types import StopReason, Usage

RECORDINGS = Path(__file__).parent / "recordings"
CODECS: dict[str, WireCodec] = {
    "openai_chat": OpenAIChatCodec(),
    "anthropic": AnthropicCodec(),
    "openai_responses": OpenAIResponsesCodec(),
}

# --- well-typed events ---------------------------------------------------------------------------


def _index(value: object) -> bool:
    return type(value) is int and value >= 0


def _optional_str(value: object) -> bool:
    return value is None or type(value) is str


def _usage_ok(usage: object) -> bool:
    if type(usage) is not Usage:
        return False
    counts = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
    )
    return all(type(n) is int and n >= 0 for n in counts)


def well_typed(event: StreamEvent) -> bool:
    """Every field of ``event`` has its declared type (what the engine relies on)."""
    if isinstance(event, TextDelta):
        return _index(event.index) and type(event.delta) is str
    if isinstance(event, ReasoningDelta):
        return (
            _index(event.index)
            and type(event.delta) is str
            and _optional_str(event.signature)
            and type(event.redacted) is bool
            and _optional_str(event.id)
            and _optional_str(event.provider)
        )
    if isinstance(event, ToolUseStart):
        return _index(event.index) and type(event.tool_use_id) is str and type(event.name) is str
    if isinstance(event, ToolInputDelta):
        return (
            _index(event.index)
            and type(event.tool_use_id) is str
            and type(event.partial_json) is str
        )
    if isinstance(event, IterationEnd):
        return (
            type(event.stop_reason) is StopReason
            and _usage_ok(event.usage)
            and _optional_str(event.raw_stop_reason)
            and _optional_str(event.model)
        )
    return False


def assert_well_typed(events: list[StreamEvent]) -> None:
    bad = [e for e in events if not well_typed(e)]
    assert not bad, bad


# --- recorded inputs -----------------------------------------------------------------------------


def _frames(raw: bytes) -> list[SSEEvent]:
    sse = SSEDecoder()
    return [*sse.feed(raw), *sse.flush()]


def _streams(name: str) -> list[list[tuple[str, Any]]]:
    streams: list[list[tuple[str, Any]]] = []
    for path in sorted((RECORDINGS / name).glob("*.sse")):
        frames: list[tuple[str, Any]] = []
        for frame in _frames(path.read_bytes()):
            try:
                frames.append((frame.event, json.loads(frame.data)))
            except ValueError:
                frames.append((frame.event, frame.data))
        streams.append(frames)
    return streams


def _whole_bodies(name: str) -> list[Any]:
    bodies = [json.loads(p.read_text()) for p in sorted((RECORDINGS / name).glob("*.json"))]
    if name == "openai_responses":  # the final event carries the whole response object
        for stream in _streams(name):
            for _, data in stream:
                if isinstance(data, dict) and data.get("type") == "response.completed":
                    bodies.append(data["response"])
    return bodies


STREAMS = {name: _streams(name) for name in CODECS}
BODIES = {name: _whole_bodies(name) for name in CODECS}


def test_there_are_recordings_to_mutate() -> None:
    for name in CODECS:
        assert STREAMS[name], name
        assert BODIES[name], name


# --- mutation ------------------------------------------------------------------------------------

_DELETE = object()

_WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([-1, 0, 1, 7, 12.0, 12.5, -3.5, float("inf"), float("nan")]),
    st.text(max_size=6),
    st.sampled_from(["12", "-4", "0", "stop", "end_turn", "text", "[]", "{}"]),
    st.lists(st.one_of(st.integers(), st.text(max_size=3)), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.sampled_from([["stop"], {"type": "text"}, [{}], {"0": {}}, [None]]),
    st.just(_DELETE),
)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place inside a JSON value (the root excluded)."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*at, key)
            yield from _paths(child, (*at, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield (*at, i)
            yield from _paths(child, (*at, i))


def _replace(doc: Any, path: tuple[Any, ...], new: Any) -> None:
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if new is _DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(new)  # a sampled value is shared between examples


def _mutated(doc: Any, data: st.DataObject, rounds: int) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(rounds):
        paths = list(_paths(doc))
        if not paths:
            break
        path = data.draw(st.sampled_from(paths), label="path")
        _replace(doc, path, data.draw(_WRONG, label="value"))
    return doc


def _mutate_stream(stream: list[tuple[str, Any]], data: st.DataObject) -> list[SSEEvent]:
    frames = list(stream)
    objects = [i for i, (_, d) in enumerate(frames) if isinstance(d, dict | list)]
    hits = data.draw(st.lists(st.sampled_from(objects), min_size=1, max_size=3), label="frames")
    for i in hits:
        kind, doc = frames[i]
        frames[i] = (kind, _mutated(doc, data, data.draw(st.integers(1, 3), label="rounds")))
    return [
        SSEEvent(kind, doc if isinstance(doc, str) else json.dumps(doc)) for kind, doc in frames
    ]


def _decode(codec: WireCodec, frames: list[SSEEvent]) -> list[StreamEvent]:
    decoder = codec.decoder()
    events: list[StreamEvent] = []
    for frame in frames:
        events.extend(decoder.feed(frame))
    return events + decoder.finish()


def _only_tether_errors(run: Callable[[], list[StreamEvent]]) -> None:
    try:
        events = run()
    except TetherError:
        return
    assert_well_typed(events)


_SETTINGS = fuzz(250)


@pytest.mark.parametrize("name", list(CODECS))
@_SETTINGS
@given(data=st.data())
def test_mutated_streams_raise_only_tether_errors(name: str, data: st.DataObject) -> None:
    stream = data.draw(st.sampled_from(STREAMS[name]), label="recording")
    frames = _mutate_stream(stream, data)
    _only_tether_errors(lambda: _decode(CODECS[name], frames))


@pytest.mark.parametrize("name", list(CODECS))
@_SETTINGS
@given(data=st.data())
def test_mutated_whole_responses_raise_only_tether_errors(name: str, data: st.DataObject) -> None:
    body = data.draw(st.sampled_from(BODIES[name]), label="response")
    mutated = _mutated(body, data, data.draw(st.integers(1, 4), label="rounds"))
    _only_tether_errors(lambda: CODECS[name].parse(mutated))


@pytest.mark.parametrize("name", list(CODECS))
@_SETTINGS
@given(root=_WRONG.filter(lambda v: v is not _DELETE))
def test_any_json_value_as_a_whole_event_or_response(name: str, root: Any) -> None:
    frames = [SSEEvent("message", json.dumps(root))]
    _only_tether_errors(lambda: _decode(CODECS[name], frames))
    _only_tether_errors(lambda: CODECS[name].parse(root))


def test_deeply_nested_json_is_a_typed_error() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    for codec in CODECS.values():
        with pytest.raises(StreamInterruptedError):
            _decode(codec, [SSEEvent("message", deep)])


# --- targeted cases ------------------------------------------------------------------------------


def chat_chunk(choice: Any = None, **extra: Any) -> dict[str, Any]:
    chunk: dict[str, Any] = {"id": "c1", "model": "m", **extra}
    if choice is not None:
        chunk["choices"] = [choice]
    return chunk


def _chat(*chunks: Any) -> list[StreamEvent]:
    frames = [SSEEvent("message", json.dumps(c)) for c in chunks]
    return _decode(CODECS["openai_chat"], [*frames, SSEEvent("message", "[DONE]")])


STOP = {"index": 0, "delta": {}, "finish_reason": "stop"}


@pytest.mark.parametrize(
    ("chunk", "quoted"),
    [
        (chat_chunk({"index": 0, "delta": {}, "finish_reason": ["stop"]}), '["stop"]'),
        (chat_chunk({"index": 0, "delta": {}, "finish_reason": 7}), '"finish_reason": 7'),
        (chat_chunk(choices={"0": STOP}), '"choices": {"0"'),
        (chat_chunk({"index": 0, "delta": {"content": 42}}), '"content": 42'),
        (chat_chunk({"index": 0, "delta": {"content": True}}), '"content": true'),
        (chat_chunk({"index": 0, "delta": {"refusal": ["no"]}}), '"refusal": ["no"]'),
        (chat_chunk(STOP, usage=[1, 2]), '"usage": [1, 2]'),
        (chat_chunk(STOP, usage={"prompt_tokens": -5}), '"prompt_tokens": -5'),
        (chat_chunk(STOP, usage={"prompt_tokens": 2.5}), '"prompt_tokens": 2.5'),
        (chat_chunk(STOP, usage={"prompt_tokens": "many"}), '"prompt_tokens": "many"'),
        (chat_chunk({"index": "0", "delta": {"content": "x"}}), '"index": "0"'),
        (chat_chunk(STOP, model=["m"]), '"model": ["m"]'),
        (
            chat_chunk({"index": 0, "delta": {"tool_calls": [{"index": "a", "id": "c"}]}}),
            '"index": "a"',
        ),
        (
            chat_chunk(
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": 5, "function": {}}]}}
            ),
            '"id": 5',
        ),
        (
            chat_chunk(
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": 3}}]}}
            ),
            '"name": 3',
        ),
        (
            chat_chunk(
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": [1]}}]},
                }
            ),
            '"arguments": [1]',
        ),
    ],
)
def test_chat_stream_wrong_types_are_typed_errors_quoting_the_chunk(
    chunk: dict[str, Any], quoted: str
) -> None:
    with pytest.raises(StreamInterruptedError) as info:
        _chat(chunk, chat_chunk(STOP))
    assert quoted in str(info.value)
    assert "malformed" in str(info.value)


def test_chat_stream_lenient_readings() -> None:
    call = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": {"a": 1}}}
    events = _chat(
        chat_chunk({"index": 0, "delta": None}),
        chat_chunk({"index": 0, "delta": {"tool_calls": [call]}}),
        chat_chunk(
            {"index": 0, "delta": {}, "finish_reason": "tool_calls"},
            usage={"prompt_tokens": "12", "completion_tokens": 3.0},
        ),
    )
    assert_well_typed(events)
    assert events[:2] == [ToolUseStart(0, "call_1", "f"), ToolInputDelta(0, "call_1", '{"a":1}')]
    end = events[-1]
    assert isinstance(end, IterationEnd)
    assert end.usage == Usage(12, 3)


def test_chat_tool_call_without_an_id_gets_one() -> None:
    call = {"index": 0, "function": {"name": "f", "arguments": "{}"}}
    events = _chat(
        chat_chunk({"index": 0, "delta": {"tool_calls": [call]}}),
        chat_chunk({"index": 0, "delta": {}, "finish_reason": "tool_calls"}),
    )
    assert_well_typed(events)
    start = events[0]
    assert isinstance(start, ToolUseStart) and start.tool_use_id.startswith("call_")


WHOLE_CHAT = {
    "model": "m",
    "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("choices", 0, "finish_reason"), ["stop"]),
        (("choices", 0, "finish_reason"), 3),
        (("choices",), {"0": {}}),
        (("choices", 0, "message", "content"), 12),
        (("choices", 0, "message", "refusal"), {"no": 1}),
        (("choices", 0, "message", "tool_calls"), [{"id": 1, "function": {"name": "f"}}]),
        (("choices", 0, "message", "tool_calls"), [{"id": "c", "function": {"name": []}}]),
        (("choices", 0, "index"), [0]),
        (("usage",), [1]),
        (("usage",), {"prompt_tokens": -1}),
        (("model",), 5),
    ],
)
def test_chat_whole_response_wrong_types_are_typed_errors(
    path: tuple[Any, ...], value: Any
) -> None:
    body = copy.deepcopy(WHOLE_CHAT)
    _replace(body, path, value)
    with pytest.raises(StreamInterruptedError) as info:
        CODECS["openai_chat"].parse(body)
    assert json.dumps(value) in str(info.value)


def _anthropic(*events: dict[str, Any]) -> list[StreamEvent]:
    frames = [SSEEvent(str(e.get("type")), json.dumps(e)) for e in events]
    return _decode(CODECS["anthropic"], frames)


MESSAGE_START = {
    "type": "message_start",
    "message": {"model": "claude", "usage": {"input_tokens": 5, "output_tokens": 1}},
}
TEXT_START = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
END = [
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    {"type": "message_stop"},
]


def _text_delta(index: Any = 0, text: Any = "hi") -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "text_delta", "text": text},
    }


@pytest.mark.parametrize(
    ("events", "quoted"),
    [
        ([_text_delta(index="0")], '"index": "0"'),
        ([_text_delta(index=-1)], '"index": -1'),
        ([_text_delta(text=5)], '"text": 5'),
        (
            [{"type": "message_delta", "delta": {"stop_reason": ["end_turn"]}}],
            '"stop_reason": ["end_turn"]',
        ),
        ([{"type": "message_delta", "delta": {"stop_reason": 1}}], '"stop_reason": 1'),
        ([{"type": "message_delta", "usage": {"output_tokens": -2}}], '"output_tokens": -2'),
        ([{"type": "message_delta", "usage": [3]}], '"usage": [3]'),
        (
            [{"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use"}}],
            '"type": "tool_use"',
        ),
        (
            [
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": 9, "name": "f"},
                }
            ],
            '"id": 9',
        ),
        ([{"type": "message_start", "message": {"model": ["claude"]}}], '"model": ["claude"]'),
    ],
)
def test_anthropic_stream_wrong_types_are_typed_errors(
    events: list[dict[str, Any]], quoted: str
) -> None:
    with pytest.raises(StreamInterruptedError) as info:
        _anthropic(MESSAGE_START, TEXT_START, *events, *END)
    assert quoted in str(info.value)


def test_anthropic_token_counts_sent_as_strings_are_read() -> None:
    start = {"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": "5"}}}
    events = _anthropic(start, TEXT_START, _text_delta(), *END)
    assert_well_typed(events)
    end = events[-1]
    assert isinstance(end, IterationEnd) and end.usage == Usage(5, 2)


WHOLE_ANTHROPIC = {
    "model": "claude",
    "content": [{"type": "text", "text": "hi"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 3, "output_tokens": 1},
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("stop_reason",), ["end_turn"]),
        (("stop_reason",), 2),
        (("content",), {"0": {}}),
        (("content", 0, "text"), 5),
        (("content", 0), "text"),
        (("content", 0), {"type": "tool_use", "name": "f", "input": {}}),
        (("content", 0), {"type": "tool_use", "id": [], "name": "f", "input": {}}),
        (("content", 0), {"type": "thinking", "thinking": 1}),
        (("usage",), [1]),
        (("usage",), {"input_tokens": "x"}),
        (("model",), {"m": 1}),
    ],
)
def test_anthropic_whole_response_wrong_types_are_typed_errors(
    path: tuple[Any, ...], value: Any
) -> None:
    body = copy.deepcopy(WHOLE_ANTHROPIC)
    _replace(body, path, value)
    with pytest.raises(StreamInterruptedError) as info:
        CODECS["anthropic"].parse(body)
    assert json.dumps(value) in str(info.value)


def _responses(*events: dict[str, Any]) -> list[StreamEvent]:
    frames = [SSEEvent(str(e.get("type")), json.dumps(e)) for e in events]
    return _decode(CODECS["openai_responses"], frames)


COMPLETED = {
    "type": "response.completed",
    "response": {"status": "completed", "model": "gpt", "usage": {"input_tokens": 1}},
}


@pytest.mark.parametrize(
    ("event", "quoted"),
    [
        ({"type": ["response.output_text.delta"]}, '"type": ['),
        ({"type": "response.output_text.delta", "output_index": 0, "delta": 5}, '"delta": 5'),
        ({"type": "response.output_text.delta", "output_index": -1, "delta": "x"}, "-1"),
        ({"type": "response.output_text.delta", "item_id": ["a"], "delta": "x"}, '["a"]'),
        (
            {"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": {}},
            '"delta": {}',
        ),
        (
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"type": "function_call", "call_id": "c", "name": 7},
            },
            '"name": 7',
        ),
        (
            {"type": "response.reasoning_summary_part.added", "summary_index": "1"},
            '"summary_index": "1"',
        ),
        (
            {"type": "response.completed", "response": {"status": ["completed"]}},
            '"status": ["completed"]',
        ),
        (
            {"type": "response.completed", "response": {"usage": {"input_tokens": -3}}},
            '"input_tokens": -3',
        ),
        ({"type": "response.completed", "response": [1]}, '"response": [1]'),
        ({"type": "response.created", "response": {"model": 4}}, '"model": 4'),
    ],
)
def test_responses_stream_wrong_types_are_typed_errors(event: dict[str, Any], quoted: str) -> None:
    with pytest.raises(StreamInterruptedError) as info:
        _responses(event, COMPLETED)
    assert quoted in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        {"output": 5},
        {"output": [{"type": "message", "content": [{"type": "output_text", "text": 1}]}]},
        {"output": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": 1}]},
        {"output": [], "status": ["completed"]},
        {"output": [], "usage": {"output_tokens": "lots"}},
        {"output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": 2}]}]},
    ],
)
def test_responses_whole_response_wrong_types_are_typed_errors(body: dict[str, Any]) -> None:
    with pytest.raises(StreamInterruptedError) as info:
        CODECS["openai_responses"].parse(body)
    assert "malformed" in str(info.value)


def test_the_quoted_fragment_is_cut_to_a_sane_length() -> None:
    chunk = chat_chunk({"index": 0, "delta": {"content": 1}})
    chunk["padding"] = "x" * 100_000
    with pytest.raises(StreamInterruptedError) as info:
        _chat(chunk)
    assert len(str(info.value)) < 2_000
    assert '"content": 1' in str(info.value)
