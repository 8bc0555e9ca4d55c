"""Tests for the Anthropic Messages API transport: recorded streams played through
``httpx.MockTransport`` (whole and in random byte chunks), byte-exact replay of thinking through
the agent loop, streamed vs non-streamed parity, and request encoding details."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from tether import (
    Agent,
    AudioBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    Steering,
    TextBlock,
    Tool,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from tether.errors import (
    AuthenticationError,
    BadRequestError,
    ContextWindowExceededError,
    OverloadedError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    TransportError,
)
from tether.events import (
    IterationEnd,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
)
from tether.loop.reply import ReplyBuilder
from tether.testing import assert_stream_contract
from tether.transports.anthropic import (
    AnthropicCodec,
    AnthropicStreamDecoder,
    AnthropicTransport,
)
from tether.transports.options import ModelOptions
from tether.transports.sse import SSEDecoder, SSEEvent
from tether.types import StopReason, Usage

RECORDINGS = Path(__file__).parent / "recordings" / "anthropic"
MODEL = "claude-sonnet-4-5-20250929"
SIG = "EqoBCkgIBxABGAIiQJ3x+/Wq0Zk9vG7uYb2pH1mXfQ==/sig+part/with=equals"
REDACTED = (
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"
    "+ugwEqQBgsBj/A=="
)
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def _recording(name: str) -> bytes:
    return (RECORDINGS / name).read_bytes()


# ---------------------------------------------------------------------------------------------
# Recorded streams through httpx.MockTransport


class _Chunked(httpx.AsyncByteStream):
    """A body delivered in random small byte chunks (splitting lines and UTF-8 sequences)."""

    def __init__(self, data: bytes, seed: int) -> None:
        self._data = data
        self._seed = seed

    async def __aiter__(self) -> AsyncIterator[bytes]:
        rng = random.Random(self._seed)
        i = 0
        while i < len(self._data):
            n = rng.randint(1, 9)
            yield self._data[i : i + n]
            i += n


Replies = Sequence[bytes | dict[str, Any]]


def _client(replies: Replies, seen: list[httpx.Request], seed: int | None) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        reply = replies[min(len(seen), len(replies)) - 1]
        if isinstance(reply, dict):
            return httpx.Response(200, json=reply)
        headers = {"content-type": "text/event-stream"}
        if seed is None:
            return httpx.Response(200, headers=headers, content=reply)
        return httpx.Response(200, headers=headers, stream=_Chunked(reply, seed))

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


def _transport(
    replies: Replies, seen: list[httpx.Request], seed: int | None = None, **options: Any
) -> AnthropicTransport:
    options.setdefault("cache", False)  # the wire shapes here; caching: test_prompt_cache.py
    return AnthropicTransport(MODEL, api_key="k", client=_client(replies, seen, seed), **options)


async def _play(
    name: str, seed: int | None, **options: Any
) -> tuple[list[StreamEvent], BaseException | None, list[httpx.Request]]:
    """The events of one recorded stream, the error that ended it (if any), the requests."""
    seen: list[httpx.Request] = []
    transport = _transport([_recording(name)], seen, seed, **options)
    events: list[StreamEvent] = []
    error: BaseException | None = None
    try:
        async for event in transport.stream(
            [Message("user", "Weather in Paris?")], [ToolSpec("get_weather", "Weather", {})], "Sys"
        ):
            events.append(event)
    except TransportError as exc:
        error = exc
    return events, error, seen


CHUNKINGS = pytest.mark.parametrize("seed", [None, 1, 2, 3], ids=["whole", "c1", "c2", "c3"])


@CHUNKINGS
async def test_text_with_ping(seed: int | None) -> None:
    events, error, seen = await _play("text_ping.sse", seed, temperature=0.2)
    assert error is None
    assert events == [
        TextDelta(0, "Hello"),
        TextDelta(0, ", world\u2028again!"),
        IterationEnd(
            0,
            StopReason.END_TURN,
            Usage(
                input_tokens=2112, output_tokens=9, cache_read_tokens=2000, cache_write_tokens=100
            ),
            "end_turn",
            MODEL,
        ),
    ]
    assert_stream_contract(events)
    [request] = seen
    assert request.method == "POST"
    assert request.url.path == "/v1/messages"
    assert request.url.host == "api.anthropic.com"
    assert request.headers["x-api-key"] == "k"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert json.loads(request.content) == {
        "model": MODEL,
        "max_tokens": 4096,
        "system": "Sys",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        "tools": [{"name": "get_weather", "description": "Weather", "input_schema": {}}],
        "temperature": 0.2,
        "stream": True,
    }


@CHUNKINGS
async def test_thinking_text_and_split_tool_input(seed: int | None) -> None:
    events, error, _ = await _play("thinking_tool.sse", seed)
    assert error is None
    assert events == [
        ReasoningDelta(0, "The user wants the weather. "),
        ReasoningDelta(0, "I should call get_weather."),
        ReasoningDelta(0, "", signature=SIG, provider="anthropic"),
        TextDelta(1, "Let me check."),
        ToolUseStart(2, "toolu_01A", "get_weather"),
        ToolInputDelta(2, "toolu_01A", '{"city": '),
        ToolInputDelta(2, "toolu_01A", '"Par'),
        ToolInputDelta(2, "toolu_01A", 'is"}'),
        IterationEnd(0, StopReason.TOOL_USE, Usage(420, 87), "tool_use", MODEL),
    ]
    assert_stream_contract(events)
    message, calls, _ = _built(events)
    assert message is not None
    assert message.content == (
        ReasoningBlock(
            "The user wants the weather. I should call get_weather.", SIG, provider="anthropic"
        ),
        TextBlock("Let me check."),
        ToolUseBlock("toolu_01A", "get_weather", {"city": "Paris"}),
    )
    assert calls == [ToolUseBlock("toolu_01A", "get_weather", {"city": "Paris"})]


@CHUNKINGS
async def test_redacted_thinking(seed: int | None) -> None:
    events, error, _ = await _play("redacted.sse", seed)
    assert error is None
    assert events == [
        ReasoningDelta(0, "", signature=REDACTED, redacted=True, provider="anthropic"),
        TextDelta(1, "Done thinking."),
        IterationEnd(
            0, StopReason.END_TURN, Usage(90, 30, cache_read_tokens=40), "end_turn", MODEL
        ),
    ]
    assert_stream_contract(events)


@CHUNKINGS
async def test_parallel_tool_calls_and_a_call_without_input(seed: int | None) -> None:
    events, error, _ = await _play("parallel_tools.sse", seed)
    assert error is None
    assert events == [
        TextDelta(0, "Checking both."),
        ToolUseStart(1, "toolu_01P", "get_weather"),
        ToolInputDelta(1, "toolu_01P", '{"city":'),
        ToolInputDelta(1, "toolu_01P", ' "Paris"}'),
        ToolUseStart(2, "toolu_01Q", "get_time"),
        ToolInputDelta(2, "toolu_01Q", "{}"),  # only an empty delta came: still valid arguments
        IterationEnd(0, StopReason.TOOL_USE, Usage(300, 64), "tool_use", MODEL),
    ]
    assert_stream_contract(events)


@CHUNKINGS
async def test_max_tokens_in_the_middle_of_tool_input(seed: int | None) -> None:
    events, error, _ = await _play("max_tokens_tool.sse", seed)
    assert error is None
    assert events == [
        ToolUseStart(0, "toolu_01M", "write_file"),
        ToolInputDelta(0, "toolu_01M", '{"path": "a.txt", '),
        ToolInputDelta(0, "toolu_01M", '"content": "lorem ip'),
        IterationEnd(0, StopReason.MAX_TOKENS, Usage(80, 16), "max_tokens", MODEL),
    ]
    assert_stream_contract(events)


@CHUNKINGS
async def test_overloaded_error_before_any_content(seed: int | None) -> None:
    events, error, _ = await _play("error_overloaded.sse", seed)
    assert events == []
    assert isinstance(error, OverloadedError)
    assert error.retryable
    assert "Overloaded" in str(error)


@CHUNKINGS
async def test_error_after_some_text(seed: int | None) -> None:
    events, error, _ = await _play("error_after_text.sse", seed)
    assert events == [TextDelta(0, "Partial ans")]
    assert isinstance(error, ServerError)
    assert "Internal server error" in str(error)


@CHUNKINGS
async def test_stream_cut_before_message_stop(seed: int | None) -> None:
    events, error, _ = await _play("cut.sse", seed)
    assert events == [TextDelta(0, "I was say")]
    assert isinstance(error, StreamInterruptedError)
    assert "message_stop" in str(error)


async def test_non_streaming_request_and_response() -> None:
    seen: list[httpx.Request] = []
    body = json.loads(_recording("thinking_tool.json"))
    transport = _transport([body], seen, stream=False)
    events = [e async for e in transport.stream([Message("user", "Hi")], [], "")]
    assert events[-1] == IterationEnd(0, StopReason.TOOL_USE, Usage(420, 87), "tool_use", MODEL)
    assert events[-2] == ToolInputDelta(2, "toolu_01A", '{"city":"Paris"}')
    sent = json.loads(seen[0].content)
    assert "stream" not in sent
    assert "system" not in sent


async def test_http_overloaded_status_is_retryable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        return httpx.Response(529, json=body)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    transport = AnthropicTransport(MODEL, api_key="k", client=client)
    with pytest.raises(OverloadedError) as caught:
        _ = [e async for e in transport.stream([Message("user", "Hi")], [], "")]
    assert caught.value.retryable
    assert caught.value.status_code == 529


def test_key_header_only_when_a_key_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert AnthropicCodec().headers(None) == {"anthropic-version": "2023-06-01"}
    assert AnthropicCodec().headers("sk") == {"anthropic-version": "2023-06-01", "x-api-key": "sk"}
    transport = AnthropicTransport(MODEL)
    assert transport.provider == "anthropic"
    assert transport.base_url == "https://api.anthropic.com"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    assert AnthropicTransport(MODEL)._headers["x-api-key"] == "from-env"
    elsewhere = AnthropicTransport(MODEL, base_url="https://proxy.example")
    assert "x-api-key" not in elsewhere._headers


# ---------------------------------------------------------------------------------------------
# Byte-exact replay through the agent loop


async def test_agent_replays_thinking_and_batches_tool_results() -> None:
    seen: list[httpx.Request] = []
    transport = _transport([_recording("agent_tools.sse"), _recording("text_ping.sse")], seen)
    steering = Steering()

    def get_weather(city: str) -> str:
        steering.send("Also, answer in French.")
        return f"sunny in {city}"

    def explode() -> str:
        raise RuntimeError("boom")

    agent = Agent(
        system="Be brief.",
        transport=transport,
        tools=[
            Tool("get_weather", get_weather, "Weather", WEATHER_SCHEMA),
            Tool("explode", explode, "Fails", {"type": "object", "properties": {}}),
        ],
    )
    assert await agent.run("Weather in Paris?", steering=steering) == "Hello, world\u2028again!"
    assert len(seen) == 2
    signature = "ErUBCkYIBxgCIkBw7k+Zr0v/Q1Jx==" + "part-two/9fXq+Lw=="
    assert json.dumps(signature).encode() in seen[1].content  # the pieces, joined, byte-exact
    second = json.loads(seen[1].content)
    assert second["system"] == "Be brief."
    messages = second["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant", "user"]
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert messages[1]["content"] == [
        {"type": "thinking", "thinking": "Weather, then the risky tool.", "signature": signature},
        {"type": "text", "text": "On it."},
        {"type": "tool_use", "id": "toolu_01W", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_01X", "name": "explode", "input": {}},
    ]
    results = messages[2]["content"]
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_01W",
        "content": "sunny in Paris",
    }
    assert results[1]["type"] == "tool_result"
    assert results[1]["tool_use_id"] == "toolu_01X"
    assert results[1]["is_error"] is True
    assert "boom" in results[1]["content"]
    assert results[2:] == [{"type": "text", "text": "Also, answer in French."}]


# ---------------------------------------------------------------------------------------------
# Streamed vs non-streamed parity


def _decode(data: bytes) -> list[StreamEvent]:
    sse, decoder = SSEDecoder(), AnthropicStreamDecoder()
    events = [e for frame in sse.feed(data) for e in decoder.feed(frame)]
    events += [e for frame in sse.flush() for e in decoder.feed(frame)]
    return events + decoder.finish()


def _built(events: list[StreamEvent]) -> tuple[Any, ...]:
    turn = ReplyBuilder()
    for event in events:
        turn.add(event)
    message, calls = turn.build()
    return message, calls, events[-1]


@pytest.mark.parametrize("name", ["text_ping", "thinking_tool", "redacted", "parallel_tools"])
def test_streamed_and_parsed_agree(name: str) -> None:
    streamed = _decode(_recording(f"{name}.sse"))
    parsed = AnthropicCodec().parse(json.loads(_recording(f"{name}.json")))
    assert_stream_contract(streamed)
    assert_stream_contract(parsed)
    assert _built(streamed) == _built(parsed)


# ---------------------------------------------------------------------------------------------
# Decoder details


def _feed(decoder: AnthropicStreamDecoder, data: dict[str, Any] | str) -> list[StreamEvent]:
    text = data if isinstance(data, str) else json.dumps(data)
    return decoder.feed(SSEEvent("message" if isinstance(data, str) else data["type"], text))


@pytest.mark.parametrize(
    ("kind", "message", "expected", "retryable"),
    [
        ("overloaded_error", "Overloaded", OverloadedError, True),
        ("rate_limit_error", "Slow down", RateLimitError, True),
        ("api_error", "Internal server error", ServerError, True),
        ("timeout_error", "Timed out", ServerError, True),
        ("invalid_request_error", "messages: bad field", BadRequestError, False),
        (
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            ContextWindowExceededError,
            False,
        ),
        ("authentication_error", "invalid x-api-key", AuthenticationError, False),
        ("permission_error", "no access", AuthenticationError, False),
        ("not_found_error", "no such model", BadRequestError, False),
        ("mystery_error", "?", ServerError, True),
    ],
)
def test_error_events_map_to_transport_errors(
    kind: str, message: str, expected: type[TransportError], retryable: bool
) -> None:
    decoder = AnthropicStreamDecoder()
    with pytest.raises(expected) as caught:
        _feed(decoder, {"type": "error", "error": {"type": kind, "message": message}})
    assert type(caught.value) is expected
    assert caught.value.retryable is retryable
    assert message in str(caught.value)
    with pytest.raises(expected):
        AnthropicCodec().parse({"type": "error", "error": {"type": kind, "message": message}})


@pytest.mark.parametrize(
    ("raw", "stop"),
    [
        ("end_turn", StopReason.END_TURN),
        ("stop_sequence", StopReason.END_TURN),
        ("tool_use", StopReason.TOOL_USE),
        ("max_tokens", StopReason.MAX_TOKENS),
        ("refusal", StopReason.REFUSAL),
        ("pause_turn", StopReason.PAUSE_TURN),
        ("model_context_window_exceeded", StopReason.CONTEXT_WINDOW_EXCEEDED),
        ("something_new", StopReason.UNKNOWN),
    ],
)
def test_stop_reasons(raw: str, stop: StopReason) -> None:
    decoder = AnthropicStreamDecoder()
    _feed(decoder, {"type": "message_start", "message": {"model": "m", "usage": {}}})
    if raw == "tool_use":
        _feed(
            decoder,
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
            },
        )
    _feed(decoder, {"type": "message_delta", "delta": {"stop_reason": raw}, "usage": {}})
    [end] = _feed(decoder, {"type": "message_stop"})
    assert end == IterationEnd(0, stop, Usage(), raw, "m")
    parsed = AnthropicCodec().parse({"content": [], "stop_reason": raw, "model": "m"})
    assert parsed == [IterationEnd(0, stop, Usage(), raw, "m")]


def test_missing_stop_reason_is_unknown_and_message_stop_counts_once() -> None:
    decoder = AnthropicStreamDecoder()
    [end] = _feed(decoder, {"type": "message_stop"})
    assert end == IterationEnd(0, StopReason.UNKNOWN, Usage(), None, None)
    assert _feed(decoder, {"type": "message_stop"}) == []
    assert decoder.finish() == []


def test_malformed_json_and_shapes_interrupt_the_stream() -> None:
    decoder = AnthropicStreamDecoder()
    with pytest.raises(StreamInterruptedError, match=r"malformed 'message' event \(not JSON\)"):
        _feed(decoder, '{"type": "content_block_delta", "index": 0, "delta": {')
    with pytest.raises(StreamInterruptedError):
        _feed(decoder, "[1, 2]")
    with pytest.raises(StreamInterruptedError):
        _feed(decoder, {"type": "content_block_delta", "index": 0})
    with pytest.raises(StreamInterruptedError):
        AnthropicCodec().parse([])
    with pytest.raises(StreamInterruptedError):
        AnthropicCodec().parse({"content": [{"text": "no type"}]})


def test_unknown_events_and_blocks_are_ignored() -> None:
    decoder = AnthropicStreamDecoder()
    assert _feed(decoder, {"type": "ping"}) == []
    assert _feed(decoder, {"type": "future_event", "x": 1}) == []
    server_tool = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}
    assert (
        _feed(decoder, {"type": "content_block_start", "index": 0, "content_block": server_tool})
        == []
    )
    delta = {"type": "input_json_delta", "partial_json": '{"query": "x"}'}
    assert _feed(decoder, {"type": "content_block_delta", "index": 0, "delta": delta}) == []
    assert _feed(decoder, {"type": "content_block_stop", "index": 0}) == []
    citation = {"type": "citations_delta", "citation": {}}
    assert _feed(decoder, {"type": "content_block_delta", "index": 1, "delta": citation}) == []


def test_tool_start_input_is_used_when_no_delta_follows() -> None:
    decoder = AnthropicStreamDecoder()
    block = {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1, "b": "é"}}
    assert _feed(decoder, {"type": "content_block_start", "index": 3, "content_block": block}) == [
        ToolUseStart(3, "t1", "f")
    ]
    assert _feed(decoder, {"type": "content_block_stop", "index": 3}) == [
        ToolInputDelta(3, "t1", '{"a":1,"b":"é"}')
    ]


def test_usage_updates_from_message_delta() -> None:
    decoder = AnthropicStreamDecoder()
    usage = {"input_tokens": 5, "cache_read_input_tokens": 7, "output_tokens": 1}
    _feed(decoder, {"type": "message_start", "message": {"model": "m", "usage": usage}})
    later = {"input_tokens": 9, "cache_creation_input_tokens": 3, "output_tokens": 40}
    _feed(decoder, {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": later})
    [end] = _feed(decoder, {"type": "message_stop"})
    assert isinstance(end, IterationEnd)
    assert end.usage == Usage(19, 40, cache_read_tokens=7, cache_write_tokens=3)


# ---------------------------------------------------------------------------------------------
# Encoding details


def _encode(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec] = (),
    system: str = "",
    stream: bool = False,
    codec: AnthropicCodec | None = None,
    **options: Any,
) -> dict[str, Any]:
    return (codec or AnthropicCodec(cache=False)).encode(
        "claude", messages, tools, system, ModelOptions(**options), stream
    )


def test_system_prompt_and_system_messages_are_joined() -> None:
    body = _encode(
        [Message("system", "B"), Message("user", "hi"), Message("system", "C")], system="A"
    )
    assert body["system"] == "A\n\nB\n\nC"
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert "system" not in _encode([Message("user", "hi")])
    assert "tools" not in _encode([Message("user", "hi")])


def test_image_forms() -> None:
    body = _encode(
        [
            Message(
                "user",
                [
                    ImageBlock("image/png", data="iVBORw0"),
                    ImageBlock("image/*", url="https://example.com/cat.jpg"),
                    ImageBlock("image/*", url="data:image/jpeg;base64,/9j/4AAQ"),
                    ImageBlock("image/gif", url="data:,GIF89a%01"),
                ],
            )
        ]
    )
    assert body["messages"][0]["content"] == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0"},
        },
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"},
        },
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGODlhAQ=="},
        },
    ]
    with pytest.raises(BadRequestError, match="http"):
        _encode([Message("user", [ImageBlock("image/png", url="ftp://host/x.png")])])
    with pytest.raises(BadRequestError, match="AudioBlock"):
        _encode([Message("user", [AudioBlock("audio/wav", "UklGR")])])


def test_assistant_blocks_kept_whole_and_in_order() -> None:
    assistant = Message(
        "assistant",
        [
            ReasoningBlock("plan", "sig/+=="),
            ReasoningBlock("", "opaque==", redacted=True),
            ReasoningBlock("unsigned thoughts"),
            ReasoningBlock("from elsewhere", "enc", provider="openai"),
            TextBlock("Calling."),
            ToolUseBlock("toolu_1", "get_weather", {"city": "Paris"}),
        ],
    )
    body = _encode([Message("user", "hi"), assistant])
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig/+=="},
            {"type": "redacted_thinking", "data": "opaque=="},
            {"type": "text", "text": "Calling."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
    }


def test_tool_results_and_steering_text_make_one_user_turn() -> None:
    results = Message(
        "user",
        [
            ToolResultBlock("toolu_1", "sunny"),
            ToolResultBlock(
                "toolu_2",
                (TextBlock("chart:"), ImageBlock("image/png", data="AAAA")),
                is_error=True,
            ),
        ],
    )
    body = _encode(
        [
            Message("user", "hi"),
            Message("assistant", [ToolUseBlock("toolu_1", "a"), ToolUseBlock("toolu_2", "b")]),
            results,
            Message("user", "Stop after this."),
        ]
    )
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
        {
            "type": "tool_result",
            "tool_use_id": "toolu_2",
            "content": [
                {"type": "text", "text": "chart:"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                },
            ],
            "is_error": True,
        },
        {"type": "text", "text": "Stop after this."},
    ]


def test_steering_before_results_still_puts_results_first() -> None:
    body = _encode(
        [
            Message("user", "hi"),
            Message("assistant", [ToolUseBlock("toolu_1", "a")]),
            Message("user", "note"),
            Message("user", [ToolResultBlock("toolu_1", "ok")]),
        ]
    )
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
        {"type": "text", "text": "note"},
    ]


def test_a_turn_left_empty_is_dropped_and_its_neighbours_merged() -> None:
    body = _encode(
        [
            Message("user", "a"),
            Message("assistant", [ReasoningBlock("unsigned")]),
            Message("user", "b"),
        ]
    )
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


TOOLS = [ToolSpec("get_weather", "Weather", WEATHER_SCHEMA), ToolSpec("noop", "", {})]


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        ("auto", None, {"type": "auto"}),
        ("required", None, {"type": "any"}),
        ("none", None, {"type": "none"}),
        ("get_weather", None, {"type": "tool", "name": "get_weather"}),
        ("auto", False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
        (
            "get_weather",
            False,
            {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
        ),
        ("none", False, {"type": "none"}),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
        (None, True, None),
        (None, None, None),
    ],
)
def test_tool_choice_forms(choice: str | None, parallel: bool | None, expected: Any) -> None:
    body = _encode([Message("user", "hi")], TOOLS, tool_choice=choice, parallel_tool_calls=parallel)
    assert body.get("tool_choice") == expected
    assert "tool_choice" not in _encode([Message("user", "hi")], tool_choice=choice)


def test_tools_wire_shape() -> None:
    body = _encode([Message("user", "hi")], TOOLS)
    assert body["tools"] == [
        {"name": "get_weather", "description": "Weather", "input_schema": WEATHER_SCHEMA},
        {"name": "noop", "input_schema": {}},
    ]
    assert body["tools"][0]["input_schema"] is WEATHER_SCHEMA  # never copied


def test_strict_tools_get_closed_schemas_once() -> None:
    codec = AnthropicCodec(cache=False)
    spec = ToolSpec("get_weather", "Weather", WEATHER_SCHEMA, strict=True)
    first = _encode([Message("user", "hi")], [spec], codec=codec)["tools"][0]
    assert first == {
        "name": "get_weather",
        "description": "Weather",
        "input_schema": {**WEATHER_SCHEMA, "additionalProperties": False},
        "strict": True,
    }
    assert _encode([Message("user", "hi")], [spec], codec=codec)["tools"][0] is first
    assert "additionalProperties" not in WEATHER_SCHEMA


def test_sampling_options_thinking_and_max_tokens() -> None:
    body = _encode(
        [Message("user", "hi")],
        temperature=1.0,
        top_p=0.5,
        top_k=10,
        stop=["END", "STOP"],
        seed=3,
        presence_penalty=0.1,
        frequency_penalty=0.1,
        reasoning_effort="high",
    )
    assert body["max_tokens"] == 4096
    assert body["temperature"] == 1.0
    assert body["top_p"] == 0.5
    assert body["top_k"] == 10
    assert body["stop_sequences"] == ["END", "STOP"]
    for absent in ("seed", "presence_penalty", "frequency_penalty", "reasoning_effort", "stop"):
        assert absent not in body
    thinking = _encode([Message("user", "hi")], thinking_budget=2048)
    assert thinking["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert thinking["max_tokens"] == 4096 + 2048  # room for the answer after the budget
    explicit = _encode([Message("user", "hi")], thinking_budget=2048, max_tokens=3000)
    assert explicit["max_tokens"] == 3000


def test_structured_output_and_extra_body() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    named = {"name": "out", "schema": schema, "strict": True}
    codec = AnthropicCodec(cache=False)
    options = ModelOptions(response_format=named, extra_body={"metadata": {"user_id": "u"}})
    body = codec.encode("claude", [Message("user", "hi")], [], "", options, True)
    closed = {**schema, "additionalProperties": False}
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": closed}}
    assert body["metadata"] == {"user_id": "u"}
    assert body["stream"] is True
    again = codec.encode("claude", [Message("user", "hi")], [], "", options, True)
    assert again["output_config"]["format"] is body["output_config"]["format"]
    bare = _encode([Message("user", "hi")], response_format=schema)
    assert bare["output_config"]["format"]["schema"] == closed
    overridden = _encode([Message("user", "hi")], extra_body={"max_tokens": 7, "stream": False})
    assert overridden["max_tokens"] == 7
    assert overridden["stream"] is False


def test_nested_schema_closing() -> None:
    codec = AnthropicCodec(cache=False)
    schema = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {}}},
            "either": {"anyOf": [{"type": "object", "properties": {}}, {"type": "null"}]},
        },
        "$defs": {"P": {"type": "object", "properties": {}, "additionalProperties": True}},
    }
    options = ModelOptions(response_format=schema)
    out = codec.encode("c", [], [], "", options, False)["output_config"]["format"]["schema"]
    assert out["additionalProperties"] is False
    assert out["properties"]["items"]["items"]["additionalProperties"] is False
    assert out["properties"]["either"]["anyOf"][0]["additionalProperties"] is False
    assert out["$defs"]["P"]["additionalProperties"] is True  # an explicit choice is kept
