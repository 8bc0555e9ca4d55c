"""A handshake-era MCP server, JSON-RPC by hand over stdio, that asks the client for input with
``elicitation/create`` requests in the middle of its calls, and writes down what it got.

Run: python eliciting.py MARKER_DIR. It declares protocol 2025-11-25; its tools:

- ``ask``: one form elicitation (a required ``name``, an ``age`` between 0 and 150 defaulting to
  30); the call answers with the client's answer as JSON, also written to MARKER_DIR/answers
  (one line per answer, also for an answer that comes after the call was cancelled).
- ``url``: one url-mode elicitation; answers likewise.
- ``storm``: 50 elicitations at once; answers how many answers and errors came back.
- ``huge``: an elicitation whose message has 200,000 characters.

The client's capabilities from ``initialize`` are written to MARKER_DIR/capabilities.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MARKERS = Path(sys.argv[1])
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "your name"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
    },
    "required": ["name"],
}
TOOLS = [
    {"name": n, "description": f"the {n} tool", "inputSchema": {"type": "object"}}
    for n in ("ask", "url", "storm", "huge")
]
waiting: dict[str, tuple[Any, list[Any], int]] = {}  # request id: (call id, answers, how many)
counter = 0


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(ident: Any, said: str) -> None:
    result = {"content": [{"type": "text", "text": said}], "isError": False}
    send({"jsonrpc": "2.0", "id": ident, "result": result})


def ask(call_id: Any, params: dict[str, Any], times: int = 1) -> None:
    global counter
    answers: list[Any] = []
    for _ in range(times):
        counter += 1
        key = f"e{counter}"
        waiting[key] = (call_id, answers, times)
        send({"jsonrpc": "2.0", "id": key, "method": "elicitation/create", "params": params})


def answered(message: dict[str, Any]) -> None:
    entry = waiting.pop(str(message.get("id")), None)
    got = message.get("result", {"error": message.get("error")})
    with (MARKERS / "answers").open("a") as out:
        out.write(json.dumps(got) + "\n")
    if entry is None:
        return
    call_id, answers, times = entry
    answers.append(got)
    if len(answers) == times:
        if times == 1:
            text(call_id, json.dumps(got))
        else:
            errors = sum(1 for a in answers if "error" in a)
            text(call_id, f"{len(answers) - errors} answers, {errors} errors")


def called(ident: Any, name: str) -> None:
    if name == "ask":
        ask(ident, {"mode": "form", "message": "Who are you?", "requestedSchema": SCHEMA})
    elif name == "url":
        params = {
            "mode": "url",
            "message": "Sign in, please",
            "url": "https://example.com/login",
            "elicitationId": "login-1",
        }
        ask(ident, params)
    elif name == "storm":
        ask(ident, {"mode": "form", "message": "Again?", "requestedSchema": SCHEMA}, 50)
    elif name == "huge":
        ask(ident, {"mode": "form", "message": "z" * 200_000, "requestedSchema": SCHEMA})
    else:
        error = {"code": -32602, "message": f"no tool {name}"}
        send({"jsonrpc": "2.0", "id": ident, "error": error})


def handle(message: dict[str, Any]) -> None:
    method, ident = message.get("method"), message.get("id")
    if method is None:
        answered(message)
    elif ident is None:
        return  # a notification (initialized, cancelled)
    elif method == "initialize":
        capabilities = (message.get("params") or {}).get("capabilities") or {}
        (MARKERS / "capabilities").write_text(json.dumps(capabilities))
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "eliciting", "version": "1.0.0"},
        }
        send({"jsonrpc": "2.0", "id": ident, "result": result})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        called(ident, (message.get("params") or {}).get("name", ""))
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        send({"jsonrpc": "2.0", "id": ident, "error": error})


if __name__ == "__main__":
    for line in sys.stdin:
        if line.strip():
            handle(json.loads(line))
