"""What a guard (or a guardrail) decides: ``Allow``, ``Deny(reason)`` or ``Rewrite(arguments)``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = ["Allow", "Deny", "GuardDecision", "Rewrite"]


@dataclass(frozen=True, slots=True)
class Allow:
    """Let the call (or the run) go on unchanged."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse; ``reason`` is shown to the model (tool guards) or raised (guardrails)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Go on with these arguments instead."""

    arguments: Mapping[str, Any]


GuardDecision: TypeAlias = Allow | Deny | Rewrite | None
