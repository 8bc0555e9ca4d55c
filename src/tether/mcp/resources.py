"""An MCP server's resources as tether values: ``Resource`` (listed, or read with its content:
text as ``str``, binary kept as ``bytes``) and ``ResourceTemplate``, and a resource as the
content blocks of a user message (``Resource.blocks``, ``Resource.message``). A server is
untrusted: what it lists is checked entry by entry, what it sends back is capped in size."""

from __future__ import annotations

import binascii
from base64 import b64decode, b64encode
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..messages import AudioBlock, ContentBlock, ImageBlock, Message, TextBlock

__all__ = [
    "MAX_RESOURCE_BYTES",
    "Resource",
    "ResourceTemplate",
    "TooLarge",
    "read_contents",
    "resource_of",
    "template_of",
]

MAX_RESOURCE_BYTES = 8 * 1024 * 1024  # of one read, all its contents together (text as UTF-8)
MAX_DESCRIPTION = 4_000  # characters of a description kept
_IMAGES = frozenset(("image/png", "image/jpeg", "image/gif", "image/webp"))
_AUDIO = frozenset(("audio/wav", "audio/x-wav", "audio/mpeg", "audio/mp3"))
_TEXTUAL = ("application/json", "application/xml", "application/yaml", "application/javascript")

Binary = Literal["refuse", "reference"]


class TooLarge(ValueError):
    """A resource's content was larger than the cap (the server wraps it in ``McpError``)."""


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource of an MCP server. Listed, it has no content (``text`` and ``data`` are
    None); read (``read_resource``), it has ``text`` or ``data`` (binary, kept as bytes).
    ``server`` names the server it came from (in an ``AgentSession``, the session's name for
    it); ``more`` holds further contents the same read returned (a server may answer one URI
    with several, e.g. a folder's files)."""

    uri: str
    name: str
    mime_type: str | None = None
    text: str | None = None
    data: bytes | None = None
    description: str | None = None
    size: int | None = None
    server: str | None = None
    more: tuple[Resource, ...] = ()

    def blocks(self, *, binary: Binary = "refuse") -> tuple[ContentBlock, ...]:
        """This resource (and its ``more``) as content blocks for a user message: text as
        text (binary of a textual type, UTF-8, too), images as image blocks, WAV and MP3 as
        audio blocks. Any other binary is refused with a ``ValueError`` unless
        ``binary="reference"``, which puts a line naming it (URI, type, size) in its place.
        A resource only listed, not read, is refused: read it first."""
        if binary not in ("refuse", "reference"):
            raise ValueError(f"binary must be 'refuse' or 'reference', got {binary!r}")
        return tuple(_block(part, binary) for part in (self, *self.more))

    def message(self, text: str | None = None, *, binary: Binary = "refuse") -> Message:
        """A user message carrying ``text`` (if given) and then this resource's ``blocks``."""
        lead = (TextBlock(text),) if text else ()
        return Message("user", (*lead, *self.blocks(binary=binary)))


@dataclass(frozen=True, slots=True)
class ResourceTemplate:
    """A family of resources an MCP server can read, named by an RFC 6570 URI template
    (``note://chapter/{number}``): fill it in and ``read_resource`` the URI."""

    uri_template: str
    name: str
    mime_type: str | None = None
    description: str | None = None
    server: str | None = None


def _block(part: Resource, binary: Binary) -> ContentBlock:
    if part.text is not None:
        return TextBlock(part.text)
    if part.data is None:
        raise ValueError(
            f"resource {part.uri} was only listed: read it (read_resource) to attach its content"
        )
    mime = (part.mime_type or "").split(";")[0].strip().lower()
    if mime in _IMAGES:
        return ImageBlock(mime, b64encode(part.data).decode())
    if mime in _AUDIO:
        return AudioBlock(
            "audio/wav" if "wav" in mime else "audio/mpeg", b64encode(part.data).decode()
        )
    if mime.startswith("text/") or mime in _TEXTUAL:
        try:
            return TextBlock(part.data.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    said = f"resource {part.uri} ({mime or 'no type'}, {len(part.data)} bytes)"
    if binary == "reference":
        return TextBlock(f"[{said} not attached: a model reads no such content]")
    raise ValueError(
        f"{said} is binary that no content block carries; attach it with binary='reference' "
        "to name it in its place, or convert it first"
    )


def resource_of(entry: Any, server: str | None) -> Resource:
    """A listed resource (the SDK's ``Resource``)."""
    return Resource(
        uri=str(entry.uri),
        name=str(entry.name),
        mime_type=entry.mime_type,
        description=_cut(entry.description),
        size=entry.size if isinstance(entry.size, int) else None,
        server=server,
    )


def template_of(entry: Any, server: str | None) -> ResourceTemplate:
    """A listed resource template (the SDK's ``ResourceTemplate``)."""
    return ResourceTemplate(
        uri_template=str(entry.uri_template),
        name=str(entry.name),
        mime_type=entry.mime_type,
        description=_cut(entry.description),
        server=server,
    )


def read_contents(
    uri: str, contents: list[Any], server: str | None, listed: Resource | None, limit: int
) -> Resource:
    """The contents of one ``resources/read`` answer as one ``Resource`` (the content for
    ``uri`` first, the others in ``more``); ``TooLarge`` past ``limit`` bytes in all."""
    if not contents:
        raise ValueError(f"the server read nothing for {uri}")
    total = sum(_size(c) for c in contents)
    if total > limit:
        raise TooLarge(f"resource {uri} is {total} bytes, more than the {limit} allowed")
    parts = [_content(c, server, listed) for c in contents]
    first = next((p for p in parts if p.uri == uri), parts[0])
    return replace(first, more=tuple(p for p in parts if p is not first))


def _content(item: Any, server: str | None, listed: Resource | None) -> Resource:
    uri = str(item.uri)
    known = listed if listed is not None and listed.uri == uri else None
    text, blob = getattr(item, "text", None), getattr(item, "blob", None)
    data = None
    if not isinstance(text, str):
        text = None
        try:
            data = b64decode(str(blob), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"the server sent {uri} as a blob that is not base64") from None
    return Resource(
        uri=uri,
        name=known.name if known is not None else uri,
        mime_type=item.mime_type or (known.mime_type if known is not None else None),
        text=text,
        data=data,
        description=known.description if known is not None else None,
        size=len(data) if data is not None else len(text.encode()) if text is not None else None,
        server=server,
    )


def _size(item: Any) -> int:
    """Bytes of one content: its text as UTF-8 (counted cheaply), or its decoded blob."""
    text = getattr(item, "text", None)
    if isinstance(text, str):
        return len(text) if text.isascii() else len(text.encode())
    blob = getattr(item, "blob", None)
    return len(blob) * 3 // 4 if isinstance(blob, str) else 0


def _cut(text: Any) -> str | None:
    return text[:MAX_DESCRIPTION] if isinstance(text, str) and text else None
