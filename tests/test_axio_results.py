"""A tool result whose content is a list of blocks, as axio spells it
(``ToolResultBlock(id, [TextBlock(...), ImageBlock(...)])``): built, returned by a tool, sent by
every provider codec (images as content parts where the wire format takes them), kept through
JSON and every store, while a plain string result stays exactly as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tether import (
    Agent,
    ImageBlock,
    MemoryContextStore,
    Message,
    TextBlock,
    ToolResult,
    ToolResultBlock,
    ToolUseBlock,
    tool,
)
from tether.stores import FileStore, SQLiteStore
from tether.stores.jsonforms import message_from_dict, message_to_dict
from tether.testing import Call, Reply, ScriptedTransport
from tether.transports.codecs.anthropic import AnthropicCodec
from tether.transports.codecs.openai_chat import OpenAIChatCodec
from tether.transports.codecs.openai_responses import OpenAIResponsesCodec
from tether.transports.options import ModelOptions

PNG = "iVBORw0KGgo="
CHART = ImageBlock("image/png", data=PNG)


def rich() -> ToolResultBlock:
    return ToolResultBlock("c1", [TextBlock("chart:"), CHART, TextBlock(" done")])


def conversation(result: ToolResultBlock) -> list[Message]:
    return [
        Message("user", "plot it"),
        Message("assistant", [ToolUseBlock("c1", "plot", {})]),
        Message("user", [result]),
    ]


def test_a_list_of_blocks_is_the_content() -> None:
    block = rich()
    assert list(block.content) == [TextBlock("chart:"), CHART, TextBlock(" done")]
    assert block == ToolResultBlock("c1", (TextBlock("chart:"), CHART, TextBlock(" done")))
    assert hash(block) == hash(rich())  # kept immutable: the list is stored as a tuple
    assert block.text == "chart:[image image/png] done"
    assert not block.is_error


def test_a_string_result_is_kept_exactly() -> None:
    text = "12:34 ✓"
    block = ToolResultBlock("c1", text, True)
    assert block.content is text and block.text == text and block.is_error


@pytest.mark.parametrize(
    "bad",
    [[{"type": "text", "text": "hi"}], [TextBlock("a"), "b"], b"bytes", {"text": "hi"}, 3],
)
def test_content_that_is_not_text_or_blocks_is_refused_clearly(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"ToolResultBlock\.content"):
        ToolResultBlock("c1", bad)


def encode(codec: Any, result: ToolResultBlock) -> dict[str, Any]:
    return dict(codec.encode("m", conversation(result), [], "", ModelOptions(), False))


def test_anthropic_sends_the_blocks_as_tool_result_parts() -> None:
    body = encode(AnthropicCodec(), rich())
    (sent,) = body["messages"][-1]["content"]
    assert sent["type"] == "tool_result" and sent["tool_use_id"] == "c1"
    assert sent["content"] == [
        {"type": "text", "text": "chart:"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "text", "text": " done"},
    ]
    assert "is_error" not in sent


def test_openai_chat_sends_the_text_as_the_tool_message_and_the_image_after_it() -> None:
    body = encode(OpenAIChatCodec(), rich())
    *_, tool_message, images = body["messages"]
    assert tool_message == {"role": "tool", "tool_call_id": "c1", "content": "chart: done"}
    assert images["role"] == "user"
    assert images["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }


def test_openai_responses_sends_the_blocks_as_output_parts() -> None:
    body = encode(OpenAIResponsesCodec(), rich())
    output = body["input"][-1]
    assert output["type"] == "function_call_output" and output["call_id"] == "c1"
    assert output["output"] == [
        {"type": "input_text", "text": "chart:"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "auto"},
        {"type": "input_text", "text": " done"},
    ]


@pytest.mark.parametrize("codec", [AnthropicCodec(), OpenAIChatCodec(), OpenAIResponsesCodec()])
def test_text_only_blocks_go_as_text_where_the_format_has_no_parts(codec: Any) -> None:
    body = json.dumps(encode(codec, ToolResultBlock("c1", [TextBlock("14:05"), TextBlock(" CET")])))
    assert "14:05" in body and "CET" in body
    assert "image" not in body


def test_json_round_trip_keeps_the_blocks() -> None:
    message = conversation(rich())[-1]
    again = message_from_dict(json.loads(json.dumps(message_to_dict(message))))
    assert again == message
    assert isinstance(again.tool_results[0].content, tuple)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "file"])
async def test_every_store_keeps_the_blocks(kind: str, tmp_path: Path) -> None:
    messages = [*conversation(rich()), *conversation(ToolResultBlock("c1", "plain", True))]
    if kind == "memory":
        store = MemoryContextStore()
        for m in messages:
            await store.append(m)
        assert await store.get_history() == messages
        return

    def make() -> Any:
        return SQLiteStore(tmp_path / "chats.db") if kind == "sqlite" else FileStore(tmp_path)

    async with make() as backend:
        context = await backend.open("rich")
        for m in messages:
            await context.append(m)
    async with make() as again:
        assert await (await again.open("rich")).get_history() == messages


async def test_a_tool_returning_a_list_of_blocks_reaches_the_model_and_the_history() -> None:
    @tool
    async def plot() -> list[TextBlock | ImageBlock]:
        """Draw the chart."""
        return [TextBlock("chart:"), CHART]

    transport = ScriptedTransport([Reply(tool_calls=[Call("plot", {}, id="c1")]), Reply("ok")])
    store = MemoryContextStore()
    events = [e async for e in Agent("s", transport, tools=[plot]).run_stream("go", store)]
    stored = store.messages[2].tool_results[0]
    assert stored == ToolResultBlock("c1", [TextBlock("chart:"), CHART])
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.content == stored.content and not result.is_error
    second_request = transport.requests[1].messages
    assert second_request[-1].tool_results == [stored]
