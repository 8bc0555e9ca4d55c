"""``--verbose`` logging: requests and responses reach the "tether.http" logger, keys never do."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from tether import Message
from tether.transports import OpenAIChatTransport

KEY = "sk-verbose-secret-123"
STREAM = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi ' + KEY.encode() + b'"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
WHOLE = {
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


def _transport(stream: bool, body: bytes | None = None) -> OpenAIChatTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if stream:
            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=body or STREAM
            )
        if body is not None:
            return httpx.Response(200, headers={"content-type": "application/json"}, content=body)
        return httpx.Response(200, json=WHOLE)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAIChatTransport("m", api_key=KEY, stream=stream, client=client)


@pytest.mark.parametrize("stream", [True, False])
async def test_debug_log_shows_request_and_response_without_the_key(
    stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="tether.http")
    t = _transport(stream)
    events = [e async for e in t.stream([Message("user", "hello")], [], "sys")]
    assert events
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "tether.http")
    assert "POST https://api.openai.com/v1/chat/completions" in text
    assert '"content": "hello"' in text or '"content":"hello"' in text  # request body
    assert "HTTP 200" in text
    if stream:
        assert "SSE message:" in text and "finish_reason" in text  # response frames
    else:
        assert "completion_tokens" in text  # response body
    assert KEY not in text
    assert "***" in text


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.name == "tether.http")


def _straddling(text_before: str, cut: int, keep: int = 10) -> str:
    """Padding that puts KEY's first ``keep`` characters just before character ``cut``."""
    return "x" * (cut - keep - len(text_before))


async def test_a_key_across_the_request_body_cut_is_redacted_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="tether.http")
    t = _transport(stream=False)
    dumped = json.dumps(t.build_request([Message("user", "MARKER")], [], "sys"))
    before = dumped[: dumped.index("MARKER")]
    content = _straddling(before, 20000) + KEY + "y" * 100
    [e async for e in t.stream([Message("user", content)], [], "sys")]
    logged = _logged(caplog)
    assert KEY[:8] not in logged
    assert "…" in logged  # the body was cut there


async def test_a_key_across_an_sse_event_cut_is_redacted_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="tether.http")
    head = '{"choices":[{"index":0,"delta":{"content":"'
    data = head + _straddling(head, 2000) + KEY + "y" * 100 + '"}}]}'
    stream = f"data: {data}\n\n".encode() + STREAM.split(b"\n\n", 1)[1]
    t = _transport(stream=True, body=stream)
    [e async for e in t.stream([Message("user", "hello")], [], "sys")]
    logged = _logged(caplog)
    assert KEY[:8] not in logged
    assert "…" in logged


async def test_a_key_across_the_response_body_cut_is_redacted_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="tether.http")
    head = '{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
    whole = head + _straddling(head, 20000) + KEY + "y" * 100 + '"}, "finish_reason": "stop"}]}'
    t = _transport(stream=False, body=whole.encode())
    [e async for e in t.stream([Message("user", "hello")], [], "sys")]
    logged = _logged(caplog)
    assert KEY[:8] not in logged
    assert "…" in logged
