"""Transports: the provider wire formats behind ``CompletionTransport``.

The HTTP transports import httpx; they load when first named here, not with ``tether``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import lazy_names as _lazy_names

# The public names, each with the module it loads from on first use: ``__all__`` is this table,
# and the imports below repeat it for type checkers only (tests/test_public_api.py checks them).
_HOMES = {
    "AnthropicTransport": "anthropic",
    "CircuitBreaker": "fallback",
    "CompletionTransport": "base",
    "Embeddings": "openai_embeddings",
    "FallbackTransport": "fallback",
    "GeneratedImage": "openai_images",
    "HttpTransport": "http",
    "Images": "openai_images",
    "ModelOptions": "options",
    "OpenAIChatTransport": "openai_chat",
    "OpenAIEmbeddingsClient": "openai_embeddings",
    "OpenAIImagesClient": "openai_images",
    "OpenAIMediaClient": "openai_media",
    "OpenAIResponsesTransport": "openai_responses",
    "Phase": "base",
    "ReportsProgress": "base",
    "RetryPolicy": "retry",
}

__all__ = list(_HOMES)

if TYPE_CHECKING:
    from .anthropic import AnthropicTransport as AnthropicTransport
    from .base import CompletionTransport as CompletionTransport
    from .base import Phase as Phase
    from .base import ReportsProgress as ReportsProgress
    from .fallback import CircuitBreaker as CircuitBreaker
    from .fallback import FallbackTransport as FallbackTransport
    from .http import HttpTransport as HttpTransport
    from .openai_chat import OpenAIChatTransport as OpenAIChatTransport
    from .openai_embeddings import Embeddings as Embeddings
    from .openai_embeddings import OpenAIEmbeddingsClient as OpenAIEmbeddingsClient
    from .openai_images import GeneratedImage as GeneratedImage
    from .openai_images import Images as Images
    from .openai_images import OpenAIImagesClient as OpenAIImagesClient
    from .openai_media import OpenAIMediaClient as OpenAIMediaClient
    from .openai_responses import OpenAIResponsesTransport as OpenAIResponsesTransport
    from .options import ModelOptions as ModelOptions
    from .retry import RetryPolicy as RetryPolicy

__getattr__ = _lazy_names(__name__, _HOMES)
