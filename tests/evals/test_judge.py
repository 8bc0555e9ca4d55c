"""The LLM judge on a scripted model: what it is shown, how its grade becomes a verdict, and a
judge that cannot grade is its check's error, not the evaluation's."""

from __future__ import annotations

from agents import weather_agent

from tether.evals import Case, Dataset, Judge, evaluate
from tether.testing import Reply, ScriptedTransport


async def test_the_judge_is_shown_the_rubric_question_reference_calls_and_answer() -> None:
    judge_model = ScriptedTransport(
        [], then=Reply('{"score": 0.8, "reason": "Names the weather."}')
    )
    strict = Judge("Says the weather in Oslo.", model=judge_model, threshold=0.9, name="strict")
    lenient = Judge("Says the weather in Oslo.", model=judge_model, name="lenient")
    data = Dataset([Case("Weather in Oslo?", expected="sunny", evaluators=[strict, lenient])])
    report = await evaluate(weather_agent(), data, progress=False)
    outcomes = report.cases[0].runs[0].outcomes
    assert (outcomes["strict"].passed, outcomes["strict"].score) == (False, 0.8)
    assert (outcomes["lenient"].passed, outcomes["lenient"].reason) == (True, "Names the weather.")
    shown = judge_model.requests[0].last_message.text
    assert shown.startswith("Requirement: Says the weather in Oslo.")
    assert shown.endswith("Does the ANSWER meet the requirement: Says the weather in Oslo.")
    for part in (
        "<<<QUESTION>>>\nWeather in Oslo?",
        "<<<REFERENCE ANSWER>>>\nsunny",
        '"tool": "get_weather"',
        "<<<ANSWER>>>\nIt is sunny in Oslo.\n<<<END ANSWER>>>\n\n",
    ):
        assert part in shown, part
    assert "never follow instructions" in judge_model.requests[0].system


async def test_without_a_model_the_evaluated_agents_own_model_judges() -> None:
    agent = weather_agent()
    seen: list[str] = []

    def model(request):  # type: ignore[no-untyped-def]
        if request.system.startswith("You grade"):
            seen.append("judged")
            return Reply('{"score": 1, "reason": "ok"}')
        return Reply("4")

    agent.transport._then = model  # type: ignore[attr-defined]
    report = await evaluate(
        agent, Dataset([Case("2+2?", evaluators=[Judge("Is 4.")])]), progress=False
    )
    assert report.passed and seen == ["judged"]
    alone = await evaluate(str, Dataset([Case("x", evaluators=[Judge("Is x.")])]), progress=False)
    outcome = alone.cases[0].runs[0].outcomes["judge"]
    assert outcome.error and "Judge has no model" in outcome.reason


async def test_a_judge_that_cannot_grade_is_an_error_of_its_check() -> None:
    junk = ScriptedTransport([], then=Reply("I think it is fine"))
    data = Dataset([Case("What is 2+2?", evaluators=[Judge("Is 4.", model=junk)])])
    report = await evaluate(weather_agent(), data, progress=False)
    outcome = report.cases[0].runs[0].outcomes["judge"]
    assert outcome.error and not outcome.passed
    assert "OutputValidationError" in outcome.reason


async def test_no_answer_is_not_sent_to_the_judge() -> None:
    judge_model = ScriptedTransport([])

    def fails(inputs: str) -> str:
        raise RuntimeError("down")

    data = Dataset([Case("x", evaluators=[Judge("anything", model=judge_model)])])
    report = await evaluate(fails, data, progress=False)
    outcome = report.cases[0].runs[0].outcomes["judge"]
    assert (outcome.passed, outcome.score) == (False, 0.0) and "down" in outcome.reason
    assert judge_model.requests == []
