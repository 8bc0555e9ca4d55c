"""``run_loop``: a run as events, through the middleware that wraps whole runs (the agent's,
and tracing when OpenTelemetry is set up): what ``Agent`` and the doors start a run with."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from ..events import StreamEvent
from ..tracing.ambient import with_ambient
from .middleware import RunRequest, as_generator, run_chain
from .run import Run

if TYPE_CHECKING:
    from .approval import Decisions
    from .config import AgentConfig
    from .control import CancellationToken, Steering
    from .output import OutputSpec
    from .state import RunState, UserInput

__all__ = ["run_loop"]


def run_loop(
    agent: AgentConfig,
    user_message: UserInput,
    state: RunState,
    cancel: CancellationToken | None,
    steering: Steering | None,
    output: OutputSpec[Any] | None = None,
    decisions: Decisions | None = None,
) -> AsyncGenerator[StreamEvent, None]:
    """The run, as events. Ends with ``SessionEndEvent`` (or raises, per the agent's policies);
    a typed run (``output``) keeps its value in ``state.output``. ``decisions`` makes it a
    resume of a paused session (a ``user_message`` then follows the decided calls' results,
    once no call waits: ``tether serve`` sends one while a front-end call goes unanswered)."""
    middleware = with_ambient(agent.middleware)
    run = Run(agent, state, cancel, steering, middleware, output, decisions)
    resume = run.resume
    whole = run.events if resume is None else lambda m: resume.events(run.events(m))
    if not middleware:
        return whole(user_message)
    run.request = RunRequest(agent, state.context, user_message)

    def innermost(request: RunRequest) -> AsyncGenerator[StreamEvent, None]:
        run.request = request
        return whole(request.user_message)

    chain = run_chain(middleware, innermost)
    return whole(user_message) if chain is None else as_generator(chain(run.request))
