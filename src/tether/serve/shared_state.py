"""AG-UI shared state: one JSON object per session, kept in the store beside the session (so it
outlives the server), sent as STATE_SNAPSHOT when a run starts, readable and changeable by the
agent's tools during a served run (``shared_state()``), each change sent as a STATE_DELTA (an
RFC 6902 JSON Patch) after the tool call that made it.

The state is kept as the last message of a hidden session of the same store (its id is
``STATE_PREFIX`` and a digest of the session's), which the session list leaves out and deleting
the session removes.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..messages import Message, TextBlock
from ..stores.base import SessionStore

__all__ = [
    "STATE_PREFIX",
    "delete_state",
    "json_patch",
    "load_state",
    "save_state",
    "shared_state",
    "sharing",
    "state_session",
]

STATE_PREFIX = "tether-state:"
_KEEP = 16  # states a hidden session holds before it is written afresh

_STATE: ContextVar[dict[str, Any] | None] = ContextVar("tether_shared_state", default=None)


def shared_state() -> dict[str, Any] | None:
    """The session's shared state (AG-UI ``state``) in a tool of a run ``tether serve`` runs;
    None elsewhere. Change it in place: the front end gets each change as a STATE_DELTA after
    the call, and the session keeps it."""
    return _STATE.get()


@contextmanager
def sharing(state: dict[str, Any]) -> Iterator[None]:
    """Make ``state`` what ``shared_state()`` gives in this task (and tasks it starts)."""
    token = _STATE.set(state)
    try:
        yield
    finally:
        _STATE.reset(token)


def state_session(session_id: str) -> str:
    """The id of the hidden session that keeps ``session_id``'s state."""
    return STATE_PREFIX + hashlib.sha256(session_id.encode()).hexdigest()[:40]


async def load_state(store: SessionStore, session_id: str) -> dict[str, Any]:
    """The state the store keeps for ``session_id`` (empty when none)."""
    kept = await store.history_of(state_session(session_id))
    if not kept:
        return {}
    text = "".join(b.text for b in kept[-1].content if type(b) is TextBlock)
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


async def save_state(store: SessionStore, session_id: str, state: dict[str, Any]) -> None:
    """Keep ``state`` as ``session_id``'s (one append; the hidden session is written afresh
    once it holds ``_KEEP`` states)."""
    kept = await store.history_of(state_session(session_id))
    context = await store.open(state_session(session_id))
    if len(kept) >= _KEEP:  # counted, not the store's position (a file store's is bytes)
        await context.clear()
    await context.append(Message("user", (TextBlock(json.dumps(state, allow_nan=False)),)))


async def delete_state(store: SessionStore, session_id: str) -> None:
    """Forget ``session_id``'s state."""
    await store.delete(state_session(session_id))


def json_patch(old: Any, new: Any, path: str = "") -> list[dict[str, Any]]:
    """The RFC 6902 operations that make ``old`` into ``new`` (objects key by key, lists of the
    same length item by item; anything else replaced whole)."""
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[dict[str, Any]] = []
        for key in old.keys() - new.keys():
            ops.append({"op": "remove", "path": f"{path}/{_escaped(key)}"})
        for key, value in new.items():
            at = f"{path}/{_escaped(key)}"
            if key not in old:
                ops.append({"op": "add", "path": at, "value": copy.deepcopy(value)})
            else:
                ops.extend(json_patch(old[key], value, at))
        return ops
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            op
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for op in json_patch(a, b, f"{path}/{i}")
        ]
    if type(old) is type(new) and old == new:
        return []
    return [{"op": "replace", "path": path, "value": copy.deepcopy(new)}]


def _escaped(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
