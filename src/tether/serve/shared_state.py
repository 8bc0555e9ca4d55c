"""AG-UI shared state: one JSON object per session, kept in the store beside the session (so it
outlives the server), sent as STATE_SNAPSHOT when a run starts, readable and changeable by the
agent's tools during a served run (``shared_state()``), each change sent as a STATE_DELTA (an
RFC 6902 JSON Patch) after the tool call that made it.

The state is kept in two hidden sessions of the same store (their ids are ``STATE_PREFIX`` and
a digest of the session's), numbered, the newest wins; one takes the appends until it is full,
then the other is cleared and takes them, so the newest state is always stored whole. The
session list leaves them out and deleting the session removes them.
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
    """The id of the first of the two hidden sessions that keep ``session_id``'s state."""
    return STATE_PREFIX + hashlib.sha256(session_id.encode()).hexdigest()[:40]


def _sessions(session_id: str) -> tuple[str, str]:
    first = state_session(session_id)
    return first, first + ".b"


async def _kept(store: SessionStore, session_id: str) -> dict[str, tuple[int, dict[str, Any], int]]:
    """Each hidden session's newest state, by its id: the state's number, the state, and how
    many states the session holds."""
    found = {}
    for hidden in _sessions(session_id):
        kept = await store.history_of(hidden)
        if kept:
            body = json.loads("".join(b.text for b in kept[-1].content if type(b) is TextBlock))
            if isinstance(body, dict) and isinstance(body.get("state"), dict):
                found[hidden] = (int(body.get("n", 0)), body["state"], len(kept))
    return found


async def load_state(store: SessionStore, session_id: str) -> dict[str, Any]:
    """The state the store keeps for ``session_id`` (empty when none)."""
    kept = await _kept(store, session_id)
    return max(kept.values(), key=lambda k: k[0])[1] if kept else {}


async def save_state(store: SessionStore, session_id: str, state: dict[str, Any]) -> None:
    """Keep ``state`` as ``session_id``'s: one append to the hidden session holding the newest
    state, until it holds ``_KEEP``; then the other is cleared and takes it. A process killed
    between that clear and the append loses no state: the newest is still in the full one."""
    kept = await _kept(store, session_id)
    first, second = _sessions(session_id)
    target = max(kept, key=lambda hidden: kept[hidden][0]) if kept else first
    newest, _, held = kept.get(target, (0, {}, 0))
    context = await store.open(target)
    if held >= _KEEP:
        context = await store.open(second if target == first else first)
        await context.clear()
    body = {"n": newest + 1, "state": state}
    await context.append(Message("user", (TextBlock(json.dumps(body, allow_nan=False)),)))


async def delete_state(store: SessionStore, session_id: str) -> None:
    """Forget ``session_id``'s state."""
    for hidden in _sessions(session_id):
        await store.delete(hidden)


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
