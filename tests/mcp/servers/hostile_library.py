"""A misbehaving MCP server of resources and prompts, speaking JSON-RPC by hand over stdio (the
2025-11-25 era) so it can break every rule. Run: python hostile_library.py [FLAG ...].

Always: the resource ``note://good`` (text), ``huge://N`` reads as N characters of text and
``blob://N`` as N bytes, the prompt ``good``.

Flags: ``endless-pages`` (every listing answers one more entry and a new cursor, forever),
``same-cursor`` (every listing answers the same cursor again), ``malformed`` (listings hold
entries the SDK cannot read beside good ones), ``hang-prompt`` (``prompts/get`` is never
answered), ``hang-read`` (``resources/read`` is never answered). Its tool ``storm`` sends ``n``
sampling requests at once, waits for every answer and says how many were results and errors.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from typing import Any

FLAGS = set(sys.argv[1:])
_write = threading.Lock()
_pages = {"n": 0}
_answers: dict[str, dict[str, Any]] = {}  # the client's answers to our requests, by id
_answered = threading.Condition()


class Stop(Exception):
    """No answer is sent for this request."""


def _cursor() -> str | None:
    if "same-cursor" in FLAGS:
        return "again"
    if "endless-pages" in FLAGS:
        _pages["n"] += 1
        return f"page-{_pages['n']}"
    return None


def _paged(key: str, entries: list[Any]) -> dict[str, Any]:
    result: dict[str, Any] = {key: entries}
    cursor = _cursor()
    if cursor is not None:
        result["nextCursor"] = cursor
    return result


def resources() -> dict[str, Any]:
    listed: list[Any] = [{"uri": "note://good", "name": "good", "mimeType": "text/plain"}]
    if "malformed" in FLAGS:
        listed += [{"name": "no uri"}, {"uri": 5, "name": "numbered"}, "not an entry"]
        listed.append({"uri": "note://also-good", "name": "also good"})
    return _paged("resources", listed)


def templates() -> dict[str, Any]:
    listed: list[Any] = [{"uriTemplate": "huge://{n}", "name": "huge"}]
    if "malformed" in FLAGS:
        listed += [{"name": "no template"}, {"uriTemplate": "x://{a}", "name": ["a list"]}]
    return _paged("resourceTemplates", listed)


def prompts() -> dict[str, Any]:
    listed: list[Any] = [{"name": "good", "description": "a good prompt"}]
    if "malformed" in FLAGS:
        listed += [{"description": "no name"}, {"name": 7}, {"name": "args", "arguments": "x"}]
    return _paged("prompts", listed)


def read(uri: str) -> dict[str, Any]:
    if "hang-read" in FLAGS:
        raise Stop
    if uri.startswith("huge://"):
        entry = {"uri": uri, "mimeType": "text/plain", "text": "x" * int(uri[7:])}
    elif uri.startswith("blob://"):
        data = base64.b64encode(b"\x00" * int(uri[7:])).decode()
        entry = {"uri": uri, "mimeType": "application/octet-stream", "blob": data}
    else:
        entry = {"uri": uri, "mimeType": "text/plain", "text": "good"}
    return {"contents": [entry]}


def prompt(name: str) -> dict[str, Any]:
    if "hang-prompt" in FLAGS:
        time.sleep(1_000)
    return {"messages": [{"role": "user", "content": {"type": "text", "text": f"I am {name}"}}]}


def send(message: dict[str, Any]) -> None:
    with _write:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def storm(n: int) -> dict[str, Any]:
    """Send ``n`` sampling requests at once; count the results and errors that came back."""
    ids = [f"storm-{time.monotonic_ns()}-{i}" for i in range(n)]
    for ident in ids:
        text = {"type": "text", "text": "say hi"}
        params = {"messages": [{"role": "user", "content": text}], "maxTokens": 10}
        send({"jsonrpc": "2.0", "id": ident, "method": "sampling/createMessage", "params": params})
    with _answered:
        _answered.wait_for(lambda: all(i in _answers for i in ids), timeout=30)
        got = [_answers.get(i, {}) for i in ids]
    counts = {
        "results": sum("result" in a for a in got),
        "errors": sum("error" in a for a in got),
        "said": sorted({a["error"]["message"] for a in got if "error" in a}),
    }
    return {"content": [{"type": "text", "text": json.dumps(counts)}], "isError": False}


def result(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        capabilities = {"resources": {"subscribe": False, "listChanged": False}, "prompts": {}}
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "serverInfo": {"name": "hostile-library", "version": "1.0.0"},
        }
    answers = {
        "ping": dict,
        "tools/list": lambda: {"tools": [{"name": "storm", "inputSchema": {"type": "object"}}]},
        "tools/call": lambda: storm(int((params.get("arguments") or {}).get("n", 1))),
        "resources/list": resources,
        "resources/templates/list": templates,
        "prompts/list": prompts,
        "resources/read": lambda: read(str(params.get("uri"))),
        "prompts/get": lambda: prompt(str(params.get("name"))),
    }
    if method not in answers:
        raise LookupError(method)
    return answers[method]()


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None
    try:
        return {
            "jsonrpc": "2.0",
            "id": ident,
            "result": result(method, message.get("params") or {}),
        }
    except Stop:
        return None
    except LookupError:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": ident, "error": error}


def serve() -> None:
    def handle(message: dict[str, Any]) -> None:
        response = answer(message)
        if response is not None:
            send(response)

    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "method" not in message and "id" in message:  # the client answers one of ours
            with _answered:
                _answers[str(message["id"])] = message
                _answered.notify_all()
            continue
        threading.Thread(target=handle, args=(message,), daemon=True).start()


if __name__ == "__main__":
    serve()
