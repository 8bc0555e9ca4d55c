"""The loop's compaction step: summarise the older part of a run's history, store the summary
as a compaction record, and go on from summary + recent (``tether.context`` has the policy, the
record and the ``Compactor`` that is the step's state; the loop holds one only when the agent's
policy is ``Compaction``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import aclosing
from typing import TypeAlias

from ..context import (
    Compaction,
    Compactor,
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
from .middleware import ModelRequest, as_generator, call_transport
from .reply import ReplySource, interruptible
from .transcript import Transcript

__all__ = ["Spend", "compact"]

Spend: TypeAlias = Callable[[Usage, "str | None", CompletionTransport], None]
"""Counts a model call's usage in the run's total and its limits: usage, model, transport."""


async def compact(
    compactor: Compactor,
    run: Transcript,
    source: ReplySource,
    spend: Spend,
    iteration: int,
) -> Compacted | CompactionFailed | None:
    """Past the budget, compact the run's history (the event that says so); a failing
    summariser leaves the history as it is (the event says why). The summary is asked as the
    run's replies are (``source``: model, middleware, cancellation) and paid with ``spend``."""
    tokens = compactor.due(run.history)
    start = None if tokens is None else compactor.split(run.history)
    if tokens is None or start is None:
        return None
    if source.cancel is not None and source.cancel.cancelled:
        raise RunCancelled("the run was cancelled")
    policy = compactor.policy
    transport = policy.summarizer or source.model.transport
    try:
        summary, usage = await _summarize(source, policy, transport, run.history[:start], iteration)
    except RunCancelled:
        raise  # the run's cancellation or time limit: the run ends, not the compaction
    except Exception as exc:
        compactor.failed(tokens)
        return CompactionFailed(describe_exception(exc), tokens)
    if usage is not None:
        spend(usage, None, transport)
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
    source: ReplySource,
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
        run=source.request,
        purpose="compaction",
    )
    parts: list[str] = []
    usage = None
    handler = source.model_chain or call_transport
    async with aclosing(as_generator(handler(request))) as events:
        async for event in interruptible(events, source.cancel):
            if type(event) is TextDelta:
                parts.append(event.delta)
            elif type(event) is IterationEnd:
                usage = event.usage
    return "".join(parts).strip(), usage
