"""OpenAI image generation responses as ``Images`` (no I/O).

Prompty §8.3: each generated image reads as its URL, else its base64 data, and one image as
that string (``Images.result``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...types import ZERO_USAGE, Usage
from ..fields import SHAPE_ERRORS, array, count, malformed, mapping, quote, string
from ..status import error_from_payload

__all__ = ["GeneratedImage", "Images", "parse_images"]


@dataclass(frozen=True, slots=True)
class GeneratedImage:
    """One generated image: where to fetch it, or its base64 data; and the prompt the model used
    when it rewrote the one given."""

    url: str | None = None
    b64_json: str | None = None
    revised_prompt: str | None = None

    @property
    def value(self) -> str | None:
        """The URL, else the base64 data (Prompty prefers the URL when both are there)."""
        return self.url or self.b64_json


@dataclass(frozen=True, slots=True)
class Images:
    """An image generation response: the images in the order sent."""

    images: tuple[GeneratedImage, ...]
    usage: Usage = ZERO_USAGE

    @property
    def result(self) -> str | list[str]:
        """Prompty's processed result (§8.3): the one image's URL or data, else a list of them."""
        found = [value for image in self.images if (value := image.value)]
        return found[0] if len(found) == 1 else found


def parse_images(body: Any) -> Images:
    """A response as ``Images``; one of another shape, or with no image in it, is a
    ``StreamInterruptedError``, an error object the provider's ``TransportError``."""
    try:
        return _parse(body)
    except SHAPE_ERRORS as exc:
        raise malformed("image response", quote(body), exc) from exc


def _parse(body: Any) -> Images:
    body = mapping(body, "the response")
    if body.get("error") is not None:
        raise error_from_payload(body["error"], " in its response")
    images = tuple(_image(item) for item in array(body.get("data"), "data"))
    if not images:
        raise ValueError("the response has no images (data is empty)")
    if not any(image.value for image in images):
        raise ValueError("no image of the response has a url or b64_json")
    return Images(images, _usage(body.get("usage")))


def _image(item: Any) -> GeneratedImage:
    item = mapping(item, "an image")
    return GeneratedImage(
        string(item.get("url"), "url"),
        string(item.get("b64_json"), "b64_json"),
        string(item.get("revised_prompt"), "revised_prompt"),
    )


def _usage(usage: Any) -> Usage:
    """Token counts, which only the token-priced image models report."""
    if not usage:
        return Usage()
    usage = mapping(usage, "usage")
    return Usage(
        count(usage.get("input_tokens"), "input_tokens"),
        count(usage.get("output_tokens"), "output_tokens"),
    )
