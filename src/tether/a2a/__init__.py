"""Remote agents over A2A 1.0 (needs the ``a2a`` extra: ``a2a-sdk``): ``A2AAgent(url)`` is an
agent served by any framework that speaks A2A, used where a tether agent goes: as a tool
(``as_tool()``), as a handoff target, or run on its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import lazy_names as _lazy_names

# The public names, each with the module it loads from on first use: ``__all__`` is this table,
# and the imports below repeat it for type checkers only (tests/test_public_api.py checks them).
_HOMES = {"A2AAgent": "agent"}

__all__ = list(_HOMES)

if TYPE_CHECKING:
    from .agent import A2AAgent as A2AAgent

__getattr__ = _lazy_names(__name__, _HOMES)
