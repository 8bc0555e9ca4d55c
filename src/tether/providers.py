"""``transport("provider:model")``: a transport from one string, key from the provider's variable.

Known prefixes: ``openai``, ``openai-responses``, ``anthropic``, and OpenAI-compatible endpoints
``groq``, ``gemini``, ``deepseek``, ``mistral``, ``openrouter``, ``together``, ``ollama``,
``vllm``/``llamacpp`` (local servers, need ``base_url`` unless on the default port), ``local``
(tether's own offline model). A bare ``http(s)://`` URL means an OpenAI-compatible server there.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from .transports.base import CompletionTransport
from .transports.credentials import same_origin

__all__ = ["ENDPOINTS", "Endpoint", "transport"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a provider lives and which wire format and key it takes."""

    transport: str  # "module:Class" in tether.transports
    base_url: str | None
    env_key: str | None


_CHAT = "openai_chat:OpenAIChatTransport"
ENDPOINTS: dict[str, Endpoint] = {
    "openai": Endpoint(_CHAT, None, "OPENAI_API_KEY"),
    "openai-responses": Endpoint(
        "openai_responses:OpenAIResponsesTransport", None, "OPENAI_API_KEY"
    ),
    "anthropic": Endpoint("anthropic:AnthropicTransport", None, "ANTHROPIC_API_KEY"),
    "groq": Endpoint(_CHAT, "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "gemini": Endpoint(
        _CHAT, "https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY"
    ),
    "deepseek": Endpoint(_CHAT, "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": Endpoint(_CHAT, "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "openrouter": Endpoint(_CHAT, "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "together": Endpoint(_CHAT, "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "ollama": Endpoint(_CHAT, "http://127.0.0.1:11434/v1", None),
    "vllm": Endpoint(_CHAT, "http://127.0.0.1:8000/v1", None),
    "llamacpp": Endpoint(_CHAT, "http://127.0.0.1:8080/v1", None),
}


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(f"tether.transports.{module}"), name)


def transport(
    model_string: str,
    /,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> CompletionTransport:
    """A ready transport for ``"provider:model"`` (e.g. ``"anthropic:claude-sonnet-4-5"``).

    The key comes from ``api_key`` or the provider's environment variable; a key from the
    environment is only ever sent to the provider's own host. A hosted provider with no key
    fails its first request with an ``AuthenticationError`` naming the variable, before
    anything is sent; local servers, a bare URL and a ``base_url`` of your own need none. For a
    bare URL, ``model=`` names the model on that server.
    """
    model = model_string
    if model == "local" or model.startswith("local:"):
        from .local.transport import local_transport  # noqa: PLC0415 - loaded on demand

        wire = model.partition(":")[2] or "chat"
        return local_transport(wire, **options)
    if model.startswith(("http://", "https://")):
        name = options.pop("model", "default")
        cls = _load(_CHAT)
        return cls(name, base_url=model, api_key=api_key, **options)  # type: ignore[no-any-return]
    prefix, sep, name = model.partition(":")
    if not sep or not name:
        raise ValueError(
            f"model string {model!r} must look like 'provider:model' (e.g. 'openai:gpt-4.1'), "
            "'local', or an OpenAI-compatible base URL"
        )
    endpoint = ENDPOINTS.get(prefix)
    if endpoint is None:
        raise ValueError(
            f"unknown provider {prefix!r}; known: {', '.join(sorted(ENDPOINTS))}, local"
        )
    cls = _load(endpoint.transport)
    home = endpoint.base_url or cls.default_base_url
    url = base_url or home
    key_env = endpoint.env_key if same_origin(url, home) else None  # its key goes home only
    return cls(name, base_url=url, api_key=api_key, key_env=key_env, **options)  # type: ignore[no-any-return]
