"""``tether.transport``: one string to a ready transport, keys only for their own host."""

from __future__ import annotations

import pytest

import tether
from tether.transports import AnthropicTransport, OpenAIChatTransport, OpenAIResponsesTransport


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-anthropic")
    monkeypatch.setenv("GROQ_API_KEY", "gsk-groq")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)


def _auth(t: object) -> str | None:
    headers = t._headers  # type: ignore[attr-defined]
    return headers.get("Authorization") or headers.get("x-api-key")


def test_provider_prefixes_pick_the_wire_format_and_key() -> None:
    chat = tether.transport("openai:gpt-4.1")
    assert isinstance(chat, OpenAIChatTransport)
    assert chat.model == "gpt-4.1" and chat.base_url == "https://api.openai.com/v1"
    assert _auth(chat) == "Bearer sk-openai"

    responses = tether.transport("openai-responses:gpt-4.1", temperature=0.2)
    assert isinstance(responses, OpenAIResponsesTransport)
    assert responses.options.temperature == 0.2

    claude = tether.transport("anthropic:claude-sonnet-4-5", max_tokens=512)
    assert isinstance(claude, AnthropicTransport)
    assert _auth(claude) == "sk-anthropic"
    assert claude.options.max_tokens == 512


def test_compatible_endpoints_use_their_own_host_and_variable() -> None:
    groq = tether.transport("groq:llama-3.3-70b")
    assert isinstance(groq, OpenAIChatTransport)
    assert groq.base_url == "https://api.groq.com/openai/v1"
    assert _auth(groq) == "Bearer gsk-groq"  # never the OpenAI key
    gemini = tether.transport("gemini:gemini-2.5-flash")
    assert _auth(gemini) is None  # no GEMINI_API_KEY set: nothing is sent, not OpenAI's key


def test_an_environment_key_never_goes_to_a_custom_base_url() -> None:
    custom = tether.transport("openai:my-model", base_url="http://127.0.0.1:9999/v1")
    assert custom.base_url == "http://127.0.0.1:9999/v1"
    assert _auth(custom) is None
    explicit = tether.transport(
        "openai:my-model", base_url="http://127.0.0.1:9999/v1", api_key="given"
    )
    assert _auth(explicit) == "Bearer given"


def test_a_bare_url_is_an_openai_compatible_server() -> None:
    t = tether.transport("http://127.0.0.1:8080/v1", model="qwen")
    assert isinstance(t, OpenAIChatTransport)
    assert t.model == "qwen" and t.base_url == "http://127.0.0.1:8080/v1"
    assert _auth(t) is None


def test_keys_stay_out_of_reprs() -> None:
    t = tether.transport("openai:gpt-4.1", api_key="sk-secret-value")
    assert "sk-secret-value" not in repr(t)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("gpt-4.1", "must look like 'provider:model'"),
        ("openai:", "must look like 'provider:model'"),
        ("nosuch:model", "unknown provider 'nosuch'"),
    ],
)
def test_bad_model_strings_say_what_is_wrong(model: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tether.transport(model)


def test_unknown_options_are_named() -> None:
    with pytest.raises(TypeError, match="temprature"):
        tether.transport("openai:gpt-4.1", temprature=0.5)
