"""A question an MCP server asks mid-call, with no ``on_elicit``, on the chat page: the run
pauses, the tool's card shows a form built from the requested schema with its defaults filled
in, and Send resumes the run with the answers (Decline, with none); the tool's real result
reaches the model. The SDK's own server (tests/mcp/servers/asking.py) over stdio, headless
Chromium."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from chat_pages import open_page, send

from served import serving
from tether import Agent
from tether.mcp import McpStdio
from tether.messages import ToolResultBlock
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Call, Reply, ScriptedTransport

playwright = pytest.importorskip("playwright.async_api")
expect = playwright.expect

ASKING = Path(__file__).parents[1] / "mcp" / "servers" / "asking.py"


def results(model: ScriptedTransport, call: str) -> list[ToolResultBlock]:
    return [
        block
        for message in model.requests[-1].messages
        for block in message.content
        if isinstance(block, ToolResultBlock) and block.tool_use_id == call
    ]


async def test_a_servers_question_is_a_form_and_its_answer_resumes_the_run(
    tmp_path: Path, browser: Any
) -> None:
    model = ScriptedTransport(
        [
            Reply(tool_calls=[Call("book", {"day": "monday"}, id="b1")]),
            Reply("Booked."),
            Reply(tool_calls=[Call("book", {"day": "friday"}, id="b2")]),
            Reply("Not booked."),
        ]
    )
    server = McpStdio(sys.executable, [str(ASKING), "stdio"], name="asking")
    async with server, SQLiteStore(tmp_path / "c.db") as store:
        agent = Agent("s", model, tools=[server])
        async with serving(app(agent, store)) as base:
            page, problems = await open_page(browser, base)
            await send(page, "book monday")
            card = page.locator(".tool[data-call='b1']")
            await card.locator("button.answer").wait_for()
            await expect(card).to_contain_text("waiting for your answer")
            await expect(card.locator("legend")).to_have_text("Seats for monday?")
            meal = card.locator("input[name='meal']")
            assert await meal.is_checked()  # the schema's default, filled in
            await card.locator("select[name='seat']").select_option("aisle")
            await card.locator("input[name='count']").fill("3")
            await card.locator("button.answer").click()
            await page.locator(".msg.assistant", has_text="Booked.").wait_for()
            await expect(card.locator(".result")).to_contain_text("booked monday: 3 aisle")
            (booked,) = results(model, "b1")
            assert booked.text == "booked monday: 3 aisle meal=True" and not booked.is_error

            await send(page, "book friday")
            card = page.locator(".tool[data-call='b2']")
            await card.locator("button.decline").wait_for()
            await card.locator("button.decline").click()
            await page.locator(".msg.assistant", has_text="Not booked.").wait_for()
            (declined,) = results(model, "b2")
            assert declined.is_error and "decline" in declined.text
            assert problems == []


async def test_a_call_waiting_for_input_takes_answers_and_only_answers(tmp_path: Path) -> None:
    import httpx

    model = ScriptedTransport([Reply(tool_calls=[Call("book", {"day": "monday"}, id="b1")])])
    server = McpStdio(sys.executable, [str(ASKING), "stdio"], name="asking")
    async with server, SQLiteStore(tmp_path / "c.db") as store:
        agent = Agent("s", model, tools=[server])
        async with serving(app(agent, store)) as base, httpx.AsyncClient(base_url=base) as http:
            ask = {"threadId": "t", "messages": [{"role": "user", "content": "book"}]}
            async with http.stream("POST", "/agui", json=ask) as streamed:
                body = "".join([chunk async for chunk in streamed.aiter_text()])
            assert '"reason":"input_required"' in body and '"asks":' in body
            approve = {
                "threadId": "t",
                "resume": [
                    {"interruptId": "b1", "status": "resolved", "payload": {"approved": True}}
                ],
            }
            refused = await http.post("/agui", json=approve)
            assert refused.status_code == 409 and "payload.answers" in refused.text
            malformed = {
                "threadId": "t",
                "resume": [
                    {"interruptId": "b1", "status": "resolved", "payload": {"answers": ["window"]}}
                ],
            }
            refused = await http.post("/agui", json=malformed)
            assert refused.status_code == 400 and "question's key" in refused.text
            shown = (await http.get("/api/sessions/t")).json()
            assert shown["pending"][0]["asks"][0]["message"] == "Seats for monday?"
