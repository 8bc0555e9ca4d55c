"""``LocalTransport.with_options``: a view that starts and shares its base's model and HTTP
client (closing it closes neither), and on the Anthropic wire turns tool calls off by offering
no tools, since llama.cpp's Anthropic endpoint drops ``tool_choice``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from tether.events import StreamEvent
from tether.local.transport import LocalTransport
from tether.messages import Message
from tether.types import ToolSpec


class Recording:
    """A wire transport that records what it is asked and with which options."""

    def __init__(self, log: list[tuple[dict[str, Any], int]], **options: Any) -> None:
        self.log, self.options, self.closed = log, options, False

    def with_options(self, **changes: Any) -> Recording:
        return Recording(self.log, **{**self.options, **changes})

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str
    ) -> AsyncIterator[StreamEvent]:
        self.log.append((self.options, len(tools)))
        return
        yield

    async def aclose(self) -> None:
        self.closed = True


class FakeModel:
    """Stands in for ``LocalModel``: counts starts and stops, makes recording transports."""

    model = "fake"

    def __init__(self) -> None:
        self.starts = self.stops = 0
        self.log: list[tuple[dict[str, Any], int]] = []
        self.made: list[Recording] = []

    async def start(self, progress: Any = None) -> FakeModel:
        self.starts += 1
        return self

    async def stop(self) -> None:
        self.stops += 1

    def _make(self, **options: Any) -> Recording:
        self.made.append(Recording(self.log, **options))
        return self.made[-1]

    chat_transport = anthropic_transport = responses_transport = _make


TOOLS = [ToolSpec("t", "a tool", {"type": "object", "properties": {}})]


async def _drain(transport: Any) -> None:
    async for _ in transport.stream([Message("user", "hi")], TOOLS, ""):
        pass


@pytest.mark.parametrize(("wire", "offered"), [("chat", 1), ("responses", 1), ("anthropic", 0)])
async def test_a_view_shares_the_model_and_turns_calls_off_per_wire(
    wire: str, offered: int
) -> None:
    model = FakeModel()
    base = LocalTransport(wire, model=model, temperature=0.5)  # type: ignore[arg-type]
    fmt = {"name": "x", "schema": {"type": "object"}}
    view = base.with_response_format(fmt).with_options(tool_choice="none")
    assert view.model == "fake" and view.base is base
    await _drain(view)
    await _drain(base)
    assert model.starts == 1 and len(model.made) == 1  # one start, one client
    (asked, tools), (plain, all_tools) = model.log
    assert asked == {"temperature": 0.5, "response_format": fmt, "tool_choice": "none"}
    assert tools == offered and all_tools == 1 and plain == {"temperature": 0.5}
    assert not hasattr(view, "aclose")  # nothing of its own to close
    assert model.stops == 0 and not model.made[0].closed
    await base.aclose()
    assert model.stops == 1 and model.made[0].closed


async def test_only_tool_choice_none_drops_the_tools() -> None:
    model = FakeModel()
    base = LocalTransport("anthropic", model=model)  # type: ignore[arg-type]
    await _drain(base.with_options(tool_choice="auto"))
    await _drain(base.with_response_format({"name": "x", "schema": {}}))
    assert [tools for _, tools in model.log] == [1, 1]
