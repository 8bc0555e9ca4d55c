"""OpenAI image generation (``POST /images/generations``): request body and response reading.

Prompty §7.3 and §8.3: the prompt is the text of the last user message; each generated image
reads as its URL, else its base64 data, and one image as that string (``Images.result``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...messages import Message, TextBlock
from ...types import ZERO_USAGE, Usage
from ..fields import SHAPE_ERRORS, array, count, malformed, mapping, quote, string
from ..status import error_from_payload
from .media_options import merge_options

__all__ = [
    "GeneratedImage",
    "Images",
    "image_prompt",
    "image_request",
    "parse_images",
]

_OWN = ("model", "prompt")


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


def image_prompt(messages: Sequence[Message]) -> str:
    """The first text of the last user message; ``""`` when there is none (Prompty §7.3)."""
    for message in reversed(messages):
        if message.role == "user":
            return next((b.text for b in message.content if type(b) is TextBlock), "")
    return ""


def image_request(
    model: str, prompt: str, options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The request body: model and prompt, then the provider ``options`` (``size``,
    ``quality``, ``n``, ``response_format``, …)."""
    if not model:
        raise ValueError("a model name is required")
    if type(prompt) is not str:
        raise TypeError(f"the image prompt is a {type(prompt).__name__}, not a string")
    return merge_options({"model": model, "prompt": prompt}, options, _OWN)


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
