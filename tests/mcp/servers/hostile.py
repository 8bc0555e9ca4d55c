"""A deliberately misbehaving MCP server, speaking JSON-RPC by hand so it can break every rule.

Run: python hostile.py [stdio | http PORT] MARKER_DIR [FLAG ...]. It answers the handshake-era
``initialize`` and offers the tools below; each call writes MARKER_DIR/started first.

Tools: ``echo`` (its arguments back), ``exit`` (the process dies mid-call), ``hang`` (never
answers), ``garbage`` (a line that is not JSON, and no answer), ``wrong_shape`` (an answer that
is no ``CallToolResult``), ``huge`` (a result of ``chars`` characters), ``argv`` (its own
command line).

Flags: ``dup-long`` (a 127-character name listed twice), ``local-name`` (tools named
``double``, ``m`` * 60 and ``t`` * 127, as the tests name local tools), ``bad-schema``
(three tools whose input schemas are no JSON Schema), ``hang-list`` (``tools/list`` is never
answered), ``grandchild`` (starts ``sleep`` in a session of its own, and another in its own
group, their pids in MARKER_DIR/grandchildren), ``stderr-flood`` (writes 20 MB to stderr, then
MARKER_DIR/flooded), ``say-argv`` (prints its command line to stderr at start),
``stderr-noisy`` (writes 1 MB to stderr before each answer), ``init-exit`` / ``init-error`` /
``init-hang`` (``initialize`` makes it exit, is refused, or is never answered; with
``init-once`` only the first time, noted in MARKER_DIR/initialized), ``list-held`` (a
``tools/list`` is answered only once MARKER_DIR/hold is gone). Every ``tools/list`` it receives
adds a line to MARKER_DIR/lists.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODE = sys.argv[1]
MARKERS = Path(sys.argv[3] if MODE == "http" else sys.argv[2])
FLAGS = set(sys.argv[4:] if MODE == "http" else sys.argv[3:])
LONG = "t" * 127
MID = "m" * 60
_write = threading.Lock()


def _tool(name: str, schema: Any = None) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"the {name} tool",
        "inputSchema": schema if schema is not None else {"type": "object"},
    }


def tools() -> list[dict[str, Any]]:
    listed = [_tool(n) for n in ("echo", "exit", "hang", "garbage", "wrong_shape", "huge", "argv")]
    if "dup-long" in FLAGS:
        listed += [_tool(LONG), _tool(LONG)]
    if "local-name" in FLAGS:
        listed += [_tool("double"), _tool(LONG), _tool(MID)]
    if "bad-schema" in FLAGS:
        listed.insert(1, _tool("broken", {"type": "object", "properties": "not a mapping"}))
        listed.insert(1, _tool("stringly", "not a schema at all"))
        listed.insert(1, _tool("badly_typed", {"type": "object", "properties": {"a": {"type": 5}}}))
    return listed


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


class Stop(Exception):
    """No answer is sent for this request."""


def call(name: str, arguments: dict[str, Any], raw: Any) -> dict[str, Any]:
    (MARKERS / "started").write_text(name)
    if name == "exit":
        os._exit(3)
    if name == "hang":
        time.sleep(1_000)
    if name == "garbage":
        raw("{this is not json\n")
        raise Stop
    if name == "wrong_shape":
        return {"content": "not a list", "isError": "maybe"}
    if name == "huge":
        return _text("x" * int(arguments.get("chars", 5_000_000)))
    if name == "argv":
        return _text(" ".join(sys.argv))
    return _text(json.dumps(arguments, sort_keys=True))


def initialize_fault() -> str | None:
    """The ``init-*`` flag this ``initialize`` obeys, if any (``init-once``: the first only)."""
    fault = next((f for f in FLAGS if f in ("init-exit", "init-error", "init-hang")), None)
    if fault is None or "init-once" not in FLAGS:
        return fault
    seen = MARKERS / "initialized"
    if seen.exists():
        return None
    seen.write_text("yes")
    return fault


def noted_listing() -> None:
    """Count this ``tools/list`` in MARKER_DIR/lists; with ``list-held``, wait for the hold."""
    with _write, (MARKERS / "lists").open("a") as lists:
        lists.write("tools/list\n")
    while "list-held" in FLAGS and (MARKERS / "hold").exists():
        time.sleep(0.02)


def answer(message: dict[str, Any], raw: Any) -> dict[str, Any] | None:
    """The response to one message (None for a notification or a request left unanswered)."""
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None
    params = message.get("params") or {}
    if "stderr-noisy" in FLAGS:
        sys.stderr.write(("n" * 1023 + "\n") * 1024)
        sys.stderr.flush()
    try:
        if method == "initialize":
            fault = initialize_fault()
            if fault == "init-exit":
                print("initialize refused: no licence", file=sys.stderr, flush=True)
                os._exit(4)
            if fault == "init-hang":
                raise Stop
            if fault == "init-error":
                error = {"code": -32602, "message": "unsupported client"}
                return {"jsonrpc": "2.0", "id": ident, "error": error}
            result: dict[str, Any] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "hostile", "version": "1.0.0"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            noted_listing()
            if "hang-list" in FLAGS:
                time.sleep(1_000)
            result = {"tools": tools()}
        elif method == "tools/call":
            result = call(params.get("name", ""), params.get("arguments") or {}, raw)
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            return {"jsonrpc": "2.0", "id": ident, "error": error}
    except Stop:
        return None
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def start() -> None:
    if "say-argv" in FLAGS:
        print("started as", " ".join(sys.argv), file=sys.stderr, flush=True)
    if "grandchild" in FLAGS:
        apart = subprocess.Popen(["sleep", "1000"], start_new_session=True)
        grouped = subprocess.Popen(["sleep", "1000"])
        (MARKERS / "grandchildren").write_text(f"{apart.pid} {grouped.pid}")
    if "stderr-flood" in FLAGS:
        line = "e" * 1023 + "\n"
        for _ in range(20 * 1024):
            sys.stderr.write(line)
        sys.stderr.write("the flood is over\n")
        sys.stderr.flush()
        (MARKERS / "flooded").write_text("yes")


def serve_stdio() -> None:
    out = sys.stdout

    def raw(text: str) -> None:
        with _write:
            out.write(text)
            out.flush()

    def handle(message: dict[str, Any]) -> None:
        response = answer(message, raw)
        if response is not None:
            raw(json.dumps(response) + "\n")

    for line in sys.stdin:
        if line.strip():
            threading.Thread(target=handle, args=(json.loads(line),), daemon=True).start()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        sent: list[str] = []
        response = answer(json.loads(body), sent.append)
        if sent:  # garbage instead of an answer
            self._reply(200, sent[0].encode())
        elif response is None:
            self._reply(202, b"")
        else:
            self._reply(200, json.dumps(response).encode())

    def do_GET(self) -> None:
        self._reply(405, b"")

    do_DELETE = do_GET

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    start()
    if MODE == "http":
        ThreadingHTTPServer.daemon_threads = True
        ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
    else:
        serve_stdio()
