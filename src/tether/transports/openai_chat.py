"""OpenAI Chat Completions over HTTP: ``OpenAIChatTransport``, for OpenAI or any server that
speaks the format.

The wire format itself (encoder and decoders, no I/O) lives in ``codecs.openai_chat`` and
``codecs.openai_chat_decode``; its names are importable from here too.
"""

from __future__ import annotations

from typing import ClassVar
from urllib.parse import urlsplit

from .codecs.openai_chat import OpenAIChatCodec
from .codecs.openai_chat_decode import ChatStreamDecoder
from .http import HttpTransport

__all__ = ["ChatStreamDecoder", "OpenAIChatCodec", "OpenAIChatTransport"]


class OpenAIChatTransport(HttpTransport):
    """OpenAI Chat Completions, or any server that speaks it (pass its ``base_url``).

    The output limit goes out as ``max_completion_tokens`` to OpenAI's own host and as
    ``max_tokens`` elsewhere (put the other one in ``extra_body`` for a server that wants it).
    """

    provider: ClassVar[str] = "openai"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    env_key: ClassVar[str | None] = "OPENAI_API_KEY"

    def _make_codec(self) -> OpenAIChatCodec:
        own = urlsplit(self.base_url).hostname == urlsplit(self.default_base_url).hostname
        return OpenAIChatCodec(max_tokens_field="max_completion_tokens" if own else "max_tokens")
