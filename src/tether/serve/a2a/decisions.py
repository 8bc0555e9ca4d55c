"""A follow-up message on an ``input-required`` task, read as the decisions on its held calls.

The text ``approve`` approves every held call; ``deny`` (then a reason, optionally after a colon)
denies every one. A data part ``{"approved": bool, "reason": str}`` decides every held call the
same way; ``{"decisions": {call id: {"approved": bool, "reason": str}}}`` decides calls one by one
(a call left out keeps waiting, and the task asks again). Anything else is refused with what to
send, before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from a2a.types.a2a_pb2 import Message
from google.protobuf.json_format import MessageToDict

from ...events import PendingCall

__all__ = ["Decided", "Undecidable", "decisions_of", "how_to_answer"]

DENIED = "denied by the A2A client"


class Undecidable(ValueError):
    """A follow-up that decides nothing: what it lacked, and what to send."""


@dataclass(frozen=True, slots=True)
class Decided:
    """The calls to run and those to deny (with the reason the model reads)."""

    approve: tuple[str, ...] = ()
    deny: dict[str, str] = field(default_factory=dict)


def how_to_answer(held: Sequence[PendingCall]) -> str:
    """What a caller sends to decide the ``held`` calls."""
    names = ", ".join(f"{call.name} ({call.id})" for call in held)
    return (
        f"calls wait for approval: {names}. Reply on this task with the text `approve`, or "
        '`deny` and a reason, or a data part {"approved": true|false, "reason": "..."} '
        '(call by call: {"decisions": {"<call id>": {"approved": ..., "reason": ...}}})'
    )


def decisions_of(message: Message, held: Sequence[PendingCall]) -> Decided:
    """The decisions ``message`` makes on the ``held`` calls; ``Undecidable`` otherwise."""
    if any(call.asks for call in held):
        raise Undecidable("a call waits for the user's input, which A2A serving cannot answer yet")
    data = [MessageToDict(part)["data"] for part in message.parts if part.HasField("data")]
    texts = [part.text for part in message.parts if part.HasField("text")]
    if len(data) + len(texts) != 1 or len(message.parts) != 1:
        raise Undecidable(f"send exactly one part; {how_to_answer(held)}")
    ids = [call.id for call in held]
    if data:
        return _from_data(data[0], ids, held)
    return _from_text(texts[0], ids, held)


def _from_text(text: str, ids: list[str], held: Sequence[PendingCall]) -> Decided:
    word, _, rest = text.strip().partition(" ")
    word = word.rstrip(":").lower()
    if word == "approve" and not rest.strip():
        return Decided(approve=tuple(ids))
    if word == "deny":
        reason = rest.strip().removeprefix(":").strip() or DENIED
        return Decided(deny=dict.fromkeys(ids, reason))
    raise Undecidable(f"{text[:80]!r} decides nothing; {how_to_answer(held)}")


def _from_data(data: Any, ids: list[str], held: Sequence[PendingCall]) -> Decided:
    if not isinstance(data, dict):
        raise Undecidable(f"the data part is not an object; {how_to_answer(held)}")
    if set(data) == {"decisions"} and isinstance(data["decisions"], dict):
        unknown = sorted(set(data["decisions"]) - set(ids))
        if unknown:
            raise Undecidable(
                f"no held call has the id {', '.join(unknown)}; {how_to_answer(held)}"
            )
        return _merged([_one(v, [k], held) for k, v in data["decisions"].items()])
    return _one(data, ids, held)


def _one(entry: Any, ids: list[str], held: Sequence[PendingCall]) -> Decided:
    """One ``{"approved": bool, "reason": str}`` applied to ``ids``."""
    if not isinstance(entry, Mapping) or not set(entry) <= {"approved", "reason"}:
        raise Undecidable(f"a decision has the fields approved and reason; {how_to_answer(held)}")
    approved, reason = entry.get("approved"), entry.get("reason", "")
    if not isinstance(approved, bool) or not isinstance(reason, str):
        raise Undecidable(f"approved is true or false, reason a string; {how_to_answer(held)}")
    if approved:
        return Decided(approve=tuple(ids))
    return Decided(deny=dict.fromkeys(ids, reason.strip() or DENIED))


def _merged(parts: list[Decided]) -> Decided:
    approve = tuple(call for part in parts for call in part.approve)
    deny = {call: why for part in parts for call, why in part.deny.items()}
    return Decided(approve, deny)
