"""``result_text``: a tool's raw result as the one string padwan-ai's users read it as (their
``_extract_text``), for code that hands tool results on as text itself."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..messages import ImageBlock, TextBlock
from ..tools.results import to_content

__all__ = ["result_text"]

_PAYLOAD = ("content", "structuredContent", "isError", "_meta")  # a tool result's own fields


def result_text(value: Any) -> str:
    """``value`` as text: a string as it is; an MCP result holding only text blocks
    (``{"content": [{"type": "text", "text": ...}, ...]}``) as their texts, one per line;
    anything else as JSON, whole, so nothing is dropped: an ``isError`` flag, structured
    content and image or resource blocks all stay in it and read back with ``json.loads``.
    An MCP SDK result (``CallToolResult``) is read as its wire form.

    The session itself does not flatten a result so: an MCP result's ``isError`` reaches the
    model as an error result, and its images as images."""
    if isinstance(value, str):
        return value
    value = _wire(value)
    if isinstance(value, Mapping):
        texts = _texts_only(value)
        if texts is not None:
            return texts
    content = to_content(value)
    if isinstance(content, str):
        return content
    return "\n".join(b.text if isinstance(b, TextBlock) else _image(b) for b in content)


def _wire(value: Any) -> Any:
    """An MCP SDK result as the payload the server sent (``isError`` only when true); any
    other value as it is."""
    dump = getattr(value, "model_dump", None)
    if not callable(dump) or not isinstance(getattr(value, "content", None), list):
        return value
    wire = dump(mode="json", by_alias=True, exclude_none=True)
    if not isinstance(wire, dict):
        return value
    if wire.get("isError") is False:
        del wire["isError"]
    return {key: wire[key] for key in _PAYLOAD if key in wire}


def _texts_only(result: Mapping[str, Any]) -> str | None:
    """The texts of a result that is nothing but a non-empty list of text blocks, else None."""
    if set(result) != {"content"}:
        return None
    blocks = result["content"]
    if not isinstance(blocks, list):
        return None
    texts: list[str] = []
    for block in blocks:
        if not isinstance(block, Mapping) or block.get("type") != "text":
            return None
        text = block.get("text")
        if not isinstance(text, str):
            return None
        if text:
            texts.append(text)
    return "\n".join(texts) if texts else None


def _image(block: ImageBlock) -> str:
    return f"[image ({block.media_type})]"
