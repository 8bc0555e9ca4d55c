"""Anthropic's Messages API over HTTP: ``AnthropicTransport``.

The wire format itself (no I/O) lives in ``codecs.anthropic`` (the encoder) and
``codecs.anthropic_decode``; its names are importable from here too.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from .codecs.anthropic import API_VERSION, AnthropicCodec
from .codecs.anthropic_decode import AnthropicStreamDecoder
from .codecs.protocol import WireCodec
from .http import HttpTransport

__all__ = ["API_VERSION", "AnthropicCodec", "AnthropicStreamDecoder", "AnthropicTransport"]


class AnthropicTransport(HttpTransport):
    """Claude models over the Messages API (``ANTHROPIC_API_KEY`` for api.anthropic.com).

    ``cache="auto"`` (the default) marks prompt-cache breakpoints on the system prompt, the tools
    and the newest message, so each request of a run reads the one before from Anthropic's
    cache; ``cache=False`` sends none. Other arguments: ``HttpTransport``'s.
    """

    provider: ClassVar[str] = "anthropic"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    env_key: ClassVar[str | None] = "ANTHROPIC_API_KEY"

    def __init__(self, model: str, *, cache: Literal["auto"] | bool = "auto", **given: Any) -> None:
        if cache not in ("auto", True, False):
            raise ValueError(f"cache must be 'auto' or False, not {cache!r}")
        self.cache = cache
        super().__init__(model, **given)

    def _make_codec(self) -> WireCodec:
        return AnthropicCodec(cache=self.cache is not False)
