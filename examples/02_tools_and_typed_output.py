"""Tools and typed output: the model calls a tool, then its answer comes back as a pydantic model.

An answer that does not validate goes back to the model with what was wrong (``output_retries``
times at most). The model here is scripted (no network, no key). From the repository root:

    .venv/bin/python examples/02_tools_and_typed_output.py
"""

import json

from pydantic import BaseModel

from tether import Agent, tool
from tether.testing import Call, Reply, Request, ScriptedTransport

PRICES = {"apples": 0.40, "pears": 0.65}


@tool
def unit_price(item: str) -> float:
    """The price of one item, in euros."""
    return PRICES[item]


class Quote(BaseModel):
    item: str
    quantity: int
    total_eur: float


def priced_answer(request: Request) -> Reply:
    """The scripted model's second try, built from the tool result it was sent earlier."""
    price = float(request.messages[2].tool_results[0].text)
    return Reply(json.dumps({"item": "pears", "quantity": 12, "total_eur": round(12 * price, 2)}))


model = ScriptedTransport(
    [
        Reply(tool_calls=[Call("unit_price", {"item": "pears"})]),
        Reply('{"item": "pears", "quantity": 12, "total_eur": "about eight euros"}'),
        priced_answer,
    ]
)
agent = Agent(system="You quote prices.", transport=model, tools=[unit_price], output_type=Quote)

if __name__ == "__main__":
    quote = agent.run_sync("What do 12 pears cost?")
    print(repr(quote))
    print(f"{quote.quantity} {quote.item} cost {quote.total_eur:.2f} EUR")
    print("model calls:", model.call_count)  # the tool call, the invalid answer, the valid one
    print("after the invalid answer the model was told:")
    print(model.requests[2].last_message.text)
