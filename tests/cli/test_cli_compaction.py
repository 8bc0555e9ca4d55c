"""``tether chat --compact-at TOKENS``: the chat compacts a long conversation, says so in a dim
line, and a resumed session starts from the stored summary without summarising again."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from tether import Compaction, Usage, tool
from tether.cli.app import build_agent
from tether.cli.args import build_parser
from tether.cli.chat import ChatSession
from tether.cli.render import RichRenderer
from tether.context.policy import estimate_chars
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport
from tether.testing.common import Request


@tool
def read_log(part: int) -> str:
    """Read one part of the log."""
    return f"part {part}: " + "line\n" * 300


def reading(parts: int) -> ScriptedTransport:
    """Reads ``parts`` parts, then answers; a summary request gets a summary; usage as counted."""
    replies = [Reply(tool_calls=[Call("read_log", {"part": i})]) for i in range(parts)]
    replies.append(Reply("The log is fine."))

    def step(request: Request) -> Reply:
        if request.system == Compaction(max_tokens=1).instructions:
            return Reply("The user asked to read the log; parts were read.")
        size = sum(estimate_chars(m) for m in request.messages) // 4
        reply = replies.pop(0)
        return Reply(reply.text, reply.tool_calls, Usage(input_tokens=size, output_tokens=5))

    return ScriptedTransport([], then=step)


def test_chat_and_run_take_compact_at() -> None:
    opts = build_parser().parse_args(["chat", "--compact-at", "4000"])
    assert opts.compact_at == 4000
    assert build_parser().parse_args(["run", "hi"]).compact_at is None
    agent = build_agent(ScriptedTransport([]), [], system="s", compact_at=4000)
    assert agent.context_policy == Compaction(max_tokens=4000)


async def test_a_long_chat_compacts_and_resumes_from_its_summary(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    out = io.StringIO()
    async with SQLiteStore(db) as store:
        agent = build_agent(reading(8), [read_log], system="s", compact_at=1200)
        session = ChatSession(
            agent, RichRenderer(Console(file=out, width=120)), await store.open("c")
        )
        outcome = await session.turn("Read the whole log.")
        assert outcome.text == "The log is fine." and outcome.error is None
    assert "compacted:" in out.getvalue()

    async with SQLiteStore(db) as store:
        model = ScriptedTransport([Reply("Yes, all fine.", usage=Usage(input_tokens=600))])
        agent = build_agent(model, [read_log], system="s", compact_at=1200)
        later = io.StringIO()
        session = ChatSession(
            agent, RichRenderer(Console(file=later, width=120)), await store.open("c")
        )
        assert (await session.turn("Was it fine?")).text == "Yes, all fine."
        (request,) = model.requests
        assert request.messages[0].text.startswith("Summary of the conversation so far:")
        assert "parts were read" in request.messages[0].text
        assert "compacted" not in later.getvalue()
