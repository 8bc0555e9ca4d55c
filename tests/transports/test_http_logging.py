"""``--verbose`` logging: requests and responses reach the "tether.http" logger, keys never do."""

from __future__ import annotations

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


def _transport(stream: bool) -> OpenAIChatTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if stream:
            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=STREAM
            )
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
