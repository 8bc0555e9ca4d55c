"""Tool names as every provider takes them: 1-64 letters, digits, ``_`` and ``-`` (OpenAI's rule
for function names, the strictest of the wire formats). A server's name that does not fit is cut,
with a short hash of the whole name added so that two long names stay apart."""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_NAME", "fitted"]

MAX_NAME = 64
_FITS = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_NAME}}}")
_OTHER = re.compile(r"[^A-Za-z0-9_-]")
_HASH = 8  # hex digits of the hash kept


def fitted(name: str) -> str:
    """``name`` if a provider takes it as it is; else its allowed characters cut to fit, then
    ``_`` and a hash of the whole name. The same name always gives the same result, and a
    fitted name is its own fit."""
    if _FITS.fullmatch(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH]
    kept = _OTHER.sub("_", name)[: MAX_NAME - _HASH - 1]
    return f"{kept}_{digest}"
