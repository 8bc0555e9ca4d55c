"""``AgentSession(compaction=...)``: a long conversation compacts, the summary is stored with the
session, ``messages`` keeps everything, and a session loaded from the store later sends summary
+ recent without summarising again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tether import AgentSession, Compaction, McpTool, Usage
from tether.context.policy import estimate_chars
from tether.context.records import kept_of
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport
from tether.testing.common import Request

SCHEMA = {"type": "object", "properties": {"page": {"type": "integer"}}, "required": ["page"]}


def pages() -> McpTool:
    def handler(args: dict[str, Any]) -> dict[str, Any]:
        return {"page": args["page"], "text": "words " * 250}

    return McpTool("read_page", "Read one page of the book.", SCHEMA, handler)


def reader(turns: int, per_turn: int) -> ScriptedTransport:
    """Each turn reads ``per_turn`` pages then answers; summaries on request; usage counted."""
    replies: list[Reply] = []
    for t in range(turns):
        replies += [
            Reply(tool_calls=[Call("read_page", {"page": t * per_turn + i})])
            for i in range(per_turn)
        ]
        replies.append(Reply(f"Read up to page {(t + 1) * per_turn}."))

    def step(request: Request) -> Reply:
        if request.system == Compaction(max_tokens=1).instructions:
            return Reply("The user is reading the book page by page.")
        size = sum(estimate_chars(m) for m in request.messages) // 4
        reply = replies.pop(0)
        return Reply(reply.text, reply.tool_calls, Usage(input_tokens=size, output_tokens=5))

    return ScriptedTransport([], then=step)


async def test_a_session_compacts_and_a_loaded_one_starts_from_the_summary(tmp_path: Path) -> None:
    policy = Compaction(max_tokens=1500, keep_last=4)
    async with SQLiteStore(tmp_path / "s.db") as store:
        async with AgentSession(
            reader(3, 3), mcp_tools=[pages()], store=store, session_id="book", compaction=policy,
            max_tool_rounds=10,
        ) as session:  # fmt: skip
            for n in range(3):
                assert (
                    await session.send(f"Read {3} more pages.") == f"Read up to page {3 * (n + 1)}."
                )
            everything = session.messages
        assert any(kept_of(m) is not None for m in everything)
        assert len([m for m in everything if m.tool_uses]) == 9  # nothing was dropped

        model = ScriptedTransport([Reply("You were at page 9.", usage=Usage(input_tokens=700))])
        async with AgentSession.load(
            client=model, store=store, session_id="book", mcp_tools=[pages()],
            compaction=Compaction(max_tokens=1500, summarizer=ScriptedTransport([])),
        ) as resumed:  # fmt: skip
            assert resumed.messages == everything
            assert await resumed.send("Where was I?") == "You were at page 9."
        (request,) = model.requests
        assert request.messages[0].text.startswith("Summary of the conversation so far:")
        assert len(request.messages) < len(everything)
