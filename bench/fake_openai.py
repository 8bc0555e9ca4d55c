"""A local OpenAI-compatible chat server for benchmarks, run in its own process so its CPU is not
the client's: ``POST /v1/chat/completions`` (not streamed) answers a tool call ``step(i=k)`` while
the request holds fewer than ``--rounds`` tool results, then a text answer; it reports the
request's size in bytes as ``prompt_tokens`` / 4 (an estimate the bench does not rely on).

    python bench/fake_openai.py --port 0 --rounds 300   # prints "PORT <n>" once listening
"""

from __future__ import annotations

import argparse
import asyncio
import json

from fake_http import serve_json


def _answer(body: dict[str, object], rounds: int, size: int) -> dict[str, object]:
    messages = body.get("messages")
    done = sum(1 for m in messages if m.get("role") == "tool") if isinstance(messages, list) else 0
    usage = {"prompt_tokens": size // 4, "completion_tokens": 8}
    if done < rounds:
        call = {
            "id": f"call_{done}",
            "type": "function",
            "function": {"name": "step", "arguments": json.dumps({"i": done})},
        }
        message: dict[str, object] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": "done"}, "stop"
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return {
        "id": "fake",
        "object": "chat.completion",
        "model": "fake",
        "choices": [choice],
        "usage": usage,
    }


def main(port: int, rounds: int) -> None:
    asyncio.run(serve_json(lambda body, size: _answer(body, rounds, size), port))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    main(args.port, args.rounds)
