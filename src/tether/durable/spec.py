"""``DurableSpec``: what a durable agent's workflow and activities are made from (the agent, its
name, store, approval rule and options), as plain data handed down to them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..agent import Agent
from ..stores.base import SessionRows
from .options import DurableOptions

__all__ = ["Approval", "DurableSpec"]

Approval: TypeAlias = Collection[str] | Callable[[str, Mapping[str, Any]], bool]
"""The tools whose calls wait for a person: their names, or a test of (name, arguments)."""


@dataclass(frozen=True, slots=True)
class DurableSpec:
    """One durable agent: ``names`` are its activities' names by kind."""

    agent: Agent
    name: str
    store: SessionRows | None
    approval: Approval | None
    options: DurableOptions
    names: Mapping[str, str]
