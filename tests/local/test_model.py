"""``LocalModel`` without a real server: lifecycle, and what its transports send (offline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from tether import Message
from tether.local import LocalModel, ServerConfig, model, start_local


class FakeServer:
    """Stands in for ``LlamaServer``: counts starts and stops."""

    started: ClassVar[list[FakeServer]] = []

    def __init__(self, path: Path, *, alias: str, config: ServerConfig) -> None:
        self.path, self.alias, self.config = path, alias, config
        self.running = False
        self.stops = 0

    @property
    def url(self) -> str:
        return "http://127.0.0.1:9"

    def start(self) -> str:
        self.running = True
        FakeServer.started.append(self)
        return self.url

    def stop(self) -> None:
        self.running = False
        self.stops += 1


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[FakeServer]:
    FakeServer.started = []
    weights_file = tmp_path / "m.gguf"
    monkeypatch.setattr(model, "LlamaServer", FakeServer)
    monkeypatch.setattr(model, "ensure_weights", lambda *a, **k: weights_file)
    return FakeServer.started


async def test_async_lifecycle(fake: list[FakeServer]) -> None:
    async with LocalModel(n_ctx=2048, seed=3) as local:
        assert local.running
        assert local.base_url == "http://127.0.0.1:9"
        assert local.model == "qwen2.5-coder-1.5b"
        (server,) = fake
        assert server.alias == "qwen2.5-coder-1.5b"
        assert server.config.n_ctx == 2048
        assert server.config.seed == 3
        await local.start()  # already running: no second server
        assert len(fake) == 1
    assert not local.running
    assert server.stops == 1
    await local.stop()  # twice is fine
    assert server.stops == 1


async def test_start_local_returns_a_running_model(fake: list[FakeServer]) -> None:
    local = await start_local(api_key=None)
    try:
        assert local.running
        assert local.api_key is None
    finally:
        await local.stop()


def test_sync_context_manager_and_model_path(fake: list[FakeServer], tmp_path: Path) -> None:
    mine = tmp_path / "mine.gguf"
    with LocalModel(model_path=mine) as local:
        assert fake[0].path == mine
        assert local.running
    assert not local.running


def _capture(sent: list[httpx.Request], body: dict[str, Any]) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=body)

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


CHAT_REPLY = {
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hi"}}
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}
ANTHROPIC_REPLY = {
    "id": "m",
    "type": "message",
    "role": "assistant",
    "content": [{"type": "text", "text": "Hi"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 5, "output_tokens": 1},
}
RESPONSES_REPLY = {
    "id": "r",
    "object": "response",
    "status": "completed",
    "output": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]}
    ],
    "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6},
}


@pytest.mark.parametrize(
    ("make", "reply", "path", "key_header"),
    [
        ("chat_transport", CHAT_REPLY, "/v1/chat/completions", "authorization"),
        ("anthropic_transport", ANTHROPIC_REPLY, "/v1/messages", "x-api-key"),
        ("responses_transport", RESPONSES_REPLY, "/v1/responses", "authorization"),
    ],
)
async def test_transports_reach_the_server_with_its_key(
    fake: list[FakeServer], make: str, reply: dict[str, Any], path: str, key_header: str
) -> None:
    sent: list[httpx.Request] = []
    async with LocalModel(api_key="secret") as local:
        client = _capture(sent, reply)
        transport = getattr(local, make)(stream=False, client=client, temperature=0)
        events = [e async for e in transport.stream([Message("user", "Hello")], [], "Be brief.")]
        await client.aclose()
    assert events
    (request,) = sent
    assert str(request.url) == "http://127.0.0.1:9" + path
    assert request.headers[key_header].endswith("secret")
    # llama.cpp drops the connection after a stream while announcing keep-alive: never reuse it.
    assert request.headers["connection"] == "close"
    assert json.loads(request.content)["model"] == "qwen2.5-coder-1.5b"
