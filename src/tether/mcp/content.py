"""An MCP tool result as tether result content: text and images kept as blocks, structured content
as JSON text, everything else described in a line. A server is untrusted: the text it returns is
capped, and an image must be a well-formed base64 image."""

from __future__ import annotations

import binascii
import json
from base64 import b64decode
from typing import Any

from ..messages import ImageBlock, TextBlock, ToolResultContent

__all__ = ["MAX_RESULT_CHARS", "result_content"]

MAX_RESULT_CHARS = 1_000_000  # per result, all its text together
_MAX_ITEMS = 100  # content items kept from one result
_MAX_IMAGE_CHARS = 8_000_000  # base64 characters of one image (about 6 MB)
_IMAGE_TYPES = frozenset(("image/png", "image/jpeg", "image/gif", "image/webp"))


def result_content(result: Any, limit: int = MAX_RESULT_CHARS) -> ToolResultContent:
    """``result`` (an SDK ``CallToolResult``) as content: one string when it is all text."""
    items = list(result.content or ())
    blocks = [_block(item) for item in items[:_MAX_ITEMS]]
    if len(items) > _MAX_ITEMS:
        blocks.append(TextBlock(f"[{len(items) - _MAX_ITEMS} more content items not shown]"))
    structured = getattr(result, "structured_content", None)
    if structured is not None and not any(type(b) is TextBlock for b in blocks):
        blocks.append(TextBlock(json.dumps(structured, ensure_ascii=False, default=str)))
    blocks = _capped(blocks, limit)
    if all(type(b) is TextBlock for b in blocks):
        return "\n".join(b.text for b in blocks if type(b) is TextBlock)
    return tuple(blocks)


def _block(item: Any) -> TextBlock | ImageBlock:
    kind = getattr(item, "type", None)
    if kind == "text":
        return TextBlock(str(item.text))
    if kind == "image":
        return _image(item.mime_type, item.data) or TextBlock(_described("image", item))
    if kind == "resource":
        return _resource(item.resource)
    if kind == "resource_link":
        return TextBlock(f"[resource {item.name}: {item.uri}]")
    return TextBlock(_described(str(kind or "content"), item))


def _resource(resource: Any) -> TextBlock | ImageBlock:
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return TextBlock(text)
    blob, mime = getattr(resource, "blob", None), getattr(resource, "mime_type", None)
    image = _image(mime, blob) if isinstance(blob, str) else None
    if image is not None:
        return image
    size = len(blob) * 3 // 4 if isinstance(blob, str) else 0
    return TextBlock(f"[resource {resource.uri} ({mime or 'no type'}), {size} bytes not shown]")


def _image(mime: Any, data: Any) -> ImageBlock | None:
    """An image block if ``data`` is base64 of a supported image type."""
    if mime not in _IMAGE_TYPES or not isinstance(data, str) or len(data) > _MAX_IMAGE_CHARS:
        return None
    try:
        b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return ImageBlock(mime, data)


def _described(kind: str, item: Any) -> str:
    mime = getattr(item, "mime_type", None)
    data = getattr(item, "data", None)
    size = len(data) * 3 // 4 if isinstance(data, str) else 0
    return f"[{kind} ({mime or 'no type'}), {size} bytes not shown]"


def _capped(blocks: list[TextBlock | ImageBlock], limit: int) -> list[TextBlock | ImageBlock]:
    """The blocks with their text cut to ``limit`` characters in all, saying so."""
    left, kept = limit, []
    for block in blocks:
        if type(block) is not TextBlock:
            kept.append(block)
            continue
        if len(block.text) > left:
            cut = len(block.text) - left
            kept.append(TextBlock(f"{block.text[:left]}\n[... {cut} more characters cut]"))
            left = 0
            continue
        left -= len(block.text)
        kept.append(block)
    return kept
