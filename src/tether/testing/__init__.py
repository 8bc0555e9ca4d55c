"""Test helpers: scripted fake models and a checker for the transport stream contract.

Test an agent without a network by scripting what the "model" says, then assert on what the
agent sent it::

    from tether.testing import Call, Reply, ScriptedTransport

    model = ScriptedTransport([
        Reply(tool_calls=[Call("get_weather", {"city": "Oslo"})]),  # turn 1: call a tool
        Reply("It is sunny in Oslo."),                               # turn 2: answer
    ])
    # ... build an agent on `model` and run it ...
    assert model.remaining == 0
    assert model.requests[1].last_message.tool_results[0].tool_use_id == "call_1"

``StubTransport`` plays raw event lists (see ``make_text_response`` and
``make_tool_use_response``) for lower-level tests, repeating its last list once they run out.
axio's helpers are here too: ``make_echo_tool``, ``make_stub_transport`` and
``make_ephemeral_context``. ``assert_stream_contract`` checks the events a transport of your own
yields::

    assert_stream_contract(await collect(my_transport.stream(messages, tools, system)))

``Cassette(path, mode="once")`` records a run's real HTTP exchanges (providers, MCP servers over
HTTP) once and replays them with no network; the pytest fixture ``cassette`` does it per test
(``pytest --record`` records what is missing)::

    async with Cassette("tests/cassettes/weather.json"):
        answer = await agent.run("Weather in Oslo?")
"""

from .cassette import Cassette
from .common import Request, ScriptExhausted
from .contract import assert_stream_contract, collect
from .scripted import Call, Hold, Reply, ScriptedTransport, Step, StepFn
from .stub import (
    StubTransport,
    make_echo_tool,
    make_ephemeral_context,
    make_stub_transport,
    make_text_response,
    make_tool_use_response,
)

__all__ = [
    "Call",
    "Cassette",
    "Hold",
    "Reply",
    "Request",
    "ScriptExhausted",
    "ScriptedTransport",
    "Step",
    "StepFn",
    "StubTransport",
    "assert_stream_contract",
    "collect",
    "make_echo_tool",
    "make_ephemeral_context",
    "make_stub_transport",
    "make_text_response",
    "make_tool_use_response",
]
