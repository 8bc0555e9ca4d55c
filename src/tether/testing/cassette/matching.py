"""When a request is the recorded one: both compared as normalised JSON, after what legitimately
varies between runs is named the same (ids a client invents, timestamps; key order never counts),
and the difference shown as a short unified diff when they are not."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["closest", "describe", "difference", "normalised"]

# ids a client invents (uuids, bare or in tether's own ``call_…`` ids) and timestamps
_ID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|"
    r"(?<![0-9a-zA-Z])call_[0-9a-f]{24}(?![0-9a-zA-Z])|(?<![0-9a-zA-Z])[0-9a-f]{32}(?![0-9a-zA-Z])",
    re.I,
)
_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?",
)
# headers a server or a clock chooses, recorded but never compared
VARYING = frozenset({"mcp-session-id", "last-event-id", "idempotency-key", "x-request-id"})
_DIFF_LINES = 40


class _Names:
    """Gives each id met the name of its first appearance, so two requests that use their ids
    the same way compare equal, and one that mixes them up does not."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, match: re.Match[str]) -> str:
        return self.seen.setdefault(match.group(0), f"<id-{len(self.seen) + 1}>")

    def text(self, text: str) -> str:
        return _TIME.sub("<time>", _ID.sub(self, text))

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self.value(v) for k, v in sorted(value.items())}
        return value


def normalised(request: dict[str, Any]) -> dict[str, Any]:
    """The recorded form of a request, as it is compared: ids and times named, varying headers
    left out."""
    names = _Names()
    headers = {k: v for k, v in request.get("headers", {}).items() if k not in VARYING}
    form: dict[str, Any] = {
        "method": request["method"],
        "url": names.text(request["url"]),
        "headers": names.value(headers),
    }
    for kind in ("json", "text", "base64"):
        if kind in request:
            form[kind] = names.value(request[kind])
    return form


def describe(request: dict[str, Any]) -> str:
    """``METHOD URL``, for messages."""
    return f"{request['method']} {request['url']}"


def closest(request: dict[str, Any], candidates: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The candidate most like ``request``: the first to the same method and URL, else the
    first of all."""
    for candidate in candidates:
        if (candidate["method"], candidate["url"]) == (request["method"], request["url"]):
            return candidate
    return candidates[0] if candidates else None


def difference(recorded: dict[str, Any], sent: dict[str, Any]) -> str:
    """A unified diff, recorded to sent, of the two normalised requests (cut to 40 lines)."""

    def lines(request: dict[str, Any]) -> list[str]:
        text = json.dumps(normalised(request), indent=2, sort_keys=True, ensure_ascii=False)
        return text.splitlines()

    diff = list(
        difflib.unified_diff(lines(recorded), lines(sent), "recorded", "sent", n=2, lineterm="")
    )
    if len(diff) > _DIFF_LINES:
        diff = [*diff[:_DIFF_LINES], f"... ({len(diff) - _DIFF_LINES} more lines)"]
    return "\n".join(diff)
