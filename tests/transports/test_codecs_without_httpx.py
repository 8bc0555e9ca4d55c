"""The wire formats are I/O-free: every module of ``tether.transports.codecs`` imports, encodes a
request and decodes a response in a process where httpx cannot be imported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    sys.modules["httpx"] = None  # any import of httpx now raises ImportError

    import tether.transports.codecs as package
    from tether.messages import Message
    from tether.transports.options import ModelOptions
    from tether.transports.sse import SSEEvent

    loaded = sorted(
        importlib.import_module(f"{package.__name__}.{m.name}").__name__
        for m in pkgutil.iter_modules(package.__path__)
    )
    from tether.transports.codecs.anthropic import AnthropicCodec
    from tether.transports.codecs.openai_chat import OpenAIChatCodec
    from tether.transports.codecs.openai_responses import OpenAIResponsesCodec

    try:
        import tether.transports.http
        blocked = False
    except ImportError:
        blocked = True

    hello = [Message("user", "hello")]
    replies = {
        "chat": {
            "choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
            "model": "m",
        },
        "anthropic": {
            "content": [{"type": "text", "text": "hi"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1},
            "model": "m",
        },
        "responses": {
            "status": "completed",
            "output": [
                {"type": "message", "content": [{"type": "output_text", "text": "hi"}]}
            ],
            "model": "m",
        },
    }
    codecs = {
        "chat": OpenAIChatCodec(),
        "anthropic": AnthropicCodec(),
        "responses": OpenAIResponsesCodec(),
    }
    out = {"loaded": loaded, "blocked": blocked, "httpx": sys.modules.get("httpx", 0) is None}
    for name, codec in codecs.items():
        body = codec.encode("m", hello, [], "be brief", ModelOptions(), True)
        events = codec.parse(replies[name])
        out[name] = {
            "request": json.dumps(body),
            "events": [type(e).__name__ for e in events],
            "text": "".join(getattr(e, "delta", "") for e in events),
        }
    decoder = codecs["chat"].decoder()
    chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
    streamed = [*decoder.feed(SSEEvent("message", json.dumps(chunk))), *decoder.finish()]
    out["streamed"] = [type(e).__name__ for e in streamed]

    from tether.transports.codecs.openai_embeddings import embedding_request, parse_embeddings
    from tether.transports.codecs.openai_images import image_request, parse_images

    out["embed_request"] = embedding_request("e", ["a", "b"], {"dimensions": 2})
    vectors = parse_embeddings(
        {"data": [{"index": 1, "embedding": [3.0, 4.0]}, {"index": 0, "embedding": [1.0, 2.0]}]}
    )
    out["vectors"] = [list(v) for v in vectors.vectors]
    out["image_request"] = image_request("i", "a cat", {"size": "256x256"})
    out["image"] = parse_images({"data": [{"url": "https://example.test/cat.png"}]}).result
    print(json.dumps(out))
    """
)


def _run() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_every_codec_module_imports_encodes_and_decodes_without_httpx() -> None:
    out = _run()
    assert out["blocked"] is True  # the HTTP transport itself cannot load there
    assert out["httpx"] is True  # and nothing replaced the blocker with the real httpx
    assert out["loaded"] == [
        "tether.transports.codecs.anthropic",
        "tether.transports.codecs.anthropic_decode",
        "tether.transports.codecs.media_options",
        "tether.transports.codecs.openai_chat",
        "tether.transports.codecs.openai_chat_decode",
        "tether.transports.codecs.openai_embeddings",
        "tether.transports.codecs.openai_embeddings_decode",
        "tether.transports.codecs.openai_images",
        "tether.transports.codecs.openai_images_decode",
        "tether.transports.codecs.openai_responses",
        "tether.transports.codecs.openai_responses_decode",
        "tether.transports.codecs.protocol",
    ]
    for name in ("chat", "anthropic", "responses"):
        said = out[name]
        assert isinstance(said, dict)
        assert "hello" in said["request"] and "be brief" in said["request"], said
        assert said["events"][-1] == "IterationEnd", said
        assert said["text"] == "hi", said
    assert out["streamed"] == ["TextDelta", "IterationEnd"]
    assert out["embed_request"] == {"model": "e", "input": ["a", "b"], "dimensions": 2}
    assert out["vectors"] == [[1.0, 2.0], [3.0, 4.0]]
    assert out["image_request"] == {"model": "i", "prompt": "a cat", "size": "256x256"}
    assert out["image"] == "https://example.test/cat.png"
