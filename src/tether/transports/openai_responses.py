"""OpenAI's Responses API over HTTP: ``OpenAIResponsesTransport``.

The wire format itself (no I/O) lives in ``codecs.openai_responses`` (the encoder) and
``codecs.openai_responses_decode``; its names are importable from here too.
"""

from __future__ import annotations

from typing import ClassVar

from .codecs.openai_responses import OpenAIResponsesCodec
from .codecs.openai_responses_decode import PROVIDER, ResponsesStreamDecoder
from .codecs.protocol import WireCodec
from .http import HttpTransport

__all__ = ["PROVIDER", "OpenAIResponsesCodec", "OpenAIResponsesTransport", "ResponsesStreamDecoder"]


class OpenAIResponsesTransport(HttpTransport):
    """OpenAI's Responses API (``/v1/responses``), streamed by default.

    ``reasoning_effort`` turns reasoning on, asks for summaries and for the encrypted reasoning,
    and sets ``store: false``: the reasoning travels back in the request instead of being looked
    up on the server (override with ``extra_body={"store": True}``).
    """

    provider: ClassVar[str] = PROVIDER
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"
    env_key: ClassVar[str | None] = "OPENAI_API_KEY"

    def _make_codec(self) -> WireCodec:
        return OpenAIResponsesCodec()
