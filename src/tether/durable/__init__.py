"""Durable runs on Temporal: ``TemporalAgent`` runs an ``Agent``'s one loop as a workflow, each
model call and tool call an activity (needs the ``durable`` extra: ``temporalio``).

``current_call()`` / ``idempotency_key()`` tell a tool which durable call it runs for, without
importing Temporal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import lazy_names as _lazy_names

# The public names, each with the module it loads from on first use: ``__all__`` is this table,
# and the imports below repeat it for type checkers only (tests/test_public_api.py checks them).
_HOMES = {
    "Blobs": "blobs",
    "DevServer": "devserver",
    "DurableCall": "call",
    "DurableOptions": "options",
    "DurableRun": "client",
    "DurableRunError": "client",
    "FileBlobs": "blobs",
    "OffloadCodec": "codec",
    "Progress": "client",
    "RunOutput": "payloads",
    "StoreBlobs": "blobs",
    "TemporalAgent": "agent",
    "current_call": "call",
    "idempotency_key": "call",
}

__all__ = list(_HOMES)

if TYPE_CHECKING:
    from .agent import TemporalAgent as TemporalAgent
    from .blobs import Blobs as Blobs
    from .blobs import FileBlobs as FileBlobs
    from .blobs import StoreBlobs as StoreBlobs
    from .call import DurableCall as DurableCall
    from .call import current_call as current_call
    from .call import idempotency_key as idempotency_key
    from .client import DurableRun as DurableRun
    from .client import DurableRunError as DurableRunError
    from .client import Progress as Progress
    from .codec import OffloadCodec as OffloadCodec
    from .devserver import DevServer as DevServer
    from .options import DurableOptions as DurableOptions
    from .payloads import RunOutput as RunOutput

__getattr__ = _lazy_names(__name__, _HOMES)
