"""The loop's compaction step: summarise the older part of a run's history, store the summary
as a compaction record, and go on from summary + recent (``tether.context`` has the policy and
the record)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Protocol

from ..context import (
    Compaction,
    Compactor,
    ContextStore,
    compaction_record,
    load_context,
    summary_of,
    transcript,
)
from ..errors import RunCancelled
from ..events import Compacted, CompactionFailed, IterationEnd, TextDelta
from ..messages import Message
from ..tools.results import describe_exception
from ..transports.base import CompletionTransport
from ..types import Usage
from .history_view import stored_span
from .middleware import ModelHandler, ModelRequest, RunRequest, as_generator, call_transport
from .reply import ModelSettings, interruptible
from .state import RunState

if TYPE_CHECKING:
    from .control import CancellationToken
    from .limits import RunBudget

__all__ = ["CompactingRun", "compact"]


class CompactingRun(Protocol):
    """What the step reads of a run (the loop's ``Run`` is one), and its history, which it
    replaces."""

    history: list[Message]

    @property
    def model(self) -> ModelSettings: ...
    @property
    def model_chain(self) -> ModelHandler | None: ...
    @property
    def request(self) -> RunRequest | None: ...
    @property
    def store(self) -> ContextStore: ...
    @property
    def state(self) -> RunState: ...
    @property
    def budget(self) -> RunBudget | None: ...
    @property
    def cancel(self) -> CancellationToken | None: ...


async def compact(
    run: CompactingRun, compactor: Compactor, iteration: int
) -> Compacted | CompactionFailed | None:
    """Past the budget, compact ``run``'s history (the event that says so); a failing
    summariser leaves the history as it is (the event says why)."""
    tokens = compactor.due(run.history)
    start = None if tokens is None else compactor.split(run.history)
    if tokens is None or start is None:
        return None
    if run.cancel is not None and run.cancel.cancelled:
        raise RunCancelled("the run was cancelled")
    policy = compactor.policy
    transport = policy.summarizer or run.model.transport
    try:
        summary, usage = await _summarize(run, policy, transport, run.history[:start], iteration)
    except RunCancelled:
        raise  # the run's cancellation or time limit: the run ends, not the compaction
    except Exception as exc:
        compactor.failed(tokens)
        return CompactionFailed(describe_exception(exc), tokens)
    if usage is not None:
        _charge(run, usage, transport)
    if not summary:
        compactor.failed(tokens)
        return CompactionFailed("the summariser answered with no text", tokens)
    kept = len(run.history) - start
    record = compaction_record(summary, stored_span(await load_context(run.store), kept))
    await run.store.append(record)
    run.history = [summary_of(record), *run.history[start:]]
    compactor.compacted(run.history)
    return Compacted(start, kept, tokens, compactor.tokens, summary)


async def _summarize(
    run: CompactingRun,
    policy: Compaction,
    transport: CompletionTransport,
    older: Sequence[Message],
    iteration: int,
) -> tuple[str, Usage | None]:
    """The summary of ``older`` (asked through the run's model middleware, so traces show
    the call) and what it cost; the run's cancellation token (its time limit too) stops it at
    once, as it stops a reply."""
    request = ModelRequest(
        (Message("user", transcript(older, policy.block_chars)),),
        (),
        policy.instructions,
        iteration,
        transport,
        run=run.request,
        purpose="compaction",
    )
    parts: list[str] = []
    usage = None
    handler = run.model_chain or call_transport
    async with aclosing(as_generator(handler(request))) as events:
        async for event in interruptible(events, run.cancel):
            if type(event) is TextDelta:
                parts.append(event.delta)
            elif type(event) is IterationEnd:
                usage = event.usage
    return "".join(parts).strip(), usage


def _charge(run: CompactingRun, usage: Usage, transport: CompletionTransport) -> None:
    """Count the summary in the run's usage and limits."""
    state = run.state
    state.usage = state.usage + usage
    if run.budget is not None:
        run.budget.charge_reply(usage, None, transport)
