"""The columns of bench/bfcl.py: one BFCL test entry answered by the raw model (BFCL's own
OpenAI-compatible handler), by tether's ``Agent`` (native tool calls, optionally constrained) and
by ``SkillAgent`` (its constrained JSON action protocol), each as the result BFCL's checkers read.

A result has BFCL's "FC" shape, the one its OpenAI handler produces: for a single-turn entry the
model's calls ``[{name: arguments_json}, ...]`` or, with none, its text; for a multi-turn entry
one list per turn of one such value per model reply (step). Runs in the bench environment
(scripts/bench-env.sh), which has ``bfcl_eval``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import io
import itertools
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT
from bfcl_eval.constants.enums import ModelStyle
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call
from bfcl_eval.model_handler import base_handler
from bfcl_eval.model_handler.base_handler import BaseHandler
from bfcl_eval.model_handler.utils import convert_to_function_call, convert_to_tool

from tether import Agent, Limits, Tool
from tether.context import MemoryContextStore
from tether.errors import LimitExceeded
from tether.events import SessionEndEvent
from tether.messages import Message, TextBlock, ToolUseBlock
from tether.skills import (
    CallSkillAction,
    FinalAnswerAction,
    MaxIterationsObservation,
    Registry,
    Skill,
    SkillAgent,
)

Result = Any  # BFCL's model result: list of {name: args_json}, or text; per turn for multi-turn

# Fixed before any run (nothing tuned on the test items):
SINGLE_TURN_SKILL_STEPS = 6  # SkillAgent makes one call per reply: 4 calls, an answer, a spare
SKILL_MAX_TOKENS = 512  # a SkillAgent reply restates results, thinks, then acts
REPEAT_LIMIT = 2  # agent_repeats: the first repeated call is told, the second ends the turn
RECORDED = "recorded"  # what a single-turn tool tells the model: nothing it could use
# Sent with every single-turn request of the raw model and the Agent: llama.cpp's prompt cache
# changes the numbers a reply is computed with, so the same request found in the cache can be
# answered differently (measured: parallel_75, three calls cold, one call warm). With it off, the
# raw model and the Agent, which send the same request, are compared on the same footing. A
# multi-turn item keeps the cache (each step extends the last; cold, a step rereads ~8k tokens).
COLD = {"cache_prompt": False}


def cache_off(cold: bool) -> dict[str, Any]:
    """The request options (``extra_body``) that turn the prompt cache off when ``cold``."""
    return {"extra_body": COLD} if cold else {}


class Steps:
    """Replies a multi-turn turn may take: BFCL's handler quits an entry after 20 with calls."""

    per_turn = MAXIMUM_STEP_LIMIT + 1


def limit_steps(steps: int) -> None:
    """Quit a multi-turn entry after ``steps`` replies with calls in a turn, in every column
    (BFCL's handler reads its limit from its module): a smoke test's bound, not BFCL's 20."""
    Steps.per_turn = steps + 1
    base_handler.MAXIMUM_STEP_LIMIT = steps


_names = itertools.count()
VERBOSE = False  # bench/bfcl.py --verbose: multi-turn progress on stderr


def say(text: str) -> None:
    if VERBOSE:
        print(f"    {time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


def unique_name(column: str) -> str:
    """A name for BFCL's simulated API instances (kept in a module global by name and entry id),
    so that no column, run or checker sees another's state."""
    return f"bench_{column}_{next(_names)}"


def openai_tools(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The entry's functions as BFCL's OpenAI handler sends them (dots in names become ``_``)."""
    return list(
        convert_to_tool(entry["function"], GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
    )


def is_multi_turn(entry: dict[str, Any]) -> bool:
    return str(entry["id"]).startswith("multi_turn")


# -- the raw model: BFCL's own handler -------------------------------------------------------------


def raw_result(handler: BaseHandler, entry: dict[str, Any]) -> Result:
    """BFCL's ``inference`` on the entry, as its generation step runs it (its step log, printed
    for multi-turn entries, is swallowed)."""
    handler.model_name_underline_replaced = unique_name("raw")
    handler.cold = not is_multi_turn(entry)
    log = sys.stderr if VERBOSE and is_multi_turn(entry) else io.StringIO()
    with contextlib.redirect_stdout(log):
        result, _metadata = handler.inference(
            copy.deepcopy(entry), include_input_log=False, exclude_state_log=True
        )
    return result


# -- tether's Agent --------------------------------------------------------------------------------


def _tether_tools(tools: list[dict[str, Any]], handler: Callable[..., str]) -> list[Tool]:
    made = []
    for wire in tools:
        fn = wire["function"]

        def call(_name: str = fn["name"], **arguments: Any) -> str:
            return handler(_name, arguments)

        made.append(Tool(fn["name"], call, fn.get("description", ""), schema=fn["parameters"]))
    return made


def agent_takes_constrained_calls() -> bool:
    """Whether this tether's ``Agent`` has the ``constrained_calls`` option (issue 42)."""
    return any(f.name == "constrained_calls" for f in dataclasses.fields(Agent))


def _step(message: Message) -> Result:
    """One assistant reply as BFCL's OpenAI handler records it: its calls, else its text."""
    calls = []
    for block in message.content:
        if isinstance(block, ToolUseBlock):
            arguments = (
                block.raw_arguments
                if block.parse_error is not None and block.raw_arguments is not None
                else json.dumps(dict(block.input))
            )
            calls.append({block.name: arguments})
    if calls:
        return calls
    return "".join(b.text for b in message.content if isinstance(b, TextBlock))


async def _run(
    agent: Agent, store: MemoryContextStore, text: str
) -> tuple[list[Result], BaseException | None]:
    """One run on ``store``: the result of each model reply it added, and the error it ended
    with (its iteration limit with calls still wanted, a repeated-calls limit), if any."""
    before = len(store.messages)
    end: SessionEndEvent | None = None
    async for event in agent.run_stream(text, store):
        if isinstance(event, SessionEndEvent):
            end = event
    added = store.messages[before:]
    steps = [_step(m) for m in added if m.role == "assistant"]
    return steps, None if end is None else end.error


def _options(column: str) -> dict[str, Any]:
    if column == "agent_constrained":
        return {"constrained_calls": True}
    if column == "agent_repeats":
        return {"limits": Limits(repeated_calls=REPEAT_LIMIT)}
    return {}


def repeats(result: Result) -> int:
    """Calls in a multi-turn result that repeat one made earlier in the same turn with the same
    arguments (a single-turn result: 0); counted for every column alike."""
    if not isinstance(result, list) or not all(isinstance(t, list) for t in result):
        return 0
    count = 0
    for turn in result:
        seen: set[str] = set()
        for step in turn:
            for call in step if isinstance(step, list) else []:
                key = json.dumps(_plain(call), sort_keys=True)
                count += key in seen
                seen.add(key)
    return count


def _plain(call: Any) -> Any:
    """A call ``{name: arguments}`` with its arguments parsed when they are JSON text."""
    if not isinstance(call, dict):
        return call
    out = {}
    for name, arguments in call.items():
        try:
            out[name] = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            out[name] = arguments
    return out


async def agent_single(entry: dict[str, Any], transport: Any, column: str) -> Result:
    """The calls of the model's first reply: the run is allowed one model call, and its tools
    record nothing the model could use (as BFCL's single-turn handler, one request)."""
    tools = _tether_tools(openai_tools(entry), lambda _name, _args: RECORDED)
    agent = Agent(system="", transport=transport, tools=tools, max_iterations=1, **_options(column))
    messages = entry["question"][0]
    store = MemoryContextStore()
    steps, _ = await _run(agent, store, _user_text(messages))
    return steps[0] if steps else ""


async def agent_multi(entry: dict[str, Any], transport: Any, column: str) -> Result:
    """Each turn's user message as one run on one conversation; the tools run BFCL's simulated
    APIs for this entry. A turn that reaches BFCL's step limit ends the entry (BFCL's force
    quit), so the checker sees fewer turns and fails it, as it does for the raw model; a turn
    ended by the repeated-calls limit (``agent_repeats``) goes on to the next turn."""
    executor = _Executor(entry, unique_name("agent"))
    agent = Agent(
        system="",
        transport=transport,
        tools=_tether_tools(openai_tools(entry), executor.call),
        max_iterations=Steps.per_turn,
        execution="sequential",
        **_options(column),
    )
    store = MemoryContextStore()
    turns: list[list[Result]] = []
    for messages in entry["question"]:
        steps, error = await _run(agent, store, _user_text(messages))
        turns.append(steps)
        say(f"{column} turn {len(turns)}: {len(steps)} replies, ended by {error!r}")
        if error is not None and not isinstance(error, LimitExceeded):
            break  # its step limit (BFCL's force quit), or the model's context full
    return turns


def _user_text(messages: list[dict[str, Any]]) -> str:
    texts = [m["content"] for m in messages if m["role"] == "user"]
    if len(texts) != len(messages):
        raise ValueError(f"expected only user messages, got roles {[m['role'] for m in messages]}")
    return "\n\n".join(texts)


@dataclasses.dataclass
class _Executor:
    """Runs one call on BFCL's simulated API instances of an entry, as BFCL's handler does."""

    entry: dict[str, Any]
    name: str

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        [text] = self.run([{name: arguments}])
        return text

    def run(self, calls: list[dict[str, Any]]) -> list[str]:
        results, _ = execute_multi_turn_func_call(
            convert_to_function_call(calls),
            self.entry.get("initial_config", {}),
            self.entry["involved_classes"],
            self.name,
            self.entry["id"],
            long_context=False,
            is_evaL_run=False,
        )
        return list(results)


# -- SkillAgent ------------------------------------------------------------------------------------


class _SchemaSkill(Skill):
    """A skill whose arguments' schema is given (BFCL's function doc), not read from a
    signature; ``handler(name, arguments)`` does the work."""

    def __init__(
        self, name: str, description: str, schema: dict[str, Any], handler: Callable[..., str]
    ) -> None:
        self.name = name
        self.description = description
        self._handler = handler
        super().__init__()
        self.args_schema = schema

    def run(self, **arguments: Any) -> str:
        return self._handler(self.name, arguments)


def _registry(entry: dict[str, Any], handler: Callable[..., str]) -> Registry:
    skills = [
        _SchemaSkill(
            w["function"]["name"],
            w["function"].get("description", ""),
            w["function"]["parameters"],
            handler,
        )
        for w in openai_tools(entry)
    ]
    return Registry(skills)


def _calls(stream: Any) -> list[dict[str, str]]:
    return [{e.skill_name: json.dumps(e.args)} for e in stream if isinstance(e, CallSkillAction)]


def _answer(stream: Any) -> str:
    answers = [e.answer for e in stream if isinstance(e, FinalAnswerAction)]
    return answers[-1] if answers else ""


def skill_single(entry: dict[str, Any], handle: Any) -> Result:
    """Every call the run made (the protocol has one per reply, so a parallel item needs several
    replies), else the final answer. Calls are told only that they were recorded; a call
    repeated with the same arguments is refused (``refuse_repeats``)."""
    agent = SkillAgent(handle, _registry(entry, lambda _n, _a: RECORDED), refuse_repeats=True)
    state = agent.run(_user_text(entry["question"][0]), max_iterations=SINGLE_TURN_SKILL_STEPS)
    calls = _calls(state.stream)
    return calls if calls else _answer(state.stream)


def skill_multi(entry: dict[str, Any], handle: Any) -> Result:
    """One SkillAgent run per turn (its protocol has no conversation), told the earlier
    requests; the skills run BFCL's simulated APIs, so state carries over between turns. Each
    call is one step; a turn that reaches the step limit ends the entry, as for the Agent."""
    executor = _Executor(entry, unique_name("skill"))
    agent = SkillAgent(handle, _registry(entry, executor.call))
    turns: list[list[Result]] = []
    earlier: list[str] = []
    for messages in entry["question"]:
        request = _user_text(messages)
        state = agent.run(_with_earlier(request, earlier), max_iterations=Steps.per_turn)
        steps: list[Result] = [[call] for call in _calls(state.stream)]
        if answer := _answer(state.stream):
            steps.append(answer)
        turns.append(steps)
        say(f"skill_agent turn {len(turns)}: {len(state.stream)} events")
        earlier.append(request)
        if any(isinstance(e, MaxIterationsObservation) for e in state.stream):
            break
    return turns


def _with_earlier(request: str, earlier: list[str]) -> str:
    if not earlier:
        return request
    told = " | ".join(earlier)
    return f"{request}\n(Earlier requests in this conversation, already handled: {told})"


def run_column(column: str, entry: dict[str, Any], parts: Any) -> Result:
    """The result of ``column`` for ``entry``; ``parts`` holds the handler, transport, handle."""
    multi = is_multi_turn(entry)
    if column == "raw":
        return raw_result(parts.handler, entry)
    if column in ("agent", "agent_constrained", "agent_repeats"):
        run = agent_multi if multi else agent_single
        return asyncio.run(run(entry, parts.transport(cold=not multi), column))
    if column == "skill_agent":
        return (skill_multi if multi else skill_single)(entry, parts.handle)
    raise ValueError(f"unknown column {column!r}")


def jsonable(result: Result) -> Any:
    """``result`` as plain JSON values (what is not JSON as its text)."""
    return json.loads(json.dumps(result, default=str))
