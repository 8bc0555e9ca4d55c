"""OpenAI Embeddings (``POST /embeddings``) over HTTP: ``OpenAIEmbeddingsClient``.

The request body (no I/O) lives in ``codecs.openai_embeddings`` and the response reading in
``codecs.openai_embeddings_decode``; their names are importable from here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from .codecs.openai_embeddings import embedding_inputs, embedding_request
from .codecs.openai_embeddings_decode import Embeddings, parse_embeddings
from .openai_media import OpenAIMediaClient

__all__ = [
    "Embeddings",
    "OpenAIEmbeddingsClient",
    "embedding_inputs",
    "embedding_request",
    "parse_embeddings",
]


class OpenAIEmbeddingsClient(OpenAIMediaClient):
    """Embeds texts with an OpenAI embedding model (or any server that speaks the format).

    ``await client.embed(["a", "b"])`` gives ``Embeddings``; ``options`` given here go with every
    request, those given to ``embed`` with that one.
    """

    path: ClassVar[str] = "/embeddings"

    def build_request(
        self, inputs: str | Sequence[str], options: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The body ``embed`` would send (for inspection and tests)."""
        return embedding_request(self.model, inputs, {**self.options, **(options or {})})

    async def embed(
        self, inputs: str | Sequence[str], options: Mapping[str, Any] | None = None
    ) -> Embeddings:
        """The embeddings of ``inputs``, one vector per text in their order."""
        return await self._call(self.build_request(inputs, options), parse_embeddings)
