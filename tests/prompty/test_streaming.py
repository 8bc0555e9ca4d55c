"""Streaming through the Prompty door (§9.3, §10): the final answer arrives chunk by chunk while
tool rounds stay buffered; ``PromptyStream`` accumulates, traces, runs once, and stops its run
when the caller leaves early; refusals raise (§10.3, §12.4); ``kind: reference`` connections."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tether import prompty
from tether.events import (
    IterationEnd,
    IterationStart,
    StreamEvent,
    TextDelta,
    ToolInputDelta,
    ToolUseStart,
)
from tether.messages import Message
from tether.prompty import ModelRefusedError, PromptyStream, Tracer, registry
from tether.prompty.errors import WireError
from tether.testing import Call, Reply, ScriptedTransport
from tether.types import StopReason, ToolSpec

pytestmark = pytest.mark.timeout(30)

AGENT = """\
---
name: streamer
model: {id: scripted, provider: openai, apiType: chat}
tools:
  - name: get_weather
    kind: function
    description: The weather in a city
    parameters:
      - {name: city, kind: string, required: true}
inputs:
  - {name: question, kind: string}
---
system:
You answer questions about the weather.

user:
{{question}}
"""
QUESTION = {"question": "Weather in Paris?"}


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    path = tmp_path / "streamer.prompty"
    path.write_text(AGENT)
    return path


def weather(city: str) -> str:
    return f"sunny in {city}"


def tool_then_answer(answer: str = "It is sunny in Paris today.") -> ScriptedTransport:
    return ScriptedTransport(
        [Reply(tool_calls=[Call("get_weather", {"city": "Paris"})]), Reply(answer, chunks=4)]
    )


async def test_the_final_answer_streams_and_the_tool_round_does_not(agent: Path) -> None:
    model = tool_then_answer()
    events: list[tuple[str, dict[str, Any]]] = []
    stream = await prompty.turn_async(
        agent,
        QUESTION,
        tools={"get_weather": weather},
        transport=model,
        stream=True,
        on_event=lambda kind, data: events.append((kind, data)),
    )
    assert isinstance(stream, PromptyStream) and not model.requests  # nothing runs before reading
    chunks = [chunk async for chunk in stream]
    assert len(chunks) == 4 and "".join(chunks) == "It is sunny in Paris today."
    assert stream.items == chunks and stream.result == "".join(chunks)
    assert [m.role for m in stream.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert [d["token"] for k, d in events if k == "token"] == chunks  # the caller's events too
    kinds = [k for k, _ in events]
    assert kinds.index("tool_result") < kinds.index("token") and kinds[-1] == "done"


class ToolsFirst:
    """A model whose first turn starts with a tool call and says something after it."""

    def __init__(self) -> None:
        self.turns = 0

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        self.turns += 1
        yield IterationStart(0)
        if self.turns == 1:
            yield ToolUseStart(0, "c1", "get_weather")
            yield ToolInputDelta(0, "c1", '{"city": "Oslo"}')
            yield TextDelta(1, "(noting the call)")
            yield IterationEnd(0, StopReason.TOOL_USE)
            return
        yield TextDelta(0, "Sunny in Oslo.")
        yield IterationEnd(0, StopReason.END_TURN)


async def test_text_of_a_turn_that_opened_with_tool_calls_stays_buffered(agent: Path) -> None:
    stream = await prompty.turn_async(
        agent, QUESTION, tools={"get_weather": weather}, transport=ToolsFirst(), stream=True
    )
    assert [c async for c in stream] == ["Sunny in Oslo."]


async def test_text_that_opens_a_tool_round_is_streamed_as_it_comes(agent: Path) -> None:
    # §9.3's first-chunk rule: a turn that starts with text is taken for the answer.
    model = ScriptedTransport(
        [
            Reply("Let me look. ", tool_calls=[Call("get_weather", {"city": "Oslo"})]),
            Reply("Sunny."),
        ]
    )
    stream = await prompty.turn_async(
        agent, QUESTION, tools={"get_weather": weather}, transport=model, stream=True
    )
    assert [c async for c in stream] == ["Let me look. ", "Sunny."]
    assert stream.result == "Sunny."


class Gated:
    """A model whose answer stops after its first chunk until ``go`` is set."""

    def __init__(self) -> None:
        self.go = asyncio.Event()

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        yield IterationStart(0)
        yield TextDelta(0, "first ")
        await self.go.wait()
        yield TextDelta(0, "second")
        yield IterationEnd(0, StopReason.END_TURN)


async def test_chunks_reach_the_caller_before_the_model_has_finished(agent: Path) -> None:
    model = Gated()
    stream = await prompty.turn_async(agent, QUESTION, transport=model, stream=True)
    seen = []
    async for chunk in stream:
        seen.append(chunk)
        model.go.set()  # were chunks held back until the end, this would never be reached
    assert seen == ["first ", "second"]


async def test_leaving_early_stops_the_run(agent: Path) -> None:
    model = Gated()
    stream = await prompty.turn_async(agent, QUESTION, transport=model, stream=True)
    async with stream:
        async for chunk in stream:
            assert chunk == "first "
            break
    assert stream.result is None and stream.items == ["first "]
    assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


def test_sync_iteration_runs_the_stream_on_a_worker_thread(agent: Path) -> None:
    stream = prompty.turn(
        agent, QUESTION, tools={"get_weather": weather}, transport=tool_then_answer(), stream=True
    )
    assert "".join(stream) == "It is sunny in Paris today."
    assert stream.result == "It is sunny in Paris today."
    assert not [t for t in threading.enumerate() if t.name == "prompty-stream"]


def test_sync_early_exit_joins_the_worker(agent: Path) -> None:
    stream = prompty.turn(agent, QUESTION, transport=Gated(), stream=True)
    iterator = iter(stream)
    assert next(iterator) == "first "
    iterator.close()  # what a for loop's break does once the iterator is dropped
    assert not [t for t in threading.enumerate() if t.name == "prompty-stream"]


async def test_a_stream_is_read_once(agent: Path) -> None:
    stream = await prompty.turn_async(agent, QUESTION, transport=tool_then_answer(), stream=True)
    assert [c async for c in stream]
    with pytest.raises(RuntimeError, match="only once"):
        [c async for c in stream]


async def test_errors_reach_the_reader(agent: Path) -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("nowhere")])])
    stream = await prompty.turn_async(agent, QUESTION, transport=model, stream=True)
    with pytest.raises(ValueError, match="nowhere"):
        [c async for c in stream]


async def test_bad_options_fail_at_the_call_not_at_the_first_read(agent: Path) -> None:
    with pytest.raises(TypeError):
        await prompty.turn_async(agent, QUESTION, transport=tool_then_answer(), stream=True, x=1)


@contextmanager
def collected_spans() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    spans: list[tuple[str, dict[str, Any]]] = []

    @contextmanager
    def backend(name: str) -> Iterator[Any]:
        fields: dict[str, Any] = {}
        yield fields.__setitem__
        spans.append((name, fields))

    factory: Any = backend
    Tracer.add("test", factory)
    try:
        yield spans
    finally:
        Tracer.remove("test")


async def test_an_exhausted_stream_is_one_span_with_every_item(agent: Path) -> None:
    with collected_spans() as spans:
        stream = await prompty.turn_async(
            agent,
            QUESTION,
            tools={"get_weather": weather},
            transport=tool_then_answer(),
            stream=True,
        )
        chunks = [c async for c in stream]
    streamed = [fields for name, fields in spans if name == "PromptyStream"]
    assert streamed == [{"result": chunks}]
    assert any(name == "turn" for name, _ in spans)


# -- refusals ---------------------------------------------------------------------------------


def refusing() -> ScriptedTransport:
    return ScriptedTransport([Reply("I cannot help with that", stop_reason=StopReason.REFUSAL)])


async def test_a_refusal_in_the_loop_is_the_specs_value_error(agent: Path) -> None:
    with pytest.raises(ModelRefusedError, match=r"^Model refused: I cannot help with that$") as e:
        await prompty.turn_async(agent, QUESTION, transport=refusing())
    assert isinstance(e.value, ValueError)
    assert e.value.messages[-1].role == "assistant"


async def test_a_streamed_refusal_raises_when_it_is_known(agent: Path) -> None:
    stream = await prompty.turn_async(agent, QUESTION, transport=refusing(), stream=True)
    with pytest.raises(ModelRefusedError):
        [c async for c in stream]
    single = await prompty.invoke_async(agent, QUESTION, transport=refusing(), stream=True)
    with pytest.raises(ModelRefusedError, match="Model refused"):
        [c async for c in single]
    # Not streamed and outside the loop, §8's processor returns the refusal text.
    assert await prompty.invoke_async(agent, QUESTION, transport=refusing()) == (
        "I cannot help with that"
    )


async def test_a_streamed_single_call_gives_text_then_the_tool_calls(agent: Path) -> None:
    model = ScriptedTransport(
        [Reply("Checking.", tool_calls=[Call("get_weather", {"city": "Rome"}, id="c1")])]
    )
    stream = await prompty.invoke_async(agent, QUESTION, transport=model, stream=True)
    items = [item async for item in stream]
    assert items == [
        "Checking.",
        {"id": "c1", "name": "get_weather", "arguments": '{"city": "Rome"}'},
    ]
    assert isinstance(items[1], prompty.RequestedToolCall)


async def test_declared_outputs_that_are_not_json_come_back_as_text(tmp_path: Path) -> None:
    path = tmp_path / "structured.prompty"
    path.write_text(
        "---\nmodel: {id: m}\noutputs:\n  - {name: city, kind: string}\n---\nuser:\nhi\n"
    )
    model = ScriptedTransport([Reply("not valid json"), Reply('{"city": "Paris"}')])
    assert await prompty.invoke_async(path, transport=model) == "not valid json"
    assert await prompty.invoke_async(path, transport=model) == {"city": "Paris"}


# -- kind: reference connections (§11.1) ------------------------------------------------------

REFERENCED = """\
---
model:
  id: whatever
  connection: {kind: reference, name: shared-model}
---
user:
hi
"""


@pytest.fixture
def referenced(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "referenced.prompty"
    path.write_text(REFERENCED)
    yield path
    registry.clear_connections()


async def test_a_reference_connection_runs_on_the_registered_transport(referenced: Path) -> None:
    model = ScriptedTransport([Reply("from the shared model")])
    prompty.register_connection("shared-model", model)
    assert await prompty.invoke_async(referenced) == "from the shared model"
    assert len(model.requests) == 1


async def test_an_unregistered_reference_is_an_error_naming_it(referenced: Path) -> None:
    with pytest.raises(WireError, match="'shared-model' is not registered"):
        await prompty.invoke_async(referenced)


async def test_a_registered_object_that_is_no_client_is_refused(referenced: Path) -> None:
    prompty.register_connection("shared-model", object())
    with pytest.raises(WireError, match="neither a tether transport"):
        await prompty.invoke_async(referenced)
