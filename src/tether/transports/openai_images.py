"""OpenAI image generation (``POST /images/generations``) over HTTP: ``OpenAIImagesClient``.

The request body (no I/O) lives in ``codecs.openai_images`` and the response reading in
``codecs.openai_images_decode``; their names are importable from here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from .codecs.openai_images import image_prompt, image_request
from .codecs.openai_images_decode import GeneratedImage, Images, parse_images
from .openai_media import OpenAIMediaClient

__all__ = [
    "GeneratedImage",
    "Images",
    "OpenAIImagesClient",
    "image_prompt",
    "image_request",
    "parse_images",
]


class OpenAIImagesClient(OpenAIMediaClient):
    """Generates images with an OpenAI image model (or any server that speaks the format).

    ``await client.generate("a cat")`` gives ``Images``; ``options`` given here go with every
    request, those given to ``generate`` with that one.
    """

    path: ClassVar[str] = "/images/generations"

    def build_request(
        self, prompt: str, options: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The body ``generate`` would send (for inspection and tests)."""
        return image_request(self.model, prompt, {**self.options, **(options or {})})

    async def generate(self, prompt: str, options: Mapping[str, Any] | None = None) -> Images:
        """The images the model makes for ``prompt``."""
        return await self._call(self.build_request(prompt, options), parse_images)
