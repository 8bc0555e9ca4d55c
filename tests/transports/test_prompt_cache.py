"""Prompt caching: a provider discounts a repeated prefix, so each request of a run must repeat the
one before byte for byte (nothing re-ordered, no timestamps, the tool list stable) for all three
wire formats; Anthropic caches only where a request marks a breakpoint (``cache="auto"``: system,
tools, newest message); OpenAI's APIs take ``prompt_cache_key``."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tether import Agent, Message, tool
from tether.messages import ReasoningBlock, TextBlock
from tether.transports import (
    AnthropicTransport,
    OpenAIChatTransport,
    OpenAIResponsesTransport,
)
from tether.transports.codecs.anthropic import AnthropicCodec
from tether.transports.options import ModelOptions
from tether.types import ToolSpec

ROUNDS = 4


@tool
def step(i: int) -> str:
    """One step of the work."""
    return f"step {i} done"


@tool
def note(text: str) -> str:
    """Write a note."""
    return "noted"


def _chat(k: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "all done"}
    finish = "stop"
    if k < ROUNDS:
        call = {
            "id": f"c{k}",
            "type": "function",
            "function": {"name": "step", "arguments": f'{{"i": {k}}}'},
        }
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    choice = {"index": 0, "finish_reason": finish, "message": message}
    usage = {"prompt_tokens": 10, "completion_tokens": 1}
    return {"id": "x", "model": "m", "choices": [choice], "usage": usage}


def _responses(k: int) -> dict[str, Any]:
    if k < ROUNDS:
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc{k}",
            "call_id": f"c{k}",
            "name": "step",
            "arguments": f'{{"i": {k}}}',
            "status": "completed",
        }
    else:
        text = {"type": "output_text", "text": "all done", "annotations": []}
        item = {
            "type": "message",
            "id": "m1",
            "role": "assistant",
            "status": "completed",
            "content": [text],
        }
    usage = {"input_tokens": 10, "output_tokens": 1}
    return {"id": "r", "model": "m", "status": "completed", "output": [item], "usage": usage}


def _anthropic(k: int) -> dict[str, Any]:
    if k < ROUNDS:
        content: list[dict[str, Any]] = [
            {"type": "tool_use", "id": f"c{k}", "name": "step", "input": {"i": k}}
        ]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": "all done"}], "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 1}
    return {
        "id": "msg",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": content,
        "stop_reason": stop,
        "usage": usage,
    }


FORMATS: dict[str, tuple[Any, Callable[[int], dict[str, Any]], str]] = {
    "openai-chat": (OpenAIChatTransport, _chat, "messages"),
    "openai-responses": (OpenAIResponsesTransport, _responses, "input"),
    "anthropic": (AnthropicTransport, _anthropic, "messages"),
}


async def _bodies(name: str, **options: Any) -> list[dict[str, Any]]:
    """The request bodies of one tool loop of ``ROUNDS`` rounds in format ``name``."""
    cls, reply, _ = FORMATS[name]
    sent: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=reply(len(sent) - 1))

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    transport = cls(
        "m", base_url="http://127.0.0.1:9", api_key="k", stream=False, client=client, **options
    )
    agent = Agent("You work in steps.", transport, tools=[step, note], max_iterations=ROUNDS + 2)
    assert await agent.run("Do the work.") == "all done"
    await client.aclose()
    assert len(sent) == ROUNDS + 1
    return sent


def _unmarked(value: Any) -> Any:
    """``value`` without Anthropic's cache breakpoints (they move to the newest message)."""
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


@pytest.mark.parametrize("name", list(FORMATS))
async def test_each_request_repeats_the_one_before_byte_for_byte(name: str) -> None:
    _, _, key = FORMATS[name]
    bodies = await _bodies(name)
    for before, after in itertools.pairwise(bodies):
        earlier = before[key]
        assert len(after[key]) > len(earlier)
        dumped = [json.dumps(_unmarked(m)) for m in after[key][: len(earlier)]]
        assert dumped == [json.dumps(_unmarked(m)) for m in earlier]
        rest = {k: v for k, v in after.items() if k != key}
        assert json.dumps(rest) == json.dumps({k: v for k, v in before.items() if k != key})


async def test_anthropic_marks_system_tools_and_the_newest_message() -> None:
    bodies = await _bodies("anthropic")
    for body in bodies:
        (system,) = body["system"]
        assert system == {
            "type": "text",
            "text": "You work in steps.",
            "cache_control": {"type": "ephemeral"},
        }
        assert [("cache_control" in t) for t in body["tools"]] == [False, True]
        marked = [
            (m, b)
            for m, turn in enumerate(body["messages"])
            for b, block in enumerate(turn["content"])
            if "cache_control" in block
        ]
        newest = len(body["messages"]) - 1
        assert marked == [(newest, len(body["messages"][newest]["content"]) - 1)]
        assert json.dumps(body).count("cache_control") == 3  # of the four Anthropic allows


async def test_anthropic_cache_false_marks_nothing_and_sends_the_system_as_text() -> None:
    for body in await _bodies("anthropic", cache=False):
        assert "cache_control" not in json.dumps(body)
        assert body["system"] == "You work in steps."


def test_a_thinking_block_is_never_marked_the_block_before_it_is() -> None:
    codec = AnthropicCodec()
    reply = Message(
        "assistant",
        (TextBlock("Let me see."), ReasoningBlock("hmm", signature="sig", provider="anthropic")),
    )
    body = codec.encode("m", [Message("user", "hi"), reply], [], "", ModelOptions(), False)
    last = body["messages"][-1]["content"]
    assert [("cache_control" in b) for b in last] == [True, False]
    assert "system" not in body  # no system prompt, no block for it


def test_cache_takes_auto_or_false() -> None:
    with pytest.raises(ValueError, match="cache must be 'auto' or False"):
        AnthropicTransport("m", api_key="k", cache="always")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["openai-chat", "openai-responses"])
async def test_openai_requests_carry_the_prompt_cache_key(name: str) -> None:
    bodies = await _bodies(name, prompt_cache_key="session-42")
    assert {b["prompt_cache_key"] for b in bodies} == {"session-42"}
    assert all("prompt_cache_key" not in b for b in await _bodies(name))


def test_anthropic_has_no_prompt_cache_key_and_an_empty_key_is_refused() -> None:
    codec = AnthropicCodec()
    options = ModelOptions(prompt_cache_key="k")
    body = codec.encode("m", [Message("user", "hi")], [ToolSpec("t", "d", {})], "s", options, False)
    assert "prompt_cache_key" not in body
    with pytest.raises(ValueError, match="prompt_cache_key must be a non-empty string"):
        ModelOptions(prompt_cache_key="")


@pytest.mark.parametrize(
    ("own_key", "host", "sent_key"),
    [
        (None, None, "trip-7"),
        ("mine", None, "mine"),
        (None, "http://127.0.0.1:9/v1", None),  # a compatible server may refuse the field
        ("mine", "http://127.0.0.1:9/v1", "mine"),
    ],
)
async def test_an_agent_session_keys_the_cache_by_its_session_id(
    own_key: str | None, host: str | None, sent_key: str | None
) -> None:
    """AgentSession asks OpenAI (its own host: requests here go to a mock client) to cache under
    its session id, unless the transport names a key of its own; the transport the user passed
    is left as it was."""
    from tether import AgentSession

    sent: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=_chat(ROUNDS))

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    options = {} if own_key is None else {"prompt_cache_key": own_key}
    transport = OpenAIChatTransport(
        "m", base_url=host, api_key="k", stream=False, client=client, **options
    )
    session = AgentSession(transport, session_id="trip-7")
    assert await session.send("Hello.") == "all done"
    assert await session.send("Again.") == "all done"
    assert [b.get("prompt_cache_key") for b in sent] == [sent_key] * 2
    assert transport.options.prompt_cache_key == own_key
    await client.aclose()


def test_a_message_sent_before_is_encoded_once_and_its_wire_form_reused() -> None:
    """A long run's requests re-send its whole history: the chat codec keeps each message's wire
    form (messages do not change), so only what is new is built; the body is what a fresh codec
    builds."""
    from tether.messages import ToolResultBlock, ToolUseBlock
    from tether.transports.codecs.openai_chat import OpenAIChatCodec

    history = [
        Message("user", "go"),
        Message("assistant", (ToolUseBlock("c1", "step", {"i": 1}),)),
        Message("user", (ToolResultBlock("c1", "r" * 2048),)),
    ]
    codec, options = OpenAIChatCodec(), ModelOptions()
    first = codec.encode("m", history, [], "s", options, False)["messages"]
    history.append(Message("assistant", "done"))
    second = codec.encode("m", history, [], "s", options, False)["messages"]
    assert all(a is b for a, b in zip(first[1:], second[1:4], strict=True))  # reused, not rebuilt
    assert second == OpenAIChatCodec().encode("m", history, [], "s", options, False)["messages"]
    changed = [*history[:2], Message("user", (ToolResultBlock("c1", "other"),)), history[3]]
    third = codec.encode("m", changed, [], "s", options, False)["messages"]
    assert third[3]["content"] == "other"  # a new message object is encoded afresh
