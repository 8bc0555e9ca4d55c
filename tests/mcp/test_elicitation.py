"""``on_elicit``: a server asking the user for input mid-call, in both protocol eras, over real
processes and real HTTP. The 2026-07-28 era's ``InputRequiredResult`` (``servers/asking.py``,
the SDK's own server with ``Resolve``/``Elicit``), the handshake era's ``elicitation/create``
(npm server-everything, and ``servers/eliciting.py`` which writes down what it got). An answer
that does not fit is never sent; storms, huge questions and an answerer that raises end that
call with an error result, and the server stays usable."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import http_server

from tether import AgentSession, McpStdio
from tether.mcp import Elicitation, McpError, McpStreamable
from tether.testing import Call, Reply, ScriptedTransport
from tether.tools.needs_input import NeedsInput
from waiting import until

pytestmark = pytest.mark.timeout(60)

HERE = Path(__file__).parent
ASKING = [sys.executable, str(HERE / "servers" / "asking.py"), "stdio"]
ELICITING = HERE / "servers" / "eliciting.py"


def asking(**options: Any) -> McpStdio:
    return McpStdio(ASKING[0], ASKING[1:], name="asking", **options)


def eliciting(markers: Path, **options: Any) -> McpStdio:
    return McpStdio(sys.executable, [str(ELICITING), str(markers)], name="eliciting", **options)


def answers(markers: Path) -> list[Any]:
    path = markers / "answers"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Answerer:
    """An ``on_elicit`` that keeps what it was asked and answers from a list (or a function)."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.asked: list[Elicitation] = []

    def __call__(self, elicitation: Elicitation) -> Any:
        self.asked.append(elicitation)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return reply(elicitation) if callable(reply) else reply


# -- the 2026-07-28 era -------------------------------------------------------------------------


async def test_a_stateless_era_question_is_answered_and_its_defaults_sent() -> None:
    answer = Answerer({"seat": "window", "count": 2})
    async with asking(on_elicit=answer) as server:
        result = await server.call("book", {"day": "monday"})
    assert (result.text, result.is_error) == ("booked monday: 2 window meal=True", False)
    (asked,) = answer.asked
    assert asked.message == "Seats for monday?"
    assert (asked.tool, dict(asked.arguments or {})) == ("book", {"day": "monday"})
    assert (asked.mode, asked.url) == ("form", None)
    assert set(asked.fields) == {"seat", "count", "meal"}
    assert asked.schema["required"] == ["seat", "count"]
    assert "asking.py" in asked.server


async def test_an_async_answerer_is_awaited_and_none_declines() -> None:
    async def answer(elicitation: Elicitation) -> dict[str, Any] | None:
        await asyncio.sleep(0)
        return None

    async with asking(on_elicit=answer) as server:
        result = await server.call("book", {"day": "monday"})
    assert result.is_error and "decline" in result.text


async def test_without_an_answerer_the_call_raises_the_pause_and_names_on_elicit() -> None:
    async with asking() as server:  # tests/mcp/test_elicitation_pause.py: a run pauses on it
        with pytest.raises(NeedsInput, match=r"give the server on_elicit="):
            await server.call("book", {"day": "monday"})


async def test_an_answer_that_does_not_fit_is_not_sent() -> None:
    answer = Answerer({"seat": "window", "count": 12}, {"seat": "middle", "count": 1})
    async with asking(on_elicit=answer) as server:
        too_many = await server.call("book", {"day": "monday"})
        no_such_seat = await server.call("book", {"day": "monday"})
        extra = await asking_again(server, {"seat": "aisle", "count": 1, "pet": "cat"}, answer)
    assert too_many.is_error and "count: 12 is greater than the maximum of 9" in too_many.text
    assert "it was not sent" in too_many.text and "booked" not in too_many.text
    assert (
        no_such_seat.is_error and "'middle' is not one of ['window', 'aisle']" in no_such_seat.text
    )
    assert extra.is_error and "did not ask for: pet" in extra.text


async def asking_again(server: McpStdio, reply: Any, answer: Answerer) -> Any:
    answer.replies = [reply]
    return await server.call("book", {"day": "tuesday"})


async def test_an_answerer_that_raises_fails_that_call_and_the_server_lives_on() -> None:
    def answer(elicitation: Elicitation) -> dict[str, Any]:
        if elicitation.message == "Seats for monday?":
            raise RuntimeError("the form broke")
        return {"seat": "aisle", "count": 1, "meal": False}

    async with asking(on_elicit=answer) as server:
        broken = await server.call("book", {"day": "monday"})
        fine = await server.call("book", {"day": "friday"})
    assert broken.is_error and "on_elicit raised RuntimeError: the form broke" in broken.text
    assert (fine.text, fine.is_error) == ("booked friday: 1 aisle meal=False", False)


async def test_a_server_that_asks_forever_is_stopped_at_the_cap() -> None:
    answer = Answerer(lambda asked: {} if asked.tool == "say" else {"name": "Ada"})
    async with asking(on_elicit=answer) as server:
        endless = await server.call("endless", {})
        crowd = await server.call("crowd", {})  # 40 questions in one round
        after = await server.call("say", {"text": "Still there?"})
    assert endless.is_error and "asked for input more than 10 times in one call" in endless.text
    assert crowd.is_error and "more than 10 times" in crowd.text
    asked = [a.tool for a in answer.asked]
    assert asked.count("endless") == 10 and asked.count("crowd") <= 10
    assert after.text == "got {'action': 'accept', 'content': {}}"


async def test_a_huge_question_never_reaches_the_answerer() -> None:
    answer = Answerer({"name": "Ada"})
    async with asking(on_elicit=answer) as server:
        schema = await server.call("big_schema", {})
        message = await server.call("big_message", {})
    assert schema.is_error and "5000 fields (at most 65,536 bytes and 100 fields)" in schema.text
    assert message.is_error and "a message of 200,000 characters" in message.text
    assert answer.asked == []


@pytest.fixture
def asking_http() -> Iterator[str]:
    """``servers/asking.py`` over Streamable HTTP on 127.0.0.1; its URL."""
    with http_server(HERE / "servers" / "asking.py") as url:
        yield url


async def test_a_stateless_era_question_over_http(asking_http: str) -> None:
    answer = Answerer({"seat": "aisle", "count": 3})
    async with McpStreamable(asking_http, on_elicit=answer) as server:
        result = await server.call("book", {"day": "sunday"})
    assert result.text == "booked sunday: 3 aisle meal=True"
    assert answer.asked[0].server == asking_http


# -- the handshake era ---------------------------------------------------------------------------


async def test_server_everything_asks_and_a_client_without_an_answerer_says_so(
    everything: list[str],
) -> None:
    async with McpStdio(everything[0], everything[1:]) as server:
        mute = {t.name for t in await server.list_tools()}
        unanswered = await server.call("trigger-elicitation-request", {})
        echo = await server.call("echo", {"message": "still here"})
    answer = Answerer({"name": "Ada Lovelace", "check": True}, None)
    async with McpStdio(everything[0], everything[1:], on_elicit=answer) as server:
        offered = {t.name for t in await server.list_tools()}
        accepted = await server.call("trigger-elicitation-request", {})
        declined = await server.call("trigger-elicitation-request", {})
    assert "trigger-elicitation-request" in mute  # the client declares it, to pause a run
    assert unanswered.is_error and "give the server on_elicit=" in unanswered.text
    assert "still here" in echo.text
    assert "trigger-elicitation-request" in offered
    assert "- Name: Ada Lovelace" in accepted.text and "- Favorite Integer: 42" in accepted.text
    assert '"untitledSingleSelectEnum": "Monica"' in accepted.text  # a default, filled in
    assert "declined" in declined.text
    assert answer.asked[0].tool == "trigger-elicitation-request"
    assert answer.asked[0].fields["email"]["format"] == "email"


async def test_an_email_field_is_checked_before_it_is_sent(everything: list[str]) -> None:
    answer = Answerer({"name": "Ada", "email": "not an address"})
    async with McpStdio(everything[0], everything[1:], on_elicit=answer) as server:
        result = await server.call("trigger-elicitation-request", {})
    assert result.is_error and "email: 'not an address' is not a 'email'" in result.text


async def test_a_handshake_era_question_and_a_url(tmp_path: Path) -> None:
    answer = Answerer({"name": "Ada"}, {})
    async with eliciting(tmp_path, on_elicit=answer) as server:
        form = await server.call("ask", {})
        url = await server.call("url", {})
    assert json.loads(form.text) == {"action": "accept", "content": {"name": "Ada", "age": 30}}
    assert json.loads(url.text) == {"action": "accept"}
    assert answer.asked[1].mode == "url" and answer.asked[1].url == "https://example.com/login"
    assert json.loads((tmp_path / "capabilities").read_text())["elicitation"] is not None


async def test_the_capability_is_declared_without_an_answerer_too(tmp_path: Path) -> None:
    # A 2026-07-28 era question then pauses the run; a handshake-era one is declined.
    async with eliciting(tmp_path) as server:
        await server.ping()
    assert json.loads((tmp_path / "capabilities").read_text())["elicitation"] is not None


async def test_a_url_answered_with_fields_is_refused(tmp_path: Path) -> None:
    async with eliciting(tmp_path, on_elicit=Answerer({"token": "x"})) as server:
        result = await server.call("url", {})
    assert result.is_error and "return {} to accept" in result.text
    assert (
        answers(tmp_path)[0]["error"]["message"] == "the client could not answer this elicitation"
    )


async def test_the_server_never_reads_what_the_answerer_raised(tmp_path: Path) -> None:
    def broken(elicitation: Elicitation) -> dict[str, Any]:
        raise ValueError("vault token sk-live-0123456789abcdef refused")

    async with eliciting(tmp_path, on_elicit=broken) as server:
        result = await server.call("ask", {})
        again = await server.call("ask", {})
    assert result.is_error and "on_elicit raised ValueError: vault token" in result.text
    assert again.is_error  # the same answerer, the same end; the connection still serves
    told = (tmp_path / "answers").read_text()
    assert "sk-live" not in told and "could not answer this elicitation" in told


async def test_a_call_that_times_out_answers_its_open_question_cancel(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def never(elicitation: Elicitation) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(1_000)
        return {}

    async with eliciting(tmp_path, on_elicit=never, timeout=1.0) as server:
        with pytest.raises(McpError, match="timed out after 1 s"):
            await server.call("ask", {})
        await until(lambda: answers(tmp_path) != [], "the server's answer")
    assert started.is_set()
    assert answers(tmp_path) == [{"action": "cancel"}]


async def test_a_cancelled_call_answers_its_open_question_cancel(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def slow(elicitation: Elicitation) -> dict[str, Any]:
        if elicitation.mode == "url":
            return {}
        started.set()
        await asyncio.sleep(1_000)
        return {}

    async with eliciting(tmp_path, on_elicit=slow) as server:
        call = asyncio.ensure_future(server.call("ask", {}))
        await asyncio.wait_for(started.wait(), 15)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await until(lambda: answers(tmp_path) != [], "the server's answer")
        again = await server.call("url", {})
    assert answers(tmp_path)[0] == {"action": "cancel"}
    assert json.loads(again.text) == {"action": "accept"}


async def test_a_handshake_era_storm_is_stopped_and_the_next_call_is_its_own(
    tmp_path: Path,
) -> None:
    answer = Answerer({"name": "Ada"})
    async with eliciting(tmp_path, on_elicit=answer) as server:
        storm = await server.call("storm", {})
        after = await server.call("ask", {})
    assert storm.is_error and "more than 10 times in one call" in storm.text
    assert [a.tool for a in answer.asked].count("storm") <= 10
    assert json.loads(after.text)["content"]["name"] == "Ada"  # its own question, answered
    assert answer.asked[-1].message == "Who are you?"


async def test_a_huge_handshake_era_message_is_refused(tmp_path: Path) -> None:
    answer = Answerer({"name": "Ada"})
    async with eliciting(tmp_path, on_elicit=answer) as server:
        result = await server.call("huge", {})
    assert result.is_error and "200,000 characters" in result.text
    assert answer.asked == []


def test_an_answerer_that_is_not_callable_is_refused() -> None:
    with pytest.raises(TypeError, match="on_elicit must be a function"):
        McpStdio("server", on_elicit={"name": "Ada"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="on_elicit must be a function"):
        AgentSession(ScriptedTransport([]), on_elicit="yes")  # type: ignore[arg-type]


# -- AgentSession --------------------------------------------------------------------------------


async def test_a_session_lends_its_answerer_to_its_servers() -> None:
    answer = Answerer({"seat": "window", "count": 1})
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("book", {"day": "monday"})]), Reply("Booked.")]
    )
    server = asking()
    async with AgentSession(model, mcp_tools=[server], on_elicit=answer) as session:
        assert await session.send("Book me a seat on Monday") == "Booked."
    (result,) = session.messages[2].tool_results
    assert result.text == "booked monday: 1 window meal=True"
    assert answer.asked[0].tool == "book"
    assert server.on_elicit is None  # lent for the session only
