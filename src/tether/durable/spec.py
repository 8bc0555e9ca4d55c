"""``DurableSpec``: what a durable agent's workflow and activities are made from (the agent, its
name, store, approval rule and options), as plain data handed down to them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..agent import Agent
from ..loop import Approval
from ..stores.base import SessionRows
from .blobs import Blobs
from .options import DurableOptions

__all__ = ["DurableSpec"]


@dataclass(frozen=True, slots=True)
class DurableSpec:
    """One durable agent: ``names`` are its activities' names by kind; ``blobs`` where its
    large payloads go (the store's rows, or the agent's ``blobs``; None: nowhere)."""

    agent: Agent
    name: str
    store: SessionRows | None
    approval: Approval | None
    options: DurableOptions
    names: Mapping[str, str]
    blobs: Blobs | None = None
