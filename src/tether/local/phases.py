"""What the local model says while it starts (checking, fetching and loading its weights), and
the relay that tells a transport's listeners on the event loop's thread."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator

from ..transports.base import Phase, PhaseListener

__all__ = [
    "CHECKING_WEIGHTS",
    "LOADING_MODEL",
    "PhaseRelay",
    "fetching_weights",
    "reporting",
]

log = logging.getLogger("tether.local")

CHECKING_WEIGHTS = Phase("checking_weights", "checking the model's weights")
LOADING_MODEL = Phase("loading_model", "loading the model")


def fetching_weights(size: int) -> Phase:
    """The download of the weights, ``size`` bytes (the first run, once per cache)."""
    return Phase("fetching_weights", f"fetching the model's weights ({size / 1e6:,.0f} MB)")


@contextlib.contextmanager
def reporting(progress: PhaseListener | None, phase: Phase) -> Iterator[None]:
    """``phase`` told to ``progress`` as it starts, and as over when the block ends (however)."""
    if progress is None:
        yield
        return
    progress(phase)
    try:
        yield
    finally:
        progress(phase.over())


class PhaseRelay:
    """One transport's phase listeners. Phases may be reported from any thread (the model starts
    in a worker thread); listeners are told on the event loop's thread, and one that joins while
    a phase is under way is told that phase first."""

    __slots__ = ("_current", "_listeners")

    def __init__(self) -> None:
        self._listeners: list[PhaseListener] = []
        self._current: Phase | None = None

    def subscribe(self, listener: PhaseListener) -> Callable[[], None]:
        """Tell ``listener`` each phase from now on; the call returned stops that."""
        self._listeners.append(listener)
        if self._current is not None:
            listener(self._current)

        def stop() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return stop

    @property
    def listening(self) -> bool:
        """Whether anyone listens now."""
        return bool(self._listeners)

    def reporter(self) -> PhaseListener:
        """A callable that any thread may call with a phase: the listeners hear of it on the
        running event loop (call this on that loop)."""
        loop = asyncio.get_running_loop()

        def report(phase: Phase) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens
                loop.call_soon_threadsafe(self.tell, phase)

        return report

    def tell(self, phase: Phase) -> None:
        """Tell every listener ``phase`` now (on this thread); a listener that fails is logged
        and the others are still told."""
        self._current = None if phase.done else phase
        for listener in tuple(self._listeners):
            try:
                listener(phase)
            except Exception:
                log.exception("a phase listener failed on %s", phase.name)
