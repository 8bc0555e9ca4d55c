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


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rounds: int) -> None:
    """HTTP/1.1 with keep-alive: one request at a time on each connection."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            raw = await reader.readexactly(length)
            reply = json.dumps(_answer(json.loads(raw), rounds, len(raw))).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(reply)}\r\n\r\n".encode()
                + reply
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionResetError):
        pass
    finally:
        writer.close()


async def main(port: int, rounds: int) -> None:
    server = await asyncio.start_server(
        lambda r, w: _serve(r, w, rounds), "127.0.0.1", port, limit=1 << 26
    )
    print("PORT", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.port, args.rounds))
