"""Transport figures: µs per streamed chunk through tether's OpenAI chat and Anthropic decoders.

    python bench/transport.py [--chunks 10000] [--quick]

A recorded-shape stream of N text chunks is framed by tether's SSE decoder and decoded into
events; the baseline is the floor for any parser of the same bytes: split the lines and
``json.loads`` each data line, in the same process run, interleaved.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from tether.transports.codecs.anthropic import AnthropicCodec
from tether.transports.codecs.openai_chat import OpenAIChatCodec
from tether.transports.sse import SSEDecoder


def chat_body(n: int) -> bytes:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    lines = []
    for i in range(n):
        chunk = {
            **head,
            "choices": [{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None}],
        }
        lines.append(f"data: {json.dumps(chunk)}\n\n")
    end = {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = {**head, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": n}}
    lines += [f"data: {json.dumps(end)}\n\n", f"data: {json.dumps(usage)}\n\n", "data: [DONE]\n\n"]
    return "".join(lines).encode()


def anthropic_body(n: int) -> bytes:
    def ev(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"

    parts = [
        ev(
            "message_start",
            {
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "usage": {"input_tokens": 5, "output_tokens": 1},
                }
            },
        ),
        ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    parts += [
        ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": f"tok{i} "}})
        for i in range(n)
    ]
    parts += [
        ev("content_block_stop", {"index": 0}),
        ev("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": n}}),
        ev("message_stop", {}),
    ]
    return "".join(parts).encode()


def split(body: bytes, size: int = 512) -> list[bytes]:
    """The body as it arrives from a socket: fixed-size reads."""
    return [body[i : i + size] for i in range(0, len(body), size)]


def tether_decode(codec: Any) -> Callable[[list[bytes]], int]:
    def run(chunks: list[bytes]) -> int:
        sse, decoder, count = SSEDecoder(), codec.decoder(), 0
        for chunk in chunks:
            for frame in sse.feed(chunk):
                count += len(decoder.feed(frame))
        for frame in sse.flush():
            count += len(decoder.feed(frame))
        return count + len(decoder.finish())

    return run


def floor_decode(chunks: list[bytes]) -> int:
    """Lines split, each data line parsed: what any decoder must at least do."""
    text = b"".join(chunks).decode()
    count = 0
    for line in text.split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            json.loads(line[6:])
            count += 1
    return count


def per_chunk_us(fn: Callable[[list[bytes]], int], chunks: list[bytes], n: int) -> float:
    start = time.perf_counter()
    fn(chunks)
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n, reps = (1000, 3) if args.quick else (args.chunks, 9)
    cases = {
        "openai chat": (chat_body(n), tether_decode(OpenAIChatCodec())),
        "anthropic": (anthropic_body(n), tether_decode(AnthropicCodec())),
    }
    print(f"{'decoder':14} {'tether us/chunk':>16} {'floor us/chunk':>15} {'ratio':>7}")
    for name, (body, decode) in cases.items():
        chunks = split(body)
        assert decode(chunks) >= n
        tether, floor = [], []
        for _ in range(reps):
            tether.append(per_chunk_us(decode, chunks, n))
            floor.append(per_chunk_us(floor_decode, chunks, n))
        t, f = statistics.median(tether), statistics.median(floor)
        print(f"{name:14} {t:16.2f} {f:15.2f} {t / f:6.2f}x")


if __name__ == "__main__":
    main()
