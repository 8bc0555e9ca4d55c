"""OpenAI Embeddings (``POST /embeddings``): the request body (responses are read in
``openai_embeddings_decode``, whose names are importable from here too).

Prompty §7.2: one text goes out as a string and several as a list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...messages import Message, TextBlock
from .media_options import merge_options
from .openai_embeddings_decode import Embeddings, parse_embeddings

__all__ = [
    "Embeddings",
    "embedding_inputs",
    "embedding_request",
    "parse_embeddings",
]

_OWN = ("model", "input")


def embedding_inputs(messages: Sequence[Message]) -> list[str]:
    """The text of every text block of every message, in order (what Prompty embeds, §7.2)."""
    return [b.text for m in messages for b in m.content if type(b) is TextBlock]


def embedding_request(
    model: str, inputs: str | Sequence[str], options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The request body: one text as a string, several as a list; then the provider ``options``
    (``dimensions``, ``encoding_format``, ``user``)."""
    if not model:
        raise ValueError("a model name is required")
    texts = [inputs] if isinstance(inputs, str) else list(inputs)
    if not texts:
        raise ValueError("an embedding request needs at least one text")
    for i, text in enumerate(texts):
        if type(text) is not str:
            raise TypeError(f"input {i} to embed is a {type(text).__name__}, not a string")
    body = {"model": model, "input": texts[0] if len(texts) == 1 else texts}
    return merge_options(body, options, _OWN)
