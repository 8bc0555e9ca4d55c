"""Provider options merged into a media request body (embeddings, images), never over its own
fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["merge_options"]


def merge_options(
    body: dict[str, Any], options: Mapping[str, Any] | None, own: tuple[str, ...]
) -> dict[str, Any]:
    """``body`` with the provider ``options`` added; an option may not replace an ``own`` field."""
    if not options:
        return body
    clash = sorted(set(own) & set(options))
    if clash:
        raise ValueError(f"option(s) {', '.join(clash)} would replace the request's own field(s)")
    return {**body, **options}
