"""The client's history (AG-UI ``messages``) against the stored session, which is the truth.

Both are read as a sequence of what counts: the user's words, the assistant's words and the
calls it made (by id, each once: a run may stream a call again). Reasoning, activity, system,
developer and tool messages are not compared in order (a result the client got later than it
is stored is no difference); a result for a call the session never made is refused.

A client that sends only its new message, or the stored history and something new (a user
message, results for calls that wait for the front end), runs as it asks. One whose history
differs (a message edited or removed, an answer dropped to have it again) is refused with what
differs, unless it asks for a fork (``forwardedProps.tether.edit``): then the session is forked
where it differs (``fork_point``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..messages import Message
from .client_input import ClientMessage
from .history import agui_messages
from .wire import Refused

__all__ = ["EDIT_HINT", "Mark", "client_marks", "fork_point", "stored_marks"]

EDIT_HINT = (
    "send only the new message, or the stored history (GET /api/sessions/{id}) and the new "
    'message; to fork the session there instead, send forwardedProps {"tether": {"edit": true}} '
    "with the history up to the point of the edit and the new user message"
)


@dataclass(frozen=True, slots=True)
class Mark:
    """One thing a history holds that is compared: its kind, its text or call id, and where
    (the stored position, for the stored history; the index in ``messages``, for the client's)."""

    kind: str
    value: str
    at: int

    def same(self, other: Mark) -> bool:
        return (self.kind, self.value) == (other.kind, other.value)

    def said(self) -> str:
        value = self.value if len(self.value) <= 40 else self.value[:40] + "…"
        return f"{self.kind} {value!r}"


def stored_marks(history: Sequence[Message]) -> list[Mark]:
    """What the stored ``history`` holds, as compared, each with its stored position."""
    marks: list[Mark] = []
    seen: set[str] = set()
    for shown in agui_messages(history):
        at = int(str(shown["id"])[1:].split(".", 1)[0])
        role, text = shown["role"], shown.get("content")
        calls = [c["id"] for c in shown.get("toolCalls", ())]
        marks.extend(_marks(role, text if isinstance(text, str) else "", calls, at, seen))
    return marks


def client_marks(messages: Sequence[ClientMessage]) -> list[Mark]:
    """What the client's ``messages`` hold, as compared, each with its index."""
    marks: list[Mark] = []
    seen: set[str] = set()
    for at, message in enumerate(messages):
        marks.extend(_marks(message.role, message.text, message.calls, at, seen))
    return marks


def _marks(role: str, text: str, calls: Sequence[str], at: int, seen: set[str]) -> list[Mark]:
    if role not in ("user", "assistant"):
        return []
    marks = [Mark(role, text.strip(), at)] if text.strip() else []
    for call in calls:
        if call not in seen:
            seen.add(call)
            marks.append(Mark("call", call, at))
    return marks


def fork_point(
    history: Sequence[Message], prefix: Sequence[ClientMessage], edit: bool, has_new: bool
) -> int | None:
    """None when the client's ``prefix`` (its history before what is new) is empty or is the
    stored ``history``; else, for an ``edit`` with a new user message (``has_new``), the
    stored position to fork at; else a 409 that says what differs and what to do."""
    if not prefix:
        return None
    stored, sent = stored_marks(history), client_marks(prefix)
    for i, mark in enumerate(sent):
        if i >= len(stored):
            raise Refused(
                409,
                f"messages[{mark.at}] ({mark.said()}) is not in the stored session: {EDIT_HINT}",
            )
        if not mark.same(stored[i]):
            if edit and has_new:
                raise Refused(
                    409,
                    f"an edit forks where the history differs (stored message s{stored[i].at}) "
                    "and takes the new user message from there: send the history up to that "
                    f"point only, without messages[{mark.at}] and what follows it",
                )
            raise Refused(
                409,
                f"the history differs from the stored session at s{stored[i].at}: stored "
                f"{stored[i].said()}, sent {mark.said()} (messages[{mark.at}]): {EDIT_HINT}",
            )
    if len(sent) == len(stored):
        return None
    missing = stored[len(sent)]
    if edit and has_new:
        return missing.at
    raise Refused(
        409,
        f"the history leaves out what the stored session holds from s{missing.at} on "
        f"({missing.said()}): {EDIT_HINT}",
    )
