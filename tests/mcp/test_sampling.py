"""Sampling: server-everything (2025-11-25) asks the client's model for a message through its
``trigger-sampling-request`` tool; tether answers with the application's model, only with its
consent, never past its token cap, and refuses as the specification says; the SDK's
``MCPServer`` (2026-07-28) asks the same way through a call's input requests. The model is a
``ScriptedTransport`` or a real OpenAI-compatible HTTP stub on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tether.events import StreamEvent, TextDelta
from tether.mcp import McpError, McpStdio, McpStreamable, Sampling, SamplingRequest
from tether.messages import Message
from tether.session import AgentSession
from tether.testing import Reply, ScriptedTransport
from tether.transports.openai_chat import OpenAIChatTransport
from tether.types import ToolSpec
from waiting import until

pytestmark = pytest.mark.timeout(90)

KEY = "sk-sampling-0123456789abcdefghij"
ASK = "trigger-sampling-request"


def yes(request: SamplingRequest) -> bool:
    return True


def answered(result: Any) -> dict[str, Any]:
    """The sampling result server-everything returns as its tool's text."""
    text = str(result.content)
    return dict(json.loads(text[text.index("{") :]))


class ChatStub:
    """An OpenAI-compatible chat server answering every request with one streamed text; the
    request bodies it got are in ``bodies``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.bodies: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                stub.bodies.append(json.loads(body))
                chunks = [
                    {"role": "assistant", "content": ""},
                    {"content": stub.text},
                ]
                frames = [_chunk(delta) for delta in chunks] + [_chunk({}, "length")]
                payload = "".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n"
                raw = payload.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "stub-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@pytest.fixture
def chat_stub() -> Iterator[ChatStub]:
    stub = ChatStub("the stub's poem")
    thread = threading.Thread(target=stub.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub.server.shutdown()
        stub.server.server_close()


async def test_without_on_sampling_the_capability_is_not_offered(everything: list[str]) -> None:
    async with McpStdio(everything[0], everything[1:]) as server:
        assert ASK not in {t.name for t in await server.list_tools()}
    model = ScriptedTransport([])
    sampling = Sampling(model=model, consent=yes)
    async with McpStdio(everything[0], everything[1:], on_sampling=sampling) as server:
        assert ASK in {t.name for t in await server.list_tools()}


async def test_a_consented_request_is_answered_by_the_model(everything: list[str]) -> None:
    model = ScriptedTransport([Reply(text="a short poem")])
    seen: list[SamplingRequest] = []

    async def consent(request: SamplingRequest) -> bool:
        seen.append(request)
        return True

    sampling = Sampling(model=model, consent=consent, max_tokens=50)
    async with McpStdio(everything[0], everything[1:], on_sampling=sampling) as server:
        result = await server.call(ASK, {"prompt": "write a poem", "maxTokens": 80})
    assert not result.is_error, result.content
    reply = answered(result)
    assert reply["content"] == {"type": "text", "text": "a short poem"}
    assert reply["role"] == "assistant" and reply["stopReason"] == "endTurn"
    (request,) = seen
    assert (request.max_tokens, request.granted_tokens) == (80, 50)  # asked more: capped
    assert request.system == "You are a helpful test server."
    assert "write a poem" in request.messages[0].text and request.temperature == 0.7
    assert request.server.endswith("stdio")  # the command line, as configured
    (sent,) = model.requests
    assert sent.system == "You are a helpful test server."
    assert sent.messages == request.messages and sent.tools == ()


async def test_a_model_without_a_token_option_is_cut_at_the_cap(everything: list[str]) -> None:
    model = ScriptedTransport([Reply(text="word " * 500)])
    sampling = Sampling(model=model, consent=yes, max_tokens=10)
    async with McpStdio(everything[0], everything[1:], on_sampling=sampling) as server:
        reply = answered(await server.call(ASK, {"prompt": "ramble", "maxTokens": 10_000}))
    assert len(reply["content"]["text"]) == 40 and reply["stopReason"] == "maxTokens"


async def test_the_cap_reaches_a_real_http_model(
    everything: list[str], chat_stub: ChatStub
) -> None:
    model = OpenAIChatTransport("stub-model", base_url=chat_stub.url, api_key=KEY)
    sampling = Sampling(model=model, consent=yes, max_tokens=64)
    try:
        async with McpStdio(everything[0], everything[1:], on_sampling=sampling) as server:
            big = answered(await server.call(ASK, {"prompt": "an epic", "maxTokens": 100_000}))
            small = answered(await server.call(ASK, {"prompt": "a line", "maxTokens": 5}))
    finally:
        await model.aclose()
    assert big["content"]["text"] == "the stub's poem" and big["model"] == "stub-model"
    assert big["stopReason"] == "maxTokens"  # the stub ended with "length"
    assert small["content"]["text"] == "the stub's poem"
    limits = [b.get("max_completion_tokens", b.get("max_tokens")) for b in chat_stub.bodies]
    assert limits == [64, 5]  # never more than the cap, and no more than asked
    first = chat_stub.bodies[0]["messages"]
    assert first[0] == {"role": "system", "content": "You are a helpful test server."}
    assert "an epic" in json.dumps(first[1])


@pytest.mark.parametrize("consent", [lambda r: False, lambda r: "yes", lambda r: 1 / 0])
async def test_a_refusal_is_answered_as_the_spec_says(everything: list[str], consent: Any) -> None:
    model = ScriptedTransport([])
    sampling = Sampling(model=model, consent=consent)
    async with McpStdio(everything[0], everything[1:], on_sampling=sampling) as server:
        result = await server.call(ASK, {"prompt": "anything"})
    assert result.is_error and "User rejected sampling request" in str(result.content)
    assert model.call_count == 0  # the model never saw it


class Hanging:
    """A model that never answers."""

    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        return self._never()

    async def _never(self) -> AsyncIterator[StreamEvent]:
        await asyncio.sleep(1_000)
        yield TextDelta(0, "never")


async def test_a_model_that_hangs_or_fails_is_an_error_to_the_server(everything: list[str]) -> None:
    slow = Sampling(model=Hanging(), consent=yes, timeout=0.5)
    async with McpStdio(everything[0], everything[1:], on_sampling=slow) as server:
        result = await server.call(ASK, {"prompt": "x"})
    assert result.is_error and "did not answer within 0.5 s" in str(result.content)

    failing = ScriptedTransport([RuntimeError(f"upstream said no to key {KEY}")])
    broken = Sampling(model=failing, consent=yes)
    async with McpStdio(everything[0], everything[1:], on_sampling=broken) as server:
        result = await server.call(ASK, {"prompt": "x"})
    assert result.is_error and "the model failed (RuntimeError)" in str(result.content)
    assert KEY not in str(result.content)


async def test_over_http_too(everything_http: str) -> None:
    model = ScriptedTransport([Reply(text="over http")])
    sampling = Sampling(model=model, consent=yes)
    async with McpStreamable(everything_http, on_sampling=sampling) as server:
        reply = answered(await server.call(ASK, {"prompt": "hi"}))
    assert reply["content"]["text"] == "over http"


async def test_a_session_lends_its_sampling_to_its_servers(everything: list[str]) -> None:
    model = ScriptedTransport([Reply(text="from the session's model")])
    own = ScriptedTransport([Reply(text="from the server's own model")])
    lent = McpStdio(everything[0], everything[1:], name="lent")
    kept = McpStdio(
        everything[0], everything[1:], name="kept", on_sampling=Sampling(model=own, consent=yes)
    )
    session = AgentSession(
        ScriptedTransport([]),
        mcp_tools=[lent, kept],
        on_sampling=Sampling(model=model, consent=yes),
    )
    async with session:
        first = answered(await lent.call(ASK, {"prompt": "a"}))
        second = answered(await kept.call(ASK, {"prompt": "b"}))
    assert first["content"]["text"] == "from the session's model"
    assert second["content"]["text"] == "from the server's own model"


def test_bad_sampling_settings_are_refused() -> None:
    model = ScriptedTransport([])
    with pytest.raises(TypeError, match="consent"):
        Sampling(model=model)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="returns True"):
        Sampling(model=model, consent="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="transport"):
        Sampling(model="openai:gpt-4.1", consent=yes)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_tokens"):
        Sampling(model=model, consent=yes, max_tokens=0)
    with pytest.raises(TypeError, match=r"tether\.mcp\.Sampling"):
        McpStdio("x", on_sampling=yes)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"tether\.mcp\.Sampling"):
        AgentSession(model, on_sampling=yes)  # type: ignore[arg-type]


SAMPLER = Path(__file__).parent / "servers" / "sampler.py"
HOSTILE = Path(__file__).parent / "servers" / "hostile_library.py"


async def test_the_2026_era_asks_through_the_same_consent() -> None:
    async with McpStdio(sys.executable, [str(SAMPLER)]) as server:
        with pytest.raises(McpError, match="did not declare the sampling capability"):
            await server.call("haiku", {"topic": "rain"})
    seen: list[SamplingRequest] = []

    def consent(request: SamplingRequest) -> bool:
        seen.append(request)
        return "moon" in request.messages[0].text

    model = ScriptedTransport([Reply(text="Autumn moon rising")])
    sampling = Sampling(model=model, consent=consent, max_tokens=100)
    async with McpStdio(sys.executable, [str(SAMPLER)], on_sampling=sampling) as server:
        assert server._connection is not None
        assert server._connection.client.protocol_version == "2026-07-28"
        poem = await server.call("haiku", {"topic": "the moon"})
        assert (poem.content, poem.is_error) == ("Autumn moon rising", False)
        assert (seen[0].max_tokens, seen[0].granted_tokens) == (5000, 100)
        with pytest.raises(McpError, match="User rejected sampling request"):
            await server.call("haiku", {"topic": "rain"})
    assert model.call_count == 1


async def test_a_server_open_before_the_session_is_told_of_in_a_warning(
    everything: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    sampling = Sampling(model=ScriptedTransport([]), consent=yes)
    async with McpStdio(everything[0], everything[1:]) as server:
        with caplog.at_level(logging.WARNING, logger="tether.session"):
            async with AgentSession(
                ScriptedTransport([]), mcp_tools=[server], on_sampling=sampling
            ):
                pass
        assert server.on_sampling is None
        assert (
            "entered before the session: the session's on_sampling cannot reach it" in caplog.text
        )


async def test_a_storm_of_requests_is_held_to_a_few_at_once() -> None:
    started: list[float] = []
    release = asyncio.Event()

    async def consent(request: SamplingRequest) -> bool:
        started.append(asyncio.get_running_loop().time())
        await release.wait()  # a person who takes their time
        return True

    model = ScriptedTransport([], then=Reply(text="hi"))
    sampling = Sampling(model=model, consent=consent, max_tokens=10)
    server = McpStdio(sys.executable, [str(HOSTILE)], on_sampling=sampling)
    async with server:
        call = asyncio.create_task(server.call("storm", {"n": 40}))
        await until(lambda: len(started) == 4, "four requests asked about")
        await asyncio.sleep(0.3)
        assert len(started) == 4  # the rest were refused, not queued for the person
        release.set()
        counts = json.loads(str((await call).content))
    assert counts["results"] == 4 and counts["errors"] == 36
    assert counts["said"] == ["too many sampling requests at once (at most 4): try again later"]
    assert model.call_count == 4
