"""Serving to the browser: an agent module that ``tether serve`` puts behind HTTP.

The chat page is at http://127.0.0.1:8000/ (answers stream in, tool calls are shown, sessions
are kept in a SQLite file); web front ends get the same runs as AG-UI events from ``POST /agui``.
The model is scripted and answers any number of messages. From the repository root:

    .venv/bin/tether serve --agent examples/07_serve.py:agent
"""

from tether import Agent, tool
from tether.testing import Call, Reply, Request, ScriptedTransport


@tool
def count_words(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def reply(request: Request) -> Reply:
    """Count the words of each new message with the tool, then answer with its result."""
    last = request.last_message
    if last.tool_results:
        return Reply(f"Your message has {last.tool_results[0].text} words.", chunks=4)
    return Reply(tool_calls=[Call("count_words", {"text": last.text})])


agent = Agent(
    system="You count words.",
    transport=ScriptedTransport([], then=reply),
    tools=[count_words],
    name="word-counter",
)
