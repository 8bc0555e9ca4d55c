"""A real OpenAI-compatible chat completions server on 127.0.0.1 for the Prompty door's tests:
it answers every POST with one text reply (streamed when asked) and every GET with a small JSON
document (as an API an OpenAPI tool calls), and keeps what it was sent (path, Authorization
header, body), so a test can tell whether a request went out and with which key."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ChatServer:
    """The running server: ``url`` is its OpenAI-style base (``.../v1``); ``seen`` each request."""

    url: str = ""
    reply: str = "Sunny in Paris."
    seen: list[dict[str, Any]] = field(default_factory=list)

    @property
    def host(self) -> str:
        return self.url.split("//", 1)[1].split("/", 1)[0]


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            server.seen.append(
                {
                    "path": self.path,
                    "authorization": self.headers.get("Authorization", ""),
                    "body": body,
                }
            )
            if body.get("stream"):
                self._send("text/event-stream", _streamed(server.reply))
            else:
                self._send("application/json", json.dumps(_completion(server.reply)).encode())

        def do_GET(self) -> None:
            seen = {"path": self.path, "authorization": self.headers.get("Authorization", "")}
            server.seen.append({**seen, "body": None})
            self._send("application/json", json.dumps({"items": ["umbrella"]}).encode())

        def _send(self, kind: str, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _completion(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": "m",
        "choices": [choice],
        "usage": usage,
    }


def _streamed(text: str) -> bytes:
    deltas = [
        {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None},
        {"index": 0, "delta": {}, "finish_reason": "stop"},
    ]
    chunks = [
        {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [d]}
        for d in deltas
    ]
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


@contextmanager
def chat_server() -> Iterator[ChatServer]:
    """A ``ChatServer`` listening on a free port until the block ends."""
    made = ChatServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(made))
    made.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield made
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
