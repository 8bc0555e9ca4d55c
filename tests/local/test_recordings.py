"""Streams recorded from the real llama.cpp server decode cleanly through tether's codecs, and a
streamed answer equals the same answer sent whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tether.loop.reply import ReplyBuilder
from tether.testing import assert_stream_contract
from tether.transports.anthropic import AnthropicCodec
from tether.transports.openai_chat import OpenAIChatCodec
from tether.transports.openai_responses import OpenAIResponsesCodec
from tether.transports.sse import SSEDecoder

HERE = Path(__file__).parent / "recordings"
CODECS: dict[str, Any] = {
    "chat_completions": OpenAIChatCodec(max_tokens_field="max_tokens"),
    "messages": AnthropicCodec(),
    "responses": OpenAIResponsesCodec(),
}
STREAMS = sorted(HERE.glob("*/*-stream.sse"))


def _decode(codec: Any, body: bytes) -> list[Any]:
    sse, decoder, events = SSEDecoder(), codec.decoder(), []
    for frame in [*sse.feed(body), *sse.flush()]:
        events.extend(decoder.feed(frame))
    return [*events, *decoder.finish()]


def _assembled(events: list[Any]) -> tuple[Any, Any]:
    turn = ReplyBuilder()
    for event in events:
        turn.add(event)
    message, calls = turn.build()
    assert turn.end is not None
    return message, (turn.end.stop_reason, [(c.name, dict(c.input)) for c in calls])


def test_there_are_recordings_for_every_wire_format() -> None:
    assert {p.parent.name for p in STREAMS} == set(CODECS)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_recorded_stream_decodes_and_matches_the_whole_response(path: Path) -> None:
    codec = CODECS[path.parent.name]
    events = _decode(codec, path.read_bytes())
    assert_stream_contract(events)
    streamed_message, streamed_calls = _assembled(events)
    whole = path.with_name(path.name.replace("-stream.sse", ".json"))
    parsed_message, parsed_calls = _assembled(codec.parse(json.loads(whole.read_text())))
    if "tool_call" in path.name:
        # Sampling differs between the two recorded requests; the shape must not.
        assert streamed_calls[1] and parsed_calls[1]
        assert [n for n, _ in streamed_calls[1]] == [n for n, _ in parsed_calls[1]]
    else:
        assert streamed_calls[0] is parsed_calls[0]
        assert (streamed_message is None) == (parsed_message is None)
