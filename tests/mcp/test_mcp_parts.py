"""The MCP client's parts on their own: fitted names, bounded lines, schema checks, secrets
blanked, the bounded stderr tail, the tool catalog's refresh."""

from __future__ import annotations

import asyncio
import json
import os
import re

from tether import Tool
from tether.mcp.catalog import ToolCatalog
from tether.mcp.lines import Lines, Oversize
from tether.mcp.listing import Listing
from tether.mcp.names import MAX_NAME, fitted
from tether.mcp.redact import REDACTED, scrub, secret_args, secret_env
from tether.mcp.schemacheck import schema_problem
from tether.mcp.stderr import StderrTail
from waiting import until

PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_names_that_fit_are_kept_and_others_cut_with_a_hash() -> None:
    assert fitted("get_time") == "get_time"
    assert fitted("a" * 64) == "a" * 64
    one, other = fitted("a" * 100 + "x"), fitted("a" * 100 + "y")
    assert one != other and len(one) == len(other) == MAX_NAME
    assert fitted(one) == one  # a fitted name is its own fit
    dotted = fitted("files.read")
    assert PROVIDER_NAME.fullmatch(dotted) and dotted.startswith("files_read_")
    assert fitted("files.read") == dotted  # the same name, the same fit


def test_lines_are_split_and_one_too_long_is_dropped_with_its_id() -> None:
    lines = Lines(limit=64)
    assert lines.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert lines.feed(b":2}\n\n") == [b'{"b":2}', b""]
    first = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"x": "y" * 200}}).encode()
    last = json.dumps({"result": {"x": "y" * 200, "id": 1}, "jsonrpc": "2.0", "id": "r-2"})
    nameless = json.dumps({"jsonrpc": "2.0", "result": {"id": 3, "x": "y" * 200}}).encode()
    out: list[bytes | Oversize] = []
    for data in (first + b"\n", last.encode() + b"\n", nameless + b"\nok\n"):
        for i in range(0, len(data), 10):
            out += lines.feed(data[i : i + 10])
    assert out == [
        Oversize(len(first), 7),
        Oversize(len(last), "r-2"),
        Oversize(len(nameless), None),
        b"ok",
    ]


def test_schemas_that_are_no_json_schema_are_named() -> None:
    assert schema_problem({"type": "object", "properties": {"a": {"type": "string"}}}) is None
    assert schema_problem({"type": "object", "items": [{"type": "string"}, True]}) is None
    assert "'type' 5" in (schema_problem({"properties": {"a": {"type": 5}}}) or "")
    assert "'properties'" in (schema_problem({"type": "object", "properties": "x"}) or "")
    assert "'required'" in (schema_problem({"type": "object", "required": "a"}) or "")
    assert "not a schema" in (schema_problem("object") or "")
    deep: dict[str, object] = {"type": "object"}
    for _ in range(100):
        deep = {"type": "object", "properties": {"a": deep}}
    assert "nested" in (schema_problem(deep) or "")


def test_secrets_of_a_command_line_and_environment_are_blanked() -> None:
    args = [
        "server.py",
        "--api-key",
        "k-1",
        "--token=abcdef",
        "--url=https://x.test/mcp?api_key=qwerty123&page=2",
        "https://user:hunter2@x.test/",
        "sk-live-0123456789abcdef",
        "--verbose",
        "--port",
        "8080",
    ]
    found = secret_args(args)
    assert set(found) == {"k-1", "abcdef", "qwerty123", "hunter2", "sk-live-0123456789abcdef"}
    env = {"DEBUG": "1", "MODE": "production", "GH_TOKEN": "abcd", "PATH": "/bin"}
    assert secret_env(env) == ["production", "abcd"]
    said = scrub("key abcdef and qwerty123, port 8080, k-1", found)
    assert said == f"key {REDACTED} and {REDACTED}, port 8080, k-1"  # 'k-1' is too short


async def test_stderr_keeps_only_a_bounded_tail() -> None:
    tail = StderrTail(limit=4096)
    write = tail.open()
    try:
        for i in range(200):
            os.write(write, f"line {i} ".encode() + b"x" * 1000 + b"\n")
            await asyncio.sleep(0)
    finally:
        os.close(write)
    await until(lambda: "line 199" in tail.text(chars=2000), "the last line read")
    said = tail.text(chars=100)
    assert said.endswith("x" * 50) and len(said) <= 100
    assert "line 199" in tail.text(chars=2000)
    assert len(tail.text(chars=1_000_000)) <= 4096
    tail.close()


async def test_a_refresh_reads_the_list_now_and_again_if_it_changed_meanwhile() -> None:
    lists = [["a"], ["a", "b"], ["a", "b", "c"]]
    reads: list[asyncio.Event] = []
    heard: list[list[str]] = []

    async def read() -> Listing:
        go = asyncio.Event()
        reads.append(go)
        await go.wait()
        names = lists[len(reads) - 1]
        return Listing([Tool(n, lambda: "x", schema={"type": "object"}) for n in names])

    catalog = ToolCatalog(
        read, 5.0, lambda: None, "t", lambda ts: heard.append([t.name for t in ts])
    )
    catalog.refresh()
    await asyncio.sleep(0)
    catalog.refresh()  # changed again while the first reading is under way
    reads[0].set()
    for _ in range(100):
        if len(reads) == 2:
            break
        await asyncio.sleep(0)
    assert len(reads) == 2 and heard == [["a"]]
    reads[1].set()
    for _ in range(100):
        if len(heard) == 2:
            break
        await asyncio.sleep(0)
    assert heard == [["a"], ["a", "b"]] and not catalog.stale
    await asyncio.sleep(0.01)
    assert len(reads) == 2  # nothing changed since: no third reading
    await catalog.close()
