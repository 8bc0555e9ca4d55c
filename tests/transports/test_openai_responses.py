"""The OpenAI Responses wire format: recorded streams played through ``httpx.MockTransport``
(whole and in random small chunks), reasoning replay through an ``Agent``, and streamed vs
non-streamed parity."""

from __future__ import annotations

import asyncio
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
from tether.testing import assert_stream_contract, collect
from tether.transports.openai_responses import (
    PROVIDER,
    OpenAIResponsesCodec,
    OpenAIResponsesTransport,
    ResponsesStreamDecoder,
)
from tether.transports.options import ModelOptions
from tether.transports.sse import SSEDecoder, SSEEvent
from tether.types import StopReason, Usage

RECORDINGS = Path(__file__).parent / "recordings" / "openai_responses"
CODEC = OpenAIResponsesCodec()
HELLO = [Message("user", "Hello")]


# --- helpers -----------------------------------------------------------------------------------


def recording(name: str) -> bytes:
    return (RECORDINGS / name).read_bytes()


def frames(raw: bytes) -> list[SSEEvent]:
    sse = SSEDecoder()
    return [*sse.feed(raw), *sse.flush()]


def payloads(name: str) -> list[dict[str, Any]]:
    """The JSON data of every event in a recording."""
    return [json.loads(f.data) for f in frames(recording(name))]


def terminal_response(name: str) -> dict[str, Any]:
    """The whole response object a recording's final event carries (what a plain POST returns)."""
    return dict(payloads(name)[-1]["response"])


def chunked(raw: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(raw):
        n = rng.randint(1, 7)
        out.append(raw[i : i + n])
        i += n
    return out


class Server:
    """A fake ``/responses`` endpoint: answers each request with the next body, records requests."""

    def __init__(self, *bodies: bytes | dict[str, Any], chunk_seed: int | None = None) -> None:
        self.bodies = list(bodies)
        self.chunk_seed = chunk_seed
        self.requests: list[httpx.Request] = []

    @property
    def sent(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = self.bodies.pop(0)
        if isinstance(body, dict):
            return httpx.Response(200, json=body)
        if self.chunk_seed is None:
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
        pieces = chunked(body, self.chunk_seed)

        async def stream() -> AsyncIterator[bytes]:
            for piece in pieces:
                yield piece

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream())

    def transport(self, model: str = "gpt-4.1", **kwargs: Any) -> OpenAIResponsesTransport:
        client = httpx.AsyncClient(transport=httpx.MockTransport(self))
        kwargs.setdefault("api_key", "k")
        return OpenAIResponsesTransport(model, client=client, **kwargs)


async def play(
    name: str, chunk_seed: int | None = None, **kwargs: Any
) -> tuple[list[StreamEvent], Server]:
    server = Server(recording(name), chunk_seed=chunk_seed)
    events = await collect(server.transport(**kwargs).stream(HELLO, [], "Be brief."))
    return events, server


def decode(*events: dict[str, Any]) -> list[StreamEvent]:
    """Feed raw event payloads straight to a decoder, then finish it."""
    decoder = ResponsesStreamDecoder()
    out: list[StreamEvent] = []
    for payload in events:
        out.extend(decoder.feed(SSEEvent(payload["type"], json.dumps(payload))))
    out.extend(decoder.finish())
    return out


def assembled(events: Sequence[StreamEvent]) -> tuple[Any, ...]:
    """What the agent builds from the events: the message, its calls and the turn's end."""
    turn = ReplyBuilder()
    for event in events:
        turn.add(event)
    message, calls = turn.build()
    return message, calls, turn.end


SEEDS = [0, 1, 2, 3, 4]
ENDED = [
    "text.sse",
    "reasoning_tool_call.sse",
    "parallel_tool_calls.sse",
    "incomplete_max_tokens.sse",
]


# --- encoding ----------------------------------------------------------------------------------


def encode(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec] = (),
    system: str = "",
    stream: bool = False,
    **options: Any,
) -> dict[str, Any]:
    return CODEC.encode("gpt-5", messages, tools, system, ModelOptions(**options), stream)


def test_minimal_body_has_no_optional_keys() -> None:
    assert encode(HELLO) == {"model": "gpt-5", "input": [{"role": "user", "content": "Hello"}]}
    assert encode(HELLO, stream=True)["stream"] is True


def test_system_prompt_and_system_messages_join_into_instructions() -> None:
    body = encode(
        [Message("system", "Rule one."), Message("user", "Hi"), Message("system", "Rule two.")],
        system="You are terse.",
    )
    assert body["instructions"] == "You are terse.\n\nRule one.\n\nRule two."
    assert body["input"] == [{"role": "user", "content": "Hi"}]


def test_options_map_to_responses_names_and_the_rest_are_left_out() -> None:
    body = encode(
        HELLO,
        max_tokens=300,
        temperature=0.2,
        top_p=0.9,
        tool_choice="required",
        parallel_tool_calls=False,
        stop=["END"],
        top_k=5,
        seed=7,
        frequency_penalty=0.5,
        presence_penalty=0.5,
        thinking_budget=1000,
    )
    assert {k: v for k, v in body.items() if k not in ("model", "input")} == {
        "max_output_tokens": 300,
        "temperature": 0.2,
        "top_p": 0.9,
        "tool_choice": "required",
        "parallel_tool_calls": False,
    }


def test_a_named_tool_choice_becomes_a_function_choice() -> None:
    body = encode(HELLO, tool_choice="get_weather")
    assert body["tool_choice"] == {"type": "function", "name": "get_weather"}


def test_reasoning_effort_asks_for_summaries_and_encrypted_reasoning() -> None:
    body = encode(HELLO, reasoning_effort="high")
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["store"] is False


def test_extra_body_is_merged_last() -> None:
    body = encode(
        HELLO, reasoning_effort="low", extra_body={"store": True, "metadata": {"run": "1"}}
    )
    assert body["store"] is True
    assert body["metadata"] == {"run": "1"}


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
    "required": ["city"],
}


def test_tools_are_flat_and_strict_only_when_asked() -> None:
    loose = ToolSpec("get_weather", "Weather", SCHEMA)
    strict = ToolSpec("get_time", "Time", SCHEMA, strict=True)
    tools = encode(HELLO, [loose, strict])["tools"]
    # An absent "strict" means true on the Responses API, so non-strict tools say false.
    assert tools[0] == {
        "type": "function",
        "name": "get_weather",
        "description": "Weather",
        "parameters": SCHEMA,
        "strict": False,
    }
    assert tools[1]["strict"] is True
    assert tools[1]["parameters"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": ["string", "null"]}},
        "required": ["city", "unit"],
        "additionalProperties": False,
    }


def test_response_format_becomes_text_format() -> None:
    wrapped = encode(HELLO, response_format={"name": "weather", "schema": SCHEMA, "strict": True})
    assert wrapped["text"]["format"]["type"] == "json_schema"
    assert wrapped["text"]["format"]["name"] == "weather"
    assert wrapped["text"]["format"]["strict"] is True
    assert wrapped["text"]["format"]["schema"]["additionalProperties"] is False
    loose = encode(HELLO, response_format={"name": "weather", "schema": SCHEMA, "strict": False})
    assert loose["text"]["format"] == {
        "type": "json_schema",
        "name": "weather",
        "schema": SCHEMA,
        "strict": False,
    }
    bare = encode(HELLO, response_format=SCHEMA)
    assert bare["text"] == {"format": {"type": "json_schema", "name": "response", "schema": SCHEMA}}


def test_rich_user_content_becomes_input_parts() -> None:
    message = Message(
        "user",
        [
            TextBlock("What is this?"),
            ImageBlock("image/png", data="aGk="),
            ImageBlock("image/jpeg", url="https://example.com/a.jpg"),
            AudioBlock("audio/mpeg", "bXAz"),
        ],
    )
    assert encode([message])["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,aGk=",
                    "detail": "auto",
                },
                {
                    "type": "input_image",
                    "image_url": "https://example.com/a.jpg",
                    "detail": "auto",
                },
                {"type": "input_audio", "input_audio": {"data": "bXAz", "format": "mp3"}},
            ],
        }
    ]


def test_tool_round_trip_items_in_order() -> None:
    assistant = Message(
        "assistant",
        [
            ReasoningBlock("Need both.", signature="ENC==", id="rs_1"),
            TextBlock("Let me look."),
            ToolUseBlock("call_1", "get_weather", {"city": "Paris"}),
            ToolUseBlock("call_2", "get_time", {}, raw_arguments='{"city": "Par'),
        ],
    )
    results = Message(
        "user",
        [
            ToolResultBlock("call_1", "18°C"),
            ToolResultBlock("call_2", (TextBlock("14:05"), TextBlock(" CET")), is_error=True),
        ],
    )
    assert encode([Message("user", "Paris?"), assistant, results])["input"] == [
        {"role": "user", "content": "Paris?"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Need both."}],
            "encrypted_content": "ENC==",
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Let me look."}],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "get_time",
            "arguments": '{"city": "Par',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "18°C"},
        {"type": "function_call_output", "call_id": "call_2", "output": "14:05 CET"},
    ]


def test_a_tool_result_with_an_image_is_sent_as_parts() -> None:
    result = ToolResultBlock("call_1", (TextBlock("chart:"), ImageBlock("image/png", data="aGk=")))
    [item] = encode([Message("user", [result])])["input"]
    assert item["output"] == [
        {"type": "input_text", "text": "chart:"},
        {"type": "input_image", "image_url": "data:image/png;base64,aGk=", "detail": "auto"},
    ]


def test_foreign_or_unidentified_reasoning_is_left_out() -> None:
    assistant = Message(
        "assistant",
        [
            ReasoningBlock("thinking", signature="anthropic-sig"),
            ReasoningBlock("other", id="rs_x", provider="anthropic"),
            ReasoningBlock("", id="rs_empty"),
            TextBlock("Hi."),
        ],
    )
    assert encode([assistant])["input"] == [
        {"type": "reasoning", "id": "rs_empty", "summary": []},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Hi."}],
        },
    ]


# --- recorded streams --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [None, *SEEDS])
async def test_text_stream(seed: int | None) -> None:
    events, server = await play("text.sse", chunk_seed=seed)
    assert events == [
        TextDelta(0, "Bonjour"),
        TextDelta(0, " — il fait "),
        TextDelta(0, "18°C\u2028à Paris "),
        TextDelta(0, "\U0001f324\ufe0f."),
        IterationEnd(
            0,
            StopReason.END_TURN,
            Usage(input_tokens=1200, output_tokens=14, cache_read_tokens=1024),
            "completed",
            "gpt-4.1-2025-04-14",
        ),
    ]
    assert_stream_contract(events)
    [request] = server.requests
    assert request.method == "POST"
    assert request.url == "https://api.openai.com/v1/responses"
    assert request.headers["authorization"] == "Bearer k"
    assert server.sent == [
        {
            "model": "gpt-4.1",
            "instructions": "Be brief.",
            "input": [{"role": "user", "content": "Hello"}],
            "stream": True,
        }
    ]


ENC1 = "gAAAAABpXq3kT0p+Lz9vQ1c2RkZ3bW9kZWxfcmVhc29uaW5nX2Jsb2Jfb25lPT0=/Yc+vH0=="
ENC2 = "gAAAAABpXq4AbLOb+/dHdvX3R3b19wYXJhbGxlbF9jYWxsc19ibG9iX3R3bz09Kw==+/end=="


@pytest.mark.parametrize("seed", [None, *SEEDS])
async def test_reasoning_then_tool_call_stream(seed: int | None) -> None:
    events, server = await play("reasoning_tool_call.sse", chunk_seed=seed, reasoning_effort="low")
    rid = "rs_reason01"
    assert events == [
        ReasoningDelta(0, "**Checking the weather**\n\nThe user", id=rid),
        ReasoningDelta(0, " wants Paris.", id=rid),
        ReasoningDelta(0, "\n\n", id=rid),
        ReasoningDelta(0, "I should call get_weather.", id=rid),
        ReasoningDelta(0, "", signature=ENC1, id=rid, provider=PROVIDER),
        ToolUseStart(1, "call_W1x", "get_weather"),
        ToolInputDelta(1, "call_W1x", '{"ci'),
        ToolInputDelta(1, "call_W1x", 'ty":"Pa'),
        ToolInputDelta(1, "call_W1x", 'ris"}'),
        IterationEnd(
            0,
            StopReason.TOOL_USE,
            Usage(input_tokens=310, output_tokens=152, reasoning_tokens=128),
            "completed",
            "o4-mini-2025-04-16",
        ),
    ]
    assert_stream_contract(events)
    sent = server.sent[0]
    assert sent["reasoning"] == {"effort": "low", "summary": "auto"}
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert sent["store"] is False


@pytest.mark.parametrize("seed", [None, *SEEDS])
async def test_parallel_tool_calls_stream(seed: int | None) -> None:
    events, _ = await play("parallel_tool_calls.sse", chunk_seed=seed)
    assert events == [
        ReasoningDelta(0, "", signature=ENC2, id="rs_para01", provider=PROVIDER),
        ToolUseStart(1, "call_A1", "get_weather"),
        ToolInputDelta(1, "call_A1", '{"city":'),
        ToolInputDelta(1, "call_A1", '"Paris"}'),
        ToolUseStart(2, "call_B2", "get_time"),
        ToolInputDelta(2, "call_B2", '{"ci'),
        ToolInputDelta(2, "call_B2", 'ty":"Paris"'),
        ToolInputDelta(2, "call_B2", "}"),
        IterationEnd(
            0,
            StopReason.TOOL_USE,
            Usage(input_tokens=420, output_tokens=96, cache_read_tokens=384, reasoning_tokens=64),
            "completed",
            "gpt-5-2025-08-07",
        ),
    ]
    assert_stream_contract(events)
    _, calls, _ = assembled(events)
    assert [(c.id, c.name, dict(c.input)) for c in calls] == [
        ("call_A1", "get_weather", {"city": "Paris"}),
        ("call_B2", "get_time", {"city": "Paris"}),
    ]


@pytest.mark.parametrize("seed", [None, *SEEDS])
async def test_incomplete_stream_stops_at_max_tokens(seed: int | None) -> None:
    events, _ = await play("incomplete_max_tokens.sse", chunk_seed=seed)
    assert events == [
        TextDelta(0, "Once upon"),
        TextDelta(0, " a time, there"),
        IterationEnd(
            0,
            StopReason.MAX_TOKENS,
            Usage(input_tokens=25, output_tokens=16),
            "max_output_tokens",
            "gpt-4.1-2025-04-14",
        ),
    ]
    assert_stream_contract(events)


@pytest.mark.parametrize("seed", [None, *SEEDS])
async def test_failed_stream_raises_a_retryable_server_error(seed: int | None) -> None:
    with pytest.raises(ServerError, match="The server had an error") as caught:
        await play("failed.sse", chunk_seed=seed)
    assert caught.value.retryable
    assert "server_error" in str(caught.value)


@pytest.mark.parametrize("seed", [None, *SEEDS])
async def test_error_event_raises_a_rate_limit_error(seed: int | None) -> None:
    with pytest.raises(RateLimitError, match=r"Rate limit reached for gpt-4\.1") as caught:
        await play("error_event.sse", chunk_seed=seed)
    assert caught.value.retryable


@pytest.mark.parametrize("seed", [None, *SEEDS])
async def test_a_stream_cut_before_completion_is_interrupted(seed: int | None) -> None:
    server = Server(recording("cut_before_completion.sse"), chunk_seed=seed)
    seen: list[StreamEvent] = []
    with pytest.raises(StreamInterruptedError, match="before the response completed"):
        async for event in server.transport().stream(HELLO, [], ""):
            seen.append(event)
    assert seen == [TextDelta(0, "The answer"), TextDelta(0, " is")]


async def test_no_key_sends_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = Server(recording("text.sse"))
    with pytest.raises(AuthenticationError, match="OPENAI_API_KEY"):
        await collect(server.transport(api_key=None).stream(HELLO, [], ""))
    assert server.requests == []  # issue 38: OpenAI's host needs a key, so none is asked without


async def test_the_environment_key_goes_to_openai_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    server = Server(recording("text.sse"), recording("text.sse"))
    await collect(server.transport(api_key=None).stream(HELLO, [], ""))
    proxy = server.transport(api_key=None, base_url="https://llm.internal.example/v1")
    await collect(proxy.stream(HELLO, [], ""))
    assert server.requests[0].headers["authorization"] == "Bearer env-key"
    assert server.requests[1].url == "https://llm.internal.example/v1/responses"
    assert "authorization" not in server.requests[1].headers


async def test_non_streamed_request_parses_the_response_object() -> None:
    server = Server(terminal_response("parallel_tool_calls.sse"))
    events = await collect(server.transport(stream=False).stream(HELLO, [], ""))
    assert events == CODEC.parse(terminal_response("parallel_tool_calls.sse"))
    assert "stream" not in server.sent[0]
    assert_stream_contract(events)


# --- decoder edge cases ------------------------------------------------------------------------


def completed(output: list[dict[str, Any]] | None = None, **response: Any) -> dict[str, Any]:
    body = {"status": "completed", "model": "gpt-5", "output": output or [], **response}
    return {"type": "response.completed", "response": body}


def test_arguments_sent_only_whole_are_emitted_once() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": ""}
    done = {**item, "arguments": '{"a":1}'}
    events = decode(
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.function_call_arguments.done",
            "output_index": 0,
            "arguments": '{"a":1}',
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        completed([done]),
    )
    assert events[:2] == [ToolUseStart(0, "c1", "f"), ToolInputDelta(0, "c1", '{"a":1}')]
    assert events[2].stop_reason is StopReason.TOOL_USE  # type: ignore[union-attr]
    assert len(events) == 3


def test_items_only_reported_when_done_still_give_their_content() -> None:
    message = {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    events = decode(
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {"type": "response.output_item.done", "output_index": 1, "item": call},
        completed(),
    )
    assert events[:3] == [
        TextDelta(0, "Hi"),
        ToolUseStart(1, "c1", "f"),
        ToolInputDelta(1, "c1", "{}"),
    ]
    assert_stream_contract(events)


def test_refusal_is_text_with_a_refusal_stop() -> None:
    events = decode(
        {"type": "response.refusal.delta", "output_index": 0, "delta": "I can't "},
        {"type": "response.refusal.delta", "output_index": 0, "delta": "help with that."},
        completed(),
    )
    assert events[:2] == [TextDelta(0, "I can't "), TextDelta(0, "help with that.")]
    assert events[2].stop_reason is StopReason.REFUSAL  # type: ignore[union-attr]
    response = {
        "status": "completed",
        "output": [{"type": "message", "content": [{"type": "refusal", "refusal": "No."}]}],
    }
    parsed = CODEC.parse(response)
    assert parsed[0] == TextDelta(0, "No.")
    assert parsed[1].stop_reason is StopReason.REFUSAL  # type: ignore[union-attr]


def test_an_error_event_without_a_code_keeps_the_message() -> None:
    with pytest.raises(BadRequestError) as caught:
        decode({"type": "error", "code": None, "message": "Invalid 'input[2]'."})
    assert str(caught.value).endswith(": Invalid 'input[2]'.")


def test_incomplete_for_content_filter_is_a_refusal() -> None:
    [end] = decode(
        {
            "type": "response.incomplete",
            "response": {
                "status": "incomplete",
                "incomplete_details": {"reason": "content_filter"},
            },
        }
    )
    assert end == IterationEnd(0, StopReason.REFUSAL, Usage(), "content_filter", None)


def test_the_model_falls_back_to_the_created_event() -> None:
    events = decode(
        {"type": "response.created", "response": {"model": "gpt-5-mini"}},
        {"type": "response.completed", "response": {"status": "completed"}},
    )
    assert events == [IterationEnd(0, StopReason.END_TURN, Usage(), "completed", "gpt-5-mini")]


@pytest.mark.parametrize(
    ("code", "kind", "retryable"),
    [
        ("server_error", ServerError, True),
        ("rate_limit_exceeded", RateLimitError, True),
        ("context_length_exceeded", ContextWindowExceededError, False),
        ("invalid_prompt", BadRequestError, False),
    ],
)
def test_failures_map_to_transport_errors(
    code: str, kind: type[TransportError], retryable: bool
) -> None:
    error = {"code": code, "message": "provider says no"}
    for payload in (
        {"type": "response.failed", "response": {"status": "failed", "error": error}},
        {"type": "error", **error},
        {"type": "error", "error": {"type": "invalid_request_error", **error}},
    ):
        with pytest.raises(kind, match="provider says no") as caught:
            decode(payload)
        assert type(caught.value) is kind
        assert caught.value.retryable is retryable
    with pytest.raises(kind, match="provider says no"):
        CODEC.parse({"status": "failed", "error": error, "output": []})


@pytest.mark.parametrize("data", ["{not json", "[1, 2]"])
def test_malformed_events_interrupt_the_stream(data: str) -> None:
    with pytest.raises(StreamInterruptedError, match="provider sent"):
        ResponsesStreamDecoder().feed(SSEEvent("message", data))


def test_unknown_events_done_markers_and_late_events_are_ignored() -> None:
    decoder = ResponsesStreamDecoder()
    assert decoder.feed(SSEEvent("message", "[DONE]")) == []
    assert decoder.feed(SSEEvent("response.web_search_call.searching", '{"type": "x.y"}')) == []
    [end] = decoder.feed(SSEEvent("message", json.dumps(completed())))
    assert isinstance(end, IterationEnd)
    late = {"type": "response.output_text.delta", "output_index": 0, "delta": "x"}
    assert decoder.feed(SSEEvent("message", json.dumps(late))) == []
    assert decoder.finish() == []


def test_finish_without_a_terminal_event_raises() -> None:
    with pytest.raises(StreamInterruptedError):
        ResponsesStreamDecoder().finish()


def test_one_json_parse_per_event(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = json.loads

    def counting(data: str) -> Any:
        nonlocal calls
        calls += 1
        return real(data)

    sse = frames(recording("reasoning_tool_call.sse"))
    decoder = ResponsesStreamDecoder()
    monkeypatch.setattr(json, "loads", counting)
    for frame in sse:
        decoder.feed(frame)
    monkeypatch.undo()
    assert calls == len(sse)
    assert not hasattr(decoder, "__dict__")


# --- parity ------------------------------------------------------------------------------------


def outline(events: Sequence[StreamEvent]) -> list[tuple[str, int]]:
    """Event kinds and block indexes, runs of the same collapsed (deltas may be split anyhow)."""
    out: list[tuple[str, int]] = []
    for event in events:
        key = (type(event).__name__, getattr(event, "index", -1))
        if key[0] == "ToolInputDelta":
            key = ("ToolUseStart", key[1])
        if not out or out[-1] != key:
            out.append(key)
    return out


@pytest.mark.parametrize("name", ENDED)
def test_streamed_and_parsed_give_the_same_turn(name: str) -> None:
    decoder = ResponsesStreamDecoder()
    streamed: list[StreamEvent] = []
    for frame in frames(recording(name)):
        streamed.extend(decoder.feed(frame))
    streamed.extend(decoder.finish())
    parsed = CODEC.parse(terminal_response(name))
    assert_stream_contract(parsed)
    assert assembled(parsed) == assembled(streamed)
    assert outline(parsed) == outline(streamed)
    assert parsed[-1] == streamed[-1]


# --- replay through an Agent ---------------------------------------------------------------------


async def test_agent_replays_reasoning_and_tool_calls() -> None:
    async def get_weather(city: str) -> str:
        await asyncio.sleep(0.02)  # finishes after get_time: results must still be in call order
        return f"18°C in {city}"

    def get_time(city: str) -> str:
        return f"14:05 in {city}"

    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    server = Server(recording("parallel_tool_calls.sse"), recording("text.sse"), chunk_seed=11)
    agent = Agent(
        system="You are a weather bot.",
        transport=server.transport("gpt-5", reasoning_effort="medium"),
        tools=[
            Tool("get_weather", get_weather, "Weather now", city),
            Tool("get_time", get_time, "Local time", city, strict=True),
        ],
    )
    answer = await agent.run("Weather and time in Paris?")
    assert answer == "Bonjour — il fait 18°C\u2028à Paris \U0001f324\ufe0f."

    first, second = server.sent
    assert first["input"] == [{"role": "user", "content": "Weather and time in Paris?"}]
    assert [t["strict"] for t in first["tools"]] == [False, True]
    assert first["include"] == ["reasoning.encrypted_content"]
    assert second["instructions"] == "You are a weather bot."
    assert second["input"] == [
        {"role": "user", "content": "Weather and time in Paris?"},
        {"type": "reasoning", "id": "rs_para01", "summary": [], "encrypted_content": ENC2},
        {
            "type": "function_call",
            "call_id": "call_A1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {
            "type": "function_call",
            "call_id": "call_B2",
            "name": "get_time",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_A1", "output": "18°C in Paris"},
        {"type": "function_call_output", "call_id": "call_B2", "output": "14:05 in Paris"},
    ]
    # byte-exact: the encrypted payload in the request is the one the stream carried
    streamed = next(
        p["item"]["encrypted_content"]
        for p in payloads("parallel_tool_calls.sse")
        if p["type"] == "response.output_item.done" and p["item"]["type"] == "reasoning"
    )
    assert second["input"][1]["encrypted_content"] == streamed
    assert server.requests[1].content.count(streamed.encode()) == 1
