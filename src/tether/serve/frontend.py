"""Front-end tools (AG-UI ``RunAgentInput.tools``, CopilotKit's actions): tools the model may
call that run in the browser, not here.

Each is offered to the model for the run beside the agent's own. A call of one waits for the
front end as a call that asks for the user's input does (``NeedsInput``): the run stores it as
waiting and ends, having streamed the call (TOOL_CALL_START, ARGS, END). The next run's
``messages`` carry the front end's ``role: "tool"`` message for it; that run gives the call
its result (the answer to its one question, ``result``) and goes on. A call the front end never
answers, because the user sent a new message instead, gets an error result saying so.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..events import PendingCall
from ..tools.needs_input import NeedsInput, resumed
from ..tools.tool import Tool
from ..types import Elicitation
from .wire import Refused

__all__ = [
    "FRONTEND",
    "MAX_TOOLS",
    "FrontendTool",
    "as_tools",
    "clashes",
    "frontend_tools",
    "is_frontend",
    "result_answers",
    "unanswered",
]

FRONTEND = "tether.frontend"  # the ``server`` of a front-end call's question
RESULT = "result"  # the key of that question; its answer is ``{"content": text}``
MAX_TOOLS = 128
MAX_DESCRIPTION = 4_000  # characters
MAX_PARAMETERS = 32_768  # characters of a tool's parameters as JSON
NOT_ANSWERED = "the front end did not answer this call: the user sent a new message instead"

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_QUESTION = {"type": "object", "properties": {"content": {"type": "string"}}}


@dataclass(frozen=True, slots=True)
class FrontendTool:
    """A front-end tool as the client described it."""

    name: str
    description: str
    parameters: Mapping[str, Any]


def frontend_tools(given: Any) -> tuple[FrontendTool, ...]:
    """``RunAgentInput.tools`` checked: a list of ``{name, description, parameters}``, names
    unique, parameters a JSON Schema object, each within its size cap (else 400 or 413)."""
    if given is None:
        return ()
    if not isinstance(given, list):
        raise Refused(400, "tools must be a list of AG-UI tools ({name, description, parameters})")
    if len(given) > MAX_TOOLS:
        raise Refused(413, f"at most {MAX_TOOLS} front-end tools a run")
    tools = tuple(map(_tool, given))
    names = [t.name for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise Refused(400, f"front-end tool names must be unique: {', '.join(twice)}")
    return tools


def _tool(entry: Any) -> FrontendTool:
    if not isinstance(entry, dict):
        raise Refused(400, "each tool must be an object with name, description and parameters")
    name, description = entry.get("name"), entry.get("description")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise Refused(
            400, f"a front-end tool's name must be 1-128 letters, digits, _ . -, got {name!r}"
        )
    if description is None:  # optional in CopilotKit's actions: the model reads the name alone
        description = ""
    if not isinstance(description, str):
        raise Refused(400, f"front-end tool {name!r}: description must be a string")
    if len(description) > MAX_DESCRIPTION:
        raise Refused(413, f"front-end tool {name!r}: description over {MAX_DESCRIPTION} chars")
    parameters = entry.get("parameters")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
        raise Refused(
            400, f"front-end tool {name!r}: parameters must be a JSON Schema of type object"
        )
    if not isinstance(parameters.get("properties", {}), dict):
        raise Refused(400, f"front-end tool {name!r}: parameters.properties must be an object")
    if len(json.dumps(parameters)) > MAX_PARAMETERS:
        raise Refused(413, f"front-end tool {name!r}: parameters over {MAX_PARAMETERS} chars")
    unknown = sorted(set(entry) - {"name", "description", "parameters"})
    if unknown:
        raise Refused(400, f"front-end tool {name!r}: unknown field(s) {', '.join(unknown)}")
    return FrontendTool(name, description, {"type": "object", **parameters})


def clashes(tools: Iterable[FrontendTool], own: Iterable[str]) -> None:
    """400 naming the front-end tools named as one of the agent's own tools."""
    taken = set(own)
    clash = sorted(t.name for t in tools if t.name in taken)
    if clash:
        raise Refused(
            400,
            f"front-end tool(s) {', '.join(clash)} have the name of one of the agent's own "
            "tools: rename them",
        )


def as_tools(tools: Iterable[FrontendTool], waiting: Iterable[str] = ()) -> list[Tool]:
    """The tether tools that stand for front-end ``tools`` in a run, and for the tools of calls
    ``waiting`` for the front end that the client did not describe again (so their results
    can still be taken)."""
    made = {t.name: _as_tool(t.name, t.description, t.parameters) for t in tools}
    for name in waiting:
        if name not in made:
            made[name] = _as_tool(name, "Runs in the front end.", {"type": "object"})
    return list(made.values())


def _as_tool(name: str, description: str, parameters: Mapping[str, Any]) -> Tool:
    async def call(**arguments: Any) -> str:
        answered = resumed()
        if answered is None:
            ask = Elicitation(
                f"the front end runs {name}", _QUESTION, FRONTEND, name, arguments, key=RESULT
            )
            raise NeedsInput([ask], {}, f"tool {name!r} runs in the front end, not here")
        content = answered.answers.get(RESULT)
        if content is None:
            raise RuntimeError(NOT_ANSWERED)
        return str(content.get("content", ""))

    with warnings.catch_warnings():  # a client's schema may leave types out; its own business
        warnings.simplefilter("ignore")
        return Tool(name, call, description or f"{name} (runs in the front end)", parameters)


def is_frontend(call: PendingCall) -> bool:
    """Whether ``call`` waits for the front end to run it (not for a person's decision)."""
    return any(ask.server == FRONTEND for ask in call.asks)


def result_answers(results: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The front end's results, by call id, as a resume's answers."""
    return {call: {RESULT: {"content": text}} for call, text in results.items()}


def unanswered(calls: Iterable[PendingCall]) -> dict[str, dict[str, Any]]:
    """The answers that end ``calls`` with ``NOT_ANSWERED`` (a new user message came)."""
    return {call.id: {RESULT: None} for call in calls}
