"""``serve_agent``: an agent as an MCP server, on the official SDK's low-level server.

Its tools are listed with their JSON schemas (and hints: a tool whose calls may wait for approval
is destructive) and called through the agent's own dispatch (``Agent.dispatch_tools``: guards,
validation, timeouts; a failure is an ``isError`` result, never a crash; a tool's own progress
reports reach a client that asked for progress). The agent itself is the
tool ``ask``: one string, a whole turn, a progress notification per tool call it makes when the
client asked for progress; cancelling the request cancels the run. The agent's MCP servers
(tool sources not yet entered) are entered while the server serves. The agent is read through
``ServedAgent`` (this layer does not import the engine). A call that waits for a person's
approval asks the client through elicitation (``approving``): yes runs it, no answers an error
result; in ``ask`` the paused run resumes with the decision. A tool that asks the user for input
(it raises ``NeedsInput``) has its questions put to the client the same way (``inputs``) and
runs again with the answers; in ``ask`` the paused run resumes with them.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, nullcontext
from typing import Any, Protocol

from ..context import ContextStore, MemoryContextStore
from ..errors import RunPaused
from ..events import StreamEvent, ToolDispatch, ToolProgress
from ..messages import ToolResultBlock, ToolUseBlock
from ..tools.needs_input import Answered, NeedsInput, resuming
from ..tools.selector import ToolSource, read_tools
from ..tools.tool import Tool
from .answers import Unanswerable
from .approving import (
    CALL,
    Held,
    Question,
    Tickets,
    answered,
    ask_now,
    asking,
    can_elicit,
    declined,
    input_required_era,
    ticket_of,
)
from .exposed import ASK, ask_definition, call_result, definition, error_result, needs_approval
from .inputs import (
    MAX_ROUNDS,
    Answers,
    Input,
    ask_inputs_now,
    input_answers,
    input_requests,
    inputs_of,
    refusal,
    unaskable,
)
from .outputs import output_schema, with_structure
from .passthrough import as_it_is, gathering

__all__ = ["AgentServer", "ServedAgent", "ServedRun", "opened", "progress_line", "serve_agent"]

log = logging.getLogger("tether.mcp")

_INVALID_PARAMS = -32602  # JSON-RPC: what the spec answers for a tool it does not have
_DENIED = "the user declined it"  # what the model reads of a call the user said no to


class ServedRun(Protocol):
    """A run's event stream, as ``Agent.run_stream`` gives it."""

    def __aiter__(self) -> AsyncIterator[StreamEvent]: ...

    async def get_final_text(self) -> str: ...

    async def aclose(self) -> None: ...


class ServedAgent(Protocol):
    """What an MCP server needs of an agent (``tether.Agent`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def system(self) -> str: ...

    @property
    def tools(self) -> Sequence[Tool | ToolSource]: ...

    @property
    def approval(self) -> object: ...

    def run_stream(self, user_message: str, context: ContextStore, /) -> ServedRun: ...

    def resume_stream(
        self,
        context: ContextStore,
        approve: Iterable[str],
        deny: Mapping[str, str],
        /,
        *,
        answers: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> ServedRun: ...

    async def dispatch_tools(
        self,
        blocks: Sequence[ToolUseBlock],
        iteration: int,
        *,
        on_progress: Callable[[ToolProgress], Awaitable[None]] | None = None,
        waiting: dict[str, NeedsInput] | None = None,
    ) -> list[ToolResultBlock]: ...


def serve_agent(agent: ServedAgent, *, expose_agent: bool = True) -> AgentServer:
    """``agent`` as an MCP server: its tools, and (unless ``expose_agent`` is False) the agent
    itself as the tool ``ask``. ``.run_stdio()`` serves one client over stdin and stdout,
    ``.asgi()`` is a Streamable HTTP app answering at ``/mcp``."""
    if expose_agent and any(isinstance(t, Tool) and t.name == ASK for t in agent.tools):
        raise ValueError(
            f"the agent has a tool named {ASK!r}, the name the agent itself is served under: "
            "rename that tool, or pass expose_agent=False"
        )
    return AgentServer(agent, expose_agent)


class AgentServer:
    """An agent served over MCP (made by ``serve_agent``)."""

    def __init__(self, agent: ServedAgent, expose_agent: bool) -> None:
        self.agent = agent
        self.expose_agent = expose_agent
        self._calls = 0
        self._tickets = Tickets()  # what waits for a client's answers (2026-07-28)

    def sdk_server(self) -> Any:
        """A new SDK low-level ``Server`` answering ``tools/list`` and ``tools/call``."""
        from mcp.server.lowlevel import Server  # noqa: PLC0415 - the SDK, on first use
        from mcp.server.request_state import (  # noqa: PLC0415
            RequestStateBoundary,
            RequestStateSecurity,
        )

        from .. import __version__  # noqa: PLC0415

        server = Server(
            self.agent.name,
            version=__version__,
            lifespan=lambda _: opened(self.agent.tools),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        # the request state of an input_required answer, sealed and bound to the call it asks for
        boundary = RequestStateBoundary(
            RequestStateSecurity.ephemeral(), default_audience=self.agent.name
        )
        server.middleware.append(boundary)
        return server

    async def run_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it closes them."""
        from mcp.server.stdio import stdio_server  # noqa: PLC0415

        server = self.sdk_server()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    def asgi(self, *, token: str | None = None, host: str = "127.0.0.1") -> Any:
        """A Streamable HTTP app answering at ``/mcp``, for a server bound to ``host``: requests
        naming a host or coming from an origin other than loopback (or ``host``) are refused, and
        with ``token`` every request must carry ``Authorization: Bearer <token>``. A ``host``
        other than loopback needs a token (``ValueError`` without one)."""
        from mcp.server.transport_security import TransportSecuritySettings  # noqa: PLC0415

        from .httpguard import HttpGuard  # noqa: PLC0415

        guard_settings = HttpGuard.checked(token, host)  # raises before anything is built
        app = self.sdk_server().streamable_http_app(
            streamable_http_path="/mcp",
            # Host and Origin are checked by HttpGuard, which knows the token and the bound host
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        return HttpGuard(app, *guard_settings)

    # -- the handlers ---------------------------------------------------------------------------

    async def _tools(self) -> list[Tool]:
        tools = await read_tools(self.agent.tools)
        if self.expose_agent and any(t.name == ASK for t in tools):
            log.warning("the agent's own tool %r is not served: the agent is served as it", ASK)
            tools = [t for t in tools if t.name != ASK]
        return tools

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types  # noqa: PLC0415

        listed = [definition(t, self.agent.approval) for t in await self._tools()]
        if self.expose_agent:
            listed.insert(0, ask_definition(self.agent.name, self.agent.system))
        return types.ListToolsResult(tools=listed)

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        name: str = params.name
        arguments: dict[str, Any] = dict(params.arguments or {})
        if self.expose_agent and name == ASK:
            return await self._ask(ctx, params, arguments)
        tools = {t.name: t for t in await self._tools()}
        if name not in tools:
            from mcp import MCPError  # noqa: PLC0415

            raise MCPError(_INVALID_PARAMS, f"Unknown tool: {name!r}")
        result = await self._dispatch(ctx, params, name, arguments)
        return with_structure(result, output_schema(tools[name]))

    async def _dispatch(
        self, ctx: Any, params: Any, name: str, arguments: Mapping[str, Any]
    ) -> Any:
        """One call through the agent's dispatch, once approved if it waits for a person, and
        again with the client's answers each time the tool asks the user (``NeedsInput``)."""
        held = self._tickets.take(ticket_of(params)) if input_required_era(ctx) else None
        if held is not None and held.context is not None:
            held = None  # a run's ticket answers no direct call
        try:
            if (held is None or not held.inputs) and needs_approval(
                self.agent.approval, name, arguments
            ):
                refused = await self._approval(ctx, params, name, arguments, held)
                if refused is not None:
                    return refused
            answered, rounds = None, 0
            if held is not None and held.inputs:  # approved (if it had to be) before it asked
                answers = input_answers(params, held.inputs)
                if answers is None:  # not every question answered: ask them again
                    return asking([], self._tickets.put(held), input_requests(held.inputs))
                answered, rounds = Answered(answers.get("", {}), held.state or {}), held.rounds
            return await self._rounds(ctx, name, arguments, answered, rounds)
        except Unanswerable as exc:
            return error_result(refusal(exc, name))
        except Exception as exc:  # dispatch answers failures itself; anything else is still one
            log.exception("MCP call of %r failed", name)
            return error_result(f"the call of {name!r} failed: {type(exc).__name__}: {exc}")

    async def _rounds(
        self,
        ctx: Any,
        name: str,
        arguments: Mapping[str, Any],
        answered: Answered | None,
        rounds: int,
    ) -> Any:
        """The call run (with ``answered``, if the tool asked before) and run again with the
        client's answers while the tool asks, up to ``MAX_ROUNDS`` times; the tool's own
        progress reported to the client."""

        async def progress(event: ToolProgress) -> None:
            await ctx.session.report_progress(event.progress, event.total, event.message)

        while rounds <= MAX_ROUNDS:
            self._calls += 1
            block = ToolUseBlock(f"mcp_{self._calls}", name, dict(arguments))
            waiting: dict[str, NeedsInput] = {}
            with nullcontext() if answered is None else resuming(answered), gathering() as kept:
                (result,) = await self.agent.dispatch_tools(
                    [block], 1, on_progress=progress, waiting=waiting
                )
            signal = waiting.get(block.id)
            if signal is None:
                return as_it_is(result, kept) or call_result(result)
            inputs, rounds = inputs_of(signal.asks, name), rounds + 1
            why = _cannot_ask(ctx, inputs)
            if why is not None:
                return error_result(
                    f"{name!r} asks the user for input ({signal}), and this server cannot ask: "
                    f"{why}"
                )
            if input_required_era(ctx):
                ticket = self._tickets.put(Held((), None, inputs, signal.state, rounds))
                return asking([], ticket, input_requests(inputs))
            answered = Answered((await ask_inputs_now(ctx, inputs)).get("", {}), signal.state)
        return error_result(f"{name!r} asked the user more than {MAX_ROUNDS} times: it was ended")

    async def _approval(
        self, ctx: Any, params: Any, name: str, arguments: Mapping[str, Any], held: Held | None
    ) -> Any | None:
        """None when the person approved the call; else what the call answers: a refusal, the
        question (``input_required``), or that the user declined."""
        if not can_elicit(ctx):
            return error_result(
                f"{name!r} needs a person's approval before it runs, and this server cannot ask "
                "for it: the client supports no elicitation. Call it from a client that does, "
                "or from a tether run that can approve it"
            )
        question = Question(CALL, name, arguments)
        if input_required_era(ctx):
            decisions = None if held is None else answered(params, held)
            if decisions is None:
                return asking([question], self._tickets.put(Held((question,))))
        else:
            decisions = await ask_now(ctx, [question])
        return None if decisions[CALL] else error_result(declined(name))

    async def _ask(self, ctx: Any, params: Any, arguments: Mapping[str, Any]) -> Any:
        """A whole turn on the message; progress per tool call; cancelled with the request; a
        pause for approval or for the user's input asks the client and resumes the run with
        its answers."""
        message = arguments.get("message")
        if not isinstance(message, str) or not message.strip():
            return error_result("ask takes one argument, 'message': the text to ask the agent")
        try:
            if ticket_of(params) is None:
                context: ContextStore = MemoryContextStore()
                stream = self.agent.run_stream(message, context)
            else:
                retried = self._retried(params)
                if not isinstance(retried, tuple):
                    return retried
                context, stream = retried
            while True:
                outcome = await _follow(ctx, stream)
                if not isinstance(outcome, RunPaused):
                    return outcome
                paused = await self._paused(ctx, context, outcome)
                if not isinstance(paused, tuple):
                    return paused
                stream = self._resumed(context, *paused)
        except Unanswerable as exc:
            return error_result(refusal(exc, ASK))
        except Exception as exc:
            return error_result(f"the run failed: {type(exc).__name__}: {exc}")

    def _retried(self, params: Any) -> Any:
        """From 2026-07-28, a retried ``ask``: the paused run's context and its resumed stream,
        or what the call answers (the run is gone, or the questions are asked again)."""
        held = self._tickets.take(ticket_of(params))
        if held is None or held.context is None:
            return error_result(
                "the run that waited for approval is gone (answered already, expired, or "
                "the server restarted): ask again"
            )
        decisions = answered(params, held)
        answers = input_answers(params, held.inputs)
        if decisions is None or answers is None:  # not every question answered: ask again
            return asking(held.questions, self._tickets.put(held), input_requests(held.inputs))
        return held.context, self._resumed(held.context, decisions, answers)

    async def _paused(self, ctx: Any, context: ContextStore, paused: RunPaused) -> Any:
        """The decisions and answers to a paused run's questions, asked of the client now (over
        the handshake); else what the call answers: the questions (``input_required``), or
        why they cannot be asked."""
        questions = [Question(c.id, c.name, c.input) for c in paused.pending if not c.asks]
        inputs = tuple(
            item for c in paused.pending if c.asks for item in inputs_of(c.asks, c.name, c.id)
        )
        why = _cannot_ask(ctx, inputs)
        if why is not None:
            if inputs:
                names = ", ".join(sorted({item.tool for item in inputs}))
                return error_result(
                    f"the run paused: {names} asks the user for input, and this server cannot "
                    f"ask: {why}"
                )
            names = ", ".join(sorted({q.name for q in questions}))
            return error_result(
                f"the run paused: calls of {names} wait for a person's approval, and "
                "this server cannot ask for it: the client supports no elicitation"
            )
        if input_required_era(ctx):
            ticket = self._tickets.put(Held(tuple(questions), context, inputs))
            return asking(questions, ticket, input_requests(inputs))
        return await ask_now(ctx, questions), await ask_inputs_now(ctx, inputs)

    def _resumed(
        self, context: ContextStore, decisions: Mapping[str, bool], answers: Answers | None = None
    ) -> ServedRun:
        approve = [key for key, yes in decisions.items() if yes]
        deny = {key: _DENIED for key, yes in decisions.items() if not yes}
        return self.agent.resume_stream(context, approve, deny, answers=answers or None)


def _cannot_ask(ctx: Any, inputs: Sequence[Input]) -> str | None:
    """Why the client cannot be asked these questions, or None."""
    if not can_elicit(ctx):
        return "the client supports no elicitation"
    return unaskable(inputs)


async def _follow(ctx: Any, stream: ServedRun) -> Any:
    """A run's stream read to its end, a progress notification per line (sent by the SDK only
    to a client that asked for progress): the answer as a result, or the ``RunPaused``."""
    try:
        sent = 0
        async for event in stream:
            line = progress_line(event)
            if line is not None:
                sent += 1
                await ctx.session.report_progress(sent, None, line)
        answer = await stream.get_final_text()
    except RunPaused as paused:
        return paused
    finally:
        await stream.aclose()
    return call_result(ToolResultBlock(ASK, answer))


@asynccontextmanager
async def opened(items: Sequence[Tool | ToolSource]) -> AsyncIterator[dict[str, Any]]:
    """The agent's tool sources that must be entered first (its MCP servers: ``is_open`` is
    False) entered while the server serves, and left when it stops; a source already open is
    its owner's to close."""
    async with AsyncExitStack() as stack:
        for item in items:
            if isinstance(item, Tool) or getattr(item, "is_open", None) is not False:
                continue
            if isinstance(item, AbstractAsyncContextManager):
                await stack.enter_async_context(item)
        yield {}


def progress_line(event: StreamEvent) -> str | None:
    """What a client hears of a run's event, if anything: each tool call as it starts, and what
    a running tool reports of its own progress."""
    if isinstance(event, ToolDispatch):
        return f"calling {event.name}"
    if isinstance(event, ToolProgress):
        said = event.message or (
            f"{event.progress:g}" if event.total is None else f"{event.progress:g}/{event.total:g}"
        )
        return f"{event.name}: {said}"
    return None
