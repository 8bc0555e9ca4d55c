"""Tests for tether.testing: fake transports, canned responses and the stream-contract checker."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.errors import TransportError
from tether.events import (
    ContextTrimmed,
    Error,
    IterationEnd,
    IterationStart,
    ReasoningDelta,
    Retrying,
    SessionEndEvent,
    SteeringInjected,
    StreamEvent,
    TextDelta,
    ToolDispatch,
    ToolInputDelta,
    ToolResult,
    ToolUseStart,
)
from tether.messages import Message, ToolResultBlock, ToolUseBlock
from tether.testing import (
    Call,
    Hold,
    Reply,
    Request,
    ScriptedTransport,
    ScriptExhausted,
    StubTransport,
    assert_stream_contract,
    collect,
    make_text_response,
    make_tool_use_response,
)
from tether.tools.tool import ToolSpec
from tether.transports.base import CompletionTransport
from tether.types import StopReason, Usage

SPEC = ToolSpec("echo", "Echo text back.", {"type": "object", "properties": {}})
HELLO = [Message("user", "hello")]


async def play(transport: Any, messages: list[Message] | None = None) -> list[StreamEvent]:
    events = await collect(transport.stream(messages or HELLO, [SPEC], "sys"))
    assert_stream_contract(events)
    return events


def text_of(events: list[StreamEvent]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextDelta))


# --------------------------------------------------------------------------------------------
# Module surface


def test_public_names_are_exported() -> None:
    import tether.testing as t

    for name in t.__all__:
        assert hasattr(t, name), name
    assert "ScriptedTransport" in t.__all__
    assert t.__doc__ and "ScriptedTransport" in t.__doc__


def test_does_not_import_pydantic() -> None:
    # Run in a fresh interpreter so other tests' imports do not count.
    import subprocess

    code = "import sys, tether.testing; print('pydantic' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False"]


def test_fakes_satisfy_the_transport_protocol() -> None:
    assert isinstance(StubTransport([]), CompletionTransport)
    assert isinstance(StubTransport(), CompletionTransport)
    assert isinstance(ScriptedTransport([]), CompletionTransport)


# --------------------------------------------------------------------------------------------
# make_text_response / make_tool_use_response


def test_make_text_response_defaults() -> None:
    events = make_text_response()
    assert events == [TextDelta(0, "Done"), IterationEnd(2, StopReason.END_TURN, Usage(10, 5))]
    assert_stream_contract(events)


def test_make_text_response_axio_positional_order() -> None:
    usage = Usage(7, 3)
    events = make_text_response("hi", 4, usage)
    assert events == [TextDelta(0, "hi"), IterationEnd(4, StopReason.END_TURN, usage)]
    assert make_text_response(usage=Usage())[-1] == IterationEnd(2, StopReason.END_TURN, Usage())


def test_make_text_response_splits_evenly() -> None:
    events = make_text_response("abcdefg", chunks=3)
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["abc", "de", "fg"]
    assert_stream_contract(events)


def test_make_text_response_caps_chunks_at_length() -> None:
    events = make_text_response("ab", chunks=10)
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["a", "b"]
    empty = make_text_response("", chunks=5)
    assert empty[0] == TextDelta(0, "")
    assert len(empty) == 2
    assert_stream_contract(empty)


def test_make_text_response_options() -> None:
    usage = Usage(input_tokens=3, output_tokens=4)
    events = make_text_response("x", usage=usage, stop_reason=StopReason.MAX_TOKENS, index=2)
    assert events == [TextDelta(2, "x"), IterationEnd(2, StopReason.MAX_TOKENS, usage)]
    with pytest.raises(ValueError, match="chunks"):
        make_text_response("x", chunks=0)


def test_make_tool_use_response_defaults() -> None:
    events = make_tool_use_response()
    assert events == [
        ToolUseStart(0, "call_1", "echo"),
        ToolInputDelta(0, "call_1", '{"msg": "hi"}'),
        IterationEnd(1, StopReason.TOOL_USE, Usage(10, 5)),
    ]
    assert_stream_contract(events)


def test_make_tool_use_response_axio_positional_order() -> None:
    usage = Usage(1, 2)
    events = make_tool_use_response("search", "t2", {"q": "x"}, 3, usage)
    assert events == [
        ToolUseStart(0, "t2", "search"),
        ToolInputDelta(0, "t2", '{"q": "x"}'),
        IterationEnd(3, StopReason.TOOL_USE, usage),
    ]


def test_make_tool_use_response_explicit_empty_input_stays_empty() -> None:
    events = make_tool_use_response(tool_input={})
    assert events[1] == ToolInputDelta(0, "call_1", "{}")


def test_make_tool_use_response_with_text_and_input() -> None:
    usage = Usage(output_tokens=9)
    events = make_tool_use_response(
        "search", "t9", {"q": "cats", "n": 2}, usage=usage, text="Let me look."
    )
    assert events[0] == TextDelta(0, "Let me look.")
    assert events[1] == ToolUseStart(1, "t9", "search")
    assert isinstance(events[2], ToolInputDelta)
    assert events[2].index == 1
    assert json.loads(events[2].partial_json) == {"q": "cats", "n": 2}
    assert events[3] == IterationEnd(1, StopReason.TOOL_USE, usage)
    assert_stream_contract(events)


def test_make_tool_use_response_raw_arguments_verbatim() -> None:
    events = make_tool_use_response(tool_input={"ignored": 1}, raw_arguments="{'a': 1,")
    assert events[1] == ToolInputDelta(0, "call_1", "{'a': 1,")
    assert_stream_contract(events)


# --------------------------------------------------------------------------------------------
# assert_stream_contract: one test per rule

END = IterationEnd(0, StopReason.END_TURN)


def test_contract_accepts_interleaved_blocks() -> None:
    assert_stream_contract(
        [
            ReasoningDelta(0, "hmm"),
            TextDelta(1, "a"),
            ToolUseStart(2, "x", "echo"),
            TextDelta(1, "b"),
            ToolInputDelta(2, "x", "{"),
            ReasoningDelta(0, "", signature="sig"),
            ToolInputDelta(2, "x", "}"),
            IterationEnd(0, StopReason.TOOL_USE),
        ]
    )
    events: list[StreamEvent] = [TextDelta(0, "generator input works"), END]
    assert_stream_contract(iter(events))


def test_contract_no_iteration_end() -> None:
    with pytest.raises(AssertionError, match=r"ended after 1 event\(s\) with no IterationEnd"):
        assert_stream_contract([TextDelta(0, "hi")])
    with pytest.raises(AssertionError, match=r"after 0 event\(s\) with no IterationEnd"):
        assert_stream_contract([])


def test_contract_two_iteration_ends() -> None:
    with pytest.raises(AssertionError, match=r"event #2 .*a second IterationEnd.*event #1"):
        assert_stream_contract([TextDelta(0, "hi"), END, END])


def test_contract_event_after_end() -> None:
    with pytest.raises(AssertionError, match=r"event #1 .*after the IterationEnd at event #0"):
        assert_stream_contract([END, TextDelta(0, "late")])


def test_contract_text_index_reused_by_reasoning() -> None:
    with pytest.raises(AssertionError, match="index 0 already belongs to a text block"):
        assert_stream_contract([TextDelta(0, "a"), ReasoningDelta(0, "b"), END])


def test_contract_reasoning_index_reused_by_text() -> None:
    with pytest.raises(AssertionError, match="index 0 already belongs to a reasoning block"):
        assert_stream_contract([ReasoningDelta(0, "a"), TextDelta(0, "b"), END])


def test_contract_text_index_reused_by_tool_use() -> None:
    with pytest.raises(AssertionError, match=r"event #1 .*index 0 already belongs to a text"):
        assert_stream_contract(
            [TextDelta(0, "a"), ToolUseStart(0, "x", "echo"), IterationEnd(0, StopReason.TOOL_USE)]
        )


def test_contract_tool_index_reused_by_text() -> None:
    with pytest.raises(AssertionError, match="index 0 already belongs to a tool use block"):
        assert_stream_contract(
            [ToolUseStart(0, "x", "echo"), TextDelta(0, "a"), IterationEnd(0, StopReason.TOOL_USE)]
        )


def test_contract_input_delta_without_start() -> None:
    with pytest.raises(AssertionError, match="'x' with no earlier ToolUseStart"):
        assert_stream_contract([ToolInputDelta(0, "x", "{}"), IterationEnd(0, StopReason.TOOL_USE)])


def test_contract_input_delta_with_wrong_index() -> None:
    with pytest.raises(AssertionError, match="has index 1 but its ToolUseStart has index 0"):
        assert_stream_contract(
            [
                ToolUseStart(0, "x", "echo"),
                ToolInputDelta(1, "x", "{}"),
                IterationEnd(0, StopReason.TOOL_USE),
            ]
        )


def test_contract_input_delta_with_wrong_id() -> None:
    with pytest.raises(AssertionError, match="'y' with no earlier ToolUseStart"):
        assert_stream_contract(
            [
                ToolUseStart(0, "x", "echo"),
                ToolInputDelta(0, "y", "{}"),
                IterationEnd(0, StopReason.TOOL_USE),
            ]
        )


def test_contract_two_tool_starts_same_index() -> None:
    with pytest.raises(AssertionError, match="a second ToolUseStart at index 0"):
        assert_stream_contract(
            [
                ToolUseStart(0, "x", "echo"),
                ToolUseStart(0, "y", "echo"),
                IterationEnd(0, StopReason.TOOL_USE),
            ]
        )


def test_contract_two_tool_starts_same_id() -> None:
    with pytest.raises(AssertionError, match="tool_use_id 'x' was already started"):
        assert_stream_contract(
            [
                ToolUseStart(0, "x", "echo"),
                ToolUseStart(1, "x", "echo"),
                IterationEnd(0, StopReason.TOOL_USE),
            ]
        )


@pytest.mark.parametrize(
    "event",
    [
        IterationStart(1),
        ToolDispatch("x", "echo", {}),
        ToolResult("x", "echo", False, "ok"),
        Retrying(1, 0.5, "overloaded"),
        SteeringInjected(()),
        ContextTrimmed(1, 2),
        Error(RuntimeError("boom")),
        SessionEndEvent(StopReason.END_TURN),
    ],
    ids=lambda e: type(e).__name__,
)
def test_contract_rejects_loop_events(event: StreamEvent) -> None:
    with pytest.raises(AssertionError, match=rf"event #0 .*{type(event).__name__} is a loop event"):
        assert_stream_contract([event, END])


def test_contract_tool_use_stop_without_calls() -> None:
    with pytest.raises(AssertionError, match="stop reason is TOOL_USE but no tool call"):
        assert_stream_contract([TextDelta(0, "hi"), IterationEnd(0, StopReason.TOOL_USE)])


def test_contract_rejects_non_events() -> None:
    with pytest.raises(AssertionError, match="dict is not a stream event"):
        assert_stream_contract([{"type": "text"}, END])  # type: ignore[list-item]


# --------------------------------------------------------------------------------------------
# StubTransport


async def test_stub_plays_responses_in_order_and_records_calls() -> None:
    stub = StubTransport([make_text_response("one"), make_text_response("two")])
    history = [Message("user", "q")]
    assert text_of(await play(stub, history)) == "one"
    history.append(Message("assistant", "one"))
    assert text_of(await play(stub, history)) == "two"
    assert stub.call_count == 2
    assert [len(c.messages) for c in stub.calls] == [1, 2]
    assert stub.calls[0].tools == (SPEC,)
    assert stub.calls[0].system == "sys"


async def test_stub_exception_entry_raises_before_first_event() -> None:
    err = TransportError("overloaded", retryable=True)
    stub = StubTransport([err, make_text_response("ok")])
    seen: list[StreamEvent] = []
    stream = stub.stream(HELLO, [], "")
    with pytest.raises(TransportError) as info:
        async for event in stream:
            seen.append(event)
    assert info.value is err
    assert seen == []
    assert text_of(await play(stub)) == "ok"  # the retry gets the next entry
    assert stub.call_count == 2


async def test_stub_exception_inside_list_raises_mid_stream() -> None:
    err = TransportError("connection reset")
    stub = StubTransport([[TextDelta(0, "par"), TextDelta(0, "tial"), err, END]])
    seen: list[StreamEvent] = []
    with pytest.raises(TransportError, match="connection reset"):
        async for event in stub.stream(HELLO, [], ""):
            seen.append(event)
    assert seen == [TextDelta(0, "par"), TextDelta(0, "tial")]


async def test_stub_repeats_its_last_response_once_past_the_list() -> None:
    stub = StubTransport([make_text_response("one"), make_text_response("last")])
    texts = [text_of(await play(stub)) for _ in range(4)]
    assert texts == ["one", "last", "last", "last"]
    assert stub.call_count == 4


async def test_stub_repeats_a_last_exception_entry() -> None:
    err = TransportError("down")
    stub = StubTransport([err])
    for _ in range(2):
        with pytest.raises(TransportError) as info:
            await collect(stub.stream(HELLO, [], ""))
        assert info.value is err


async def test_stub_with_no_responses_fails_clearly_when_streamed() -> None:
    stub = StubTransport()
    stream = stub.stream([Message("user", "anyone?")], [], "")
    with pytest.raises(ScriptExhausted, match="StubTransport has no responses") as info:
        await collect(stream)
    assert isinstance(info.value, AssertionError)
    assert "user: 'anyone?'" in str(info.value)
    assert stub.call_count == 1


async def test_stub_stream_can_be_closed_early() -> None:
    stub = StubTransport([make_text_response("abcd", chunks=4)])
    stream = stub.stream(HELLO, [], "")
    assert await stream.__anext__() == TextDelta(0, "a")
    await stream.aclose()
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()


def test_stub_rejects_flat_event_list() -> None:
    with pytest.raises(TypeError, match=r"bare TextDelta.*StubTransport\(\[events\]\)"):
        StubTransport(make_text_response())  # type: ignore[arg-type]


def test_stub_rejects_a_bare_exception_class_among_valid_entries() -> None:
    with pytest.raises(TypeError, match=r"entry 1 is the exception class ValueError"):
        StubTransport([make_text_response(), ValueError])  # type: ignore[list-item]


def test_stub_rejects_exception_class_and_strings() -> None:
    with pytest.raises(TypeError, match=r"exception class TransportError; pass an instance"):
        StubTransport([TransportError])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="must be a list of events"):
        StubTransport(["Done"])  # type: ignore[list-item]


# --------------------------------------------------------------------------------------------
# ScriptedTransport


async def test_scripted_plays_replies_and_records_requests() -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("echo", {"text": "hi"})]), Reply("bye")])
    assert model.remaining == 2
    first = await play(model)
    assert first == [
        ToolUseStart(0, "call_1", "echo"),
        ToolInputDelta(0, "call_1", '{"text": "hi"}'),
        IterationEnd(0, StopReason.TOOL_USE, Usage()),
    ]
    assert model.remaining == 1
    second = await play(model)
    assert second == [TextDelta(0, "bye"), IterationEnd(0, StopReason.END_TURN, Usage())]
    assert model.remaining == 0
    assert model.call_count == 2
    assert model.requests[0].tool_names == ["echo"]
    assert model.requests[0].system == "sys"


async def test_scripted_request_is_a_snapshot() -> None:
    model = ScriptedTransport([Reply("a")])
    history = [Message("user", "first")]
    stream = model.stream(history, [SPEC], "sys")
    history.append(Message("user", "added after the call"))
    history[0] = Message("user", "replaced")
    await collect(stream)
    request = model.requests[0]
    assert request.messages == (Message("user", "first"),)
    assert request.last_message.text == "first"
    assert isinstance(request.messages, tuple)
    assert isinstance(request.tools, tuple)


def test_request_properties() -> None:
    request = Request((Message("user", "a"), Message("user", "b")), (SPEC,), "")
    assert request.last_message.text == "b"
    assert request.tool_names == ["echo"]
    with pytest.raises(IndexError, match="no messages"):
        _ = Request((), (), "").last_message


async def test_scripted_full_reply_shape() -> None:
    usage = Usage(input_tokens=10, output_tokens=5)
    reply = Reply(
        "abcd",
        tool_calls=[Call("a", {"x": 1}), Call("b", id="mine"), Call("c", raw_arguments="{bad")],
        usage=usage,
        chunks=2,
        reasoning="think",
        reasoning_signature="sig==",
    )
    events = await play(ScriptedTransport([reply]))
    assert events == [
        ReasoningDelta(0, "thi"),
        ReasoningDelta(0, "nk", signature="sig=="),
        TextDelta(1, "ab"),
        TextDelta(1, "cd"),
        ToolUseStart(2, "call_1", "a"),
        ToolInputDelta(2, "call_1", '{"x": 1}'),
        ToolUseStart(3, "mine", "b"),
        ToolInputDelta(3, "mine", "{}"),
        ToolUseStart(4, "call_3", "c"),
        ToolInputDelta(4, "call_3", "{bad"),
        IterationEnd(0, StopReason.TOOL_USE, usage),
    ]


async def test_scripted_signature_without_reasoning_text() -> None:
    events = await play(ScriptedTransport([Reply("x", reasoning_signature="opaque")]))
    assert events[0] == ReasoningDelta(0, "", signature="opaque")
    assert events[1] == TextDelta(1, "x")


async def test_scripted_stop_reasons() -> None:
    model = ScriptedTransport(
        [Reply(), Reply("cut", stop_reason=StopReason.MAX_TOKENS), Reply(tool_calls=[Call("e")])]
    )
    ends = [(await play(model))[-1] for _ in range(3)]
    assert [e.stop_reason for e in ends if isinstance(e, IterationEnd)] == [
        StopReason.END_TURN,
        StopReason.MAX_TOKENS,
        StopReason.TOOL_USE,
    ]
    assert Reply().effective_stop_reason is StopReason.END_TURN


async def test_scripted_auto_ids_count_across_the_transport() -> None:
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("a"), Call("b")]), Reply(tool_calls=[Call("c")])]
    )
    ids = [
        e.tool_use_id for _ in range(2) for e in await play(model) if isinstance(e, ToolUseStart)
    ]
    assert ids == ["call_1", "call_2", "call_3"]


async def test_scripted_exception_step_then_continue() -> None:
    err = TransportError("429", retryable=True, retry_after=1.0)
    model = ScriptedTransport([err, Reply("ok")])
    seen: list[StreamEvent] = []
    with pytest.raises(TransportError) as info:
        async for event in model.stream(HELLO, [], ""):
            seen.append(event)
    assert info.value is err
    assert seen == []
    assert text_of(await play(model)) == "ok"
    assert len(model.requests) == 2


async def test_scripted_callable_step_sees_the_request() -> None:
    def respond(request: Request) -> Reply:
        results = sum(len(m.tool_results) for m in request.messages)
        if results < 2:
            return Reply(tool_calls=[Call("echo", {"n": results})])
        return Reply(f"done after {results} results")

    model = ScriptedTransport([], then=respond)
    history: list[Message] = [Message("user", "go")]
    while True:
        events = await play(model, history)
        starts = [e for e in events if isinstance(e, ToolUseStart)]
        if not starts:
            break
        history.append(Message("assistant", [ToolUseBlock(starts[0].tool_use_id, "echo")]))
        history.append(Message("user", [ToolResultBlock(starts[0].tool_use_id, "ok")]))
    assert text_of(events) == "done after 2 results"
    assert model.call_count == 3
    assert model.remaining == 0


async def test_scripted_callable_step_can_fail_or_be_wrong() -> None:
    model = ScriptedTransport(
        [lambda r: TransportError(f"saw {len(r.messages)}"), lambda r: "oops"]  # type: ignore[list-item,return-value]
    )
    with pytest.raises(TransportError, match="saw 1"):
        await collect(model.stream(HELLO, [], ""))
    with pytest.raises(TypeError, match=r"request #2 must return a Reply.*got str"):
        await collect(model.stream(HELLO, [], ""))


async def test_scripted_then_step_repeats_forever() -> None:
    model = ScriptedTransport([Reply("first")], then=Reply("again"))
    texts = [text_of(await play(model)) for _ in range(5)]
    assert texts == ["first", "again", "again", "again", "again"]
    assert model.remaining == 0


async def test_scripted_exhaustion_message() -> None:
    model = ScriptedTransport([Reply("a"), Reply("b")])
    await play(model)
    await play(model)
    history = [
        Message("user", "q"),
        Message("assistant", [ToolUseBlock("call_9", "echo", {})]),
        Message("user", [ToolResultBlock("call_9", "boom", is_error=True)]),
    ]
    with pytest.raises(ScriptExhausted) as info:
        await collect(model.stream(history, [], ""))
    message = str(info.value)
    assert "request #3" in message
    assert "only 2 step(s) were scripted" in message
    assert "(3 messages)" in message
    assert "tool_result call_9 (error): 'boom'" in message
    assert isinstance(info.value, AssertionError)


async def test_scripted_exhaustion_with_no_steps() -> None:
    with pytest.raises(ScriptExhausted, match=r"request #1 but only 0 step\(s\).*user: 'hello'"):
        await collect(ScriptedTransport([]).stream(HELLO, [], ""))


async def test_hold_waits_for_the_event() -> None:
    gate = asyncio.Event()
    model = ScriptedTransport([Hold(gate, Reply("released"))])
    task = asyncio.create_task(collect(model.stream(HELLO, [], "")))
    await asyncio.sleep(0.01)
    assert not task.done()
    assert model.call_count == 1
    gate.set()
    events = await asyncio.wait_for(task, 1)
    assert text_of(events) == "released"
    assert_stream_contract(events)


async def test_hold_after_events_allows_cancelling_mid_stream() -> None:
    gate = asyncio.Event()
    model = ScriptedTransport([Hold(gate, Reply("abc", chunks=3), after_events=2)])
    seen: list[StreamEvent] = []
    two_seen = asyncio.Event()

    async def consume() -> None:
        async for event in model.stream(HELLO, [], ""):
            seen.append(event)
            if len(seen) == 2:
                two_seen.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(two_seen.wait(), 1)
    await asyncio.sleep(0.01)
    assert seen == [TextDelta(0, "a"), TextDelta(0, "b")]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(seen) == 2


async def test_many_holds_in_flight_release_together() -> None:
    gate = asyncio.Event()
    model = ScriptedTransport([], then=Hold(gate, Reply(tool_calls=[Call("echo")])))
    tasks = [asyncio.create_task(collect(model.stream(HELLO, [], ""))) for _ in range(5)]
    await asyncio.sleep(0.01)
    assert model.call_count == 5
    assert not any(t.done() for t in tasks)
    gate.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks), 1)
    ids = sorted(e.tool_use_id for r in results for e in r if isinstance(e, ToolUseStart))
    assert ids == [f"call_{n}" for n in range(1, 6)]


def test_scripted_rejects_bad_steps() -> None:
    with pytest.raises(TypeError, match=r"step 0 is a str; wrap text in Reply\('hi'\)"):
        ScriptedTransport(["hi"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"step 1 is the exception class ValueError"):
        ScriptedTransport([Reply(), ValueError])
    with pytest.raises(TypeError, match=r"step 0 is a Call; wrap it as Reply"):
        ScriptedTransport([Call("echo")])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"then=.*got int"):
        ScriptedTransport([], then=3)  # type: ignore[arg-type]


def test_reply_and_hold_validation() -> None:
    with pytest.raises(TypeError, match="not a single Call"):
        Reply(tool_calls=Call("echo"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="items must be Call"):
        Reply(tool_calls=["echo"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="chunks"):
        Reply("x", chunks=0)
    with pytest.raises(ValueError, match="after_events"):
        Hold(asyncio.Event(), Reply(), after_events=-1)
    with pytest.raises(TypeError, match="must be a Reply"):
        Hold(asyncio.Event(), "x")  # type: ignore[arg-type]
    assert Reply(tool_calls=[Call("a")]).tool_calls == (Call("a"),)


# --------------------------------------------------------------------------------------------
# Property: every Reply streams a contract-valid turn that round-trips its content

calls_strategy = st.lists(
    st.builds(
        Call,
        name=st.sampled_from(["echo", "search", "a.b-c"]),
        input=st.none() | st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
        id=st.none() | st.text(min_size=1, max_size=6),
    ),
    max_size=4,
    unique_by=lambda c: c.id if c.id is not None else object(),
)


@given(
    text=st.text(max_size=30),
    calls=calls_strategy,
    chunks=st.integers(1, 8),
    reasoning=st.none() | st.text(max_size=20),
    signature=st.none() | st.text(min_size=1, max_size=8),
)
async def test_any_reply_meets_the_contract(
    text: str, calls: list[Call], chunks: int, reasoning: str | None, signature: str | None
) -> None:
    # Explicit ids must not collide with the generated call_n ones.
    calls = [c if c.id is None else Call(c.name, c.input, "x" + c.id) for c in calls]
    reply = Reply(text, calls, chunks=chunks, reasoning=reasoning, reasoning_signature=signature)
    events = await play(ScriptedTransport([reply]))
    assert text_of(events) == text
    thought = [e for e in events if isinstance(e, ReasoningDelta)]
    assert "".join(e.delta for e in thought) == (reasoning or "")
    if thought:
        assert thought[-1].signature == signature
    starts = [e for e in events if isinstance(e, ToolUseStart)]
    assert [s.name for s in starts] == [c.name for c in calls]
    inputs = [json.loads(e.partial_json) for e in events if isinstance(e, ToolInputDelta)]
    assert inputs == [dict(c.input or {}) for c in calls]
