"""A run's transcript: the history the model sees and the store that keeps every message whole.

The run reads the stored history once (``open``) and then only appends: each message goes to the
model's view (tool results cut to ``max_tool_result_chars``) and to the store, as the store is
asked to (a failed append ends the run, and with it this history)."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from contextlib import nullcontext

from ..base.interrupt import survive
from ..context import ContextStore
from ..messages import Message, ToolResultBlock, ToolUseBlock
from ..tools.needs_input import Answered, NeedsInput, resuming
from ..tools.results import interrupted_result
from .approval import OpenCalls, asked_message
from .dispatch import ToolDispatcher, run_calls
from .history_view import read_stored
from .steps import model_view, unanswered

__all__ = ["Transcript"]


class Transcript:
    """One run's history as the model sees it (``history``, which compaction may replace) and
    its ``store``; ``limit`` cuts the results the model sees (the answering agent's)."""

    __slots__ = ("history", "limit", "store")

    def __init__(self, store: ContextStore, limit: int | None) -> None:
        self.store = store
        self.limit = limit
        self.history: list[Message] = []

    def opened(self, history: list[Message]) -> OpenCalls | None:
        """Take the stored ``history``, read once (``load_context``); the calls its last reply
        left open, if any."""
        opened = None
        if history:
            opened, history = read_stored(history)
        limit = self.limit
        self.history = history if limit is None else [model_view(m, limit) for m in history]
        return opened

    def append(self, message: Message) -> Awaitable[None]:
        """Add ``message``; the store's awaitable (returned, not awaited: a coroutine saved)."""
        self.history.append(message)
        return self.store.append(message)

    def show(self, message: Message) -> None:
        """Add ``message`` to the model's view only (the store got it in another append)."""
        limit = self.limit
        self.history.append(message if limit is None else model_view(message, limit))

    def append_results(self, results: Sequence[ToolResultBlock]) -> Awaitable[None]:
        """Store the full results; the model's view gets the truncated copy."""
        full = Message("user", tuple(results))
        self.show(full)
        return self.store.append(full)

    def append_asked(
        self,
        results: Sequence[ToolResultBlock],
        asked: Sequence[tuple[ToolUseBlock, NeedsInput]],
    ) -> Awaitable[None]:
        """Store ``results`` and the record of the calls ``asked`` for the user's input, in one
        append; the model's view gets the results only."""
        if results:
            self.show(Message("user", tuple(results)))
        return self.store.append(asked_message(results, asked))

    async def keep(self, text: str, name: str | None) -> None:
        """A failed or cancelled reply keeps what the model already said (its text only)."""
        if text:
            await survive(self.append(Message("assistant", text, name)))

    async def interrupted(
        self, calls: Sequence[ToolUseBlock], results: Sequence[ToolResultBlock | None]
    ) -> None:
        """On the way out of a failed or closed run: store a result for every call still open,
        finished ones as they are and the rest as interrupted, even if cancelled meanwhile."""

        async def store() -> None:
            open_calls = unanswered(await self.store.get_history(), calls)
            if open_calls:
                final = [
                    r if r is not None else interrupted_result(b)
                    for b, r in zip(calls, results, strict=True)
                    if b.id in open_calls
                ]
                await self.append_results(final)

        await survive(store())

    async def run(
        self,
        dispatcher: ToolDispatcher,
        calls: Sequence[ToolUseBlock],
        parallel: bool,
        answered: Mapping[str, Answered] | None = None,
    ) -> list[ToolResultBlock | None]:
        """Run stored ``calls`` (those ``answered`` again with their answers, all in order):
        their results, or, if that fails, every call still answered."""
        results: list[ToolResultBlock | None] = [None] * len(calls)
        try:
            if answered:
                await _one_by_one(dispatcher, calls, answered, results)
            else:
                await run_calls(dispatcher, calls, parallel, results)
        except BaseException:
            await self.interrupted(calls, results)
            raise
        return results


async def _one_by_one(
    dispatcher: ToolDispatcher,
    calls: Sequence[ToolUseBlock],
    answered: Mapping[str, Answered],
    results: list[ToolResultBlock | None],
) -> None:
    """Run ``calls`` in order, each answered one with its answers (``resuming``)."""
    for i, call in enumerate(calls):
        one: list[ToolResultBlock | None] = [None]
        given = answered.get(call.id)
        with nullcontext() if given is None else resuming(given):
            await run_calls(dispatcher, [call], False, one)
        results[i] = one[0]
