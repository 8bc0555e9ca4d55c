"""An MCP tool result as tether result content: text and images kept as blocks, structured content
as JSON text, everything else described in a line. A server is untrusted: the text it returns is
capped, and an image must be a well-formed base64 image. A local tool's MCP-shaped dict result
(``reduce_mcp_result``) is read the same way."""

from __future__ import annotations

import binascii
import json
from base64 import b64decode
from typing import Any

from ..messages import ImageBlock, TextBlock, ToolResultBlock, ToolResultContent

__all__ = ["MAX_RESULT_CHARS", "reduce_mcp_result", "result_content"]

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


# -- a local handler's MCP-shaped result ---------------------------------------------------------

_MCP_FIELDS = frozenset(("content", "isError", "structuredContent", "_meta"))
_MCP_ITEM_KEYS = {"mime_type": "mimeType"}


def reduce_mcp_result(value: Any) -> Any:
    """A local handler's MCP-shaped result (``{"content": [{"type": "text", "text": ...}],
    "isError": ...}``) as the result a remote tool's would be; any other value as it is.

    Text, images and resources are reduced as for remote tools (``result_content``), and
    ``isError: true`` makes an error result. Only a dict of MCP's result fields whose items all
    name their type (text items with string text) is read so; anything else stays a value."""
    if type(value) is not dict or not _mcp_shaped(value):
        return value
    wire = _McpResult(value["content"], value.get("structuredContent"))
    return ToolResultBlock("", result_content(wire), value.get("isError", False))


def _mcp_shaped(value: dict[str, Any]) -> bool:
    items = value.get("content")
    if not isinstance(items, list) or not value.keys() <= _MCP_FIELDS:
        return False
    if type(value.get("isError", False)) is not bool:
        return False
    return all(
        type(item) is dict
        and isinstance(item.get("type"), str)
        and (item["type"] != "text" or isinstance(item.get("text"), str))
        for item in items
    )


class _McpResult:
    """An MCP result given as a dict, read the way ``result_content`` reads the SDK's."""

    __slots__ = ("content", "structured_content")

    def __init__(self, items: list[dict[str, Any]], structured: Any) -> None:
        self.content = [_McpItem(item) for item in items]
        self.structured_content = structured


class _McpItem:
    """One content item (or its resource) given as a dict: MCP's camelCase keys as the SDK's
    snake_case attributes, a missing key as None."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        value = self._data.get(_MCP_ITEM_KEYS.get(name, name))
        return _McpItem(value) if type(value) is dict else value
