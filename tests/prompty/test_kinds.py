"""The built-in tool kind handlers against real things: child ``.prompty`` files run on scripted
transports, the real ``mcp-server-time`` over stdio, and OpenAPI calls to HTTP servers started
here (path, query, header and body mapping; the key only to its own host); file references
that leave the agent's tree refused."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from tether.mcp import McpError, McpStdio
from tether.prompty import registry
from tether.prompty.errors import LoadError, ToolKindError
from tether.prompty.execution.tool_schemas import parameters_schema, parameters_schemas
from tether.prompty.execution.tool_sessions import tool_sessions
from tether.prompty.execution.tools import engine_tools
from tether.prompty.kinds.builtin import register_builtin_kinds
from tether.prompty.kinds.mcp import McpKind
from tether.prompty.kinds.openapi import OpenApiKind
from tether.prompty.kinds.prompty import PromptyKind
from tether.prompty.loading.loader import load
from tether.prompty.model import PromptAgent, ToolDefinition

pytestmark = pytest.mark.timeout(60)

KEY = "secret-key-0123456789"


@pytest.fixture(autouse=True)
def clean_registries() -> Iterator[None]:
    registry.clear_tool_handlers()
    registry.clear_tools()
    registry.clear_connections()
    register_builtin_kinds(allow_stdio=True)
    yield
    registry.clear_tool_handlers()
    registry.clear_tools()
    registry.clear_connections()


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def only_tool(agent: PromptAgent) -> ToolDefinition:
    assert agent.tools is not None and len(agent.tools) == 1
    return agent.tools[0]


async def call(agent: PromptAgent, args: dict[str, Any], name: str | None = None) -> Any:
    """Call a declared tool the way the engine does, through the dispatcher."""
    tools = {t.name: t for t in engine_tools(agent)}
    tool = tools[name] if name else next(iter(tools.values()))
    return await tool.handler(**args)


# -- registration ---------------------------------------------------------------------------


def test_builtins_cover_prompty_mcp_openapi_but_not_custom_kinds() -> None:
    assert isinstance(registry.get_tool_handler("prompty"), PromptyKind)
    assert isinstance(registry.get_tool_handler("mcp"), McpKind)
    assert isinstance(registry.get_tool_handler("openapi"), OpenApiKind)
    assert registry.get_tool_handler("*") is None


async def test_a_custom_kind_without_a_handler_is_the_dispatchers_value_error(
    tmp_path: Path,
) -> None:
    agent = load(write(tmp_path, "a.prompty", "---\ntools:\n  - {name: x, kind: weird}\n---\n"))
    with pytest.raises(ValueError, match=r"No handler registered for tool: x \(kind: weird\)"):
        await call(agent, {})


def test_registering_again_is_idempotent_and_keeps_the_applications_handlers() -> None:
    before = registry.get_tool_handler("prompty")
    register_builtin_kinds(allow_stdio=True)
    assert registry.get_tool_handler("prompty") == before

    def mine(*args: Any) -> str:
        return "mine"

    registry.register_tool_handler("openapi", mine)
    register_builtin_kinds()
    assert registry.get_tool_handler("openapi") is mine
    assert registry.get_tool_handler("mcp") == McpKind(allow_stdio=False)  # new settings


def test_registering_from_many_threads_at_once(tmp_path: Path) -> None:
    registry.clear_tool_handlers()
    threads = [
        threading.Thread(target=register_builtin_kinds, kwargs={"allowed_roots": [tmp_path]})
        for _ in range(16)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert registry.get_tool_handler("prompty") == PromptyKind((tmp_path.resolve(),))


def test_a_builtin_kind_without_a_handler_gets_its_default_on_first_lookup() -> None:
    registry.clear_tool_handlers()
    assert registry.get_tool_handler("mcp") == McpKind(allow_stdio=False)
    assert isinstance(registry.get_tool_handler("prompty"), PromptyKind)
    assert isinstance(registry.get_tool_handler("openapi"), OpenApiKind)
    assert registry.get_tool_handler("*") is None


async def test_a_prompty_tool_runs_with_no_kinds_registered_first(tmp_path: Path) -> None:
    from tether.prompty import turn_async
    from tether.testing import Call, Reply, ScriptedTransport

    registry.clear_tool_handlers()
    registry.register_connection("child-model", ScriptedTransport([Reply("Short: calm.")]))
    parent_model = ScriptedTransport(
        [Reply(tool_calls=[Call("summarize", {"text": "Nothing happened."})]), Reply("Done")]
    )
    assert await turn_async(family(tmp_path, "single"), {}, transport=parent_model) == "Done"
    result = parent_model.requests[1].last_message.tool_results[0]
    assert result.content == "Short: calm." and not result.is_error


# -- prompty --------------------------------------------------------------------------------

CHILD = """---
name: child
model:
  id: scripted
  connection: {kind: reference, name: child-model}
inputs:
  text: {kind: string, required: true, description: what to summarise}
  style: terse
tools:
  - name: shout
    kind: function
    parameters: [{name: word, kind: string}]
---
system:
Summarise in a {{style}} style.

user:
{{text}}
"""


def parent(mode: str, path: str = "kids/child.prompty") -> str:
    return f"""---
name: parent
model: scripted
tools:
  - name: summarize
    kind: prompty
    description: Summarise a text
    path: {path}
    mode: {mode}
---
user:
Summarise the news.
"""


def family(tmp_path: Path, mode: str) -> PromptAgent:
    write(tmp_path, "kids/child.prompty", CHILD)
    return load(write(tmp_path, "parent.prompty", parent(mode)))


def sent_text(request: Any) -> str:
    return request.system + "".join(str(m) for m in request.messages)


def test_the_model_sees_the_childs_inputs(tmp_path: Path) -> None:
    agent = family(tmp_path, "single")
    assert parameters_schema(only_tool(agent), agent) == {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "what to summarise"},
            "style": {"type": "string"},
        },
        "required": ["text"],
    }


async def test_single_mode_runs_the_child_once_on_its_registered_transport(
    tmp_path: Path,
) -> None:
    from tether.prompty import turn_async
    from tether.testing import Call, Reply, ScriptedTransport

    child_model = ScriptedTransport([Reply("Short: all calm.")])
    registry.register_connection("child-model", child_model)
    parent_model = ScriptedTransport(
        [Reply(tool_calls=[Call("summarize", {"text": "Nothing happened today."})]), Reply("Done")]
    )
    result = await turn_async(family(tmp_path, "single"), {}, transport=parent_model)
    assert result == "Done"
    assert child_model.call_count == 1
    sent = sent_text(child_model.requests[0])
    assert "Nothing happened today." in sent and "terse" in sent
    results = parent_model.requests[1].last_message.tool_results
    assert results[0].content == "Short: all calm." and not results[0].is_error


async def test_agentic_mode_runs_the_childs_own_tools(tmp_path: Path) -> None:
    from tether.prompty import turn_async
    from tether.testing import Call, Reply, ScriptedTransport

    shouted: list[str] = []

    def shout(word: str) -> str:
        shouted.append(word)
        return word.upper()

    registry.register_tool("shout", shout)
    child_model = ScriptedTransport(
        [Reply(tool_calls=[Call("shout", {"word": "calm"})]), Reply("Child: CALM")]
    )
    registry.register_connection("child-model", child_model)
    parent_model = ScriptedTransport(
        [Reply(tool_calls=[Call("summarize", {"text": "x"})]), Reply("Parent done")]
    )
    assert await turn_async(family(tmp_path, "agentic"), {}, transport=parent_model) == (
        "Parent done"
    )
    assert shouted == ["calm"]
    assert child_model.requests[1].last_message.tool_results[0].content == "CALM"
    assert parent_model.requests[1].last_message.tool_results[0].content == "Child: CALM"


async def test_a_file_that_runs_itself_stops_at_the_nesting_limit(tmp_path: Path) -> None:
    from tether.prompty import turn_async
    from tether.testing import Call, Reply, ScriptedTransport

    def step(request: Any) -> Reply:
        results = request.last_message.tool_results
        if results:  # answer with what the tool said, so every level unwinds at once
            return Reply(str(results[0].content))
        return Reply(tool_calls=[Call("again", {})])

    model = ScriptedTransport([], then=step)
    registry.register_connection("loop-model", model)
    text = """---
model: {id: scripted, connection: {kind: reference, name: loop-model}}
tools:
  - {name: again, kind: prompty, path: self.prompty, mode: agentic}
---
user:
go
"""
    result = await turn_async(load(write(tmp_path, "self.prompty", text)), {}, transport=model)
    assert "nest deeper than 8" in result


async def test_a_child_path_outside_the_parents_tree_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "outside.prompty", CHILD)
    agent = load(write(tmp_path, "home/parent.prompty", parent("single", "../outside.prompty")))
    with pytest.raises(LoadError, match="resolves outside allowed roots") as raised:
        await call(agent, {"text": "x"})
    assert raised.value.field == "tools[summarize].path"
    (tmp_path / "home/link.prompty").symlink_to(tmp_path / "outside.prompty")
    linked = load(write(tmp_path, "home/p2.prompty", parent("single", "link.prompty")))
    with pytest.raises(LoadError, match="outside allowed roots"):
        parameters_schema(only_tool(linked), linked)


def test_allowed_roots_let_a_child_lie_elsewhere(tmp_path: Path) -> None:
    write(tmp_path, "shared/child.prompty", CHILD)
    agent = load(
        write(tmp_path, "home/parent.prompty", parent("single", "../shared/child.prompty"))
    )
    register_builtin_kinds(allowed_roots=[tmp_path / "shared"])
    assert parameters_schema(only_tool(agent), agent)["required"] == ["text"]


async def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolKindError, match="mode must be single or agentic"):
        await call(family(tmp_path, "sometimes"), {"text": "x"})


# -- mcp ------------------------------------------------------------------------------------


def time_agent(tmp_path: Path, extra: str = "", name: str = "get_current_time") -> PromptAgent:
    text = f"""---
tools:
  - name: {name}
    kind: mcp
    connection:
      kind: stdio
      command: {json.dumps(sys.executable)}
      args: ["-m", "mcp_server_time"]
    allowedTools: [get_current_time]
{extra}---
"""
    return load(write(tmp_path, "time.prompty", text))


async def test_mcp_calls_the_time_server_over_stdio(tmp_path: Path) -> None:
    answer = await call(time_agent(tmp_path), {"timezone": "UTC"})
    assert json.loads(answer)["timezone"] == "UTC"


async def test_mcp_tool_schemas_come_from_the_server(tmp_path: Path) -> None:
    schemas = await parameters_schemas(time_agent(tmp_path))
    assert schemas["get_current_time"]["required"] == ["timezone"]


async def test_mcp_connections_stay_open_for_a_run(tmp_path: Path) -> None:
    agent = time_agent(tmp_path)
    async with tool_sessions() as sessions:
        first = await call(agent, {"timezone": "UTC"})
        second = await call(agent, {"timezone": "Europe/Oslo"})
        async with tool_sessions() as inner:  # a child's run shares them
            assert inner is sessions
        assert sessions.opened == 1
    assert sessions.opened == 0
    assert json.loads(first)["timezone"] == "UTC"
    assert json.loads(second)["timezone"] == "Europe/Oslo"


async def test_an_mcp_error_result_raises(tmp_path: Path) -> None:
    with pytest.raises(McpError, match="Invalid timezone"):
        await call(time_agent(tmp_path), {"timezone": "Not/AZone"})


async def test_mcp_refusals(tmp_path: Path) -> None:
    with pytest.raises(ToolKindError, match="not in allowedTools"):
        await call(time_agent(tmp_path, name="convert_time"), {})
    with pytest.raises(ToolKindError, match="needs approval"):
        await call(time_agent(tmp_path, extra="    approvalMode: always\n"), {"timezone": "UTC"})
    register_builtin_kinds(allow_stdio=False)
    with pytest.raises(ToolKindError, match="allow_stdio=True"):
        await call(time_agent(tmp_path), {"timezone": "UTC"})


async def test_mcp_reference_uses_the_applications_server(tmp_path: Path) -> None:
    register_builtin_kinds(allow_stdio=False)
    text = """---
tools:
  - {name: get_current_time, kind: mcp, connection: {kind: reference, name: time}}
---
"""
    agent = load(write(tmp_path, "ref.prompty", text))
    async with McpStdio(sys.executable, ["-m", "mcp_server_time"]) as server:
        registry.register_connection("time", server)
        answer = await call(agent, {"timezone": "UTC"})
    assert json.loads(answer)["timezone"] == "UTC"


async def test_a_full_turn_calls_the_mcp_tool(tmp_path: Path) -> None:
    from tether.prompty import turn_async
    from tether.testing import Call, Reply, ScriptedTransport

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("get_current_time", {"timezone": "UTC"})]), Reply("It is now.")]
    )
    agent = time_agent(tmp_path)
    assert await turn_async(agent, {}, transport=model) == "It is now."
    result = model.requests[1].last_message.tool_results[0]
    assert not result.is_error and '"timezone": "UTC"' in str(result.content)


# -- openapi --------------------------------------------------------------------------------


@dataclass
class Server:
    """A recording HTTP server on 127.0.0.1."""

    url: str
    seen: list[dict[str, Any]] = field(default_factory=list)
    redirect_to: str = ""


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            parts = urlsplit(self.path)
            size = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(size).decode() if size else None
            seen = {
                "method": self.command,
                "path": parts.path,
                "query": parse_qsl(parts.query),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
            }
            server.seen.append(seen)
            if parts.path.endswith("/redirect"):
                self._send(302, b"", {"Location": server.redirect_to})
            elif parts.path.endswith("/big"):
                self._send(200, b"x" * (2 << 20), {"Content-Type": "text/plain"})
            elif parts.path.endswith("/missing"):
                self._send(404, f"no such thing: {parts.query}".encode(), {})
            else:
                text = json.dumps(seen, indent=4).encode()
                self._send(200, text, {"Content-Type": "application/json"})

        def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

    return Handler


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    """Two HTTP servers: the API and another host that must never see the key."""
    running = []
    made = []
    for _ in range(2):
        rec = Server("")
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(rec))
        rec.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        running.append(httpd)
        made.append(rec)
    made[0].redirect_to = made[1].url + "/v1/items/stolen"
    yield made[0], made[1]
    for httpd in running:
        httpd.shutdown()
        httpd.server_close()


SPEC = """openapi: 3.0.3
info: {{title: items, version: "1"}}
servers:
  - url: "{base}/{{version}}"
    variables: {{version: {{default: v1}}}}
security: [{{{scheme}: []}}]
components:
  securitySchemes:
    header_key: {{type: apiKey, in: header, name: X-API-Key}}
    query_key: {{type: apiKey, in: query, name: api_key}}
    bearer: {{type: http, scheme: bearer}}
  schemas:
    NewItem:
      type: object
      required: [name]
      properties:
        name: {{type: string}}
        count: {{type: integer}}
  parameters:
    Verbose: {{name: verbose, in: query, schema: {{type: boolean}}}}
paths:
  /items/{{item_id}}:
    parameters:
      - {{name: item_id, in: path, required: true, schema: {{type: string}}}}
    get:
      operationId: getItem
      parameters:
        - $ref: "#/components/parameters/Verbose"
        - {{name: tags, in: query, schema: {{type: array, items: {{type: string}}}}}}
        - {{name: X-Trace, in: header, schema: {{type: string}}}}
  /items:
    post:
      operationId: createItem
      requestBody:
        required: true
        content:
          application/json:
            schema: {{$ref: "#/components/schemas/NewItem"}}
  /redirect:
    get: {{operationId: redirect}}
  /big:
    get: {{operationId: big}}
  /missing:
    get: {{operationId: missing}}
"""


def api_agent(
    tmp_path: Path,
    base: str,
    name: str,
    scheme: str = "header_key",
    connection: str = f"{{kind: key, apiKey: {KEY}}}",
    specification: str = "api/spec.yaml",
) -> PromptAgent:
    write(tmp_path, "api/spec.yaml", SPEC.format(base=base, scheme=scheme))
    text = f"""---
tools:
  - name: {name}
    kind: openapi
    specification: {specification}
    connection: {connection}
---
"""
    return load(write(tmp_path, "api.prompty", text))


async def test_openapi_maps_path_query_and_header_and_sends_the_key(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    api, _ = servers
    agent = api_agent(tmp_path, api.url, "getItem")
    args = {"item_id": "a b/c", "verbose": True, "tags": ["x", "y"], "X-Trace": "t1"}
    answer = await call(agent, args)
    (seen,) = api.seen
    assert seen["method"] == "GET" and seen["path"] == "/v1/items/a%20b%2Fc"
    assert seen["query"] == [("verbose", "true"), ("tags", "x"), ("tags", "y")]
    assert seen["headers"]["x-api-key"] == KEY and seen["headers"]["x-trace"] == "t1"
    assert "\n" not in answer and json.loads(answer)["path"] == "/v1/items/a%20b%2Fc"


async def test_openapi_sends_a_json_body(tmp_path: Path, servers: tuple[Server, Server]) -> None:
    api, _ = servers
    agent = api_agent(tmp_path, api.url, "createItem", scheme="bearer")
    await call(agent, {"name": "pen", "count": 2})
    (seen,) = api.seen
    assert seen["method"] == "POST" and seen["path"] == "/v1/items"
    assert json.loads(seen["body"]) == {"name": "pen", "count": 2}
    assert seen["headers"]["content-type"] == "application/json"
    assert seen["headers"]["authorization"] == f"Bearer {KEY}"


def test_openapi_schemas_for_the_model(tmp_path: Path) -> None:
    get_item = api_agent(tmp_path, "http://127.0.0.1:1", "getItem")
    schema = parameters_schema(only_tool(get_item), get_item)
    assert schema is not None
    assert set(schema["properties"]) == {"item_id", "verbose", "tags", "X-Trace"}
    assert schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert schema["required"] == ["item_id"]
    create = api_agent(tmp_path, "http://127.0.0.1:1", "createItem")
    schema = parameters_schema(only_tool(create), create)
    assert schema == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["name"],
    }


async def test_the_key_goes_to_the_endpoint_not_the_documents_server(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    api, other = servers
    connection = f"{{kind: key, endpoint: '{api.url}/v1', apiKey: {KEY}}}"
    agent = api_agent(tmp_path, other.url, "getItem", connection=connection)
    await call(agent, {"item_id": "1"})
    assert other.seen == []
    assert api.seen[0]["headers"]["x-api-key"] == KEY


async def test_a_redirect_is_not_followed(tmp_path: Path, servers: tuple[Server, Server]) -> None:
    api, other = servers
    with pytest.raises(ToolKindError, match="redirect, not followed"):
        await call(api_agent(tmp_path, api.url, "redirect"), {})
    assert other.seen == []
    assert api.seen[0]["headers"]["x-api-key"] == KEY


async def test_a_query_key_is_redacted_from_what_the_model_sees(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    api, _ = servers
    with pytest.raises(ToolKindError, match="HTTP 404") as raised:
        await call(api_agent(tmp_path, api.url, "missing", scheme="query_key"), {})
    assert api.seen[0]["query"] == [("api_key", KEY)]
    assert KEY not in str(raised.value) and "[REDACTED]" in str(raised.value)


async def test_a_large_answer_is_cut(tmp_path: Path, servers: tuple[Server, Server]) -> None:
    api, _ = servers
    answer = await call(api_agent(tmp_path, api.url, "big"), {})
    assert answer.endswith(f"[response cut at {1 << 20} bytes]")
    assert len(answer) < (1 << 20) + 100


async def test_openapi_argument_errors(tmp_path: Path, servers: tuple[Server, Server]) -> None:
    api, _ = servers
    agent = api_agent(tmp_path, api.url, "getItem")
    with pytest.raises(ToolKindError, match="missing required argument 'item_id'"):
        await call(agent, {})
    with pytest.raises(ToolKindError, match=r"may not be '\.\.'"):
        await call(agent, {"item_id": ".."})
    with pytest.raises(ToolKindError, match="may not hold line breaks"):
        await call(agent, {"item_id": "1", "X-Trace": "a\r\nHost: elsewhere"})
    with pytest.raises(ToolKindError, match="unknown arguments: extra"):
        await call(agent, {"item_id": "1", "extra": 1})
    with pytest.raises(ToolKindError, match="operationIds: getItem, createItem"):
        await call(api_agent(tmp_path, api.url, "nope"), {})
    assert api.seen == []


async def test_a_specification_outside_the_tree_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "spec.yaml", SPEC.format(base="http://127.0.0.1:1", scheme="bearer"))
    agent = api_agent(tmp_path / "home", "http://x", "getItem", specification="../spec.yaml")
    with pytest.raises(LoadError, match="outside allowed roots") as raised:
        await call(agent, {"item_id": "1"})
    assert raised.value.field == "tools[getItem].specification"
    with pytest.raises(ToolKindError, match="not URLs"):
        url_agent = api_agent(tmp_path, "http://x", "getItem", specification="http://x/s.yaml")
        await call(url_agent, {"item_id": "1"})
