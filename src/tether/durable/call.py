"""What a tool running as a durable activity may ask: which call it is, and its idempotency key
(the workflow id, the model call's number and the call id), to pass to the outside world so a
retried call does its work once."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["DurableCall", "current_call", "idempotency_key"]


@dataclass(frozen=True, slots=True)
class DurableCall:
    """The durable tool call running now: ``key`` is the same on every attempt of this call and
    differs for every other call; ``attempt`` counts from 1."""

    workflow_id: str
    call_id: str
    key: str
    attempt: int


CURRENT: ContextVar[DurableCall | None] = ContextVar("tether_durable_call", default=None)


def current_call() -> DurableCall | None:
    """The durable call this tool is running for (None outside a durable run)."""
    return CURRENT.get()


def idempotency_key() -> str | None:
    """The running durable call's idempotency key (None outside a durable run)."""
    call = CURRENT.get()
    return None if call is None else call.key
