"""Anthropic's Messages API over HTTP: ``AnthropicTransport``.

The wire format itself (encoder and decoders, no I/O) lives in ``codecs.anthropic``; its names
are importable from here too.
"""

from __future__ import annotations

from typing import ClassVar

from .codecs.anthropic import API_VERSION, AnthropicCodec, AnthropicStreamDecoder
from .codecs.protocol import WireCodec
from .http import HttpTransport

__all__ = ["API_VERSION", "AnthropicCodec", "AnthropicStreamDecoder", "AnthropicTransport"]


class AnthropicTransport(HttpTransport):
    """Claude models over the Messages API (``ANTHROPIC_API_KEY`` for api.anthropic.com)."""

    provider: ClassVar[str] = "anthropic"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    env_key: ClassVar[str | None] = "ANTHROPIC_API_KEY"

    def _make_codec(self) -> WireCodec:
        return AnthropicCodec()
