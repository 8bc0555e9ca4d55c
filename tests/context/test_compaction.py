"""Compaction: past ``max_tokens`` the older part of the history is summarised, the summary is
stored as a record, later calls (and later runs, reopening the store) send summary + recent,
and nothing stored is lost. A failing summariser leaves the run going, with a warning event."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tether import (
    Agent,
    Compacted,
    Compaction,
    CompactionFailed,
    MemoryContextStore,
    Message,
    Middleware,
    ModelRequest,
    TextBlock,
    Tool,
    ToolResultBlock,
    Usage,
)
from tether.context.compaction import INSTRUCTIONS, Compactor, transcript
from tether.context.policy import estimate_chars
from tether.context.records import SUMMARY_PREFIX, compaction_record, context_start, kept_of
from tether.errors import RunCancelled, TransportError
from tether.events import StreamEvent
from tether.loop.history_view import stored_span, visible
from tether.testing import Call, Reply, ScriptedTransport
from tether.testing.common import Request


def lookup(key: str) -> str:
    """A tool whose result is big: a long history grows fast."""
    return f"value of {key}: " + "x" * 1200


def looping(n: int, tokens: bool = True, own: str | None = None) -> ScriptedTransport:
    """A model calling ``lookup`` ``n`` times, then answering; each reply reports the size of
    what it was sent (a quarter of its characters, as a provider would count), or no usage."""
    replies = [Reply(tool_calls=[Call("lookup", {"key": f"k{i}"}, id=f"c{i}")]) for i in range(n)]
    replies.append(Reply("done"))

    def step(request: Request) -> Reply:
        if own is not None and request.system == INSTRUCTIONS:
            return Reply(own)  # the agent's own model, asked for the summary
        reply = replies.pop(0)
        if not tokens:
            return reply
        size = sum(estimate_chars(m) for m in request.messages) // 4
        usage = Usage(input_tokens=size + 20, output_tokens=10)
        return Reply(reply.text, reply.tool_calls, usage)

    return ScriptedTransport([], then=step)


def summarizer(*texts: str) -> ScriptedTransport:
    return ScriptedTransport(
        [Reply(t, usage=Usage(input_tokens=50, output_tokens=7)) for t in texts]
    )


def agent(model: ScriptedTransport, policy: Compaction) -> Agent:
    return Agent(
        "sys", model, tools=[Tool("lookup", lookup)], context_policy=policy, max_iterations=50
    )


async def events_of(a: Agent, prompt: str, store: MemoryContextStore) -> list[StreamEvent]:
    return [e async for e in a.run_stream(prompt, store)]


def is_summary(message: Message) -> bool:
    return message.role == "user" and message.text.startswith(SUMMARY_PREFIX)


async def test_past_the_budget_the_older_part_is_summarised_and_the_rest_goes_on() -> None:
    model = looping(8)
    summary = summarizer("the user looks up keys k0..k5", "S2", "S3", "S4")
    store = MemoryContextStore()
    a = agent(model, Compaction(max_tokens=1000, summarizer=summary, keep_last=4))
    events = await events_of(a, "look up k0 to k7", store)

    compacted = [e for e in events if isinstance(e, Compacted)]
    assert compacted and not [e for e in events if isinstance(e, CompactionFailed)]
    first = compacted[0]
    assert first.summary == "the user looks up keys k0..k5"
    assert first.tokens_before > 1000
    assert first.kept >= 4

    asked = summary.requests[0]
    assert len(summary.requests) == len(compacted)
    assert asked.system == INSTRUCTIONS
    assert asked.tools == ()
    assert "look up k0 to k7" in asked.messages[0].text
    assert "assistant called lookup" in asked.messages[0].text

    after = [r for r in model.requests if r.messages and is_summary(r.messages[0])]
    assert after, "no model call was sent the summary"
    sent = after[0].messages
    assert "the user looks up keys k0..k5" in sent[0].text
    assert len(sent) == 1 + first.kept
    assert all(not is_summary(m) for m in sent[1:])

    stored = store.messages
    assert sum(1 for m in stored if kept_of(m) is not None) == len(compacted)
    asked_ids = [b.id for m in stored for b in m.tool_uses]
    answered = [r.tool_use_id for m in stored for r in m.tool_results]
    assert asked_ids == [f"c{i}" for i in range(8)] == answered  # nothing stored is lost
    assert stored[0] == Message("user", "look up k0 to k7")
    assert events[-1].total_usage.input_tokens >= 50  # the summary's tokens are counted


async def test_a_tool_call_is_never_kept_without_its_result() -> None:
    for keep in range(1, 7):
        model = looping(6)
        a = agent(
            model, Compaction(max_tokens=1000, summarizer=summarizer("s", "t"), keep_last=keep)
        )
        await events_of(a, "go", MemoryContextStore())
        for request in model.requests:
            if request.messages and is_summary(request.messages[0]):
                rest = request.messages[1:]
                results = [m for m in rest if m.tool_results]
                called = {b.id for m in rest for b in m.tool_uses}
                for message in results:
                    assert {r.tool_use_id for r in message.tool_results} <= called, keep


async def test_a_reopened_store_sends_summary_and_recent_without_summarising_again() -> None:
    model = looping(8)
    store = MemoryContextStore()
    policy = Compaction(max_tokens=1000, summarizer=summarizer("S1", "S2", "S3"), keep_last=4)
    await agent(model, policy).run("first", store)
    stored_before = len(store.messages)

    again = ScriptedTransport([Reply("hello again", usage=Usage(input_tokens=400))])
    never = ScriptedTransport([])  # a second summary would raise ScriptExhausted: a failure
    reopened = MemoryContextStore(store.messages)
    events = await events_of(
        agent(again, Compaction(max_tokens=5000, summarizer=never)), "next", reopened
    )
    assert not [e for e in events if isinstance(e, CompactionFailed | Compacted)]
    (sent,) = again.requests
    assert is_summary(sent.messages[0])
    assert list(sent.messages) == [*visible(store.messages), Message("user", "next")]
    assert len(sent.messages) < stored_before
    assert len(reopened.messages) == stored_before + 2  # everything stays stored


async def test_a_failing_summariser_is_a_warning_and_the_run_goes_on_uncompacted() -> None:
    model = looping(10)
    broken = ScriptedTransport([TransportError("summariser down")] * 10)
    a = agent(model, Compaction(max_tokens=1500, summarizer=broken, keep_last=2))
    events = await events_of(a, "go", MemoryContextStore())
    failed = [e for e in events if isinstance(e, CompactionFailed)]
    assert failed and "summariser down" in failed[0].reason
    assert events[-1].error is None and events[-1].iterations == 11
    assert not any(is_summary(m) for r in model.requests for m in r.messages)
    assert len(model.requests[-1].messages) == 21  # the whole history, every call
    # not asked again every iteration: only once a quarter of the budget more has come
    assert len(broken.requests) == len(failed) < 11 - 4
    assert all(b.tokens - a.tokens >= 1500 // 4 for a, b in itertools.pairwise(failed))


async def test_an_empty_summary_fails_too() -> None:
    model = looping(4)
    a = agent(model, Compaction(max_tokens=1000, summarizer=summarizer("  ")))
    events = await events_of(a, "go", MemoryContextStore())
    assert next(e.reason for e in events if isinstance(e, CompactionFailed)).endswith("no text")


async def test_without_reported_usage_the_size_is_estimated() -> None:
    model = looping(6, tokens=False)  # the provider reports no tokens
    a = agent(model, Compaction(max_tokens=300, summarizer=summarizer("est"), keep_last=2))
    events = await events_of(a, "go", MemoryContextStore())
    (compacted,) = [e for e in events if isinstance(e, Compacted)]
    assert compacted.tokens_before > 300  # ~110 tokens per lookup result


async def test_the_agents_own_transport_summarises_by_default() -> None:
    model = looping(5, own="own summary")
    a = agent(model, Compaction(max_tokens=1000, keep_last=2))
    events = await events_of(a, "go", MemoryContextStore())
    assert [e.summary for e in events if isinstance(e, Compacted)] == ["own summary"]


class Purposes(Middleware):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def wrap_model_call(
        self, request: ModelRequest, call_next: Any
    ) -> AsyncIterator[StreamEvent]:
        self.seen.append(request.purpose)
        async for event in call_next(request):
            yield event


async def test_the_summary_goes_through_the_model_middleware_named_as_such() -> None:
    model = looping(5)
    seen = Purposes()
    a = Agent(
        "sys",
        model,
        tools=[Tool("lookup", lookup)],
        context_policy=Compaction(max_tokens=1000, summarizer=summarizer("s"), keep_last=2),
        middleware=[seen],
    )
    await a.run("go", MemoryContextStore())
    assert seen.seen.count("compaction") == 1
    assert seen.seen.count("reply") == 6


async def test_compacting_twice_summarises_the_summary_and_reads_from_the_last_record() -> None:
    model = looping(16)
    summary = summarizer("S1", "S2", "S3", "S4")
    store = MemoryContextStore()
    events = await events_of(
        agent(model, Compaction(max_tokens=1000, summarizer=summary, keep_last=3)), "go", store
    )
    assert len([e for e in events if isinstance(e, Compacted)]) >= 2
    assert "S1" in summary.requests[1].messages[0].text  # the second summary reads the first
    last = model.requests[-1].messages
    assert is_summary(last[0])
    view = visible(store.messages)
    assert view == [*last, *store.messages[len(store.messages) - (len(view) - len(last)) :]]


def test_visible_reads_from_the_last_record_and_leaves_records_out() -> None:
    m = [Message("user", f"m{i}") for i in range(10)]
    first = compaction_record("one", 2)  # keeps m2, m3
    second = compaction_record("two", 3)  # keeps m4, first (not shown), m5
    history = [*m[:4], first, m[4], m[5], second, m[6]]
    assert visible(history) == [Message("user", SUMMARY_PREFIX + "two"), m[4], m[5], m[6]]
    assert visible(history[:5]) == [Message("user", SUMMARY_PREFIX + "one"), m[2], m[3]]
    assert context_start(history) == 4 and context_start(m) is None
    assert stored_span(history[:7], 2) == 2  # m4, m5
    assert stored_span(history[:7], 3) == 4  # m3, the record (not shown), m4, m5
    assert stored_span(history[:7], 1) == 1
    assert visible(m) is m  # no record: the list itself


def test_a_record_this_tether_cannot_read_keeps_nothing_before_it() -> None:
    record = compaction_record("s", 2)
    block = record.content[-1]
    damaged = Message(
        "user",
        (record.content[0], type(block)("", "not json", id=block.id, provider=block.provider)),
    )
    history = [Message("user", "a"), Message("user", "b"), damaged, Message("user", "c")]
    assert kept_of(damaged) == 0
    assert visible(history) == [Message("user", SUMMARY_PREFIX + "s"), Message("user", "c")]


def test_the_transcript_cuts_each_block() -> None:
    history = [
        Message("user", "question"),
        Message("assistant", (TextBlock("thinking aloud"),)),
        Message("user", (ToolResultBlock("c1", "r" * 5000),)),
    ]
    text = transcript(history, 200)
    assert "user: question" in text and "assistant: thinking aloud" in text
    assert "tool result: " + "r" * 199 + "…" in text and "r" * 201 not in text


def test_bad_settings_are_refused() -> None:
    for bad in (
        {"max_tokens": 0},
        {"max_tokens": 10, "keep_last": 0},
        {"max_tokens": 10, "block_chars": 5},
    ):
        with pytest.raises(ValueError):
            Compaction(**bad)


def test_the_counter_uses_reported_tokens_then_estimates_what_came_since() -> None:
    counter = Compactor(Compaction(max_tokens=1000))
    history: list[Message] = [Message("user", "x" * 400)]
    assert counter.due(history) is None and counter.tokens == 102
    history.append(Message("assistant", "ok"))
    counter.replied(Usage(input_tokens=990, output_tokens=5), len(history))
    assert counter.due(history) is None
    history.append(Message("user", "y" * 400))
    assert counter.due(history) == 995 + 102


async def test_cancelling_while_the_summary_is_asked_stores_no_record() -> None:
    import asyncio

    from tether.testing import Hold

    gate = asyncio.Event()
    slow = ScriptedTransport([Hold(gate, Reply("late"))])
    model = looping(6)
    store = MemoryContextStore()
    task = asyncio.ensure_future(
        agent(model, Compaction(max_tokens=1000, summarizer=slow, keep_last=2)).run("go", store)
    )
    for _ in range(5000):
        if slow.requests:
            break
        await asyncio.sleep(0.001)
    assert slow.requests, "the summary was never asked"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(kept_of(m) is not None for m in store.messages)
    asked = [b.id for m in store.messages for b in m.tool_uses]
    answered = [r.tool_use_id for m in store.messages for r in m.tool_results]
    assert asked == answered


class _Slow:
    """A summariser that takes ``seconds`` before its first event (a slow model)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.asked = 0
        self.stopped = False  # cancelled while it was answering
        self.called = asyncio.Event()

    async def stream(self, messages: Any, tools: Any, system: str) -> AsyncIterator[StreamEvent]:
        from tether.testing import make_text_response

        self.asked += 1
        self.called.set()
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.stopped = True
            raise
        for event in make_text_response("late summary"):
            yield event


async def test_the_runs_cancel_token_reaches_the_summariser_at_once() -> None:
    import asyncio

    from tether import CancellationToken

    slow = _Slow(30)
    store = MemoryContextStore()
    token = CancellationToken()
    a = agent(looping(6), Compaction(max_tokens=1000, summarizer=slow, keep_last=2))
    task = asyncio.ensure_future(a.run("go", store, cancel=token))
    await slow.called.wait()
    token.cancel()
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(task, 10)  # the summariser alone takes 30 s
    assert slow.stopped
    assert not any(kept_of(m) is not None for m in store.messages)
    asked = [b.id for m in store.messages for b in m.tool_uses]
    assert asked == [r.tool_use_id for m in store.messages for r in m.tool_results]


async def test_the_runs_time_limit_reaches_the_summariser_at_once() -> None:
    import asyncio

    from tether import LimitExceeded, Limits

    slow = _Slow(30)
    store = MemoryContextStore()
    a = agent(looping(6), Compaction(max_tokens=1000, summarizer=slow, keep_last=2)).copy(
        limits=Limits(seconds=0.5)
    )
    with pytest.raises(LimitExceeded) as caught:
        await asyncio.wait_for(a.run("go", store), 10)
    assert caught.value.limit == "seconds"
    assert slow.asked == 1 and slow.stopped
    assert not any(kept_of(m) is not None for m in store.messages)
    asked = [b.id for m in store.messages for b in m.tool_uses]
    assert asked == [r.tool_use_id for m in store.messages for r in m.tool_results]
