"""What a run tells the model before its next call: the notice of a handoff just taken, else
the steering messages a caller queued (stored as they are told)."""

from __future__ import annotations

from ..events import Handoff, SteeringInjected
from .control import Steering
from .handoff import Handoffs
from .transcript import Transcript

__all__ = ["pending_notice", "tell"]


def pending_notice(handoffs: Handoffs | None, steering: Steering | None) -> bool:
    """Whether a handoff or steering messages are told before the next model call."""
    return (handoffs is not None and handoffs.notice is not None) or (
        steering is not None and steering.has_pending
    )


async def tell(
    handoffs: Handoffs | None, steering: Steering | None, transcript: Transcript
) -> Handoff | SteeringInjected:
    """The handoff to tell, else the steering messages, appended to the history."""
    notice = None if handoffs is None else handoffs.tell()
    if notice is not None:
        return notice
    assert steering is not None
    injected = tuple(steering.drain())
    for message in injected:
        await transcript.append(message)
    return SteeringInjected(injected)
