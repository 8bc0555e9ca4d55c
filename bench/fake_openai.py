"""A local OpenAI-compatible chat server for benchmarks, run in its own process so its CPU is not
the client's: ``POST /v1/chat/completions`` (not streamed) answers a tool call ``step(i=k)`` until
``--rounds`` calls were answered (``k`` is one more than the last result's call number, so a
compacted history goes on counting), then a text answer; a request without tools (a compaction's
summary) gets a short summary. It reports the request's size in bytes / 4 as ``prompt_tokens``.

    python bench/fake_openai.py --port 0 --rounds 300   # prints "PORT <n>" once listening
"""

from __future__ import annotations

import argparse
import asyncio
import json

from fake_http import serve_json


def _done(messages: object) -> int:
    """How many calls were answered: one more than the last result's call number."""
    results = [m for m in messages if m.get("role") == "tool"] if isinstance(messages, list) else []
    return int(str(results[-1]["tool_call_id"]).rpartition("_")[2]) + 1 if results else 0


def _answer(body: dict[str, object], rounds: int, size: int) -> dict[str, object]:
    done = _done(body.get("messages"))
    usage = {"prompt_tokens": size // 4, "completion_tokens": 8}
    if not body.get("tools"):
        message: dict[str, object] = {"role": "assistant", "content": "Steps were taken."}
        finish = "stop"
    elif done < rounds:
        call = {
            "id": f"call_{done}",
            "type": "function",
            "function": {"name": "step", "arguments": json.dumps({"i": done})},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
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
