"""Record what llama.cpp's server really sends on its three wire formats, and measure tool calls.

    python tests/local/recordings/record.py            # re-record the files beside this script
    python tests/local/recordings/record.py --measure 10   # also: N tool-call requests per format

The request bodies are the ones tether's own transports build (``build_request``), so the
recordings show the server's answer to exactly what tether sends. Each case is saved as
``<format>/<case>[-stream].request.json`` plus ``.json`` (whole response) or ``.sse`` (raw
event stream, bytes as received). Needs the ``local`` extra; not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from tether import Message, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock
from tether.local import LocalModel
from tether.transports.http import HttpTransport

HERE = Path(__file__).parent

ADD = ToolSpec(
    "add",
    "Add two integers and return the sum.",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
GET_TIME = ToolSpec(
    "get_time",
    "The current time in an IANA timezone such as Europe/Paris.",
    {
        "type": "object",
        "properties": {"timezone": {"type": "string"}},
        "required": ["timezone"],
    },
)
TOOLS = [ADD, GET_TIME]
SYSTEM = "You are a helpful assistant. Use the tools when they help."
ASK = "Use the add tool to add 17 and 25."

# name: (messages, tools, max_tokens)
CASES: dict[str, tuple[list[Message], list[ToolSpec], int]] = {
    "text": ([Message("user", "Say hello in five words.")], [], 60),
    "max_tokens": ([Message("user", "Count from 1 to 50, one number a line.")], [], 8),
    "tool_call": ([Message("user", ASK)], TOOLS, 120),
    "two_tool_calls": (
        [Message("user", "Add 1 and 2 with the add tool, and get the time in Asia/Tokyo.")],
        TOOLS,
        200,
    ),
    "tool_result": (
        [
            Message("user", ASK),
            Message("assistant", [ToolUseBlock("call_1", "add", {"a": 17, "b": 25})]),
            Message("user", [ToolResultBlock("call_1", "42")]),
        ],
        TOOLS,
        120,
    ),
}

MEASURE_PROMPTS = [
    ASK,
    "What time is it in Tokyo right now? Use the get_time tool.",
    "What is 1234 plus 4321? Use a tool.",
    "I need the current time in Europe/Paris.",
    "Add 3 and 4 with the add tool.",
]


def _transports(local: LocalModel, **options: Any) -> dict[str, HttpTransport]:
    return {
        "chat_completions": local.chat_transport(**options),
        "messages": local.anthropic_transport(**options),
        "responses": local.responses_transport(**options),
    }


def _post(
    client: httpx.Client, local: LocalModel, transport: HttpTransport, body: dict[str, Any]
) -> dict[str, Any]:
    url = transport.base_url + transport.codec.path
    headers = transport.codec.headers(local.api_key)
    started = time.monotonic()
    first: float | None = None
    raw = b""
    with client.stream("POST", url, json=body, headers=headers) as resp:
        for chunk in resp.iter_bytes():
            if first is None:
                first = time.monotonic() - started
            raw += chunk
        status, ctype = resp.status_code, resp.headers.get("content-type", "")
    return {
        "status": status,
        "content_type": ctype,
        "raw": raw,
        "first": first,
        "total": time.monotonic() - started,
    }


def record(local: LocalModel, client: httpx.Client) -> None:
    for streaming in (False, True):
        for case, (messages, tools, max_tokens) in CASES.items():
            transports = _transports(local, stream=streaming, temperature=0, max_tokens=max_tokens)
            for fmt, transport in transports.items():
                folder = HERE / fmt
                folder.mkdir(exist_ok=True)
                body = transport.build_request(messages, tools, SYSTEM)
                got = _post(client, local, transport, body)
                stem = f"{case}-stream" if streaming else case
                path = urlsplit(transport.base_url).path + transport.codec.path
                request = {"method": "POST", "path": path, "body": body}
                (folder / f"{stem}.request.json").write_text(json.dumps(request, indent=2) + "\n")
                if streaming:
                    (folder / f"{stem}.sse").write_bytes(got["raw"])
                else:
                    pretty = json.dumps(json.loads(got["raw"]), indent=2)
                    (folder / f"{stem}.json").write_text(pretty + "\n")
                print(f"{fmt:16} {stem:20} HTTP {got['status']} {got['total']:.1f} s")


def _calls_from_json(fmt: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    if fmt == "chat_completions":
        msg = body["choices"][0]["message"]
        return [
            (c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []
        ]
    if fmt == "messages":
        return [
            (b["name"], json.dumps(b["input"])) for b in body["content"] if b["type"] == "tool_use"
        ]
    return [(o["name"], o["arguments"]) for o in body["output"] if o["type"] == "function_call"]


def _calls_from_sse(fmt: str, raw: bytes) -> list[tuple[str, str]]:
    calls: dict[Any, list[str]] = {}
    for line in raw.decode().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        data = json.loads(line[6:])
        if fmt == "chat_completions":
            for choice in data.get("choices", []):
                for tc in choice.get("delta", {}).get("tool_calls") or []:
                    entry = calls.setdefault(tc["index"], ["", ""])
                    fn = tc.get("function", {})
                    entry[0] += fn.get("name") or ""
                    entry[1] += fn.get("arguments") or ""
        elif fmt == "messages":
            if (
                data["type"] == "content_block_start"
                and data["content_block"]["type"] == "tool_use"
            ):
                calls[data["index"]] = [data["content_block"]["name"], ""]
            elif data["type"] == "content_block_delta" and data["index"] in calls:
                calls[data["index"]][1] += data["delta"].get("partial_json", "")
        elif data.get("type") == "response.output_item.done":
            item = data["item"]
            if item["type"] == "function_call":
                calls[item["id"]] = [item["name"], item["arguments"]]
    return [(name, args) for name, args in calls.values()]


def _well_formed(name: str, arguments: str) -> bool:
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return False
    if name == "add":
        return isinstance(args, dict) and all(isinstance(args.get(k), int) for k in "ab")
    if name == "get_time":
        return isinstance(args, dict) and isinstance(args.get("timezone"), str)
    return False


def measure(local: LocalModel, client: httpx.Client, n: int) -> None:
    for fmt in ("chat_completions", "messages", "responses"):
        good, latencies, firsts, notes = 0, [], [], []
        for i in range(n):
            streaming = i % 2 == 1
            transport = _transports(
                local, stream=streaming, temperature=0.8, seed=100 + i, max_tokens=120
            )[fmt]
            prompt = MEASURE_PROMPTS[i % len(MEASURE_PROMPTS)]
            body = transport.build_request([Message("user", [TextBlock(prompt)])], TOOLS, SYSTEM)
            got = _post(client, local, transport, body)
            latencies.append(got["total"])
            if streaming:
                firsts.append(got["first"])
                calls = _calls_from_sse(fmt, got["raw"])
            else:
                calls = _calls_from_json(fmt, json.loads(got["raw"]))
            ok = len(calls) >= 1 and all(_well_formed(*c) for c in calls)
            good += ok
            if not ok:
                notes.append(f"#{i}: {got['raw'][-300:]!r}")
        print(
            f"{fmt:16} well-formed tool calls {good}/{n}; latency median"
            f" {statistics.median(latencies):.1f} s (max {max(latencies):.1f});"
            f" first byte streamed median {statistics.median(firsts or [0]):.2f} s"
        )
        for note in notes:
            print("   ", note)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--measure", type=int, default=0, metavar="N")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    with LocalModel() as local, httpx.Client(timeout=600, headers={"Connection": "close"}) as c:
        if not args.no_record:
            record(local, c)
        if args.measure:
            measure(local, c, args.measure)
        rss = Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]
        print(f"RSS of this process with the model loaded: {int(rss) // 1024} MB")


if __name__ == "__main__":
    main()
