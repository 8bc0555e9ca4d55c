"""Tool dispatch details: result conversion, truncation, guard failures, calls that never ran."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import pytest

from tether import (
    Agent,
    CancellationToken,
    ImageBlock,
    MemoryContextStore,
    SessionEndEvent,
    StopReason,
    TextBlock,
    Tool,
    ToolResult,
    ToolResultBlock,
    ToolUseBlock,
    tool,
)
from tether.loop.dispatch import ToolDispatcher, to_content, tools_by_name, truncate_result
from tether.testing import Call, Hold, Reply, ScriptedTransport


@dataclass
class Point:
    x: int
    y: int


def test_to_content_keeps_text_and_images_and_encodes_the_rest() -> None:
    img = ImageBlock("image/png", data="iVBORw0K")
    assert to_content("plain") == "plain"
    assert to_content(TextBlock("t")) == (TextBlock("t"),)
    assert to_content([TextBlock("t"), img]) == (TextBlock("t"), img)
    assert to_content({"a": [1, 2]}) == '{"a": [1, 2]}'
    assert to_content(None) == "null"
    assert to_content(Point(1, 2)) == '{"x": 1, "y": 2}'  # a dataclass as its fields
    assert to_content([Point(1, 2)]) == '[{"x": 1, "y": 2}]'
    assert to_content(Point) == json.dumps(str(Point))  # anything else falls back to str

    class Model:
        def model_dump_json(self) -> str:
            return '{"m": 1}'

    assert to_content(Model()) == '{"m": 1}'


def test_truncate_string_result_keeps_the_head_and_says_how_much_was_cut() -> None:
    block = ToolResultBlock("t", "x" * 500)
    cut = truncate_result(block, 50)
    assert isinstance(cut.content, str)
    assert cut.content.startswith("x" * 50)
    assert "[truncated 450 of 500 characters]" in cut.content
    assert truncate_result(block, None) is block
    assert truncate_result(block, 500) is block


def test_truncate_rich_result_shares_the_limit_across_text_blocks_and_keeps_images() -> None:
    img = ImageBlock("image/png", url="https://example.com/x.png")
    block = ToolResultBlock("t", (TextBlock("a" * 30), img, TextBlock("b" * 40)))
    cut = truncate_result(block, 50)
    assert isinstance(cut.content, tuple)
    first, image, second = cut.content
    assert image is img
    assert isinstance(first, TextBlock) and first.text == "a" * 30
    assert isinstance(second, TextBlock) and second.text.startswith("b" * 20)
    assert "[truncated 20 of 40 characters]" in second.text


def test_tools_by_name_rejects_duplicates() -> None:
    a = Tool("a", lambda: 1)
    with pytest.raises(ValueError, match="share the name"):
        tools_by_name([a, Tool("a", lambda: 2)])
    assert tools_by_name([a]) == {"a": a}


async def test_a_failing_guard_is_reported_as_the_guard_not_the_tool() -> None:
    calls: list[str] = []

    def broken_guard(call: object) -> None:
        raise RuntimeError("policy store offline")

    t = Tool("t", lambda: calls.append("ran"), guards=[broken_guard])
    result = await ToolDispatcher({"t": t}, (), 1).execute(ToolUseBlock("c1", "t", {}))
    assert result.is_error
    assert result.content == "Error: a guard of tool 't' failed: RuntimeError: policy store offline"
    assert calls == []


async def test_a_broken_error_formatter_falls_back_to_the_default_text() -> None:
    def formatter(name: str, args: object, exc: BaseException) -> str:
        raise ValueError("formatter bug")

    def boom() -> None:
        raise KeyError("k")

    dispatcher = ToolDispatcher({"t": Tool("t", boom)}, (), 1, formatter)
    result = await dispatcher.execute(ToolUseBlock("c1", "t", {}))
    assert result.is_error and result.content == "Error: Tool 't' failed: KeyError: 'k'"


async def test_tool_timeout_becomes_an_error_result() -> None:
    async def slow() -> str:
        await asyncio.sleep(10)
        return "never"

    dispatcher = ToolDispatcher({"slow": Tool("slow", slow, timeout=0.01)}, (), 1)
    result = await dispatcher.execute(ToolUseBlock("c1", "slow", {}))
    assert result.is_error and result.content == "Error: Tool 'slow' timed out after 0.01 s."


async def test_calls_cut_off_by_max_tokens_get_result_events_too() -> None:
    ran: list[int] = []

    @tool
    def step(i: int) -> int:
        ran.append(i)
        return i

    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("step", {"i": 1})], stop_reason=StopReason.MAX_TOKENS),
            Reply("ok"),
        ]
    )
    events = [e async for e in Agent("s", model, tools=[step]).run_stream("go")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert ran == []
    assert len(results) == 1 and results[0].is_error
    assert "was not run" in str(results[0].content)


async def test_pre_cancelled_run_counts_no_iterations() -> None:
    token = CancellationToken()
    token.cancel()
    model = ScriptedTransport([])
    stream = Agent("s", model).run_stream("go", cancel=token)
    events = [e async for e in stream]
    end = events[-1]
    assert isinstance(end, SessionEndEvent)
    assert end.stop_reason is StopReason.CANCELLED and end.iterations == 0
    assert stream.iterations == 0 and model.requests == []


async def test_closing_a_stream_mid_turn_marks_it_done_and_cancelled() -> None:
    gate = asyncio.Event()
    model = ScriptedTransport([Hold(gate, Reply("partial answer", chunks=4), after_events=2)])
    store = MemoryContextStore()
    stream = Agent("s", model).run_stream("go", store)
    seen = [await stream.__anext__() for _ in range(2)]  # IterationStart, first delta
    assert len(seen) == 2
    await stream.aclose()
    assert stream.done and stream.stop_reason is StopReason.CANCELLED
    assert [m.role for m in store.messages] == ["user", "assistant"]
    assert store.messages[1].text == "part"
