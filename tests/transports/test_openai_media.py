"""OpenAI embeddings and image generation: request bodies and response reading, then the clients
end to end against a real local HTTP server (what goes over the wire, where the key goes, HTTP
failures as tether's typed errors, retries, deadline, size limit, debug logs)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import struct
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from misbehaving_server import (
    MisbehavingServer,
    echo_authorization,
    error_reply,
    json_reply,
    rate_limited,
    redirect,
    server_error,
    slow_headers,
)

from tether import Message, TextBlock, transports
from tether.errors import (
    AuthenticationError,
    BadRequestError,
    ConnectionFailedError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    TransportError,
)
from tether.messages import ImageBlock
from tether.transports.openai_embeddings import (
    Embeddings,
    OpenAIEmbeddingsClient,
    embedding_inputs,
    embedding_request,
    parse_embeddings,
)
from tether.transports.openai_images import (
    GeneratedImage,
    Images,
    OpenAIImagesClient,
    image_prompt,
    image_request,
    parse_images,
)
from tether.transports.retry import RetryPolicy

KEY = "sk-test-SECRET-0123456789abcdef"
ONCE = RetryPolicy(max_attempts=1)


def embeddings_body(*vectors: list[float], model: str = "text-embedding-3-small") -> dict[str, Any]:
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return {"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 7}}


def images_body(*items: dict[str, Any]) -> dict[str, Any]:
    return {"created": 1700000000, "data": list(items)}


class NoWait:
    """A clock whose sleeps return at once and are recorded."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def now(self) -> float:
        return 0.0

    def random(self) -> float:
        return 0.0

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


@pytest.fixture
async def server() -> AsyncIterator[MisbehavingServer]:
    async with MisbehavingServer() as s:
        yield s


# --- request bodies ------------------------------------------------------------------------------


def test_embedding_request_one_text_is_a_string_several_a_list() -> None:
    assert embedding_request("m", "hi") == {"model": "m", "input": "hi"}
    assert embedding_request("m", ["hi"]) == {"model": "m", "input": "hi"}
    assert embedding_request("m", ("a", "b")) == {"model": "m", "input": ["a", "b"]}
    body = embedding_request("m", ["a"], {"dimensions": 256, "encoding_format": "float"})
    assert body == {"model": "m", "input": "a", "dimensions": 256, "encoding_format": "float"}


@pytest.mark.parametrize(
    ("model", "inputs", "options", "error", "match"),
    [
        ("", "hi", None, ValueError, "model name"),
        ("m", [], None, ValueError, "at least one text"),
        ("m", ["a", 3], None, TypeError, "input 1 to embed is a int"),
        ("m", "a", {"input": "b"}, ValueError, "input would replace"),
        ("m", "a", {"model": "x"}, ValueError, "model would replace"),
    ],
)
def test_embedding_request_refuses_bad_input(
    model: str, inputs: Any, options: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        embedding_request(model, inputs, options)


def test_embedding_inputs_are_every_text_of_every_message() -> None:
    messages = [
        Message("system", "first"),
        Message("user", [TextBlock("second"), ImageBlock("image/png", url="https://x/y.png")]),
        Message("assistant", [TextBlock("third"), TextBlock("fourth")]),
    ]
    assert embedding_inputs(messages) == ["first", "second", "third", "fourth"]


def test_image_request_passes_options_through() -> None:
    assert image_request("dall-e-3", "A cat") == {"model": "dall-e-3", "prompt": "A cat"}
    body = image_request("gpt-image-1", "A cat", {"size": "1024x1024", "n": 2})
    assert body == {"model": "gpt-image-1", "prompt": "A cat", "size": "1024x1024", "n": 2}
    with pytest.raises(ValueError, match="prompt would replace"):
        image_request("m", "a", {"prompt": "b"})
    with pytest.raises(ValueError, match="model name"):
        image_request("", "a")
    with pytest.raises(TypeError, match="prompt is a list"):
        image_request("m", ["a"])  # type: ignore[arg-type]


def test_image_prompt_is_the_first_text_of_the_last_user_message() -> None:
    messages = [
        Message("system", "be arty"),
        Message("user", "a dog"),
        Message("assistant", "a dog it is"),
        Message("user", [ImageBlock("image/png", data="AAAA"), TextBlock("a cat"), TextBlock("x")]),
        Message("assistant", "ok"),
    ]
    assert image_prompt(messages) == "a cat"
    assert image_prompt([Message("system", "no user here")]) == ""
    assert image_prompt([]) == ""
    # The last user message decides, even when it holds no text (§7.3).
    last_without_text = [Message("user", "a dog"), Message("user", [ImageBlock("image/png", "A")])]
    assert image_prompt(last_without_text) == ""


# --- reading responses ---------------------------------------------------------------------------


def test_embeddings_in_index_order_with_model_and_usage() -> None:
    body = embeddings_body([0.1, 0.2], [0.3, 0.4], [5, 6])
    body["data"].reverse()
    embeddings = parse_embeddings(body)
    assert embeddings.vectors == ((0.1, 0.2), (0.3, 0.4), (5.0, 6.0))
    assert embeddings.model == "text-embedding-3-small"
    assert embeddings.usage.input_tokens == 7
    assert embeddings.result == [[0.1, 0.2], [0.3, 0.4], [5.0, 6.0]]
    assert parse_embeddings(embeddings_body([1.5])).result == [1.5]


def test_embeddings_without_indexes_keep_their_order_and_usage_may_be_absent() -> None:
    body = {"data": [{"embedding": [2.0]}, {"embedding": [1.0]}]}
    embeddings = parse_embeddings(body)
    assert embeddings.vectors == ((2.0,), (1.0,))
    assert embeddings.model is None and embeddings.usage.input_tokens == 0


def test_base64_embeddings_are_unpacked() -> None:
    packed = base64.b64encode(struct.pack("<3f", 0.5, -1.0, 2.25)).decode()
    body = {"data": [{"index": 0, "embedding": packed}], "model": "m"}
    assert parse_embeddings(body).result == [0.5, -1.0, 2.25]


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"data": []}, "no embeddings"),
        ({"object": "list"}, "data is null, not a list"),
        ([1, 2], "the response is a list, not an object"),
        ({"data": [{"embedding": [1, "2"]}]}, "a value of embedding 0 is a string"),
        ({"data": [{"embedding": [True]}]}, "a value of embedding 0 is a boolean"),
        ({"data": [{"embedding": []}]}, "embedding 0 is empty"),
        ({"data": [{"embedding": None}]}, "embedding 0 is null"),
        ({"data": [{"embedding": "not base64!"}]}, "neither a list nor base64"),
        ({"data": [{"embedding": "AAAAAAA="}]}, "5 bytes, not a whole number of float32s"),
        ({"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [2]}]}, "indexes"),
        ({"data": [{"index": 0, "embedding": [1]}, {"index": 5, "embedding": [2]}]}, "indexes"),
        ({"data": [{"index": -1, "embedding": [1]}]}, "embedding index is a number"),
        ({"data": [{"embedding": [1]}], "usage": {"prompt_tokens": "x"}}, "prompt_tokens"),
    ],
)
def test_malformed_embeddings_are_a_clear_error(body: Any, match: str) -> None:
    with pytest.raises(StreamInterruptedError, match="malformed embeddings response") as info:
        parse_embeddings(body)
    assert match in str(info.value)


def test_an_error_object_in_a_response_is_the_providers_error() -> None:
    error = {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}
    with pytest.raises(RateLimitError, match="Rate limit reached"):
        parse_embeddings(error)
    with pytest.raises(RateLimitError, match="Rate limit reached"):
        parse_images(error)


def test_images_prefer_the_url_and_keep_the_revised_prompt() -> None:
    body = images_body(
        {"url": "https://img/1.png", "b64_json": "AAAA", "revised_prompt": "a cute cat"},
        {"b64_json": "BBBB"},
    )
    images = parse_images(body)
    assert images.images == (
        GeneratedImage("https://img/1.png", "AAAA", "a cute cat"),
        GeneratedImage(None, "BBBB", None),
    )
    assert images.result == ["https://img/1.png", "BBBB"]
    assert images.usage.input_tokens == 0
    one = parse_images(images_body({"url": None, "b64_json": "CCCC"}))
    assert one.result == "CCCC"


def test_image_items_without_an_image_are_left_out_and_usage_is_read() -> None:
    body = images_body({"url": "https://img/1.png"}, {"revised_prompt": "nothing came of it"})
    body["usage"] = {"input_tokens": 12, "output_tokens": 4000, "total_tokens": 4012}
    images = parse_images(body)
    assert images.result == "https://img/1.png"
    assert len(images.images) == 2
    assert (images.usage.input_tokens, images.usage.output_tokens) == (12, 4000)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"data": []}, "no images"),
        ({"data": [{"url": None, "b64_json": None}]}, "no image of the response has a url"),
        ({"data": [{"url": 5}]}, "url is a number"),
        ({"data": ["https://img/1.png"]}, "an image is a string"),
        ("<html>", "the response is a string"),
    ],
)
def test_malformed_images_are_a_clear_error(body: Any, match: str) -> None:
    with pytest.raises(StreamInterruptedError, match="malformed image response") as info:
        parse_images(body)
    assert match in str(info.value)


# --- the clients against a real local server -----------------------------------------------------


async def test_embed_end_to_end(server: MisbehavingServer) -> None:
    server.script(json_reply(embeddings_body([0.1, 0.2], [0.3, 0.4])))
    options = {"dimensions": 2}
    async with OpenAIEmbeddingsClient(
        "text-embedding-3-small", base_url=server.url + "/v1/", api_key=KEY, options=options
    ) as client:
        embeddings = await client.embed(["a", "b"], {"user": "u1"})
    assert isinstance(embeddings, Embeddings)
    assert embeddings.result == [[0.1, 0.2], [0.3, 0.4]]
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/embeddings")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    sent = {"model": "text-embedding-3-small", "input": ["a", "b"], "dimensions": 2, "user": "u1"}
    assert request.json() == sent


async def test_embed_one_text_gives_one_vector(server: MisbehavingServer) -> None:
    server.script(json_reply(embeddings_body([0.5, 0.25, 0.125])))
    async with OpenAIEmbeddingsClient("e", base_url=server.url, api_key=KEY) as client:
        assert (await client.embed("hello")).result == [0.5, 0.25, 0.125]
        assert client.build_request("hello") == {"model": "e", "input": "hello"}
    assert server.requests[0].json() == {"model": "e", "input": "hello"}


async def test_generate_images_end_to_end(server: MisbehavingServer) -> None:
    server.script(
        json_reply(images_body({"url": "https://img/cat.png", "revised_prompt": "a cat, sunlit"})),
        json_reply(images_body({"b64_json": "iVBORw0KGgo="}, {"b64_json": "R0lGODlh"})),
    )
    async with OpenAIImagesClient(
        "dall-e-3", base_url=server.url + "/v1", api_key=KEY, options={"size": "1024x1024"}
    ) as client:
        first = await client.generate("A cat")
        second = await client.generate("Two cats", {"n": 2, "response_format": "b64_json"})
    assert isinstance(first, Images)
    assert first.result == "https://img/cat.png"
    assert first.images[0].revised_prompt == "a cat, sunlit"
    assert second.result == ["iVBORw0KGgo=", "R0lGODlh"]
    assert [r.path for r in server.requests] == ["/v1/images/generations"] * 2
    assert server.requests[0].json() == {
        "model": "dall-e-3",
        "prompt": "A cat",
        "size": "1024x1024",
    }
    assert server.requests[1].json() == {
        "model": "dall-e-3",
        "prompt": "Two cats",
        "size": "1024x1024",
        "n": 2,
        "response_format": "b64_json",
    }
    assert server.connections == 1  # one pooled connection for both calls
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.requests)


async def test_the_environment_key_never_goes_to_another_host(
    server: MisbehavingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.script(json_reply(embeddings_body([1.0])), json_reply(images_body({"url": "u"})))
    async with OpenAIEmbeddingsClient("e", base_url=server.url) as embedder:
        await embedder.embed("x")
    async with OpenAIImagesClient("i", base_url=server.url) as painter:
        await painter.generate("x")
    assert len(server.requests) == 2
    for request in server.requests:
        assert "authorization" not in request.headers
        assert KEY not in json.dumps(request.headers)
        assert KEY.encode() not in request.body


async def test_the_environment_key_goes_to_openai_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seen: list[httpx.Request] = []

    def openai(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=embeddings_body([1.0]))

    async with httpx.AsyncClient(transport=httpx.MockTransport(openai)) as pool:
        client = OpenAIEmbeddingsClient("e", client=pool)
        await client.embed("x")
    assert client.base_url == "https://api.openai.com/v1"
    [request] = seen
    assert str(request.url) == "https://api.openai.com/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(client)


async def test_a_redirect_is_not_followed_so_the_key_stays_put(server: MisbehavingServer) -> None:
    async with MisbehavingServer(json_reply(embeddings_body([1.0]))) as elsewhere:
        server.script(redirect(elsewhere.url + "/v1/embeddings"))
        async with OpenAIEmbeddingsClient("e", base_url=server.url, api_key=KEY) as client:
            with pytest.raises(BadRequestError, match="redirect") as info:
                await client.embed("x")
        assert info.value.status_code == 307
        assert elsewhere.requests == []


@pytest.mark.parametrize(
    ("reply", "error", "status", "retryable"),
    [
        (echo_authorization, AuthenticationError, 401, False),
        (lambda: rate_limited(retry_after="2"), RateLimitError, 429, True),
        (lambda: server_error(500), ServerError, 500, True),
        (lambda: error_reply(400, {"error": {"message": "Bad size"}}), BadRequestError, 400, False),
    ],
    ids=["401-echoing-the-key", "429", "500", "400"],
)
async def test_http_errors_become_typed_errors(
    server: MisbehavingServer, reply: Any, error: type[TransportError], status: int, retryable: bool
) -> None:
    server.script(reply())
    async with OpenAIImagesClient("i", base_url=server.url, api_key=KEY, retry=ONCE) as client:
        with pytest.raises(error) as info:
            await client.generate("x")
    exc = info.value
    assert (exc.status_code, exc.retryable) == (status, retryable)
    for text in (str(exc), repr(exc), str(exc.args)):
        assert KEY not in text
    assert len(server.requests) == 1


async def test_the_echoed_key_is_blanked(server: MisbehavingServer) -> None:
    server.script(echo_authorization())
    async with OpenAIEmbeddingsClient("e", base_url=server.url, api_key=KEY, retry=ONCE) as c:
        with pytest.raises(AuthenticationError, match=r"bad credentials: \*\*\*$"):
            await c.embed("x")


async def test_retryable_failures_are_retried_per_the_policy(server: MisbehavingServer) -> None:
    server.script(
        rate_limited(retry_after="3"), server_error(503), json_reply(embeddings_body([1]))
    )
    clock = NoWait()
    async with OpenAIEmbeddingsClient(
        "e", base_url=server.url, api_key=KEY, retry=RetryPolicy(max_attempts=3), clock=clock
    ) as client:
        assert (await client.embed("x")).result == [1.0]
    assert len(server.requests) == 3
    assert clock.slept == [3.0, 2.0]  # the server's advice, then the backoff (no jitter drawn)


async def test_the_last_failure_is_raised_when_attempts_run_out(server: MisbehavingServer) -> None:
    server.script(server_error(500))
    clock = NoWait()
    policy = RetryPolicy(max_attempts=2)
    async with OpenAIImagesClient("i", base_url=server.url, retry=policy, clock=clock) as client:
        with pytest.raises(ServerError):
            await client.generate("x")
    assert len(server.requests) == 2 and len(clock.slept) == 1


async def test_a_malformed_200_is_a_clear_error_without_the_key(server: MisbehavingServer) -> None:
    server.script(json_reply({"data": [{"embedding": f"key {KEY}"}]}))
    async with OpenAIEmbeddingsClient("e", base_url=server.url, api_key=KEY) as client:
        with pytest.raises(StreamInterruptedError, match="malformed embeddings response") as info:
            await client.embed("x")
    assert KEY not in str(info.value) and "***" in str(info.value)
    assert len(server.requests) == 1  # not worth retrying


async def test_the_deadline_bounds_each_call(server: MisbehavingServer) -> None:
    server.script(slow_headers(5.0))
    async with OpenAIImagesClient(
        "i", base_url=server.url, deadline=0.2, retry=ONCE, timeout=10.0
    ) as client:
        started = asyncio.get_running_loop().time()
        with pytest.raises(ConnectionFailedError, match=r"deadline of 0\.2 s") as info:
            await client.generate("x")
    assert asyncio.get_running_loop().time() - started < 3.0
    assert info.value.retryable


async def test_a_response_over_the_size_limit_is_refused(server: MisbehavingServer) -> None:
    server.script(json_reply(embeddings_body([0.25] * 1000)))
    async with OpenAIEmbeddingsClient(
        "e", base_url=server.url, max_response_bytes=1000, retry=ONCE
    ) as client:
        with pytest.raises(StreamInterruptedError, match="exceeded 1000 bytes"):
            await client.embed("x")


async def test_requests_are_logged_without_the_key(
    server: MisbehavingServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script(json_reply(images_body({"url": "u"})))
    async with OpenAIImagesClient("i", base_url=server.url, api_key=KEY) as client:
        await client.generate("x")
    ours = [r.getMessage() for r in caplog.records if r.name == "tether.http"]
    assert any("POST " + server.url + "/images/generations" in m for m in ours)
    assert KEY not in caplog.text


def test_the_names_load_from_tether_transports() -> None:
    assert transports.OpenAIEmbeddingsClient is OpenAIEmbeddingsClient
    assert transports.OpenAIImagesClient is OpenAIImagesClient
    assert transports.Embeddings is Embeddings and transports.Images is Images
    assert transports.GeneratedImage is GeneratedImage
    assert issubclass(OpenAIImagesClient, transports.OpenAIMediaClient)


def test_a_model_is_required() -> None:
    with pytest.raises(ValueError, match="model name"):
        OpenAIEmbeddingsClient("")
