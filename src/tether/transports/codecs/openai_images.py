"""OpenAI image generation (``POST /images/generations``): the request body (responses are read
in ``openai_images_decode``, whose names are importable from here too).

Prompty §7.3: the prompt is the text of the last user message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...messages import Message, TextBlock
from .media_options import merge_options
from .openai_images_decode import GeneratedImage, Images, parse_images

__all__ = [
    "GeneratedImage",
    "Images",
    "image_prompt",
    "image_request",
    "parse_images",
]

_OWN = ("model", "prompt")


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
