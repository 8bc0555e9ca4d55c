"""A conversation's context: where its messages live (``ContextStore``, ``MemoryContextStore``),
how much of it the model sees (``ContextPolicy``, ``CharBudget``, ``truncate``,
``summarize_dropped``), and compaction (``Compaction``, ``Compactor``, and the compaction record a
history keeps: ``compaction_record``, ``context_start``, ``kept_of``, ``summary_of``).

Modules outside this package import these names from here; every name loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import lazy_names as _lazy_names

# Each name with the module it loads from on first use; ``__all__`` is this table.
_HOMES = {
    "CharBudget": "policy",
    "COMPACTION": "records",
    "Compaction": "compaction",
    "compaction_record": "records",
    "Compactor": "compaction",
    "context_start": "records",
    "ContextPolicy": "policy",
    "ContextReader": "store",
    "ContextStore": "store",
    "estimate_chars": "policy",
    "is_tool_results": "policy",
    "kept_of": "records",
    "load_context": "store",
    "MemoryContextStore": "store",
    "new_session_id": "store",
    "SessionOpener": "store",
    "summarize_dropped": "policy",
    "summary_of": "records",
    "SUMMARY_PREFIX": "records",
    "transcript": "compaction",
    "Trim": "policy",
    "truncate": "policy",
}

__all__ = list(_HOMES)

if TYPE_CHECKING:
    from .compaction import Compaction as Compaction
    from .compaction import Compactor as Compactor
    from .compaction import transcript as transcript
    from .policy import CharBudget as CharBudget
    from .policy import ContextPolicy as ContextPolicy
    from .policy import Trim as Trim
    from .policy import estimate_chars as estimate_chars
    from .policy import is_tool_results as is_tool_results
    from .policy import summarize_dropped as summarize_dropped
    from .policy import truncate as truncate
    from .records import COMPACTION as COMPACTION
    from .records import SUMMARY_PREFIX as SUMMARY_PREFIX
    from .records import compaction_record as compaction_record
    from .records import context_start as context_start
    from .records import kept_of as kept_of
    from .records import summary_of as summary_of
    from .store import ContextReader as ContextReader
    from .store import ContextStore as ContextStore
    from .store import MemoryContextStore as MemoryContextStore
    from .store import SessionOpener as SessionOpener
    from .store import load_context as load_context
    from .store import new_session_id as new_session_id

__getattr__ = _lazy_names(__name__, _HOMES)
