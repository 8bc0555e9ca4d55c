"""Durable runs on Temporal: ``TemporalAgent`` runs an ``Agent``'s one loop as a workflow, each
model call and tool call an activity (needs the ``durable`` extra: ``temporalio``).

``current_call()`` / ``idempotency_key()`` tell a tool which durable call it runs for, without
importing Temporal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names
from .call import DurableCall, current_call, idempotency_key

if TYPE_CHECKING:
    from .agent import TemporalAgent
    from .client import DurableRun, DurableRunError, Progress
    from .devserver import DevServer
    from .options import DurableOptions
    from .payloads import RunOutput

__all__ = [
    "DevServer",
    "DurableCall",
    "DurableOptions",
    "DurableRun",
    "DurableRunError",
    "Progress",
    "RunOutput",
    "TemporalAgent",
    "current_call",
    "idempotency_key",
]

__getattr__ = lazy_names(
    __name__,
    {
        "TemporalAgent": "agent",
        "DurableRun": "client",
        "DurableRunError": "client",
        "Progress": "client",
        "DevServer": "devserver",
        "DurableOptions": "options",
        "RunOutput": "payloads",
    },
)
