"""A local Anthropic Messages server that keeps a prompt cache the way Anthropic documents it, so a
benchmark can see what tether's cache breakpoints earn: ``POST /v1/messages`` (not streamed).

The prompt is read in Anthropic's order (tools, system, messages) as blocks, ~4 bytes of JSON a
token. A request reads from the cache the longest prefix ending at a block boundary that an
earlier request wrote, looking back at most 20 blocks from each breakpoint (``cache_control``);
it writes the prefix up to each of its breakpoints (from 1,024 tokens up). Usage says
``cache_read_input_tokens``, ``cache_creation_input_tokens`` (from the cached prefix to the last
breakpoint) and ``input_tokens`` (the rest). The model answers ``step(i=k)`` while fewer than
``--rounds`` tool results are in the request, then text.

    python bench/fake_anthropic.py --port 0 --rounds 20   # prints "PORT <n>" once listening
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
from typing import Any

from fake_http import serve_json

LOOKBACK = 20  # blocks before a breakpoint that a cache read may end at
MIN_TOKENS = 1024  # a shorter prefix is not written


def prompt_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's prompt as blocks, in the order the cache reads them."""
    blocks: list[dict[str, Any]] = list(body.get("tools") or [])
    system = body.get("system")
    if isinstance(system, str):
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks.extend(system)
    for message in body.get("messages") or []:
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks.extend({**block, "role": message["role"]} for block in content)
    return blocks


class PromptCache:
    """Prefix hashes written by earlier requests, and the usage of one request against them."""

    def __init__(self) -> None:
        self.written: set[str] = set()

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = prompt_blocks(body)
        sizes = [max(len(json.dumps(_unmarked(b))) // 4, 1) for b in blocks]
        hashes = _prefix_hashes(blocks)
        marks = [i for i, b in enumerate(blocks) if "cache_control" in b]
        read_to = -1  # the last block of the prefix read from the cache
        for mark in marks:
            for end in range(mark, max(mark - LOOKBACK, -1), -1):
                if hashes[end] in self.written:
                    read_to = max(read_to, end)
                    break
        for mark in marks:
            if sum(sizes[: mark + 1]) >= MIN_TOKENS:
                self.written.add(hashes[mark])
        last = marks[-1] if marks else -1
        read = sum(sizes[: read_to + 1])
        created = sum(sizes[read_to + 1 : last + 1]) if last > read_to else 0
        return {
            "input_tokens": sum(sizes) - read - created,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": created,
            "output_tokens": 8,
        }


def _unmarked(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _prefix_hashes(blocks: list[dict[str, Any]]) -> list[str]:
    digest = hashlib.sha256()
    out = []
    for block in blocks:
        digest.update(json.dumps(_unmarked(block), sort_keys=True).encode())
        out.append(digest.copy().hexdigest())
    return out


def answer(body: dict[str, Any], rounds: int, cache: PromptCache) -> dict[str, Any]:
    done = sum(
        1
        for m in body.get("messages") or []
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    )
    if done < rounds:
        content = [{"type": "tool_use", "id": f"call_{done}", "name": "step", "input": {"i": done}}]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": "done"}], "end_turn"
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "fake",
        "content": content,
        "stop_reason": stop,
        "usage": cache.usage(body),
    }


def main(port: int, rounds: int) -> None:
    cache = PromptCache()
    asyncio.run(serve_json(lambda body, _size: answer(body, rounds, cache), port))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    main(args.port, args.rounds)
