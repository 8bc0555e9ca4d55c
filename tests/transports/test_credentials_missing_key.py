"""A hosted provider's key is checked before anything is sent: with none (no ``api_key=``, no
environment variable, no credential header or client auth), a run fails at once with an
``AuthenticationError`` naming the variable and ``api_key=``, not retried, and the provider's host
(a real local server standing in for it, recording every connection) sees nothing. Local servers
and a ``base_url`` of the user's own need no key: tether cannot know that they want one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fault_helpers import FORMATS
from misbehaving_server import MisbehavingServer, sse_stream

import tether
from tether import Agent
from tether.errors import AuthenticationError
from tether.providers import ENDPOINTS, Endpoint
from tether.transports import AnthropicTransport, OpenAIChatTransport, OpenAIResponsesTransport
from tether.transports.http import HttpTransport

PROMPT = "the whole confidential prompt"
SECRET = "sk-other-provider-0123456789abcdef"
VARIABLE = "TETHER_TEST_HOSTED_KEY"
CLASSES: dict[str, type[HttpTransport]] = {
    "openai_chat": OpenAIChatTransport,
    "openai_responses": OpenAIResponsesTransport,
    "anthropic": AnthropicTransport,
}


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GROQ_API_KEY", VARIABLE):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def server() -> AsyncIterator[MisbehavingServer]:
    async with MisbehavingServer(sse_stream(FORMATS["openai_chat"].text_turn("Hi."))) as s:
        yield s


def hosted(wire: str, server: MisbehavingServer) -> type[HttpTransport]:
    """The wire format's transport class with the local server as its provider's own host."""
    root = server.url if wire == "anthropic" else server.url + "/v1"
    server.script(sse_stream(FORMATS[wire].text_turn("Hi.")))
    attributes = {"default_base_url": root, "env_key": VARIABLE}
    return type(f"Hosted_{wire}", (CLASSES[wire],), attributes)


def assert_refused(caught: pytest.ExceptionInfo[AuthenticationError], variable: str) -> None:
    text = str(caught.value)
    assert variable in text
    assert "api_key=" in text
    assert "nothing was sent" in text
    assert SECRET not in text
    assert PROMPT not in text
    assert caught.value.retryable is False


@pytest.mark.parametrize("wire", list(CLASSES))
async def test_no_key_for_the_providers_own_host_sends_nothing(
    wire: str, server: MisbehavingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # another variable's key is never the answer
    model = hosted(wire, server)("some-model")
    with pytest.raises(AuthenticationError) as caught:
        await Agent("You help.", model).run(PROMPT)
    assert_refused(caught, VARIABLE)
    assert server.connections == 0
    assert server.requests == []


@pytest.mark.parametrize("wire", list(CLASSES))
async def test_with_the_key_the_same_host_is_reached(
    wire: str, server: MisbehavingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, "sk-hosted-key-0123456789")
    assert await Agent("You help.", hosted(wire, server)("some-model")).run(PROMPT) == "Hi."
    [request] = server.requests
    sent = request.headers.get("authorization") or request.headers.get("x-api-key")
    assert sent is not None and "sk-hosted-key-0123456789" in sent


async def test_an_empty_key_is_no_key(
    server: MisbehavingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLE, "")
    for model in (
        hosted("openai_chat", server)("m"),
        hosted("openai_chat", server)("m", api_key=""),
    ):
        with pytest.raises(AuthenticationError) as caught:
            await Agent("You help.", model).run(PROMPT)
        assert_refused(caught, VARIABLE)
    assert server.connections == 0


async def test_a_key_given_another_way_goes_out(server: MisbehavingServer) -> None:
    cls = hosted("openai_chat", server)
    given = cls("m", headers={"api-key": "sk-in-a-header-0123456789"})
    assert await Agent("You help.", given).run(PROMPT) == "Hi."
    client = httpx.AsyncClient(auth=("user", "pass"))
    try:
        assert await Agent("You help.", cls("m", client=client)).run(PROMPT) == "Hi."
    finally:
        await client.aclose()
    assert [r.headers.get("api-key") for r in server.requests][:1] == ["sk-in-a-header-0123456789"]
    assert server.requests[1].headers["authorization"].startswith("Basic ")


async def test_a_hosted_compatible_provider_names_its_own_variable(
    server: MisbehavingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = Endpoint(ENDPOINTS["groq"].transport, server.url + "/v1", "GROQ_API_KEY")
    monkeypatch.setitem(ENDPOINTS, "groq", here)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with pytest.raises(AuthenticationError) as caught:
        await Agent("You help.", tether.transport("groq:llama")).run(PROMPT)
    assert_refused(caught, "GROQ_API_KEY")
    assert server.connections == 0
    monkeypatch.setenv("GROQ_API_KEY", "gsk-groq-0123456789")
    assert await Agent("You help.", tether.transport("groq:llama")).run(PROMPT) == "Hi."
    assert server.requests[0].headers["authorization"] == "Bearer gsk-groq-0123456789"


@pytest.mark.parametrize("provider", ["ollama", "vllm", "llamacpp"])
async def test_local_servers_need_no_key(
    provider: str, server: MisbehavingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = Endpoint(ENDPOINTS[provider].transport, server.url + "/v1", None)
    monkeypatch.setitem(ENDPOINTS, provider, here)
    assert await Agent("You help.", tether.transport(f"{provider}:m")).run(PROMPT) == "Hi."
    assert "authorization" not in server.requests[0].headers


@pytest.mark.parametrize(
    "make",
    [
        lambda url: tether.transport(url + "/v1", model="m"),  # a bare URL
        lambda url: tether.transport("openai:m", base_url=url + "/v1"),  # the user's own server
        lambda url: OpenAIChatTransport("m", base_url=url + "/v1"),
    ],
    ids=["bare-url", "provider-base-url", "class-base-url"],
)
async def test_a_base_url_of_the_users_own_needs_no_key(
    make: Any, server: MisbehavingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # and the environment's key never goes there
    assert await Agent("You help.", make(server.url)).run(PROMPT) == "Hi."
    [request] = server.requests
    assert "authorization" not in request.headers
    assert SECRET not in str(request.headers)
