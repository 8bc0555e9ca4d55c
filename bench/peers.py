"""Peer agent frameworks on the scenarios of ``scenarios.py``, for ``python bench/run.py --peers``.

Each adapter drives one framework through its public agent API with a scripted in-process model
that behaves like ``scenarios.LoopModel`` / ``TextModel`` / ``ParModel`` / ``ParkedModel``: call k
(k = tool results already in the history, read off the history length in the framework's own
message layout, as ``LoopModel`` does) returns ONE tool call ``step(i=k)`` while k < N, then the
text "done". Tools are ``scenarios.step`` and ``scenarios.sleep_tool``. No network: the models are
local objects, and tracing and telemetry are switched off before any framework is imported.

- pydantic-ai: its ``FunctionModel`` (an async ``function`` for ``Agent.run``; a
  ``stream_function`` for the stream scenario, whose events the caller sees through
  ``Agent.run(event_stream_handler=...)``; ``run_stream_events`` and
  ``run_stream().stream_text(delta=True)`` cost about the same CPU per delta). The request limit
  (50 by default) is lifted so N=100 can run. The stream function path estimates token usage per
  chunk; that is ``FunctionModel``'s own (small) cost.
- openai-agents: a ``Model`` subclass. ``get_response`` returns a ``ModelResponse`` of
  Responses-API output items; ``stream_response`` yields ``response.output_text.delta`` events
  (built once, as the OpenAI SDK would hand them over) and then ``response.completed``. Runs go
  through ``Runner.run`` / ``Runner.run_streamed`` with tracing disabled and ``max_turns`` = N + 1.
- agno: a ``Model`` subclass whose ``ainvoke`` / ``ainvoke_stream`` return agno ``ModelResponse``
  objects (OpenAI-shaped tool-call dicts). Runs go through ``Agent.arun`` (``stream=True`` for the
  stream scenario) with telemetry off.

A framework that is not installed is reported as "not installed"; one whose self-check (right
tool results, right answer, every delta seen, no network touched) fails is reported with the
error and left out.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import importlib.util
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import scenarios as sc

# Before any framework is imported (and inherited by the fresh processes for mem and import).
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
os.environ["AGNO_TELEMETRY"] = "false"

Call = Callable[[], Awaitable[Any]]

SYSTEM = "You are a bench."
TEXT = "x" * 100  # the stream scenario: this text as 1 chunk or as 100 one-character chunks


def pieces(chunks: int) -> list[str]:
    return [TEXT] if chunks == 1 else list(TEXT)


class Peer:
    """One framework: builds a ready agent per scenario and returns a zero-argument run call."""

    name = ""  # column name
    dist = ""  # distribution, for the version
    module = ""  # what ``python -c 'import <module>'`` times: what building an agent needs

    def loop(self, n: int) -> Call:
        raise NotImplementedError

    def single(self) -> Call:
        raise NotImplementedError

    def par(self, calls: int) -> Call:
        raise NotImplementedError

    def stream(self, chunks: int) -> Call | None:
        """A call returning how many text deltas the caller saw as events (None: unsupported)."""
        return None

    def parked(self, gate: asyncio.Event, parked: list[int]) -> Call:
        """The single agent, its model call counted in ``parked`` and blocked on ``gate``."""
        raise NotImplementedError

    def output(self, result: Any) -> str:
        raise NotImplementedError

    def tool_outputs(self, result: Any) -> list[str]:
        raise NotImplementedError


# -- pydantic-ai ---------------------------------------------------------------------------------


class PydanticAI(Peer):
    name, dist, module = "pydantic-ai", "pydantic-ai-slim", "pydantic_ai"

    def __init__(self) -> None:
        from pydantic_ai import messages, usage

        self.msg, self.usage = messages, usage  # bound once: the scripted models build replies

    def _agent(self, model: Any, tools: tuple[Any, ...] = ()) -> Any:
        from pydantic_ai import Agent, Tool

        return Agent(
            model,
            instructions=SYSTEM,
            tools=[Tool(t, takes_ctx=False) for t in tools],
            name="bench",  # else it inspects the caller's frame for a name on every run
        )

    def _text(self, text: str) -> Any:
        return self.msg.ModelResponse(
            parts=[self.msg.TextPart(text)],
            usage=self.usage.RequestUsage(input_tokens=10, output_tokens=5),
        )

    def _calls(self, name: str, ids: list[tuple[str, int]]) -> Any:
        return self.msg.ModelResponse(
            parts=[
                self.msg.ToolCallPart(name, f'{{"i": {i}}}', tool_call_id=cid) for cid, i in ids
            ],
            usage=self.usage.RequestUsage(input_tokens=10, output_tokens=5),
        )

    def _run(self, agent: Any) -> Call:
        from pydantic_ai.usage import UsageLimits

        limits = UsageLimits(request_limit=None)  # 50 requests by default
        return lambda: agent.run("go", usage_limits=limits)

    def loop(self, n: int) -> Call:
        from pydantic_ai.models.function import FunctionModel

        async def model(messages: list[Any], info: Any) -> Any:
            # [request(user), response(call 0), request(result 0), response(call 1), ...]
            k = (len(messages) - 1) // 2
            return self._calls("step", [(f"call_{k}", k)]) if k < n else self._text("done")

        return self._run(self._agent(FunctionModel(model), (sc.step,)))

    def single(self) -> Call:
        from pydantic_ai.models.function import FunctionModel

        async def model(messages: list[Any], info: Any) -> Any:
            return self._text("hello")

        return self._run(self._agent(FunctionModel(model)))

    def par(self, calls: int) -> Call:
        from pydantic_ai.models.function import FunctionModel

        async def model(messages: list[Any], info: Any) -> Any:
            if len(messages) == 1:
                return self._calls("sleep_tool", [(f"c{j}", j) for j in range(calls)])
            return self._text("done")

        return self._run(self._agent(FunctionModel(model), (sc.sleep_tool,)))

    def stream(self, chunks: int) -> Call:
        from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
        from pydantic_ai.models.function import FunctionModel

        text = pieces(chunks)

        async def model(messages: list[Any], info: Any) -> Any:
            for piece in text:
                yield piece

        agent = self._agent(FunctionModel(stream_function=model))

        async def run() -> int:
            seen = 0

            async def handler(ctx: Any, events: Any) -> None:
                nonlocal seen
                async for event in events:
                    if (type(event) is PartStartEvent and type(event.part) is TextPart) or (
                        type(event) is PartDeltaEvent and type(event.delta) is TextPartDelta
                    ):
                        seen += 1

            await agent.run("go", event_stream_handler=handler)
            return seen

        return run

    def parked(self, gate: asyncio.Event, parked: list[int]) -> Call:
        from pydantic_ai.models.function import FunctionModel

        async def model(messages: list[Any], info: Any) -> Any:
            parked[0] += 1
            await gate.wait()
            return self._text("hello")

        return self._run(self._agent(FunctionModel(model)))

    def output(self, result: Any) -> str:
        return str(result.output)

    def tool_outputs(self, result: Any) -> list[str]:
        from pydantic_ai.messages import ToolReturnPart

        return [
            str(part.content)
            for message in result.all_messages()
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]


# -- openai-agents -------------------------------------------------------------------------------


class OpenAIAgents(Peer):
    name, dist, module = "openai-agents", "openai-agents", "agents"

    def __init__(self) -> None:
        from agents import RunConfig, set_tracing_disabled
        from openai.types import responses

        set_tracing_disabled(True)
        self.config = RunConfig(tracing_disabled=True)
        self.types = responses  # bound once: the scripted models build replies

    @staticmethod
    def _model(reply: Callable[[Any], Awaitable[list[Any]]], chunks: int = 0) -> Any:
        """A ``Model`` answering ``reply(input)``; streaming ``chunks`` pieces of TEXT if given."""
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import (
            Response,
            ResponseCompletedEvent,
            ResponseTextDeltaEvent,
            ResponseUsage,
        )

        deltas = [
            ResponseTextDeltaEvent(
                type="response.output_text.delta",
                item_id="msg",
                output_index=0,
                content_index=0,
                delta=piece,
                logprobs=[],
                sequence_number=seq,
            )
            for seq, piece in enumerate(pieces(chunks) if chunks else [])
        ]
        response_usage = ResponseUsage(
            input_tokens=10,
            output_tokens=5,
            total_tokens=15,
            # dicts: the required detail fields vary across openai SDK versions; extras are kept
            input_tokens_details={"cached_tokens": 0, "cache_write_tokens": 0},
            output_tokens_details={"reasoning_tokens": 0},
        )

        class Scripted(Model):
            async def get_response(
                self,
                system_instructions: Any,
                input: Any,
                model_settings: Any,
                tools: Any,
                output_schema: Any,
                handoffs: Any,
                tracing: Any,
                **kwargs: Any,
            ) -> Any:
                usage = Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)
                return ModelResponse(output=await reply(input), usage=usage, response_id=None)

            async def stream_response(
                self,
                system_instructions: Any,
                input: Any,
                model_settings: Any,
                tools: Any,
                output_schema: Any,
                handoffs: Any,
                tracing: Any,
                **kwargs: Any,
            ) -> Any:
                for delta in deltas:
                    yield delta
                response = Response(
                    id="resp",
                    created_at=0,
                    model="scripted",
                    object="response",
                    output=await reply(input),
                    tool_choice="auto",
                    tools=[],
                    parallel_tool_calls=True,
                    status="completed",
                    usage=response_usage,
                )
                yield ResponseCompletedEvent(
                    type="response.completed", response=response, sequence_number=len(deltas)
                )

        return Scripted()

    def _text(self, text: str) -> list[Any]:
        content = self.types.ResponseOutputText(type="output_text", text=text, annotations=[])
        return [
            self.types.ResponseOutputMessage(
                id="msg", type="message", role="assistant", status="completed", content=[content]
            )
        ]

    def _calls(self, name: str, ids: list[tuple[str, int]]) -> list[Any]:
        return [
            self.types.ResponseFunctionToolCall(
                type="function_call", id=cid, call_id=cid, name=name, arguments=f'{{"i": {i}}}'
            )
            for cid, i in ids
        ]

    def _agent(self, model: Any, tools: tuple[Any, ...] = ()) -> Any:
        from agents import Agent, function_tool

        return Agent(
            name="bench", instructions=SYSTEM, model=model, tools=[function_tool(t) for t in tools]
        )

    def _run(self, agent: Any, max_turns: int = 10) -> Call:
        from agents import Runner

        return lambda: Runner.run(agent, "go", max_turns=max_turns, run_config=self.config)

    def loop(self, n: int) -> Call:
        async def reply(items: Any) -> list[Any]:
            # [user, function_call 0, function_call_output 0, function_call 1, ...]
            k = 0 if isinstance(items, str) else (len(items) - 1) // 2
            return self._calls("step", [(f"call_{k}", k)]) if k < n else self._text("done")

        return self._run(self._agent(self._model(reply), (sc.step,)), max_turns=n + 1)

    def single(self) -> Call:
        async def reply(items: Any) -> list[Any]:
            return self._text("hello")

        return self._run(self._agent(self._model(reply)))

    def par(self, calls: int) -> Call:
        async def reply(items: Any) -> list[Any]:
            if isinstance(items, str) or len(items) == 1:
                return self._calls("sleep_tool", [(f"c{j}", j) for j in range(calls)])
            return self._text("done")

        return self._run(self._agent(self._model(reply), (sc.sleep_tool,)))

    def stream(self, chunks: int) -> Call:
        from agents import Runner

        async def reply(items: Any) -> list[Any]:
            return self._text(TEXT)

        agent = self._agent(self._model(reply, chunks))

        async def run() -> int:
            seen = 0
            result = Runner.run_streamed(agent, "go", run_config=self.config)
            async for event in result.stream_events():
                if (
                    event.type == "raw_response_event"
                    and event.data.type == "response.output_text.delta"
                ):
                    seen += 1
            return seen

        return run

    def parked(self, gate: asyncio.Event, parked: list[int]) -> Call:
        async def reply(items: Any) -> list[Any]:
            parked[0] += 1
            await gate.wait()
            return self._text("hello")

        return self._run(self._agent(self._model(reply)))

    def output(self, result: Any) -> str:
        return str(result.final_output)

    def tool_outputs(self, result: Any) -> list[str]:
        return [str(i.output) for i in result.new_items if i.type == "tool_call_output_item"]


# -- agno ----------------------------------------------------------------------------------------


class Agno(Peer):
    name, dist, module = "agno", "agno", "agno.agent"

    @staticmethod
    def _model(reply: Callable[[list[Any]], Awaitable[dict[str, Any]]], chunks: int = 0) -> Any:
        """An agno ``Model`` answering ``ModelResponse(**reply(messages))``; streams ``chunks``."""
        from agno.metrics import MessageMetrics
        from agno.models.base import Model
        from agno.models.response import ModelResponse

        text = pieces(chunks) if chunks else []

        def usage() -> Any:
            return MessageMetrics(input_tokens=10, output_tokens=5, total_tokens=15)

        @dataclass
        class Scripted(Model):
            id: str = "scripted"
            provider: str | None = "bench"

            async def ainvoke(self, messages: list[Any], **kwargs: Any) -> Any:
                reply_kwargs = await reply(messages)
                return ModelResponse(role="assistant", response_usage=usage(), **reply_kwargs)

            async def ainvoke_stream(self, messages: list[Any], **kwargs: Any) -> Any:
                for piece in text:
                    yield ModelResponse(role="assistant", content=piece)
                yield ModelResponse(response_usage=usage())

            def invoke(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError("the bench runs agno asynchronously")

            def invoke_stream(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError("the bench runs agno asynchronously")

            def _parse_provider_response(self, response: Any, **kwargs: Any) -> Any:
                return response

            def _parse_provider_response_delta(self, response: Any) -> Any:
                return response

        return Scripted()

    @staticmethod
    def _calls(name: str, ids: list[tuple[str, int]]) -> dict[str, Any]:
        return {
            "tool_calls": [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": f'{{"i": {i}}}'},
                }
                for cid, i in ids
            ]
        }

    def _agent(self, model: Any, tools: tuple[Any, ...] = ()) -> Any:
        from agno.agent import Agent

        return Agent(model=model, instructions=SYSTEM, tools=list(tools), telemetry=False)

    def loop(self, n: int) -> Call:
        async def reply(messages: list[Any]) -> dict[str, Any]:
            # [system, user, assistant(call 0), tool(result 0), assistant(call 1), ...]
            k = (len(messages) - 2) // 2
            return self._calls("step", [(f"call_{k}", k)]) if k < n else {"content": "done"}

        agent = self._agent(self._model(reply), (sc.step,))
        return lambda: agent.arun("go")

    def single(self) -> Call:
        async def reply(messages: list[Any]) -> dict[str, Any]:
            return {"content": "hello"}

        agent = self._agent(self._model(reply))
        return lambda: agent.arun("go")

    def par(self, calls: int) -> Call:
        async def reply(messages: list[Any]) -> dict[str, Any]:
            if len(messages) == 2:
                return self._calls("sleep_tool", [(f"c{j}", j) for j in range(calls)])
            return {"content": "done"}

        agent = self._agent(self._model(reply), (sc.sleep_tool,))
        return lambda: agent.arun("go")

    def stream(self, chunks: int) -> Call:
        from agno.run.agent import RunContentEvent

        async def reply(messages: list[Any]) -> dict[str, Any]:
            raise AssertionError("the stream scenario must stream")

        agent = self._agent(self._model(reply, chunks))

        async def run() -> int:
            seen = 0
            async for event in agent.arun("go", stream=True):
                if type(event) is RunContentEvent and event.content:
                    seen += 1
            return seen

        return run

    def parked(self, gate: asyncio.Event, parked: list[int]) -> Call:
        async def reply(messages: list[Any]) -> dict[str, Any]:
            parked[0] += 1
            await gate.wait()
            return {"content": "hello"}

        agent = self._agent(self._model(reply))
        return lambda: agent.arun("go")

    def output(self, result: Any) -> str:
        return str(result.content)

    def tool_outputs(self, result: Any) -> list[str]:
        return [str(m.content) for m in result.messages or [] if m.role == "tool"]


ADAPTERS: dict[str, type[Peer]] = {p.name: p for p in (PydanticAI, OpenAIAgents, Agno)}


# -- discovery and self-check ---------------------------------------------------------------------


@dataclass
class Peers:
    """The peers to measure (``ready``), and a status line for every known one."""

    ready: dict[str, Peer] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)  # version | "not installed" | error
    quick: bool = False  # run.py: the quick pass (shorter peer batches)
    mem: bool = False  # run.py: also measure memory per in-flight run (slow)


def installed(cls: type[Peer]) -> str | None:
    """The installed version of the framework, or None."""
    try:
        version = importlib.metadata.version(cls.dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    top = cls.module.split(".")[0]
    return version if importlib.util.find_spec(top) is not None else None


@contextmanager
def no_network(attempts: list[str]) -> Iterator[None]:
    """Refuse (and record) any DNS look-up or outgoing connection while the self-check runs."""

    def refuse(what: str) -> Callable[..., Any]:
        def refused(*args: Any, **kwargs: Any) -> Any:
            attempts.append(what)
            raise OSError(f"bench: {what} refused (the peers must not use the network)")

        return refused

    saved = (
        socket.socket.connect,
        socket.socket.connect_ex,
        socket.getaddrinfo,
        socket.create_connection,
    )
    socket.socket.connect = refuse("connect")  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse("connect")  # type: ignore[method-assign]
    socket.getaddrinfo = refuse("getaddrinfo")
    socket.create_connection = refuse("create_connection")
    try:
        yield
    finally:
        (
            socket.socket.connect,  # type: ignore[method-assign]
            socket.socket.connect_ex,  # type: ignore[method-assign]
            socket.getaddrinfo,
            socket.create_connection,
        ) = saved


async def check(peer: Peer) -> None:
    """Run each scenario once and insist on the same behaviour as the tether scenarios."""
    attempts: list[str] = []
    with no_network(attempts):
        result = await peer.loop(3)()
        got = (peer.output(result), peer.tool_outputs(result))
        if got != ("done", ["ok 0", "ok 1", "ok 2"]):
            raise AssertionError(f"loop N=3 gave {got}")
        result = await peer.par(10)()
        got = (peer.output(result), sorted(peer.tool_outputs(result)))
        if got != ("done", sorted(f"slept {j}" for j in range(10))):
            raise AssertionError(f"par gave {got}")
        if (out := peer.output(await peer.single()())) != "hello":
            raise AssertionError(f"single gave {out!r}")
        for chunks in (1, 100):
            run = peer.stream(chunks)
            if run is not None and (seen := await run()) != chunks:
                raise AssertionError(f"stream of {chunks} chunks: the caller saw {seen} deltas")
    if attempts:
        raise AssertionError(f"tried the network: {sorted(set(attempts))}")


async def load(names: list[str] | None = None) -> Peers:
    """Import and self-check the installed peers (all known ones unless ``names``)."""
    peers = Peers()
    for name in names or list(ADAPTERS):
        cls = ADAPTERS[name]
        version = installed(cls)
        if version is None:
            peers.status[name] = "not installed"
            continue
        try:
            peer = cls()
            await check(peer)
        except Exception as exc:
            peers.status[name] = f"{version}, skipped: {type(exc).__name__}: {exc}"
            continue
        peers.ready[name] = peer
        peers.status[name] = version
    return peers


# -- memory per in-flight run (fresh process: ``python -c 'import peers; peers.mem_main(...)'``) --


async def park(peer: Peer, n: int) -> float:
    from mem import rss_kib

    gate, parked = asyncio.Event(), [0]
    run = peer.parked(gate, parked)
    gc.collect()
    before = rss_kib()
    tasks = [asyncio.ensure_future(run()) for _ in range(n)]
    while parked[0] < n:  # noqa: ASYNC110 - polling a counter is the point here
        await asyncio.sleep(0.01)
    gc.collect()
    after = rss_kib()
    gate.set()
    await asyncio.gather(*tasks)
    return (after - before) / n


def mem_main(name: str, n: int) -> None:
    peer = ADAPTERS[name]()
    asyncio.run(park(peer, 10))  # warm: one-off imports and caches are not counted per run
    print(f"{asyncio.run(park(peer, n)):.3f}")


if __name__ == "__main__":  # python bench/peers.py: which peers are installed and pass the check
    for peer_name, line in asyncio.run(load(sys.argv[1:] or None)).status.items():
        print(f"{peer_name:15} {line}")
