"""Prompty's ``Processor.process`` vectors (spec §8): each provider response goes through the
tether codec for its provider and API, and the result Prompty derives from it (tool calls, text,
parsed structured output, embedding vectors, image URLs or data) must be the vector's; and its
``Processor.processStream`` vectors (§8.6), played through tether's streaming transport."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from prompty_adapter import assert_subset, load, process_result
from wire_helpers import feed, iteration_end, play, texts

from tether import IterationEnd, StopReason
from tether.errors import StreamInterruptedError
from tether.testing import assert_stream_contract
from tether.transports.anthropic import AnthropicCodec
from tether.transports.http import HttpTransport
from tether.transports.openai_chat import ChatStreamDecoder, OpenAIChatCodec, OpenAIChatTransport
from tether.transports.openai_embeddings import parse_embeddings
from tether.transports.openai_images import parse_images
from tether.transports.openai_responses import OpenAIResponsesCodec

VECTORS = load("Processor.process")
STREAM_VECTORS = load("Processor.processStream")


def _chat(given: dict[str, Any]) -> Any:
    response = given["response"]
    events = OpenAIChatCodec().parse(response)
    assert_stream_contract(events)
    end = iteration_end(events)
    choice = response["choices"][0]
    assert end.model == response["model"]
    assert end.raw_stop_reason == choice["finish_reason"]
    assert end.usage.input_tokens == response["usage"]["prompt_tokens"]
    assert end.usage.output_tokens == response["usage"]["completion_tokens"]
    if choice["message"].get("refusal"):
        assert end.stop_reason is StopReason.REFUSAL
    return process_result(events, given["has_outputs"])


def _responses(given: dict[str, Any]) -> Any:
    response = given["response"]
    events = OpenAIResponsesCodec().parse(response)
    assert_stream_contract(events)
    end = iteration_end(events)
    assert end.model == response["model"]
    usage = response.get("usage") or {}
    assert end.usage.input_tokens == usage.get("input_tokens", 0)
    assert end.usage.output_tokens == usage.get("output_tokens", 0)
    return process_result(events, given["has_outputs"])


def _anthropic(given: dict[str, Any]) -> Any:
    response = given["response"]
    events = AnthropicCodec().parse(response)
    assert_stream_contract(events)
    end = iteration_end(events)
    assert end.model == response["model"]
    assert end.raw_stop_reason == response["stop_reason"]
    assert end.usage.input_tokens == response["usage"]["input_tokens"]
    assert end.usage.output_tokens == response["usage"]["output_tokens"]
    return process_result(events, given["has_outputs"])


def _embedding(given: dict[str, Any]) -> Any:
    response = given["response"]
    embeddings = parse_embeddings(response)
    assert len(embeddings.vectors) == len(response["data"])
    assert embeddings.model == response["model"]
    assert embeddings.usage.input_tokens == response["usage"]["prompt_tokens"]
    return embeddings.result


def _image(given: dict[str, Any]) -> Any:
    response = given["response"]
    images = parse_images(response)
    # What the model made of the prompt is kept beside the image (metadata, §8.3).
    revised = [item.get("revised_prompt") for item in response["data"]]
    assert [image.revised_prompt for image in images.images] == revised
    return images.result


PROCESSORS: dict[tuple[str, str], Callable[[dict[str, Any]], Any]] = {
    ("openai", "chat"): _chat,
    ("openai", "responses"): _responses,
    ("anthropic", "chat"): _anthropic,
    ("openai", "embedding"): _embedding,
    ("openai", "image"): _image,
}
STREAMING: dict[str, tuple[type[HttpTransport], Callable[[], Any]]] = {
    "openai": (OpenAIChatTransport, ChatStreamDecoder),
}


@pytest.mark.parametrize("vector", VECTORS, ids=[f"Processor.process:{v['name']}" for v in VECTORS])
def test_process(vector: dict[str, Any]) -> None:
    given = vector["input"]
    result = PROCESSORS[given["provider"], given["apiType"]](given)
    assert_subset(vector["expected"], {"result": result})
    assert result == vector["expected"]["result"]


@pytest.mark.parametrize(
    "vector",
    STREAM_VECTORS,
    ids=[f"Processor.processStream:{v['name']}" for v in STREAM_VECTORS],
)
async def test_process_stream(vector: dict[str, Any]) -> None:
    given, expected = vector["input"], vector["expected"]
    transport_cls, decoder_cls = STREAMING[given["provider"]]
    played = await play(transport_cls, given["events"])
    said = [c["value"] for c in expected["chunks"] if c["kind"] == "text"]
    failure = next(c["failure"] for c in expected["chunks"] if c["kind"] == "failure")
    broke = next((e for e in given["events"] if e["kind"] == "transportError"), None)
    if broke is not None:
        # What arrived is kept as text; a stream that breaks there is an error, never an answer.
        assert failure["outcome"] == "indeterminate" and expected["requiresReconciliation"]
        assert texts(played.events) == said
        assert "".join(said) == expected["partialText"]
        assert not expected["completionCommitted"]
        assert not any(isinstance(e, IterationEnd) for e in played.events)
        # Begun, so not retried by the loop: the caller must reconcile what it already showed.
        assert isinstance(played.error, StreamInterruptedError)
        assert not played.error.retryable
        assert failure["message"] in str(played.error)
        # Ending (without the transport error) where it broke is no answer either.
        decoder = decoder_cls()
        assert texts(feed(decoder, given["events"])) == said
        with pytest.raises(StreamInterruptedError, match="before the response was complete"):
            decoder.finish()
    else:
        # A refusal is determinate: surfaced as text with stop reason refusal.
        assert failure["outcome"] == "determinate" and not expected["requiresReconciliation"]
        assert played.error is None
        assert_stream_contract(played.events)
        refusal = "".join(texts(played.events))
        assert failure["message"] == f"Model refused: {refusal}"
        assert iteration_end(played.events).stop_reason is StopReason.REFUSAL
