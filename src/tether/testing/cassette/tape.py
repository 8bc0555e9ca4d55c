"""A cassette's file: pretty JSON, one streamed chunk a line, so a re-recording reads well in a
diff; its exchanges sealed by a sha256, so a file edited or cut since it was recorded is a
``CassetteError`` rather than a replay of something no server said."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from ...errors import CassetteError

__all__ = ["FORMAT", "load", "save"]

FORMAT = 1
_MARK = re.compile(r'"\\u0000chunk (\d+)\\u0000"')
_RERECORD = "re-record it (pytest --record=all, or Cassette(path, mode='all'))"


def _seal(exchanges: list[dict[str, Any]]) -> str:
    text = json.dumps(exchanges, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def save(path: Path, exchanges: list[dict[str, Any]]) -> None:
    """Write ``exchanges`` whole (a crash leaves the old file or the new one, never half)."""
    marks: list[str] = []
    shown = [_marked(exchange, marks) for exchange in exchanges]
    document = {"tether_cassette": FORMAT, "sha256": _seal(exchanges), "exchanges": shown}
    text = json.dumps(document, indent=2, ensure_ascii=False)
    text = _MARK.sub(lambda m: marks[int(m.group(1))], text)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text + "\n", encoding="utf-8")
    os.replace(partial, path)


def _marked(exchange: dict[str, Any], marks: list[str]) -> dict[str, Any]:
    """``exchange`` with each chunk a mark that ``save`` replaces with the chunk on one line."""
    response = exchange.get("response")
    if response is None:
        return exchange
    chunks = []
    for chunk in response["chunks"]:
        chunks.append(f"\x00chunk {len(marks)}\x00")
        marks.append(json.dumps(chunk, ensure_ascii=False))
    return {**exchange, "response": {**response, "chunks": chunks}}


def load(path: Path) -> list[dict[str, Any]]:
    """The exchanges of the cassette at ``path``, checked whole."""
    where = str(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CassetteError(f"there is no such file: {_RERECORD}", path=where) from None
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise CassetteError(
            f"damaged or cut short, not JSON ({exc}): {_RERECORD}", path=where
        ) from exc
    if not isinstance(document, dict) or document.get("tether_cassette") != FORMAT:
        raise CassetteError(
            f"not a tether cassette (no 'tether_cassette': {FORMAT}): {_RERECORD}",
            path=where,
        )
    exchanges = document.get("exchanges")
    if not isinstance(exchanges, list) or not all(_valid(e) for e in exchanges):
        raise CassetteError(f"damaged: an exchange is malformed: {_RERECORD}", path=where)
    if document.get("sha256") != _seal(exchanges):
        raise CassetteError(
            f"edited or cut since it was recorded (its sha256 does not match): {_RERECORD}",
            path=where,
        )
    return exchanges


def _valid(exchange: Any) -> bool:
    if not isinstance(exchange, dict):
        return False
    request, response = exchange.get("request"), exchange.get("response")
    if not isinstance(request, dict) or not isinstance(request.get("method"), str):
        return False
    if not isinstance(request.get("url"), str) or not isinstance(request.get("headers"), dict):
        return False
    if response is None:
        return isinstance(exchange.get("failure"), dict)
    return (
        isinstance(response, dict)
        and isinstance(response.get("status"), int)
        and isinstance(response.get("headers"), dict)
        and isinstance(response.get("chunks"), list)
        and all(_chunk(c) for c in response["chunks"])
        and response.get("end") in ("complete", "open", "error")
    )


def _chunk(chunk: Any) -> bool:
    return (
        isinstance(chunk, dict)
        and isinstance(chunk.get("after"), int | float)
        and (isinstance(chunk.get("text"), str) or isinstance(chunk.get("base64"), str))
    )
