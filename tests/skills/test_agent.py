"""The SkillAgent door on a scripted model: every scenario cantus documents (the parse path, the
three error-closing loops, the run loop's budgets), that it runs on tether's engine (guards and
middleware see skill calls), and its sync API inside a running event loop."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tether import Deny
from tether.loop.middleware import Middleware, ToolHandler, ToolRequest
from tether.messages import ToolResultBlock
from tether.skills import (
    Action,
    AgentState,
    CallSkillAction,
    EventStream,
    FinalAnswerAction,
    MaxIterationsObservation,
    MockModel,
    MockModelExhausted,
    Observation,
    PromptChain,
    Registry,
    Result,
    SkillAgent,
    SkillObservation,
    ToolErrorObservation,
    ValidationErrorObservation,
    get_registry,
    skill,
)
from tether.skills.base import FunctionSkill
from tether.skills.hooks import analyzer, validator

pytestmark = pytest.mark.timeout(30)


class Scripted:
    """A ModelHandle that plays replies in order and keeps the prompts it was shown."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def generate(self, prompt: str, **kwargs: Any) -> str:
        self.prompts.append(prompt)
        reply = self.replies.pop(0)
        return reply if isinstance(reply, str) else json.dumps(reply)


def call(name: str, thought: str = "t", **args: Any) -> dict[str, Any]:
    return {"thought": thought, "action": {"skill_name": name, "args": args}}


def answer(text: str, thought: str = "done") -> dict[str, Any]:
    return {"thought": thought, "action": {"final_answer": text}}


def get_weather(city: str, date: str = "today") -> str:
    """Look up the weather of a city.

    Args:
        city: the city's name
        date: which day
    """
    if city == "Mordor":
        raise RuntimeError("no weather service there")
    return f"sunny in {city} {date}"


@pytest.fixture
def registry() -> Registry:
    return Registry([FunctionSkill(get_weather)])


def kinds(state: AgentState) -> list[str]:
    return [type(e).__name__ for e in state.stream]


# -- the happy path ----------------------------------------------------------------------------


def test_a_skill_call_then_an_answer(registry: Registry) -> None:
    model = Scripted(call("get_weather", city="Taipei", date="8/15"), answer("Sunny."))
    state = SkillAgent(model, registry).run("What's the weather in Taipei on 8/15?")
    assert state.query == "What's the weather in Taipei on 8/15?"
    assert list(state.stream) == [
        CallSkillAction(
            skill_name="get_weather", args={"city": "Taipei", "date": "8/15"}, thought="t"
        ),
        SkillObservation("get_weather", "sunny in Taipei 8/15"),
        FinalAnswerAction(answer="Sunny.", thought="done"),
    ]
    assert state.final_answer == "Sunny."
    assert "What's the weather in Taipei on 8/15?" in model.prompts[0]
    assert "get_weather" in model.prompts[0] and "the city's name" in model.prompts[0]
    assert "sunny in Taipei 8/15" in model.prompts[1]  # the model sees the observation


def test_the_query_and_the_workflow_forms(registry: Registry) -> None:
    state = SkillAgent(Scripted(answer("hi")), registry).run(None, query="hello")  # type: ignore[arg-type]
    assert state.query == "hello"

    class Upper:
        def run(self, text: str) -> str:
            return text.upper()

    state = SkillAgent(Scripted(), registry).run(Upper(), query="shout")
    assert state.final_answer == "SHOUT"
    with pytest.raises(ValueError, match="needs a query"):
        SkillAgent(Scripted(), registry).run(Upper())


def test_a_caller_bug_raises() -> None:
    with pytest.raises(TypeError, match="generate"):
        SkillAgent(None)  # type: ignore[arg-type]


# -- the parse path ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "error_type"),
    [
        ("Sure! The weather is nice.", "json_syntax"),
        ("[1, 2]", "json_syntax"),
        ({"thought": "x"}, "missing_field"),
        ({"thought": "x", "action": {"say": "hi"}}, "missing_field"),
        ({"thought": "x", "action": {"skill_name": 7}}, "missing_field"),
        (call("get_forecast", city="Taipei"), "unknown_skill"),
    ],
)
def test_unparseable_replies_become_validation_errors(
    registry: Registry, reply: Any, error_type: str
) -> None:
    state = AgentState("q")
    event = SkillAgent(Scripted(reply), registry).step(state)
    assert isinstance(event, ValidationErrorObservation)
    assert event.validator_name == "action_parse"
    lines = event.feedback.split("\n")
    assert lines[0] == f"error_type: {error_type}"
    assert lines[1].startswith("detail: ") and lines[2].startswith("raw_output_preview: ")
    assert len(state.stream) == 0  # step does not append


def test_an_unknown_skill_is_told_the_skills_there_are(registry: Registry) -> None:
    event = SkillAgent(Scripted(call("nope")), registry).step(AgentState("q"))
    assert isinstance(event, ValidationErrorObservation)
    assert "available: ['get_weather']" in event.feedback


@pytest.mark.parametrize("empty", ["", "   ", "\n\t"])
def test_an_empty_final_answer_is_refused_not_accepted(registry: Registry, empty: str) -> None:
    event = SkillAgent(Scripted(answer(empty)), registry).step(AgentState("q"))
    assert isinstance(event, ValidationErrorObservation)
    assert event.validator_name == "non_empty_final_answer"


def test_the_raw_preview_is_at_most_500_characters(registry: Registry) -> None:
    raw = "x" * 499 + "\n" + "y" * 600
    event = SkillAgent(Scripted(raw), registry).step(AgentState("q"))
    assert isinstance(event, ValidationErrorObservation)
    preview = event.feedback.split("raw_output_preview: ", 1)[1]
    assert preview == "x" * 499 + "\\n" + "…[truncated]"


def test_a_fenced_or_chatty_json_reply_is_still_read(registry: Registry) -> None:
    fenced = "```json\n" + json.dumps(answer("42")) + "\n```"
    assert SkillAgent(Scripted(fenced), registry).step(AgentState("q")) == FinalAnswerAction(
        answer="42", thought="done"
    )
    chatty = "Here you go: " + json.dumps(call("get_weather", city="Oslo"))
    event = SkillAgent(Scripted(chatty), registry).step(AgentState("q"))
    assert event == CallSkillAction(skill_name="get_weather", args={"city": "Oslo"}, thought="t")


def test_unparseable_text_is_never_turned_into_an_answer(registry: Registry) -> None:
    state = SkillAgent(Scripted(*["The answer is 42."] * 3), registry).run("q", max_iterations=3)
    assert not any(isinstance(e, FinalAnswerAction) for e in state.stream)
    assert state.final_answer is None
    assert kinds(state) == ["ValidationErrorObservation"] * 3 + ["MaxIterationsObservation"]


# -- the three error-closing loops ---------------------------------------------------------------


def test_a_raising_skill_is_a_tool_error_with_the_skill_list(registry: Registry) -> None:
    model = Scripted(
        call("get_weather", city="Mordor"), call("get_weather", city="Shire"), answer("ok")
    )
    state = SkillAgent(model, registry).run("q")
    error = state.stream[1]
    assert isinstance(error, ToolErrorObservation) and error.skill_name == "get_weather"
    assert "RuntimeError: no weather service there" in error.message
    assert "available: ['get_weather']" in error.message
    assert "no weather service there" in model.prompts[1]  # what the model sees next
    assert state.final_answer == "ok"


def test_bad_arguments_are_a_tool_error_the_model_can_fix(registry: Registry) -> None:
    model = Scripted(
        call("get_weather", town="Oslo"), call("get_weather", city="Oslo"), answer("ok")
    )
    state = SkillAgent(model, registry).run("q")
    error = state.stream[1]
    assert isinstance(error, ToolErrorObservation)
    assert "city" in error.message
    assert isinstance(state.stream[3], SkillObservation)


def test_validation_feedback_reaches_the_model_and_the_loop_goes_on(registry: Registry) -> None:
    model = Scripted("not json", {"thought": "oops"}, answer(" "), answer("Sunny."))
    state = SkillAgent(model, registry).run("q")
    assert kinds(state) == [
        "ValidationErrorObservation",
        "ValidationErrorObservation",
        "ValidationErrorObservation",
        "FinalAnswerAction",
    ]
    assert "error_type: json_syntax" in model.prompts[1]
    assert "error_type: missing_field" in model.prompts[2]
    assert "non_empty_final_answer" in model.prompts[3]


def test_validation_errors_do_not_reset_the_iteration_budget(registry: Registry) -> None:
    # max_retries does not stop the loop (as in cantus): only max_iterations does.
    state = SkillAgent(Scripted(*["?"] * 5), registry).run("q", max_iterations=5, max_retries=1)
    assert kinds(state) == ["ValidationErrorObservation"] * 5 + ["MaxIterationsObservation"]


def test_running_out_of_iterations(registry: Registry) -> None:
    model = Scripted(*[call("get_weather", city="Oslo")] * 3)
    state = SkillAgent(model, registry).run("q", max_iterations=3)
    *events, last = list(state.stream)
    assert isinstance(last, MaxIterationsObservation)
    assert last.iterations == 3
    assert last.last_action_summary == repr(
        CallSkillAction(skill_name="get_weather", args={"city": "Oslo"}, thought="t")
    )
    assert list(last.partial_state) == events  # the stream as it was, every call answered
    assert last.partial_state is not state.stream
    assert kinds(state)[:6] == ["CallSkillAction", "SkillObservation"] * 3


def test_the_partial_state_is_a_deep_copy(registry: Registry) -> None:
    payload: dict[str, Any] = {"n": [1]}

    def give() -> dict[str, Any]:
        """Give the payload."""
        return payload

    model = Scripted(call("give"))
    state = SkillAgent(model, Registry([FunctionSkill(give)])).run("q", max_iterations=1)
    last = state.stream[-1]
    assert isinstance(last, MaxIterationsObservation)
    payload["n"].append(2)
    copied = last.partial_state[1]
    assert isinstance(copied, SkillObservation) and copied.result == {"n": [1]}


# -- hooks -----------------------------------------------------------------------------------------


def test_pre_and_post_hooks_and_a_validators_result() -> None:
    @analyzer
    def upper_city(city: str) -> dict[str, str]:
        return {"city": city.upper()}

    @validator
    def has_degrees(value: str) -> Result:
        return Result.success() if "°" in value else Result.failure("no temperature in it")

    def weather(city: str) -> str:
        """Weather."""
        return f"{city}: rain"

    reg = Registry([FunctionSkill(weather, pre_hook=upper_city, post_hook=has_degrees)])
    model = Scripted(call("weather", city="oslo"), answer("rain"))
    state = SkillAgent(model, reg).run("q")
    assert state.stream[1] == ValidationErrorObservation("has_degrees", "no temperature in it")
    assert "no temperature in it" in model.prompts[1]


def test_a_post_hook_value_replaces_the_result_and_a_pre_hook_value_is_positional() -> None:
    def shout(text: str) -> str:
        """Shout."""
        return text + "!"

    reg = Registry(
        [
            FunctionSkill(
                shout,
                pre_hook=lambda text: text.upper(),
                post_hook=lambda value: Result.success(value * 2),
            )
        ]
    )
    state = SkillAgent(Scripted(call("shout", text="hi"), answer("ok")), reg).run("q")
    assert state.stream[1] == SkillObservation("shout", "HI!HI!")


def test_a_failing_hook_is_a_tool_error_naming_the_hook() -> None:
    def boom(**_: Any) -> None:
        raise ValueError("bad input")

    def echo(text: str) -> str:
        """Echo."""
        return text

    reg = Registry([FunctionSkill(echo, pre_hook=boom)])
    state = SkillAgent(Scripted(call("echo", text="a"), answer("ok")), reg).run("q")
    error = state.stream[1]
    assert isinstance(error, ToolErrorObservation)
    assert error.message.startswith("pre_hook ValueError: bad input")


# -- one engine ------------------------------------------------------------------------------------


def test_guards_and_middleware_of_the_engine_apply_to_skills(registry: Registry) -> None:
    seen: list[str] = []

    class Watch(Middleware):
        async def wrap_tool_call(
            self, call: ToolRequest, call_next: ToolHandler
        ) -> ToolResultBlock:
            seen.append(call.name)
            return await call_next(call)

    def no_mordor(tool_call: Any) -> Any:
        return Deny("not there") if tool_call.arguments.get("city") == "Mordor" else None

    model = Scripted(call("get_weather", city="Mordor"), answer("ok"))
    agent = SkillAgent(model, registry, guards=[no_mordor], middleware=[Watch()])
    state = agent.run("q")
    error = state.stream[1]
    assert isinstance(error, ToolErrorObservation) and "denied: not there" in error.message
    assert seen == ["get_weather"]


def test_sync_run_works_inside_a_running_event_loop(registry: Registry) -> None:
    async def notebook() -> AgentState:
        return SkillAgent(Scripted(answer("fine")), registry).run("q")

    assert asyncio.run(notebook()).final_answer == "fine"


async def test_the_async_twins(registry: Registry) -> None:
    agent = SkillAgent(Scripted(call("get_weather", city="Rome"), answer("ok")), registry)
    event = await agent.step_async(AgentState("q"))
    assert isinstance(event, CallSkillAction)
    state = await agent.run_async("q")
    assert kinds(state) == ["FinalAnswerAction"]


def test_a_handle_that_takes_a_schema_is_given_the_action_schema(registry: Registry) -> None:
    schemas: list[dict[str, Any]] = []

    class Constrained:
        def generate(self, prompt: str, *, json_schema: dict[str, Any] | None = None) -> str:
            assert json_schema is not None
            schemas.append(json_schema)
            return json.dumps(answer("ok"))

    SkillAgent(Constrained(), registry).run("q")
    choices = schemas[0]["properties"]["action"]["anyOf"]
    assert choices[0]["properties"]["skill_name"] == {"enum": ["get_weather"]}
    assert choices[0]["properties"]["args"]["required"] == ["city"]
    assert choices[-1]["required"] == ["final_answer"]


def test_the_default_registry_is_the_process_wide_one() -> None:
    @skill
    def ping_for_agent_test() -> str:
        """Ping."""
        return "pong"

    try:
        state = SkillAgent(Scripted(call("ping_for_agent_test"), answer("pong"))).run("q")
        assert state.stream[1] == SkillObservation("ping_for_agent_test", "pong")
    finally:
        get_registry().clear()


def test_events_are_actions_or_observations() -> None:
    stream = EventStream()
    with pytest.raises(TypeError, match="only accepts Action or Observation"):
        stream.append("text")  # type: ignore[arg-type]
    assert issubclass(CallSkillAction, Action) and issubclass(SkillObservation, Observation)


def test_mock_model_plays_replies_and_says_when_it_runs_out(registry: Registry) -> None:
    model = MockModel([call("get_weather", city="Oslo")], then=answer("cold"))
    state = SkillAgent(model, registry).run("q")
    assert state.final_answer == "cold" and len(model.prompts) == 2
    with pytest.raises(MockModelExhausted):
        MockModel(["x"]).generate("a") and MockModel().generate("b")


def test_an_agent_is_a_step_of_a_workflow(registry: Registry) -> None:
    agent = SkillAgent(MockModel(then=lambda prompt: answer(f"len {len(prompt) > 0}")), registry)
    chain = PromptChain([agent, str.upper])
    assert chain.run("q") == "LEN TRUE"
    state = agent.run(chain, query="q")
    assert state.final_answer == "LEN TRUE" and state.query == "q"


def test_the_schema_holds_the_reply_to_the_results_it_was_given(registry: Registry) -> None:
    schemas: list[dict[str, Any]] = []

    class Constrained:
        def __init__(self) -> None:
            self.replies = [call("get_weather", city="Oslo"), answer("sunny")]

        def generate(self, prompt: str, *, json_schema: dict[str, Any] | None = None) -> str:
            assert json_schema is not None
            schemas.append(json_schema)
            return json.dumps(self.replies.pop(0))

    SkillAgent(Constrained(), registry).run("q")
    assert schemas[0]["properties"]["results"] == {"const": "none"}
    assert schemas[1]["properties"]["results"] == {
        "const": 'get_weather(city="Oslo") = "sunny in Oslo today"'
    }


def test_refuse_repeats_answers_a_repeated_call_with_its_earlier_result(
    registry: Registry,
) -> None:
    runs: list[str] = []

    def count(city: str) -> str:
        """Count a call."""
        runs.append(city)
        return f"{city}: 3 C"

    reg = Registry([FunctionSkill(count)])
    replies = [call("count", city="Oslo"), call("count", city="Oslo"), answer("3 C")]
    state = SkillAgent(MockModel(replies), reg, refuse_repeats=True).run("q")
    assert runs == ["Oslo"]  # the skill ran once
    refusal = state.stream[2]
    assert isinstance(refusal, ValidationErrorObservation)
    assert refusal.validator_name == "repeated_call" and "Oslo: 3 C" in refusal.feedback
    assert state.final_answer == "3 C"
    # Off by default: the same script runs the skill twice.
    runs.clear()
    SkillAgent(MockModel(list(replies)), reg).run("q")
    assert runs == ["Oslo", "Oslo"]
