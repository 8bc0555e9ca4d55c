"""Prompty files: a ``.prompty`` file (model, inputs, tools and the prompt) run by tether's loop.

``prompty.turn`` renders the file with the inputs, offers its tools with the handlers you pass,
and runs the loop to an answer. The file names an OpenAI model; ``transport=`` replaces it here
with a scripted one, so no key is needed (drop it and set OPENAI_API_KEY to use the real one).
Needs the ``prompty`` extra (the ``dev`` extra has it). From the repository root:

    .venv/bin/pip install -e '.[prompty]'
    .venv/bin/python examples/09_prompty.py
"""

from pathlib import Path

from tether import prompty
from tether.testing import Call, Reply, Request, ScriptedTransport

PROMPT = Path(__file__).with_name("09_order_status.prompty")
ORDERS = {"A-1042": "shipped on Monday, arriving Thursday"}


def order_status(order: str) -> str:
    return ORDERS.get(order, "no such order")


def answer(request: Request) -> Reply:
    """The scripted model's answer, from the rendered system message and the tool result."""
    name = request.messages[0].text.rsplit("name: ", 1)[1].rstrip(".")
    status = request.last_message.tool_results[0].text
    return Reply(f"Hi {name}, order A-1042 was {status}.")


model = ScriptedTransport([Reply(tool_calls=[Call("order_status", {"order": "A-1042"})]), answer])

if __name__ == "__main__":
    agent = prompty.load(PROMPT)
    print(f"{agent.name}: {agent.description}")
    reply = prompty.turn(
        agent,
        {"customer": "Ann", "question": "Where is my order A-1042?"},
        tools={"order_status": order_status},
        transport=model,
    )
    print(reply)
    for message in model.requests[0].messages:  # the file's template, rendered with the inputs
        print(f"  {message.role}: {message.text.splitlines()[-1]}")
