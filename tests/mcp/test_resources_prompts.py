"""Resources, resource templates and prompts of real MCP servers through tether's client: both
protocol eras (server-everything speaks 2025-11-25, the SDK's ``MCPServer`` 2026-07-28), list
changes followed, subscriptions, resources attached to messages, an ``AgentSession`` over
several servers, and hostile servers contained."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import children, http_server

from tether import AudioBlock, ImageBlock, Message, TextBlock
from tether.mcp import McpError, McpStdio, McpStreamable, Prompt, Resource
from tether.session import AgentSession
from tether.testing import Reply, ScriptedTransport
from waiting import until

pytestmark = pytest.mark.timeout(90)

SERVERS = Path(__file__).parent / "servers"
LIBRARY = SERVERS / "library.py"
HOSTILE = SERVERS / "hostile_library.py"
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def library(markers: Path) -> McpStdio:
    return McpStdio(sys.executable, [str(LIBRARY), "stdio", str(markers)], name="library")


def hostile(*flags: str, timeout: float = 60.0) -> McpStdio:
    return McpStdio(sys.executable, [str(HOSTILE), *flags], name="hostile", timeout=timeout)


def listings(markers: Path, kind: str) -> int:
    lists = markers / "lists"
    return lists.read_text().split().count(kind) if lists.exists() else 0


@pytest.fixture
def library_http(tmp_path: Path) -> Iterator[str]:
    with http_server(LIBRARY, str(tmp_path)) as url:
        yield url


# -- the handshake era: server-everything ----------------------------------------------------------


async def test_everything_lists_and_reads_resources_templates_and_prompts(
    everything: list[str],
) -> None:
    async with McpStdio(everything[0], everything[1:], name="everything") as server:
        resources = await server.resources()
        by_uri = {r.uri: r for r in resources}
        doc = by_uri["demo://resource/static/document/architecture.md"]
        assert (doc.name, doc.mime_type, doc.server) == (
            "architecture.md",
            "text/markdown",
            "everything",
        )
        assert doc.text is None and doc.data is None  # listed, not read
        templates = {t.uri_template: t for t in await server.resource_templates()}
        assert "demo://resource/dynamic/text/{resourceId}" in templates

        read = await server.read_resource(doc.uri)
        assert read.text is not None and "Architecture" in read.text and read.data is None
        assert read.name == "architecture.md"  # known from the listing
        blob = await server.read_resource("demo://resource/dynamic/blob/3")
        assert blob.text is None and isinstance(blob.data, bytes)
        assert blob.data.startswith(b"Resource 3: This is a base64 blob")

        prompts = {p.name: p for p in await server.prompts()}
        args = prompts["args-prompt"].arguments
        assert [(a.name, a.required) for a in args] == [("city", True), ("state", False)]
        got = await server.get_prompt("args-prompt", {"city": "Paris", "state": "TX"})
        assert [m.role for m in got.messages] == ["user"]
        assert "Paris" in got.messages[0].text and got.server == "everything"
        embedded = await server.get_prompt(
            "resource-prompt", {"resourceType": "Blob", "resourceId": "2"}
        )
        texts = [b.text for m in embedded.messages for b in m.content if isinstance(b, TextBlock)]
        assert any(t.startswith("Resource 2: This is a base64 blob") for t in texts)  # decoded


async def test_everything_resources_over_http(everything_http: str) -> None:
    async with McpStreamable(everything_http) as server:
        assert any(r.uri.endswith("architecture.md") for r in await server.resources())
        text = await server.read_resource("demo://resource/dynamic/text/7")
        assert text.text is not None and text.text.startswith("Resource 7:")
        assert "simple-prompt" in {p.name for p in await server.prompts()}


async def test_everything_resource_list_change_is_followed(everything: list[str]) -> None:
    async with McpStdio(everything[0], everything[1:]) as server:
        before = {r.uri for r in await server.resources()}
        data = "data:text/plain;base64," + base64.b64encode(b"hello").decode()
        result = await server.call("gzip-file-as-resource", {"name": "hi.gz", "data": data})
        assert not result.is_error, result.content
        uri = "demo://resource/session/hi.gz"
        assert uri not in before
        await until(lambda: server._library._kept.get("resources") is None, "the list change")
        after = {r.uri: r for r in await server.resources()}
        assert uri in after
        read = await server.read_resource(uri)
        assert read.mime_type == "application/gzip" and read.data is not None
        assert read.data[:2] == b"\x1f\x8b"  # gzip, kept as bytes


async def test_everything_subscription_delivers_updates(everything: list[str]) -> None:
    uri = "demo://resource/static/document/architecture.md"
    heard: list[str] = []
    async with McpStdio(everything[0], everything[1:]) as server:
        async with await server.subscribe(uri, on_update=heard.append) as updates:
            await server.call("toggle-subscriber-updates", {})  # sends one at once
            assert await asyncio.wait_for(anext(updates), 20) == uri
            assert heard and heard[0] == uri
            await server.call("toggle-subscriber-updates", {})  # and stop
        assert updates.closed
        with pytest.raises(StopAsyncIteration):
            await anext(updates)


# -- the 2026-07-28 era: the SDK's own server ------------------------------------------------------


async def test_modern_era_resources_prompts_and_list_changes(tmp_path: Path) -> None:
    async with library(tmp_path) as server:
        assert server._connection is not None
        assert server._connection.client.protocol_version == "2026-07-28"
        resources = {r.uri: r for r in await server.resources()}
        assert set(resources) == {"note://readme", "note://pixel", "note://archive"}
        assert resources["note://readme"].description == "the readme"
        assert [t.uri_template for t in await server.resource_templates()] == [
            "note://chapter/{number}"
        ]
        assert (await server.read_resource("note://chapter/4")).text == "Chapter 4 begins."
        pixel = await server.read_resource("note://pixel")
        assert (pixel.data, pixel.mime_type, pixel.text) == (PIXEL, "image/png", None)

        review = await server.get_prompt("review", {"code": "x = 1"})
        assert [m.role for m in review.messages] == ["user", "assistant", "user"]
        assert "x = 1" in review.messages[0].text and review.description

        await server.resources()
        await server.prompts()
        await server.prompts()
        assert listings(tmp_path, "resources") == 1  # kept: the server promises to tell
        assert listings(tmp_path, "prompts") == 1

        await server.call("add_resource", {"name": "extra"})
        await until(lambda: server._library._kept.get("resources") is None, "the resource change")
        assert "note://extra" in {r.uri for r in await server.resources()}
        assert listings(tmp_path, "resources") == 2
        await server.call("add_prompt", {"name": "hello"})
        await until(lambda: server._library._kept.get("prompts") is None, "the prompt change")
        assert "hello" in {p.name for p in await server.prompts()}
        assert listings(tmp_path, "prompts") == 2
        said = await server.get_prompt("hello")
        assert said.messages[0].text == "Prompt hello speaking."


async def test_modern_era_over_http_subscription(library_http: str) -> None:
    async with McpStreamable(library_http) as server:
        assert {r.name for r in await server.resources()} >= {"readme", "pixel"}
        heard: list[str] = []
        subscription = await server.subscribe("note://readme", on_update=heard.append)
        for _ in range(3):  # a storm is one update for whoever reads late
            await server.call("touch", {"uri": "note://readme"})
        await server.call("touch", {"uri": "note://other"})  # not this one's
        assert await asyncio.wait_for(anext(subscription), 20) == "note://readme"
        await until(lambda: len(heard) == 3, "three updates told")
        assert heard == ["note://readme"] * 3
        await subscription.close()
        with pytest.raises(StopAsyncIteration):
            await anext(subscription)


async def test_a_subscription_ends_with_its_server(tmp_path: Path) -> None:
    async with library(tmp_path) as server:
        subscription = await server.subscribe("note://readme")
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(subscription), 5)


# -- attaching a resource to a message -------------------------------------------------------------


async def test_resources_become_message_blocks(tmp_path: Path) -> None:
    async with library(tmp_path) as server:
        readme = await server.read_resource("note://readme")
        pixel = await server.read_resource("note://pixel")
        archive = await server.read_resource("note://archive")
        listed = (await server.resources())[0]
    message = readme.message("Summarise this:")
    assert message.role == "user" and message.content == (
        TextBlock("Summarise this:"),
        TextBlock("Read me first."),
    )
    (image,) = pixel.blocks()
    assert isinstance(image, ImageBlock) and image.media_type == "image/png"
    assert base64.b64decode(image.data or "") == PIXEL
    with pytest.raises(
        ValueError, match=r"note://archive \(application/zip, \d+ bytes\).*binary='reference'"
    ):
        archive.blocks()
    (named,) = archive.blocks(binary="reference")
    assert isinstance(named, TextBlock) and "note://archive" in named.text
    with pytest.raises(ValueError, match="read it"):
        listed.blocks()
    with pytest.raises(ValueError, match="binary must be"):
        readme.blocks(binary="drop")  # type: ignore[arg-type]
    wav = Resource("x://a.wav", "a", "audio/wav", data=b"RIFF")
    assert isinstance(wav.blocks()[0], AudioBlock)
    textual = Resource("x://t", "t", "application/json", data=b'{"a": 1}')
    assert textual.blocks() == (TextBlock('{"a": 1}'),)


# -- a session over several servers ----------------------------------------------------------------


async def test_a_session_gathers_resources_and_prompts_naming_their_servers(
    everything: list[str], tmp_path: Path
) -> None:
    model = ScriptedTransport([Reply(text="noted"), Reply(text="reviewed")])
    every = McpStdio(everything[0], everything[1:], name="everything")
    async with AgentSession(model, mcp_tools=[every, library(tmp_path)]) as session:
        resources = await session.resources()
        servers = {r.server for r in resources}
        assert servers == {"everything", "library"}
        assert any(t.server == "everything" for t in await session.resource_templates())
        readme = await session.read_resource("note://readme")  # found in library's listing
        assert readme.text == "Read me first." and readme.server == "library"
        dynamic = await session.read_resource("demo://resource/dynamic/text/2", server="everything")
        assert dynamic.text is not None and dynamic.text.startswith("Resource 2")
        with pytest.raises(ValueError, match="server="):
            await session.read_resource("demo://resource/dynamic/text/2")  # listed by none
        with pytest.raises(ValueError, match="no server named 'nope'"):
            await session.read_resource("note://readme", server="nope")

        prompts = {(p.server, p.name) for p in await session.prompts()}
        assert {("library", "review"), ("everything", "simple-prompt")} <= prompts
        review = await session.get_prompt("review", {"code": "y = 2"})
        assert review.server == "library"

        await session.send(readme.message("Keep this in mind."))
        await session.send(review.messages[-1])
    sent = model.requests[0].messages[-1]
    assert sent.content == (TextBlock("Keep this in mind."), TextBlock("Read me first."))
    assert model.requests[1].messages[-1] == review.messages[-1]


# -- hostile servers -------------------------------------------------------------------------------


async def test_malformed_entries_are_left_out_and_named() -> None:
    async with hostile("malformed") as server:
        resources = await server.resources()
        assert [r.uri for r in resources] == ["note://good", "note://also-good"]
        problems = server.listing_problems["resources"]
        assert len(problems) == 3 and any("'no uri' left out" in p for p in problems)
        assert [t.name for t in await server.resource_templates()] == ["huge"]
        assert len(server.listing_problems["resource templates"]) == 2
        assert [p.name for p in await server.prompts()] == ["good"]
        assert len(server.listing_problems["prompts"]) == 3
        assert (await server.read_resource("note://good")).text == "good"


@pytest.mark.parametrize(
    ("flag", "said"), [("endless-pages", "cut after 100 pages"), ("same-cursor", "twice")]
)
async def test_endless_listings_are_cut(flag: str, said: str) -> None:
    async with hostile(flag) as server:
        resources = await server.resources()
        prompts = await server.prompts()
    assert resources and all(r.uri == "note://good" for r in resources[:1])
    assert len({r.uri for r in resources}) == 1  # listed again on every page: kept once
    assert len(prompts) == 1
    assert any(said in p for p in server.listing_problems["resources"])
    assert any(said in p for p in server.listing_problems["prompts"])


async def test_a_huge_resource_is_a_typed_error_and_the_server_stays() -> None:
    async with hostile() as server:
        with pytest.raises(McpError, match=r"huge://5000 is 5000 bytes, more than the 1000"):
            await server.read_resource("huge://5000", max_bytes=1000)
        with pytest.raises(McpError, match=r"blob://4000 is \d+ bytes, more than the 1000"):
            await server.read_resource("blob://4000", max_bytes=1000)
        with pytest.raises(McpError, match="longer than"):
            await server.read_resource("huge://20000000")  # past what one message may carry
        assert (await server.read_resource("huge://10")).text == "x" * 10


async def test_a_prompt_that_never_ends_times_out() -> None:
    async with hostile("hang-prompt", "hang-read", timeout=1.0) as server:
        began = time.monotonic()
        with pytest.raises(McpError, match="timed out after 1 s"):
            await server.get_prompt("good")
        with pytest.raises(McpError, match="timed out after 1 s"):
            await server.read_resource("note://good")
        assert time.monotonic() - began < 10
        assert [p.name for p in await server.prompts()] == ["good"]  # still there


async def test_bad_arguments_are_refused_before_asking() -> None:
    async with hostile() as server:
        with pytest.raises(TypeError, match=r"argument 'n' must be a string.*str\(\)"):
            await server.get_prompt("good", {"n": 3})  # type: ignore[dict-item]
        with pytest.raises(TypeError, match="URI as a string"):
            await server.read_resource(None)  # type: ignore[arg-type]
    assert isinstance(Prompt("p").messages, tuple)
    assert Message("user", "x").text == "x"


async def test_a_subscription_fails_when_its_server_dies(
    everything: list[str], tmp_path: Path
) -> None:
    for server in (McpStdio(everything[0], everything[1:]), library(tmp_path)):
        before = set(children())
        async with server:
            (pid,) = set(children()) - before
            subscription = await server.subscribe(
                "note://readme"
                if server.prefix == "library"
                else "demo://resource/static/document/architecture.md"
            )
            os.kill(pid, signal.SIGKILL)
            with pytest.raises(McpError, match="subscribe again"):
                await asyncio.wait_for(anext(subscription), 15)
            assert subscription.closed
            assert await server.resources()  # the next use reconnects
