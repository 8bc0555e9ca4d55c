"""A call whose server asks for the user's input when nothing in the process can answer: in the
2026-07-28 era the call's answer is an input-required result carrying the questions and the
server's request state, which this client does not answer itself but turns into ``NeedsInput``
(the run pauses on it, and a resume calls again, seeded with the answers and that state:
``seeded``). A handshake-era question lives inside the open call, so nothing can pause it: the
``Asker`` declines it and the call ends with an error result that says to give ``on_elicit``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from ..tools.needs_input import Answered, NeedsInput, resumed
from ..types import Elicitation
from .answers import Unanswerable, checked_request
from .asking import MAX_ASKS, read_request
from .tasks import follow_claimed

__all__ = ["input_required", "needs_input", "pausable_call", "seeded"]

_BACKOFF = (0.05, 0.25)  # a round that carries only state: the first wait, and the longest


def seeded() -> dict[str, Any]:
    """The ``call_tool`` arguments of a resumed call (its answers and the state it paused
    with), or none."""
    answered = resumed()
    if answered is None:
        return {}
    return {
        "input_responses": _responses(answered),
        "request_state": answered.state.get("request_state"),
    }


def _responses(answered: Answered) -> dict[str, Any]:
    from mcp_types import ElicitResult  # noqa: PLC0415

    urls = set(answered.state.get("urls", ()))
    responses: dict[str, Any] = {}
    for key, content in answered.answers.items():
        if content is None:
            responses[key] = ElicitResult(action="decline")
        elif key in urls:
            responses[key] = ElicitResult(action="accept")
        else:
            responses[key] = ElicitResult(action="accept", content=dict(content))
    return responses


async def pausable_call(
    client: Any, name: str, arguments: dict[str, Any], progress: Any, seed: Mapping[str, Any]
) -> Any:
    """Call ``name`` (a resumed call ``seed``ed) and give back what the server answers, an
    input-required result that asks the user included (not answered here). What the client
    answers itself (sampling, roots) is answered through the SDK's callbacks and sent back;
    rounds that carry only the server's state are sent again; both a bounded number of times."""
    from mcp_types import InputRequiredResult  # noqa: PLC0415

    responses, state = seed.get("input_responses"), seed.get("request_state")
    delay = _BACKOFF[0]
    for _ in range(MAX_ASKS + 1):
        result = await client.session.call_tool(
            name,
            arguments,
            progress_callback=progress,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
            allow_claimed=True,
        )
        if getattr(result, "result_type", None) == "task":  # answered with a task: followed
            return await follow_claimed(client, name, result)
        if not isinstance(result, InputRequiredResult):
            return result
        responses, state = await _answered_here(client.session, result), result.request_state
        if result.input_requests and responses is None:
            return result  # only questions for the user: the run pauses on them
        if not result.input_requests:
            await asyncio.sleep(delay)
            delay = min(delay * 2, _BACKOFF[1])
    raise RuntimeError(f"the server sent back its requests more than {MAX_ASKS} times")


async def _answered_here(session: Any, result: Any) -> dict[str, Any] | None:
    """The answers to ``result``'s requests that are not questions for the user (a sampling
    request, a roots listing), through the SDK's callback table; None when there are none."""
    from mcp.client.session import ClientRequestContext  # noqa: PLC0415
    from mcp_types import ElicitRequest, ErrorData  # noqa: PLC0415

    from mcp import MCPError  # noqa: PLC0415

    answers: dict[str, Any] = {}
    for key, request in (result.input_requests or {}).items():
        if isinstance(request, ElicitRequest):
            continue
        meta = request.params.meta if request.params else None
        context = ClientRequestContext(session=session, request_id=key, meta=meta)
        answer = await session.dispatch_input_request(context, request)
        if isinstance(answer, ErrorData):  # refused: as the SDK's own driver says it
            raise MCPError.from_error_data(answer)
        answers[key] = answer
    return answers or None


def input_required(result: Any) -> bool:
    """Whether ``result`` is the 2026-07-28 era's input-required result."""
    return getattr(result, "result_type", None) == "input_required"


def needs_input(
    result: Any,
    tool: str,
    arguments: Mapping[str, Any],
    label: str,
    who: str,
    reason: Callable[[], str],
) -> NeedsInput:
    """The pause an input-required ``result`` of the call to ``tool`` asks for: its questions
    (within the caps: else ``Unanswerable``) and the state to go on from."""
    requests = result.input_requests or {}
    if len(requests) > MAX_ASKS:
        raise Unanswerable(f"{who} asked {len(requests)} questions at once (at most {MAX_ASKS})")
    asks: list[Elicitation] = []
    for key, request in requests.items():
        method = getattr(request, "method", None)
        if method != "elicitation/create":
            raise Unanswerable(f"{who} asked for {method!r}, which this client does not answer")
        asked = read_request(request.params, label, tool, arguments, key)
        asks.append(checked_request(asked, who))
    state = {
        "request_state": result.request_state,
        "keys": [ask.key for ask in asks],
        "urls": [ask.key for ask in asks if ask.mode == "url"],
    }
    return NeedsInput(asks, state, reason())
