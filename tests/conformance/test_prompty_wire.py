"""Prompty's ``WireConformance.toRequest`` vectors (spec §7): each vector's messages, tools and
options go through the tether codec for its provider and API (Chat Completions, Responses,
Anthropic Messages, embeddings, images); the body must hold the one the vector expects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from prompty_adapter import assert_subset, load, media_options, request_body, to_messages

from tether.transports.anthropic import AnthropicTransport
from tether.transports.openai_chat import OpenAIChatTransport
from tether.transports.openai_embeddings import embedding_inputs, embedding_request
from tether.transports.openai_images import image_prompt, image_request
from tether.transports.openai_responses import OpenAIResponsesTransport

VECTORS = load("WireConformance.toRequest")


def _no_stream_and_no_empty_tools(vector: dict[str, Any], body: dict[str, Any]) -> None:
    assert "stream" not in body and "stream_options" not in body
    if not vector["input"]["tools"]:
        assert "tools" not in body  # absent, not an empty list (§7.1.3)


def _chat(vector: dict[str, Any]) -> dict[str, Any]:
    body = request_body(OpenAIChatTransport, vector)
    _no_stream_and_no_empty_tools(vector, body)
    assert "max_tokens" not in body  # OpenAI's own host gets max_completion_tokens
    return body


def _responses(vector: dict[str, Any]) -> dict[str, Any]:
    body = request_body(OpenAIResponsesTransport, vector)
    _no_stream_and_no_empty_tools(vector, body)
    return body


def _anthropic(vector: dict[str, Any]) -> dict[str, Any]:
    body = request_body(AnthropicTransport, vector)
    _no_stream_and_no_empty_tools(vector, body)
    return body


def _embedding(vector: dict[str, Any]) -> dict[str, Any]:
    given = vector["input"]
    options = media_options(given["options"])
    texts = embedding_inputs(to_messages(given["messages"]))
    body = embedding_request(given["model_id"], texts, options)
    assert set(body) == {"model", "input", *options}
    return body


def _image(vector: dict[str, Any]) -> dict[str, Any]:
    given = vector["input"]
    options = media_options(given["options"])
    prompt = image_prompt(to_messages(given["messages"]))
    body = image_request(given["model_id"], prompt, options)
    assert set(body) == {"model", "prompt", *options}
    return body


BUILDERS: dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]] = {
    ("openai", "chat"): _chat,
    ("openai", "responses"): _responses,
    ("anthropic", "chat"): _anthropic,
    ("openai", "embedding"): _embedding,
    ("openai", "image"): _image,
}


@pytest.mark.parametrize(
    "vector", VECTORS, ids=[f"WireConformance.toRequest:{v['name']}" for v in VECTORS]
)
def test_to_request(vector: dict[str, Any]) -> None:
    given = vector["input"]
    body = BUILDERS[given["provider"], given["apiType"]](vector)
    assert_subset(vector["expected"]["request_body"], body)
