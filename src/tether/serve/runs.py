"""The runs a server has under way: one task per run, owned by the server and not by the request
that started it, so a client that goes away cancels nothing (the run finishes and is stored).

Each run's AG-UI events are encoded once as Server-Sent Events and handed to every stream that
listens. A listener that falls too far behind is let go (its stream ends; the run goes on and the
session can be read again); at most one run per session is under way at a time.

Each event carries an id (the SSE ``id:`` line, ``<run tag>.<n>``), and a run keeps the events
it published, up to ``LOG_BYTES``: a client that lost its stream attaches again with the last id
it read (``attach``) and gets what it missed, then the rest, each event once. Past the cap the
oldest events go at a moment nothing is open, replaced by a MESSAGES_SNAPSHOT of the session as
it stood then (a client that comes back later gets that snapshot instead of what was dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import secrets
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from ..events import StreamEvent
from ..loop import CancellationToken
from ..transports.base import CompletionTransport, Phase, ReportsProgress
from .agui import Event, Places, RunEvents, error_text

__all__ = ["Busy", "LiveRun", "Runs", "UnknownEvent", "encode"]

log = logging.getLogger("tether.serve")

MAX_BEHIND = 4096  # encoded events a listener may have waiting before it is let go
LOG_BYTES = 4 << 20  # a run's kept events, in bytes, past which the oldest go (at a safe point)
_END = b""  # what a listener's queue gets after the run's last event (events are never empty)


def encode(event: Event, event_id: str | None = None) -> bytes:
    """One AG-UI event as one Server-Sent Event (JSON escapes every newline it holds), with its
    ``id:`` line when given one."""
    data = b"data: " + json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
    if event_id is None:
        return data + b"\n\n"
    return b"id: " + event_id.encode() + b"\n" + data + b"\n\n"


class Busy(Exception):
    """The session already has a run under way."""


class UnknownEvent(ValueError):
    """An event id that names no event of the run under way (malformed, or ahead of it)."""


@dataclass(slots=True, eq=False)
class LiveRun:
    """One run under way: its session, its cancel token, the queues of its listeners, the
    events it published (from ``first`` on; ``base``, a snapshot, stands for those dropped),
    and where its session's messages go (``places``, shown at most ``shown`` at a time)."""

    session_id: str
    run_id: str
    cancel: CancellationToken = field(default_factory=CancellationToken)
    listeners: list[asyncio.Queue[bytes]] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    places: Places | None = None
    shown: int = 1000
    tag: str = field(default_factory=lambda: secrets.token_hex(4))
    log: deque[bytes] = field(default_factory=deque)
    first: int = 1  # the number of the log's first event
    sent: int = 0  # events published so far
    kept: int = 0  # the log's bytes
    base: bytes = b""  # the snapshot that stands for the events dropped from the log

    def send(self, event: Event) -> None:
        """Publish ``event`` under the run's next id, and keep it."""
        self.sent += 1
        chunk = encode(event, f"{self.tag}.{self.sent}")
        self.log.append(chunk)
        self.kept += len(chunk)
        self.publish(chunk)

    def trim(self, events: RunEvents, cap: int) -> None:
        """Past ``cap`` bytes, and with nothing open: drop the log, kept as a snapshot of the
        session now (a client that missed those events reads the snapshot instead)."""
        if self.kept <= cap or not events.idle:
            return
        snapshot = events.snapshot()
        self.base = encode(snapshot[0], f"{self.tag}.{self.sent}") if snapshot else b""
        self.log.clear()
        self.first, self.kept = self.sent + 1, 0

    def attach(self, after: str | None) -> tuple[bytes, asyncio.Queue[bytes]]:
        """What a client that read up to event ``after`` (None: none) missed, and the queue
        that gets the rest: taken together, with no await between, so nothing is lost or
        sent twice. ``UnknownEvent`` for an id that is not this run's."""
        seen = self._number(after)
        if seen < self.first - 1:  # dropped: the snapshot instead
            missed = self.base + b"".join(self.log)
        else:
            missed = b"".join(itertools.islice(self.log, seen - self.first + 1, None))
        return missed, self.listen()

    def _number(self, event_id: str | None) -> int:
        if event_id is None:
            return 0
        tag, _, number = event_id.strip().partition(".")
        if tag != self.tag or not number.isdigit() or int(number) > self.sent:
            raise UnknownEvent(f"no event {event_id[:80]!r} in the run under way")
        return int(number)

    def publish(self, chunk: bytes) -> None:
        """Hand ``chunk`` to every listener; let go of those too far behind."""
        for queue in tuple(self.listeners):
            if queue.qsize() >= MAX_BEHIND:
                self.listeners.remove(queue)
                queue.put_nowait(_END)
            else:
                queue.put_nowait(chunk)

    def listen(self) -> asyncio.Queue[bytes]:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.listeners.append(queue)
        return queue

    def leave(self, queue: asyncio.Queue[bytes]) -> None:
        with contextlib.suppress(ValueError):
            self.listeners.remove(queue)


StartRun = Callable[[CancellationToken], AsyncIterator[StreamEvent]]
"""Starts the run's engine stream (an ``AgentStream``, or events drawn from one), given the
token that cancels it."""


class Runs:
    """The server's runs under way, by session id. What ``transport`` (the agent's model) says
    it is doing before it answers, when it says (a ``ReportsProgress``, as the local model is),
    each run under way streams as AG-UI steps."""

    __slots__ = ("_live", "_progress")

    def __init__(self, transport: CompletionTransport | None = None) -> None:
        self._live: dict[str, LiveRun] = {}
        self._progress = transport if isinstance(transport, ReportsProgress) else None

    def get(self, session_id: str) -> LiveRun | None:
        return self._live.get(session_id)

    def __len__(self) -> int:
        return len(self._live)

    def reserve(self, session_id: str, run_id: str) -> LiveRun:
        """Claim ``session_id`` for a new run (``Busy`` if one is under way). No await between
        the check and the claim: two requests for one session cannot both get it."""
        if session_id in self._live:
            raise Busy(f"session {session_id!r} already has a run under way")
        live = LiveRun(session_id, run_id)
        self._live[session_id] = live
        return live

    def release(self, live: LiveRun) -> None:
        if self._live.get(live.session_id) is live:
            del self._live[live.session_id]

    def start(self, live: LiveRun, begin: StartRun) -> None:
        """Run ``begin``'s stream in a task of its own, publishing its AG-UI events."""
        live.task = asyncio.create_task(self._drive(live, begin))

    async def _drive(self, live: LiveRun, begin: StartRun) -> None:
        events = RunEvents(live.session_id, live.run_id, live.places, live.shown)
        live.send(events.started())
        stop = self._watch(live, events)
        try:
            stream = begin(live.cancel)
            async for event in stream:
                self._publish(live, events, event)
        except Exception as exc:  # a run's own failures end in its SessionEndEvent; not these
            log.exception("run %s of session %s failed", live.run_id, live.session_id)
            failure = {"type": "RUN_ERROR", "message": error_text(exc), "code": type(exc).__name__}
            for ending in (*events.close_steps(), failure):
                live.send(ending)
        finally:
            stop()
            self.release(live)
            for queue in live.listeners:
                queue.put_nowait(_END)
            live.listeners.clear()

    def _watch(self, live: LiveRun, events: RunEvents) -> Callable[[], None]:
        """Publish the model's phases as ``live``'s steps until the call returned is made."""
        if self._progress is None:
            return lambda: None

        def step(phase: Phase) -> None:
            for translated in events.step(phase):
                live.send(translated)

        return self._progress.on_phase(step)

    @staticmethod
    def _publish(live: LiveRun, events: RunEvents, event: StreamEvent) -> None:
        for translated in events.of(event):
            live.send(translated)
        if live.kept > LOG_BYTES:
            live.trim(events, LOG_BYTES)

    def stop_soon(self) -> None:
        """Ask every run under way to stop, and end every stream now (the server is going
        down: its clients need not wait for the runs to store what they have)."""
        for live in self._live.values():
            live.cancel.cancel()
            for queue in live.listeners:
                queue.put_nowait(_END)
            live.listeners.clear()

    async def stop_all(self, wait: float = 2.0) -> None:
        """Cancel every run under way and wait (up to ``wait`` seconds) for each to store what
        it has; a run still going after that is cancelled outright."""
        tasks = [live.task for live in self._live.values() if live.task is not None]
        for live in self._live.values():
            live.cancel.cancel()
        if not tasks:
            return
        _, late = await asyncio.wait(tasks, timeout=wait)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late, timeout=wait)


async def stream_of(
    live: LiveRun, queue: asyncio.Queue[bytes], ping: float = 15.0
) -> AsyncIterator[bytes]:
    """The chunks ``queue`` gets until the run ends, several at a time when they queued up; an
    SSE comment every ``ping`` seconds of quiet keeps proxies from closing a long tool call."""
    try:
        while True:
            if queue.empty():  # a timer only when there is a wait
                try:
                    async with asyncio.timeout(ping):
                        first = await queue.get()
                except TimeoutError:
                    yield b": ping\n\n"
                    continue
            else:
                first = queue.get_nowait()
            batch, ended = _drain(first, queue)
            if batch:
                yield batch
            if ended:
                return
    finally:
        live.leave(queue)


def _drain(chunk: bytes, queue: asyncio.Queue[bytes]) -> tuple[bytes, bool]:
    """``chunk`` and what else is waiting, joined; and whether the run's end was among them."""
    pieces = []
    while chunk:
        pieces.append(chunk)
        if queue.empty():
            return b"".join(pieces), False
        chunk = queue.get_nowait()
    return b"".join(pieces), True
