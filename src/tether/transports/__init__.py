"""Transports: the provider wire formats behind ``CompletionTransport``.

The HTTP transports import httpx; they load when first named here, not with ``tether``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names as _lazy_names
from .base import CompletionTransport
from .retry import RetryPolicy

if TYPE_CHECKING:
    from .anthropic import AnthropicTransport
    from .http import HttpTransport
    from .openai_chat import OpenAIChatTransport
    from .openai_embeddings import Embeddings, OpenAIEmbeddingsClient
    from .openai_images import GeneratedImage, Images, OpenAIImagesClient
    from .openai_media import OpenAIMediaClient
    from .openai_responses import OpenAIResponsesTransport
    from .options import ModelOptions

__all__ = [
    "AnthropicTransport",
    "CompletionTransport",
    "Embeddings",
    "GeneratedImage",
    "HttpTransport",
    "Images",
    "ModelOptions",
    "OpenAIChatTransport",
    "OpenAIEmbeddingsClient",
    "OpenAIImagesClient",
    "OpenAIMediaClient",
    "OpenAIResponsesTransport",
    "RetryPolicy",
]

_LAZY = {
    "AnthropicTransport": "anthropic",
    "Embeddings": "openai_embeddings",
    "GeneratedImage": "openai_images",
    "HttpTransport": "http",
    "Images": "openai_images",
    "ModelOptions": "options",
    "OpenAIChatTransport": "openai_chat",
    "OpenAIEmbeddingsClient": "openai_embeddings",
    "OpenAIImagesClient": "openai_images",
    "OpenAIMediaClient": "openai_media",
    "OpenAIResponsesTransport": "openai_responses",
}


__getattr__ = _lazy_names(__name__, _LAZY)
