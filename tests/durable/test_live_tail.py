"""``LiveTail`` alone: how a reader merges a durable run's log with what its running calls show
(heartbeat details), so each piece of text is given once and a retry that says something else
is announced by ``Retrying``."""

from __future__ import annotations

from typing import Any

from tether.durable.live import LiveProgress, LiveReply, covers
from tether.durable.tail import LiveTail
from tether.events import (
    IterationEnd,
    IterationStart,
    ReasoningDelta,
    Retrying,
    StreamEvent,
    TextDelta,
    ToolProgress,
    ToolResult,
    ToolUseStart,
)
from tether.stores.jsonforms import event_to_dict
from tether.types import StopReason

END = IterationEnd(1, StopReason.END_TURN)


def _reply(turn: int, attempt: int, *blocks: tuple[str, int, str]) -> dict[str, Any]:
    return {"kind": "reply", "turn": turn, "attempt": attempt, "blocks": [list(b) for b in blocks]}


def _text(turn: int, attempt: int, text: str) -> dict[str, Any]:
    return _reply(turn, attempt, ("text", 0, text))


def _tail(turn: int = 1, at: int = 1) -> LiveTail:
    tail = LiveTail()
    assert tail.logged(0, IterationStart(1)) == [IterationStart(1)]
    tail.expect(turn, at)
    return tail


def _texts(events: list[StreamEvent]) -> list[str]:
    return [e.delta for e in events if isinstance(e, TextDelta)]


def test_live_text_then_only_the_rest_when_the_reply_lands() -> None:
    tail = _tail()
    assert tail.seen(_text(1, 1, "Hel")) == [TextDelta(0, "Hel")]
    assert tail.seen(_text(1, 1, "Hello")) == [TextDelta(0, "lo")]
    assert tail.seen(_text(1, 1, "Hello")) == []
    assert tail.logged(1, TextDelta(0, "Hello world")) == [TextDelta(0, " world")]
    assert tail.logged(2, END) == [END]
    assert tail.logged(3, TextDelta(0, "later")) == [TextDelta(0, "later")]  # no call in flight


def test_a_retry_that_repeats_the_text_is_held_back_until_it_goes_further() -> None:
    tail = _tail()
    assert _texts(tail.seen(_text(1, 1, "Hello wo"))) == ["Hello wo"]
    assert tail.seen(_text(1, 2, "")) == []
    assert tail.seen(_text(1, 2, "Hel")) == []
    assert tail.seen(_text(1, 2, "Hello wor")) == [TextDelta(0, "r")]
    assert tail.logged(1, TextDelta(0, "Hello world")) == [TextDelta(0, "ld")]
    assert tail.logged(2, END) == [END]


def test_a_retry_that_says_something_else_is_announced_and_given_from_its_start() -> None:
    tail = _tail()
    tail.seen(_text(1, 1, "Hello wo"))
    retried = tail.seen(_text(1, 2, "Hi"))
    assert isinstance(retried[0], Retrying) and retried[0].attempt == 2
    assert "partial reply is discarded" in retried[0].reason
    assert retried[1:] == [TextDelta(0, "Hi")]
    assert tail.seen(_text(1, 2, "Hi there")) == [TextDelta(0, " there")]
    assert tail.logged(1, TextDelta(0, "Hi there!")) == [TextDelta(0, "!")]


def test_a_final_reply_that_differs_from_what_was_shown_is_announced_too() -> None:
    tail = _tail()
    tail.seen(_text(1, 1, "Hello wo"))
    landed = tail.logged(1, TextDelta(0, "Howdy"))
    assert isinstance(landed[0], Retrying) and landed[0].attempt == 2
    assert landed[1:] == [TextDelta(0, "Howdy")]
    assert tail.logged(2, END) == [END]


def test_a_final_reply_shorter_than_what_was_shown_is_a_discard() -> None:
    tail = _tail()
    tail.seen(_text(1, 1, "Hello world"))
    assert tail.logged(1, TextDelta(0, "Hello")) == []
    ended = tail.logged(2, END)
    assert isinstance(ended[0], Retrying)
    assert ended[1:] == [TextDelta(0, "Hello"), END]


def test_reasoning_and_text_blocks_are_merged_per_block() -> None:
    tail = _tail()
    assert tail.seen(_reply(1, 1, ("reasoning", 0, "thin"))) == [ReasoningDelta(0, "thin")]
    both = _reply(1, 1, ("reasoning", 0, "think"), ("text", 1, "He"))
    assert tail.seen(both) == [ReasoningDelta(0, "k"), TextDelta(1, "He")]
    # the log keeps reasoning pieces as they came; a signature is given though its text was shown
    assert tail.logged(1, ReasoningDelta(0, "th")) == []
    signed = ReasoningDelta(0, "ink", signature="sig")
    assert tail.logged(2, signed) == [ReasoningDelta(0, "", signature="sig")]
    assert tail.logged(3, ToolUseStart(2, "c1", "pay")) == [ToolUseStart(2, "c1", "pay")]
    assert tail.logged(4, TextDelta(1, "Hey")) == [TextDelta(1, "y")]
    assert tail.logged(5, END) == [END]


def test_details_of_another_model_call_are_not_this_ones() -> None:
    tail = _tail(turn=2, at=5)
    assert tail.seen(_text(1, 1, "old")) == []
    assert tail.seen(_text(3, 1, "next")) == []
    assert tail.logged(4, TextDelta(0, "before")) == [TextDelta(0, "before")]  # before ``at``


def test_progress_is_given_once_per_report_and_again_for_a_retried_attempt() -> None:
    def report(n: int) -> ToolProgress:
        return ToolProgress("c1", "crunch", n, 3, f"step {n}")

    first = LiveProgress("wf:1:c1", "c1", 1)
    tail = LiveTail()
    first.add(report(1))
    assert tail.seen(first.details()) == [report(1)]
    first.add(report(2))
    assert tail.seen(first.details()) == [report(2)]
    assert tail.seen(first.details()) == []
    second = LiveProgress("wf:1:c1", "c1", 2)  # its worker was lost: the call runs again
    second.add(report(1))
    assert tail.seen(second.details()) == [report(1)]
    result = ToolResult("c1", "crunch", content="crunched 3")
    assert tail.logged(0, result) == [result]


def test_progress_beyond_the_kept_window_is_skipped_not_repeated() -> None:
    details = {
        "kind": "progress",
        "key": "k",
        "call": "c",
        "attempt": 1,
        "first": 10,
        "reports": [event_to_dict(ToolProgress("c", "t", n)) for n in (10, 11)],
    }
    tail = LiveTail()
    assert [e.progress for e in tail.seen(details) if isinstance(e, ToolProgress)] == [10, 11]
    assert tail.seen(details) == []


def test_a_live_reply_keeps_its_attempts_text_merged_up_to_its_limit() -> None:
    live = LiveReply(4, 2)
    for event in (ReasoningDelta(0, "a"), ReasoningDelta(0, "b"), TextDelta(1, "c"), END):
        live.add(event)
    live.add(TextDelta(1, "d"))
    assert live.details() == _reply(4, 2, ("reasoning", 0, "ab"), ("text", 1, "cd"))
    assert covers([("text", 0, "abc")], [("text", 0, "ab")])
    assert not covers([("text", 0, "abc")], [("text", 1, "ab")])
    assert not covers([("text", 0, "ab")], [("text", 0, "ab"), ("text", 1, "")])
