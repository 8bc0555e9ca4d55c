"""Transports: the provider wire formats behind ``CompletionTransport``.

The HTTP transports import httpx; they load when first named here, not with ``tether``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import CompletionTransport
from .retry import RetryPolicy

if TYPE_CHECKING:
    from .anthropic import AnthropicTransport
    from .http import HttpTransport
    from .openai_chat import OpenAIChatTransport
    from .openai_responses import OpenAIResponsesTransport
    from .options import ModelOptions

__all__ = [
    "AnthropicTransport",
    "CompletionTransport",
    "HttpTransport",
    "ModelOptions",
    "OpenAIChatTransport",
    "OpenAIResponsesTransport",
    "RetryPolicy",
]

_LAZY = {
    "AnthropicTransport": "anthropic",
    "HttpTransport": "http",
    "ModelOptions": "options",
    "OpenAIChatTransport": "openai_chat",
    "OpenAIResponsesTransport": "openai_responses",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tether.transports' has no attribute {name!r}")
    import importlib  # noqa: PLC0415

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
