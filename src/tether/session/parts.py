"""padwan-ai's multimodal input as tether blocks: a list of OpenAI content parts (``{"type":
"text", "text"}``, ``{"type": "image_url", "image_url": {"url"}}`` with a base64 ``data:`` URL
or an http(s) one, ``{"type": "input_audio", "input_audio": {"data", "format"}}``). A part that
cannot be read exactly is refused (``TypeError``/``ValueError`` naming it), never dropped."""

from __future__ import annotations

import binascii
import mimetypes
from base64 import b64decode
from collections.abc import Collection, Mapping, Sequence
from typing import Any, TypeAlias
from urllib.parse import urlsplit

from ..messages import AudioBlock, ContentBlock, ImageBlock, Message, TextBlock

__all__ = ["PART_TYPES", "UserInput", "content_blocks", "user_message"]

UserInput: TypeAlias = str | Message | Sequence[Mapping[str, Any]]
"""What ``send``/``stream`` take: text, a ``Message``, or a list of content parts."""

PART_TYPES = frozenset(("text", "image_url", "input_audio"))
_AUDIO = {"wav": "audio/wav", "mp3": "audio/mpeg"}
_SHOWN = 40  # characters of a bad value quoted in an error


def user_message(user_input: Any) -> str | Message:
    """``user_input`` as the engine takes it: text and messages as they are, a list of content
    parts as one user message."""
    if isinstance(user_input, str | Message):
        return user_input
    if isinstance(user_input, list | tuple):
        return Message("user", content_blocks(user_input))
    raise TypeError(
        "send/stream take a str, a Message or a list of content parts, "
        f"got {type(user_input).__name__}"
    )


def content_blocks(parts: Sequence[Any], kinds: Collection[str] = PART_TYPES) -> list[ContentBlock]:
    """The blocks of ``parts`` (of the given ``kinds`` only), in order."""
    if not parts:
        raise ValueError("a list of content parts needs at least one part (got no parts)")
    return [_block(part, n, kinds) for n, part in enumerate(parts)]


def _block(part: Any, n: int, kinds: Collection[str]) -> ContentBlock:
    at = f"content part {n}"
    if not isinstance(part, Mapping):
        raise TypeError(
            f"{at}: a part is a dict such as {{'type': 'text', 'text': ...}}, "
            f"got {type(part).__name__} {_shown(part)}"
        )
    kind = part.get("type")
    if not isinstance(kind, str) or kind not in kinds:
        allowed = ", ".join(repr(k) for k in sorted(kinds))
        raise ValueError(f"{at}: its type is {_shown(kind)}; tether reads {allowed} here")
    _only(part, {"type", kind}, at)
    if kind == "text":
        return TextBlock(_text(part, "text", at))
    body = part.get(kind)
    if not isinstance(body, Mapping):
        raise TypeError(f"{at}: {kind!r} must be an object, got {type(body).__name__}")
    if kind == "image_url":
        _only(body, {"url"}, f"{at}: image_url")
        return _image(_text(body, "url", at), at)
    _only(body, {"data", "format"}, f"{at}: input_audio")
    fmt, data = _text(body, "format", at), _text(body, "data", at)
    if fmt not in _AUDIO:
        raise ValueError(f"{at}: audio format {_shown(fmt)}; tether reads wav or mp3")
    _base64(data, at)
    return AudioBlock(_AUDIO[fmt], data)


def _image(url: str, at: str) -> ImageBlock:
    """A ``data:`` URL as inline base64; an http(s) URL kept as a URL (its type guessed from
    its path, ``image/*`` when that says nothing)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("http", "https"):
        guessed = mimetypes.guess_type(urlsplit(url).path)[0]
        kind = guessed if guessed and guessed.startswith("image/") else "image/*"
        return ImageBlock(kind, url=url)
    if scheme != "data":
        raise ValueError(f"{at}: an image URL is a data: or http(s) URL, got {_shown(url)}")
    header, comma, data = url[len("data:") :].partition(",")
    media_type, *params = header.split(";")
    if not comma or "base64" not in params:
        raise ValueError(f"{at}: a data: URL of an image must be base64 (data:<type>;base64,...)")
    if not media_type.lower().startswith("image/"):
        raise ValueError(f"{at}: the data: URL's type {_shown(media_type)} is not an image type")
    _base64(data, at)
    return ImageBlock(media_type.lower(), data)


def _base64(data: str, at: str) -> None:
    try:
        b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{at}: its data is not valid base64") from None


def _text(body: Mapping[str, Any], key: str, at: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise TypeError(f"{at}: {key!r} must be a string, got {type(value).__name__}")
    return value


def _only(body: Mapping[str, Any], keys: set[str], at: str) -> None:
    extra = sorted(str(k) for k in body if k not in keys)
    if extra:
        named = ", ".join(repr(k) for k in extra)
        raise ValueError(f"{at}: tether keeps no {named} (it would be lost); leave it out")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"
