"""``tether chat`` asks the person the questions of a call that waits for their input (an MCP
server asked, and the agent has no ``on_elicit``): each field in turn, an empty line leaving it
to its default, then the call goes on with the answers; "n" declines. A real process: ``tether
chat --agent`` with an agent whose tool waits for input as an MCP call does (``NeedsInput``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

AGENT = textwrap.dedent(
    """
    from tether import Agent, tool
    from tether.mcp import NeedsInput
    from tether.testing import Call, Reply, ScriptedTransport
    from tether.tools.needs_input import resumed
    from tether.types import Elicitation

    SEAT = {
        "type": "object",
        "properties": {
            "seat": {"type": "string", "enum": ["window", "aisle"]},
            "count": {"type": "integer", "minimum": 1, "maximum": 9},
            "meal": {"type": "boolean", "default": True},
        },
        "required": ["seat", "count"],
    }


    @tool
    def book(day: str) -> str:
        \"\"\"Book seats for a day; asks the user how, as an MCP server would.\"\"\"
        answered = resumed()
        if answered is None:
            asked = Elicitation(f"Seats for {day}?", SEAT, "travel", "book", {"day": day}, key="q0")
            raise NeedsInput([asked], {}, "no answerer")
        seat = answered.answers["q0"]
        if seat is None:
            return f"not booked {day}: declined"
        return f"booked {day}: {seat['count']} {seat['seat']} meal={seat['meal']}"


    def answer(request):
        results = request.messages[-1].tool_results
        if results:
            return Reply("The tool said: " + results[0].text)
        return Reply(tool_calls=[Call("book", {"day": request.messages[-1].text})])


    agent = Agent("You book.", ScriptedTransport([], then=answer), tools=[book])
    """
)


@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    path = tmp_path / "booking_agent.py"
    path.write_text(AGENT)
    return path


def chat(agent_file: Path, stdin: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TETHER_MODEL": "http://127.0.0.1:9/v1", "NO_COLOR": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tether.cli",
            "chat",
            "--agent",
            f"{agent_file}:agent",
            "--store",
            str(agent_file.parent / "chats.db"),
        ],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=agent_file.parent,
        env=env,
        timeout=120,
        check=False,
    )


def test_the_chat_asks_each_field_and_the_call_goes_on_with_the_answers(agent_file: Path) -> None:
    done = chat(agent_file, "monday\n\naisle\n3\n\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert 'book(day="monday") asks for your input' in out
    assert "Seats for monday?" in out
    assert "seat (window/aisle): " in out and "meal (boolean) [true]: " in out
    assert "The tool said: booked monday: 3 aisle meal=True" in out


def test_no_declines_and_the_model_reads_what_the_server_made_of_it(agent_file: Path) -> None:
    done = chat(agent_file, "friday\nn\n")
    assert done.returncode == 0, done.stderr
    assert "The tool said: " in done.stdout and "decline" in done.stdout
