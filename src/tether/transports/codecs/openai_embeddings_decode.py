"""OpenAI Embeddings responses as ``Embeddings`` (no I/O).

Prompty §8.2: a response with one embedding reads as one vector, with several as a list of
vectors (``Embeddings.result``); vectors come as lists of numbers or base64 float32s.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass
from typing import Any

from ...types import ZERO_USAGE, Usage
from ..fields import (
    SHAPE_ERRORS,
    array,
    block_index,
    count,
    malformed,
    mapping,
    quote,
    string,
    wrong,
)
from ..status import error_from_payload

__all__ = ["Embeddings", "parse_embeddings"]


@dataclass(frozen=True, slots=True)
class Embeddings:
    """An embeddings response: one vector per input, in the inputs' order."""

    vectors: tuple[tuple[float, ...], ...]
    model: str | None = None
    usage: Usage = ZERO_USAGE

    @property
    def result(self) -> list[float] | list[list[float]]:
        """Prompty's processed result (§8.2): the vector when there is one, else every vector."""
        if len(self.vectors) == 1:
            return list(self.vectors[0])
        return [list(v) for v in self.vectors]


def parse_embeddings(body: Any) -> Embeddings:
    """A response as ``Embeddings``; one of another shape is a ``StreamInterruptedError``, an
    error object the provider's ``TransportError``."""
    try:
        return _parse(body)
    except SHAPE_ERRORS as exc:
        raise malformed("embeddings response", quote(body), exc) from exc


def _parse(body: Any) -> Embeddings:
    body = mapping(body, "the response")
    if body.get("error") is not None:
        raise error_from_payload(body["error"], " in its response")
    items = [mapping(item, "an embedding") for item in array(body.get("data"), "data")]
    if not items:
        raise ValueError("the response has no embeddings (data is empty)")
    vectors = tuple(_vector(item.get("embedding"), i) for i, item in enumerate(_ordered(items)))
    usage = body.get("usage")
    tokens = count(mapping(usage, "usage").get("prompt_tokens"), "prompt_tokens") if usage else 0
    return Embeddings(vectors, string(body.get("model"), "model"), Usage(tokens))


def _ordered(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items by their ``index`` when every one has one (each input's place), else as sent."""
    if any(item.get("index") is None for item in items):
        return items
    placed = {block_index(item["index"], "embedding index"): item for item in items}
    if len(placed) != len(items) or max(placed) != len(items) - 1:
        raise ValueError(f"the embedding indexes are not 0 to {len(items) - 1}, once each")
    return [placed[i] for i in range(len(items))]


def _vector(value: Any, at: int) -> tuple[float, ...]:
    """One embedding: a list of numbers, or base64 of little-endian float32s."""
    field = f"embedding {at}"
    if type(value) is str:
        return _unpacked(value, field)
    numbers = array(value, field)
    if not numbers:
        raise ValueError(f"{field} is empty")
    for number in numbers:
        if type(number) is not float and type(number) is not int:
            raise wrong(f"a value of {field}", number, "a number")
    return tuple(map(float, numbers))


def _unpacked(text: str, field: str) -> tuple[float, ...]:
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"{field} is neither a list nor base64 ({exc})") from None
    if not raw or len(raw) % 4:
        raise ValueError(f"{field} is {len(raw)} bytes, not a whole number of float32s")
    return struct.unpack(f"<{len(raw) // 4}f", raw)
