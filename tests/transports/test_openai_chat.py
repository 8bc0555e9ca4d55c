"""OpenAI Chat Completions: recorded streams on MockTransport, parity, encoding."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import fuzz
from tether import (
    Agent,
    AudioBlock,
    ImageBlock,
    IterationEnd,
    Message,
    ReasoningBlock,
    ReasoningDelta,
    StopReason,
    StreamEvent,
    TextBlock,
    TextDelta,
    Tool,
    ToolInputDelta,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    ToolUseStart,
    Usage,
)
from tether.errors import (
    AuthenticationError,
    BadRequestError,
    ContextWindowExceededError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    TransportError,
)
from tether.testing import assert_stream_contract
from tether.transports.openai_chat import (
    ChatStreamDecoder,
    OpenAIChatCodec,
    OpenAIChatTransport,
)
from tether.transports.sse import SSEDecoder, SSEEvent

RECORDINGS = Path(__file__).parent / "recordings" / "openai_chat"
SSE_HEADERS = {"content-type": "text/event-stream"}
HELLO = [Message("user", "Hello")]


def recording(name: str) -> bytes:
    return (RECORDINGS / f"{name}.sse").read_bytes()


def whole_response(name: str) -> Any:
    return json.loads((RECORDINGS / f"{name}.json").read_text(encoding="utf-8"))


def decode(chunks: Sequence[Any], *, done: bool = True) -> list[StreamEvent]:
    """Feed provider chunks (dicts, or raw data strings) to a fresh decoder and finish it."""
    decoder = ChatStreamDecoder()
    events: list[StreamEvent] = []
    for chunk in chunks:
        data = chunk if isinstance(chunk, str) else json.dumps(chunk)
        events.extend(decoder.feed(SSEEvent("message", data)))
    if done:
        events.extend(decoder.feed(SSEEvent("message", "[DONE]")))
    events.extend(decoder.finish())
    return events


def delta(finish: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"model": "m", "choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


def call(index: int | None = None, id: str | None = None, **function: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"function": function}
    if index is not None:
        part["index"] = index
    if id is not None:
        part["id"] = id
    return part


def _joined(a: StreamEvent | None, b: StreamEvent) -> StreamEvent | None:
    if isinstance(a, TextDelta) and isinstance(b, TextDelta) and a.index == b.index:
        return TextDelta(a.index, a.delta + b.delta)
    if isinstance(a, ReasoningDelta) and isinstance(b, ReasoningDelta) and a.index == b.index:
        return ReasoningDelta(a.index, a.delta + b.delta)
    if isinstance(a, ToolInputDelta) and isinstance(b, ToolInputDelta) and a.index == b.index:
        return ToolInputDelta(a.index, a.tool_use_id, a.partial_json + b.partial_json)
    return None


def merged(events: Sequence[StreamEvent]) -> list[StreamEvent]:
    """Events with consecutive text/reasoning/argument pieces of one block joined."""
    out: list[StreamEvent] = []
    for event in events:
        joined = _joined(out[-1] if out else None, event)
        if joined is None:
            out.append(event)
        else:
            out[-1] = joined
    return out


def by_block(events: Sequence[StreamEvent]) -> dict[int, list[StreamEvent]]:
    """Each block's events with its deltas joined, so interleaving does not matter."""
    blocks: dict[int, list[StreamEvent]] = {}
    for event in events:
        if not isinstance(event, IterationEnd):
            assert isinstance(event, TextDelta | ReasoningDelta | ToolUseStart | ToolInputDelta)
            blocks.setdefault(event.index, []).append(event)
    return {i: merged(evs) for i, evs in blocks.items()}


# --- transport over httpx.MockTransport ------------------------------------------------------


async def _pieces(body: bytes, seed: int) -> AsyncIterator[bytes]:
    rng = random.Random(seed)
    at = 0
    while at < len(body):
        size = rng.randint(1, 7)
        yield body[at : at + size]
        at += size


class Server:
    """A MockTransport handler playing one response body per request, recording the requests."""

    def __init__(self, *bodies: bytes, split_seed: int | None = None, status: int = 200) -> None:
        self.bodies = list(bodies)
        self.split_seed = split_seed
        self.status = status
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = self.bodies[min(len(self.requests), len(self.bodies)) - 1]
        if self.split_seed is None:
            return httpx.Response(self.status, headers=SSE_HEADERS, content=body)
        return httpx.Response(
            self.status, headers=SSE_HEADERS, content=_pieces(body, self.split_seed)
        )

    def body(self, n: int = 0) -> Any:
        return json.loads(self.requests[n].content)


def transport(server: Server, **kwargs: Any) -> OpenAIChatTransport:
    client = httpx.AsyncClient(transport=httpx.MockTransport(server))
    kwargs.setdefault("api_key", "sk-test")
    return OpenAIChatTransport("gpt-4o-mini", client=client, **kwargs)


async def play(
    body: bytes, split_seed: int | None = None, **kwargs: Any
) -> tuple[list[StreamEvent], Server]:
    server = Server(body, split_seed=split_seed)
    events = [e async for e in transport(server, **kwargs).stream(HELLO, [], "Be brief.")]
    return events, server


async def play_until_error(
    body: bytes, error: type[Exception], split_seed: int | None = None
) -> tuple[list[StreamEvent], pytest.ExceptionInfo[Exception]]:
    events: list[StreamEvent] = []
    with pytest.raises(error) as info:
        async for event in transport(Server(body, split_seed=split_seed)).stream(HELLO, [], ""):
            events.append(event)
    return events, info


@pytest.fixture(params=[None, 1, 2, 3], ids=["whole", "split1", "split2", "split3"])
def split_seed(request: pytest.FixtureRequest) -> int | None:
    """Whole bodies, and bodies cut into random 1-7 byte pieces (framing, UTF-8 splits)."""
    value: int | None = request.param
    return value


# --- recorded streams -------------------------------------------------------------------------


async def test_text_stream_with_usage_chunk(split_seed: int | None) -> None:
    events, server = await play(recording("text_usage"), split_seed)
    assert events == [
        TextDelta(0, "Hello"),
        TextDelta(0, " from Oslo"),
        TextDelta(0, " 🌍"),
        TextDelta(0, "! Line\u2028separators"),
        TextDelta(0, " stay inside"),
        TextDelta(0, " JSON."),
        IterationEnd(
            0,
            StopReason.END_TURN,
            Usage(input_tokens=1234, output_tokens=9, cache_read_tokens=1024),
            raw_stop_reason="stop",
            model="gpt-4o-mini-2024-07-18",
        ),
    ]
    assert_stream_contract(events)
    (request,) = server.requests
    assert request.method == "POST"
    assert request.url.path == "/v1/chat/completions"
    assert request.url.host == "api.openai.com"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert server.body() == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_parallel_tool_calls_interleaved(split_seed: int | None) -> None:
    events, _ = await play(recording("parallel_tools"), split_seed)
    assert events == [
        ToolUseStart(0, "call_a", "get_weather"),
        ToolInputDelta(0, "call_a", '{"ci'),
        ToolInputDelta(0, "call_a", 'ty"'),
        ToolUseStart(1, "call_b", "get_time"),
        ToolInputDelta(1, "call_b", '{"timezone"'),
        ToolInputDelta(0, "call_a", ': "Par'),
        ToolInputDelta(1, "call_b", ': "Europe/'),
        ToolInputDelta(0, "call_a", 'is"}'),
        ToolInputDelta(1, "call_b", 'Paris"}'),
        IterationEnd(
            0,
            StopReason.TOOL_USE,
            Usage(input_tokens=82, output_tokens=48),
            raw_stop_reason="tool_calls",
            model="gpt-4o-2024-08-06",
        ),
    ]
    assert_stream_contract(events)


async def test_reasoning_content_then_content(split_seed: int | None) -> None:
    events, _ = await play(
        recording("reasoning"), split_seed, base_url="http://127.0.0.1:8080/v1", api_key=None
    )
    assert events == [
        ReasoningDelta(0, "The user"),
        ReasoningDelta(0, " asks 2+2."),
        ReasoningDelta(0, " That is 4."),
        TextDelta(1, "2 + 2"),
        TextDelta(1, " = 4."),
        IterationEnd(
            0,
            StopReason.END_TURN,
            Usage(input_tokens=25, output_tokens=41),
            raw_stop_reason="stop",
            model="qwen3-1.7b",
        ),
    ]
    assert_stream_contract(events)


async def test_refusal_stream(split_seed: int | None) -> None:
    events, _ = await play(recording("refusal"), split_seed)
    assert events == [
        TextDelta(0, "I'm sorry"),
        TextDelta(0, ", I cannot"),
        TextDelta(0, " assist with that request."),
        IterationEnd(
            0,
            StopReason.REFUSAL,
            Usage(input_tokens=41, output_tokens=10),
            raw_stop_reason="stop",
            model="gpt-4o-2024-08-06",
        ),
    ]
    assert_stream_contract(events)


async def test_length_cut_off_mid_tool_call(split_seed: int | None) -> None:
    events, _ = await play(recording("length_tool"), split_seed)
    assert events == [
        TextDelta(0, "Let me check"),
        TextDelta(0, " the weather."),
        ToolUseStart(1, "call_w", "get_weather"),
        ToolInputDelta(1, "call_w", '{"city"'),
        ToolInputDelta(1, "call_w", ': "Os'),
        IterationEnd(
            0,
            StopReason.MAX_TOKENS,
            Usage(input_tokens=95, output_tokens=16),
            raw_stop_reason="length",
            model="gpt-4o-mini-2024-07-18",
        ),
    ]
    assert_stream_contract(events)


async def test_error_object_in_stream(split_seed: int | None) -> None:
    events, info = await play_until_error(recording("stream_error"), ServerError, split_seed)
    assert events == [TextDelta(0, "Partial"), TextDelta(0, " answer")]
    assert "The server had an error while processing your request" in str(info.value)
    assert "in the stream" in str(info.value)
    assert isinstance(info.value, TransportError) and info.value.retryable


async def test_stream_ending_without_finish_reason(split_seed: int | None) -> None:
    events, info = await play_until_error(
        recording("truncated"), StreamInterruptedError, split_seed
    )
    assert events == [TextDelta(0, "The first"), TextDelta(0, " half of")]
    assert "ended before the response was complete" in str(info.value)


async def test_http_error_status_is_mapped() -> None:
    body = json.dumps(
        {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
    ).encode()
    server = Server(body, status=401)
    with pytest.raises(AuthenticationError, match="Incorrect API key"):
        async for _ in transport(server).stream(HELLO, [], ""):
            pass


# --- parity: streamed == not streamed ---------------------------------------------------------

PARITY = ["text_usage", "parallel_tools", "reasoning", "refusal", "length_tool"]


@pytest.mark.parametrize("name", PARITY)
async def test_streamed_equals_parsed(name: str) -> None:
    streamed, _ = await play(recording(name))
    parsed = OpenAIChatCodec().parse(whole_response(name))
    assert_stream_contract(parsed)
    assert by_block(streamed) == by_block(parsed)
    assert streamed[-1] == parsed[-1]


@pytest.mark.parametrize("name", PARITY)
async def test_non_streaming_transport(name: str) -> None:
    body = json.dumps(whole_response(name)).encode()
    server = Server(body)
    server_transport = transport(server, stream=False)
    events = [e async for e in server_transport.stream(HELLO, [], "")]
    assert events == OpenAIChatCodec().parse(whole_response(name))
    assert "stream" not in server.body() and "stream_options" not in server.body()


@fuzz(40)
@given(st.lists(st.integers(min_value=1, max_value=4000), max_size=30))
def test_any_byte_framing_gives_the_same_events(cuts: list[int]) -> None:
    body = recording("parallel_tools")
    points = sorted({c % (len(body) + 1) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    sse = SSEDecoder()
    decoder = ChatStreamDecoder()
    events: list[StreamEvent] = []
    for piece in pieces:
        for frame in sse.feed(piece):
            events.extend(decoder.feed(frame))
    for frame in sse.flush():
        events.extend(decoder.feed(frame))
    events.extend(decoder.finish())
    assert by_block(events) == by_block(OpenAIChatCodec().parse(whole_response("parallel_tools")))


# --- a full tool round trip through the Agent ------------------------------------------------


async def test_agent_tool_round_trip() -> None:
    answer = (
        'data: {"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":'
        '{"role":"assistant","content":"Sunny, 18 °C; it is 14:05."},"finish_reason":null}]}\n\n'
        'data: {"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},'
        '"finish_reason":"stop"}]}\n\n'
        'data: {"model":"gpt-4o-2024-08-06","choices":[],"usage":'
        '{"prompt_tokens":150,"completion_tokens":12,"total_tokens":162}}\n\n'
        "data: [DONE]\n\n"
    ).encode()
    server = Server(recording("parallel_tools"), answer)
    order: list[str] = []

    async def get_weather(city: str) -> str:
        await asyncio.sleep(0.02)  # finishes last; results must still be in call order
        order.append("weather")
        return f"18 °C and sunny in {city}"

    def get_time(timezone: str) -> str:
        order.append("time")
        return f"14:05 in {timezone}"

    schema: Callable[[str], dict[str, Any]] = lambda name: {  # noqa: E731
        "type": "object",
        "properties": {name: {"type": "string"}},
        "required": [name],
    }
    agent = Agent(
        "You are terse.",
        transport(server),
        tools=[
            Tool("get_weather", get_weather, "Weather for a city", schema("city")),
            Tool("get_time", get_time, "Local time", schema("timezone"), strict=True),
        ],
    )
    assert await agent.run("Weather and time in Paris?") == "Sunny, 18 °C; it is 14:05."
    assert order == ["time", "weather"]
    assert len(server.requests) == 2
    first = server.body(0)
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather", "get_time"]
    assert first["tools"][1]["function"]["strict"] is True
    second = server.body(1)
    assert second["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather and time in Paris?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": '{"timezone":"Europe/Paris"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "18 °C and sunny in Paris"},
        {"role": "tool", "tool_call_id": "call_b", "content": "14:05 in Europe/Paris"},
    ]
    assert second["tools"] == first["tools"]


# --- decoder details --------------------------------------------------------------------------


def test_tool_name_split_over_deltas() -> None:
    events = decode(
        [
            delta(tool_calls=[call(0, "c1", name="get_")]),
            delta(tool_calls=[call(0, name="weather")]),
            delta(tool_calls=[call(0, arguments='{"city":')]),
            delta(tool_calls=[call(0, arguments='"Oslo"}')]),
            delta("tool_calls"),
        ]
    )
    assert events[:3] == [
        ToolUseStart(0, "c1", "get_weather"),
        ToolInputDelta(0, "c1", '{"city":'),
        ToolInputDelta(0, "c1", '"Oslo"}'),
    ]
    assert_stream_contract(events)


def test_name_repeated_in_every_delta_is_not_doubled() -> None:
    events = decode(
        [
            delta(tool_calls=[call(0, "c1", name="lookup", arguments="")]),
            delta(tool_calls=[call(0, "c1", name="lookup", arguments='{"q":')]),
            delta(tool_calls=[call(0, "c1", name="lookup", arguments='"x"}')]),
            delta("tool_calls"),
        ]
    )
    assert events[0] == ToolUseStart(0, "c1", "lookup")
    assert [e.partial_json for e in events if isinstance(e, ToolInputDelta)] == ['{"q":', '"x"}']


def test_arguments_before_the_name_are_held() -> None:
    events = decode(
        [
            delta(tool_calls=[call(0, "c1", arguments='{"a"')]),
            delta(tool_calls=[call(0, name="f", arguments=":1}")]),
            delta("tool_calls"),
        ]
    )
    assert events[:3] == [
        ToolUseStart(0, "c1", "f"),
        ToolInputDelta(0, "c1", '{"a"'),
        ToolInputDelta(0, "c1", ":1}"),
    ]


def test_call_without_arguments_starts_when_the_next_begins_or_at_the_end() -> None:
    events = decode(
        [
            delta(tool_calls=[call(0, "c1", name="now", arguments="")]),
            delta(tool_calls=[call(1, "c2", name="today", arguments="")]),
            delta("tool_calls"),
        ]
    )
    assert events[:2] == [ToolUseStart(0, "c1", "now"), ToolUseStart(1, "c2", "today")]
    assert_stream_contract(events)


def test_whole_calls_in_one_chunk_without_ids_or_indexes() -> None:
    # Some servers send each call whole, with no index and no id.
    events = decode(
        [
            delta(tool_calls=[call(name="a", arguments="{}"), call(name="b", arguments="{}")]),
            delta("tool_calls"),
        ]
    )
    starts = [e for e in events if isinstance(e, ToolUseStart)]
    assert [s.name for s in starts] == ["a"]  # no index and no id: the same call continues
    events = decode(
        [
            delta(tool_calls=[call(id="x1", name="a", arguments="{}")]),
            delta(tool_calls=[call(id="x2", name="b", arguments="{}")]),
            delta("tool_calls"),
        ]
    )
    assert [(e.index, e.tool_use_id, e.name) for e in events if isinstance(e, ToolUseStart)] == [
        (0, "x1", "a"),
        (1, "x2", "b"),
    ]
    assert_stream_contract(events)


def test_missing_ids_are_made_unique() -> None:
    events = decode(
        [
            delta(tool_calls=[call(0, name="a", arguments="{}")]),
            delta(tool_calls=[call(1, name="b", arguments="{}")]),
            delta("tool_calls"),
        ]
    )
    ids = [e.tool_use_id for e in events if isinstance(e, ToolUseStart)]
    assert len(set(ids)) == 2 and all(i.startswith("call_") for i in ids)
    assert_stream_contract(events)


def test_same_index_with_a_new_id_is_a_new_call() -> None:
    events = decode(
        [
            delta(tool_calls=[call(0, "g1", name="a", arguments='{"x":1}')]),
            delta(tool_calls=[call(0, "g2", name="b", arguments='{"y":2}')]),
            delta("tool_calls"),
        ]
    )
    assert [e for e in events if isinstance(e, ToolUseStart)] == [
        ToolUseStart(0, "g1", "a"),
        ToolUseStart(1, "g2", "b"),
    ]
    assert_stream_contract(events)


def test_text_then_tool_call_blocks_and_reasoning_field_variant() -> None:
    events = decode(
        [
            delta(reasoning="think"),
            delta(content="Checking."),
            delta(tool_calls=[call(0, "c1", name="f", arguments="{}")]),
            delta("tool_calls"),
        ]
    )
    assert events[:4] == [
        ReasoningDelta(0, "think"),
        TextDelta(1, "Checking."),
        ToolUseStart(2, "c1", "f"),
        ToolInputDelta(2, "c1", "{}"),
    ]
    assert_stream_contract(events)


@pytest.mark.parametrize(
    ("raw", "calls", "expected"),
    [
        ("stop", False, StopReason.END_TURN),
        ("stop", True, StopReason.TOOL_USE),  # servers that end a tool call with "stop"
        ("tool_calls", True, StopReason.TOOL_USE),
        ("function_call", True, StopReason.TOOL_USE),
        ("tool_calls", False, StopReason.UNKNOWN),  # no call arrived: not TOOL_USE
        ("length", False, StopReason.MAX_TOKENS),
        ("content_filter", False, StopReason.REFUSAL),
        ("eos_token", False, StopReason.UNKNOWN),
    ],
)
def test_finish_reasons(raw: str, calls: bool, expected: StopReason) -> None:
    chunks = [delta(content="x")]
    if calls:
        chunks.append(delta(tool_calls=[call(0, "c1", name="f", arguments="{}")]))
    events = decode([*chunks, delta(raw)])
    end = events[-1]
    assert isinstance(end, IterationEnd)
    assert (end.stop_reason, end.raw_stop_reason, end.model) == (expected, raw, "m")
    assert_stream_contract(events)


def test_usage_details_and_deepseek_cache_field() -> None:
    openai_usage = {
        "prompt_tokens": 2000,
        "completion_tokens": 500,
        "prompt_tokens_details": {"cached_tokens": 1536},
        "completion_tokens_details": {"reasoning_tokens": 384},
    }
    end = decode([delta(content="x"), delta("stop"), {"choices": [], "usage": openai_usage}])[-1]
    assert isinstance(end, IterationEnd)
    assert end.usage == Usage(2000, 500, cache_read_tokens=1536, reasoning_tokens=384)
    deepseek = {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "prompt_cache_hit_tokens": 64,
        "prompt_cache_miss_tokens": 36,
    }
    end = decode([delta("stop", content="x"), {"choices": [], "usage": deepseek}])[-1]
    assert isinstance(end, IterationEnd)
    assert end.usage == Usage(100, 5, cache_read_tokens=64)


def test_usage_in_the_finish_chunk() -> None:
    chunk = delta("stop", content="x")
    chunk["usage"] = {"prompt_tokens": 3, "completion_tokens": 1}
    end = decode([chunk])[-1]
    assert isinstance(end, IterationEnd) and end.usage == Usage(3, 1)


def test_done_without_finish_reason_is_an_interruption() -> None:
    with pytest.raises(StreamInterruptedError, match="before the response was complete"):
        decode([delta(content="half")], done=True)


def test_finish_without_done_is_accepted() -> None:
    events = decode([delta(content="ok"), delta("stop")], done=False)
    assert events[-1] == IterationEnd(0, StopReason.END_TURN, Usage(), "stop", "m")


def test_events_after_done_are_ignored() -> None:
    decoder = ChatStreamDecoder()
    decoder.feed(SSEEvent("message", json.dumps(delta("stop", content="a"))))
    end = decoder.feed(SSEEvent("message", "[DONE]"))
    assert isinstance(end[-1], IterationEnd)
    assert decoder.feed(SSEEvent("message", json.dumps(delta(content="late")))) == []
    assert decoder.finish() == []


def test_other_choices_are_ignored() -> None:
    other = {"choices": [{"index": 1, "delta": {"content": "B"}, "finish_reason": None}]}
    events = decode([other, delta(content="A"), delta("stop")])
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta(0, "A")]


def test_blank_data_and_comments_are_ignored() -> None:
    events = decode(["", "  ", delta("stop", content="x")])
    assert events[0] == TextDelta(0, "x")


def test_malformed_json_chunk() -> None:
    with pytest.raises(StreamInterruptedError, match=r"malformed stream chunk \(not JSON\)"):
        decode(['{"choices": [{"delta": {"content": "x"'])
    with pytest.raises(
        StreamInterruptedError, match=r"malformed stream chunk \(the chunk is a list"
    ):
        decode(["[1, 2]"])


@pytest.mark.parametrize(
    "chunk",
    [
        {"choices": ["not an object"]},
        {"choices": [{"index": 0, "delta": {"tool_calls": "nope"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]},
        {"choices": [{"index": 0, "delta": {}}], "usage": {"prompt_tokens_details": 5}},
    ],
)
def test_chunks_of_unexpected_shape(chunk: dict[str, Any]) -> None:
    with pytest.raises(StreamInterruptedError, match="malformed stream chunk"):
        decode([chunk])
    with pytest.raises(StreamInterruptedError, match="malformed response"):
        OpenAIChatCodec().parse({"choices": [{"index": 0, "message": {"tool_calls": [1]}}]})


@pytest.mark.parametrize(
    ("error", "kind", "retryable", "status"),
    [
        ({"message": "boom", "type": "server_error", "code": None}, ServerError, True, None),
        (
            {"message": "slow down", "type": "tokens", "code": "rate_limit_exceeded"},
            RateLimitError,
            True,
            None,
        ),
        (
            {
                "message": "too long",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            },
            ContextWindowExceededError,
            False,
            None,
        ),
        (
            {"message": "bad", "type": "invalid_request_error", "code": None},
            BadRequestError,
            False,
            None,
        ),
        (
            {"object": "error", "message": "bad", "type": "BadRequestError", "code": 400},
            BadRequestError,
            False,
            400,
        ),
        (
            {"code": 500, "message": "llama.cpp failed", "type": "server_error"},
            ServerError,
            True,
            500,
        ),
        ({"message": "no", "type": "authentication_error"}, AuthenticationError, False, None),
        ("plain text error", ServerError, True, None),
    ],
)
def test_in_stream_errors_are_mapped(
    error: Any, kind: type[TransportError], retryable: bool, status: int | None
) -> None:
    decoder = ChatStreamDecoder()
    with pytest.raises(kind) as info:
        decoder.feed(SSEEvent("message", json.dumps({"error": error})))
    assert type(info.value) is kind
    assert info.value.retryable is retryable
    assert info.value.status_code == status


def test_error_event_without_error_key() -> None:
    with pytest.raises(ServerError, match="overheated"):
        ChatStreamDecoder().feed(SSEEvent("error", json.dumps({"message": "overheated"})))


def test_parse_error_body_and_empty_choices() -> None:
    codec = OpenAIChatCodec()
    with pytest.raises(RateLimitError, match="in its response"):
        codec.parse({"error": {"message": "quota", "type": "insufficient_quota"}})
    with pytest.raises(StreamInterruptedError, match="no choices"):
        codec.parse({"choices": []})
    with pytest.raises(StreamInterruptedError, match="not a JSON object"):
        codec.parse([1])


def test_parse_content_parts_and_object_arguments() -> None:
    events = OpenAIChatCodec().parse(
        {
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                        "tool_calls": [
                            {"id": "t", "function": {"name": "f", "arguments": {"x": 1}}}
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
        }
    )
    assert events == [
        TextDelta(0, "ab"),
        ToolUseStart(1, "t", "f"),
        ToolInputDelta(1, "t", '{"x":1}'),
        IterationEnd(0, StopReason.TOOL_USE, Usage(), "tool_calls", "m"),
    ]


# --- encoding ---------------------------------------------------------------------------------


def encode(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec] = (),
    system: str = "",
    **options: Any,
) -> dict[str, Any]:
    return OpenAIChatTransport("gpt-4o", api_key="k", stream=False, **options).build_request(
        messages, tools, system
    )


SPEC = ToolSpec("f", "Does f", {"type": "object", "properties": {"a": {"type": "string"}}})


def test_images_url_and_base64() -> None:
    body = encode(
        [
            Message(
                "user",
                [
                    TextBlock("Compare"),
                    ImageBlock("image/jpeg", url="https://example.com/a.jpg"),
                    ImageBlock("image/png", data="iVBORw0KGgo="),
                ],
            )
        ]
    )
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("media_type", "fmt"),
    [
        ("audio/wav", "wav"),
        ("audio/x-wav", "wav"),
        ("audio/mpeg", "mp3"),
        ("audio/mp3", "mp3"),
        ("audio/flac", "flac"),
        ("audio/ogg; codecs=opus", "ogg"),
    ],
)
def test_audio_formats(media_type: str, fmt: str) -> None:
    body = encode([Message("user", [AudioBlock(media_type, "UklGRg==")])])
    assert body["messages"][0]["content"] == [
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": fmt}}
    ]


def test_system_prompt_and_system_messages_in_history() -> None:
    history = [
        Message("user", "one"),
        Message("system", "Mid-run note."),
        Message("user", "two"),
    ]
    body = encode(history, system="Top.")
    assert body["messages"] == [
        {"role": "system", "content": "Top."},
        {"role": "user", "content": "one"},
        {"role": "system", "content": "Mid-run note."},
        {"role": "user", "content": "two"},
    ]
    assert encode(history)["messages"][0] == {"role": "user", "content": "one"}


def test_assistant_messages_drop_reasoning_and_keep_tool_calls() -> None:
    body = encode(
        [
            Message("user", "go"),
            Message(
                "assistant",
                [
                    ReasoningBlock("hmm", signature="sig", provider="anthropic"),
                    TextBlock("Calling."),
                    ToolUseBlock("c1", "f", {"a": "é", "n": [1, 2]}),
                    ToolUseBlock("c2", "f", {}, raw_arguments='{"a": "x",}'),
                ],
            ),
            Message("user", [ToolResultBlock("c1", "r1"), ToolResultBlock("c2", "r2")]),
            Message("assistant", [ReasoningBlock("only thoughts")]),
        ]
    )
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": "Calling.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a":"é","n":[1,2]}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a": "x",}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c2", "content": "r2"},
        {"role": "assistant", "content": ""},
    ]


def test_assistant_with_only_tool_calls_has_no_content_and_multi_text_is_parts() -> None:
    body = encode(
        [
            Message("assistant", [ToolUseBlock("c1", "f", {"a": "1"})]),
            Message("assistant", [TextBlock("a"), TextBlock("b")]),
        ]
    )
    assert "content" not in body["messages"][0]
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
    ]


def test_rich_tool_results_and_images_in_a_following_user_message() -> None:
    chart = ImageBlock("image/png", data="AAAA")
    photo = ImageBlock("image/jpeg", url="https://example.com/p.jpg")
    body = encode(
        [
            Message(
                "user",
                [
                    ToolResultBlock("c1", (TextBlock("Chart of "), TextBlock("sales:"), chart)),
                    ToolResultBlock("c2", (TextBlock("plain"), TextBlock(" text"))),
                    ToolResultBlock("c3", (photo,), is_error=False),
                    TextBlock("Also, summarise."),
                ],
            )
        ]
    )
    assert body["messages"] == [
        {"role": "tool", "tool_call_id": "c1", "content": "Chart of sales:"},
        {"role": "tool", "tool_call_id": "c2", "content": "plain text"},
        {
            "role": "tool",
            "tool_call_id": "c3",
            "content": "(the result is the image(s) in the next message)",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Image(s) returned by tool call c1:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "text", "text": "Image(s) returned by tool call c3:"},
                {"type": "image_url", "image_url": {"url": "https://example.com/p.jpg"}},
                {"type": "text", "text": "Also, summarise."},
            ],
        },
    ]


def test_blocks_in_the_wrong_role_are_rejected() -> None:
    with pytest.raises(ValueError, match="only be in an assistant message"):
        encode([Message("user", [ToolUseBlock("c", "f", {})])])
    with pytest.raises(ValueError, match="assistant message"):
        encode([Message("assistant", [ToolResultBlock("c", "r")])])


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("f", {"type": "function", "function": {"name": "f"}}),
    ],
)
def test_tool_choice_forms(choice: str, wire: Any) -> None:
    body = encode(HELLO, [SPEC], tool_choice=choice, parallel_tool_calls=False)
    assert body["tool_choice"] == wire
    assert body["parallel_tool_calls"] is False
    bare = encode(HELLO, [], tool_choice=choice, parallel_tool_calls=False)
    assert "tool_choice" not in bare and "parallel_tool_calls" not in bare


@pytest.mark.parametrize(
    ("base_url", "field"),
    [
        (None, "max_completion_tokens"),
        ("https://API.openai.com/v1/", "max_completion_tokens"),
        ("http://127.0.0.1:8080/v1", "max_tokens"),
        ("https://api.groq.com/openai/v1", "max_tokens"),
    ],
)
def test_max_tokens_field_by_host(base_url: str | None, field: str) -> None:
    t = OpenAIChatTransport("m", base_url=base_url, api_key="k", max_tokens=64)
    body = t.build_request(HELLO, [], "")
    assert body[field] == 64
    other = {"max_tokens", "max_completion_tokens"} - {field}
    assert not other & body.keys()
    codec = t.codec
    assert isinstance(codec, OpenAIChatCodec) and codec.max_tokens_field == field


def test_all_options_and_extra_body_last() -> None:
    body = encode(
        HELLO,
        temperature=0.2,
        max_tokens=100,
        top_p=0.9,
        top_k=40,
        thinking_budget=1000,
        stop="END",
        seed=7,
        frequency_penalty=0.5,
        presence_penalty=-0.5,
        reasoning_effort="low",
        extra_body={"temperature": 1.0, "logprobs": True, "user": "u-1"},
    )
    assert body == {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "Hello"}],
        "temperature": 1.0,
        "max_completion_tokens": 100,
        "top_p": 0.9,
        "stop": ["END"],
        "seed": 7,
        "frequency_penalty": 0.5,
        "presence_penalty": -0.5,
        "reasoning_effort": "low",
        "logprobs": True,
        "user": "u-1",
    }


def test_stream_keys_when_streaming() -> None:
    body = OpenAIChatTransport("m", api_key="k").build_request(HELLO, [], "")
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_strict_tools_and_plain_tools() -> None:
    strict = ToolSpec(
        "g",
        "",
        {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a"],
        },
        strict=True,
    )
    codec = OpenAIChatCodec()
    body = codec.encode("m", HELLO, [SPEC, strict], "", OpenAIChatTransport("m").options, False)
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "f", "description": "Does f", "parameters": dict(SPEC.schema)},
        },
        {
            "type": "function",
            "function": {
                "name": "g",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}},
                    "required": ["a", "b"],
                    "additionalProperties": False,
                },
                "strict": True,
            },
        },
    ]
    again = codec.encode("m", HELLO, [SPEC, strict], "", OpenAIChatTransport("m").options, False)
    assert again["tools"][1] is body["tools"][1]  # built once per spec
    assert strict.schema.get("additionalProperties") is None  # the spec itself is untouched


@pytest.mark.parametrize(
    ("given_", "wire"),
    [
        (
            {
                "name": "out",
                "schema": {"type": "object", "properties": {"x": {"type": "string"}}},
                "strict": True,
            },
            {
                "type": "json_schema",
                "json_schema": {
                    "name": "out",
                    "schema": {
                        "type": "object",
                        "properties": {"x": {"type": ["string", "null"]}},
                        "required": ["x"],
                        "additionalProperties": False,
                    },
                    "strict": True,
                },
            },
        ),
        (
            {"name": "out", "schema": {"type": "object"}, "strict": False},
            {
                "type": "json_schema",
                "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": False},
            },
        ),
        (
            {"type": "object", "properties": {}},
            {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": {"type": "object", "properties": {}}},
            },
        ),
        ({"type": "json_object"}, {"type": "json_object"}),
    ],
)
def test_response_format(given_: dict[str, Any], wire: dict[str, Any]) -> None:
    assert encode(HELLO, response_format=given_)["response_format"] == wire


def test_headers() -> None:
    codec = OpenAIChatCodec()
    assert codec.headers("sk-1") == {"Authorization": "Bearer sk-1"}
    assert codec.headers(None) == {}
    assert codec.path == "/chat/completions"


async def test_no_authorization_header_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    body = recording("text_usage")
    _, server = await play(body, base_url="http://127.0.0.1:8080/v1", api_key=None)
    assert "authorization" not in server.requests[0].headers
    assert server.requests[0].url.path == "/v1/chat/completions"
    assert server.body()["messages"][0] == {"role": "system", "content": "Be brief."}
    _, server = await play(body, api_key=None)
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"
