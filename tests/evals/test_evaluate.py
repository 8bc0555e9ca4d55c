"""``evaluate``: agents and functions over datasets, trajectories read from the run's events,
repeats, bounded concurrency, evaluators that fail or break, cancellation."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from agents import looping_agent, weather_agent
from pydantic import BaseModel

from tether import Agent, Limits
from tether.evals import (
    Case,
    Contains,
    Dataset,
    Equals,
    EvalContext,
    EvalError,
    Regex,
    ToolCalls,
    Typed,
    Verdict,
    Within,
    evaluate,
)
from tether.testing import Reply, ScriptedTransport
from tether.types import StopReason, Usage


async def test_an_agents_trajectory_is_read_from_its_events() -> None:
    seen: list[EvalContext] = []
    data = Dataset([Case("Weather in Oslo?", evaluators=[seen.append])])
    await evaluate(weather_agent(), data, progress=False)
    (ctx,) = seen
    path = ctx.trajectory
    assert ctx.output == "It is sunny in Oslo." and ctx.error is None
    assert path.tools == ("get_weather",)
    assert path.calls[0].input == {"city": "Oslo"}
    assert path.calls[0].result == "sunny in Oslo" and not path.calls[0].is_error
    assert path.iterations == 2
    assert path.usage == Usage(50, 13)
    assert path.stop_reason is StopReason.END_TURN and path.limit is None
    assert path.seconds > 0 and path.cost is None
    assert any(type(e).__name__ == "SessionEndEvent" for e in path.events)


async def test_cost_comes_from_prices_given_or_the_agents_own() -> None:
    prices = {"scripted": (1.0, 4.0)}
    data = Dataset([Case("Weather in Oslo?")])
    agent = weather_agent()
    agent.transport.model = "scripted"  # type: ignore[attr-defined]
    report = await evaluate(agent, data, prices=prices, progress=False)
    # 50 input tokens at 1 USD/M, 13 output at 4 USD/M
    assert report.cases[0].runs[0].trajectory["cost"] == pytest.approx((50 + 52) / 1e6)
    own = weather_agent(limits=Limits(prices=prices))
    own.transport.model = "scripted"  # type: ignore[attr-defined]
    report = await evaluate(own, data, progress=False)
    assert report.cases[0].runs[0].trajectory["cost"] == pytest.approx(102 / 1e6)
    assert report.cases[0].runs[0].trajectory["models"] == ["scripted"]


async def test_tool_calls_in_order_exactly_or_anywhere() -> None:
    data = Dataset(
        [
            Case(
                "Weather in Oslo?",
                evaluators=[
                    ToolCalls([("get_weather", {"city": "Oslo"})], name="right args"),
                    ToolCalls([("get_weather", {"city": "Bergen"})], name="wrong args"),
                    ToolCalls(["get_weather"], order="exact", name="exact"),
                    ToolCalls(["add"], order="any", name="never called"),
                    ToolCalls([], order="exact", name="none at all"),
                    ToolCalls(
                        [{"name": "get_weather", "input": {"city": "Oslo", "unit": "C"}}],
                        arguments="exact",
                        name="extra arg",
                    ),
                ],
            )
        ]
    )
    report = await evaluate(weather_agent(), data, progress=False)
    outcomes = report.cases[0].runs[0].outcomes
    passed = {name: o.passed for name, o in outcomes.items()}
    assert passed == {
        "right args": True,
        "wrong args": False,
        "exact": True,
        "never called": False,
        "none at all": False,
        "extra arg": False,
    }
    assert "called [get_weather({'city': 'Oslo'})]" in outcomes["wrong args"].reason


async def test_a_limit_that_stops_a_run_fails_it_unless_a_case_expects_the_stop() -> None:
    data = Dataset(
        [
            Case("go", name="expects the stop", evaluators=[Within(limit="tool_calls")]),
            Case("go", name="any limit", evaluators=[Within(limit=True)]),
            Case("go", name="no stop wanted", evaluators=[Within(limit=False)]),
            Case("go", name="plain"),
        ]
    )
    report = await evaluate(looping_agent(), data, progress=False)
    passed = {case.name: case.passed for case in report.cases}
    assert passed == {
        "expects the stop": True,
        "any limit": True,
        "no stop wanted": False,
        "plain": False,
    }
    run = report.case("plain").runs[0]
    assert run.error is not None and run.error.startswith("LimitExceeded")
    assert run.trajectory["limit"] == "tool_calls"
    assert report.case("no stop wanted").runs[0].outcomes["within"].reason == (
        "the tool_calls limit stopped it"
    )


async def test_within_bounds_replies_tokens_and_stop_reason() -> None:
    data = Dataset(
        [
            Case("Weather in Oslo?", evaluators=[Within(iterations=2, tokens=63, tool_calls=1)]),
            Case("Weather in Rome?", evaluators=[Within(iterations=1, tokens=10)]),
            Case("What is 2+2?", evaluators=[Within(stop_reason="end_turn", seconds=30)]),
            Case("What is 2+2?", name="cost unknown", evaluators=[Within(cost=1.0)]),
        ]
    )
    report = await evaluate(weather_agent(), data, progress=False)
    assert [c.passed for c in report.cases] == [True, False, True, False]
    assert report.cases[1].runs[0].outcomes["within"].reason == "iterations 2 > 1; tokens 63 > 10"
    assert "cost unknown" in report.case("cost unknown").runs[0].outcomes["within"].reason


async def test_answers_checked_by_equality_containment_pattern_and_type() -> None:
    class Sum(BaseModel):
        total: int

    data = Dataset(
        [
            Case("What is 2+2?", expected=" 4 ", name="default equals"),
            Case("What is 2+2?", expected="5", name="wrong"),
            Case("What is 2+2?", name="pattern", evaluators=[Regex(r"^\d$")]),
            Case("Weather in Oslo?", name="contains", evaluators=[Contains(["SUNNY", "oslo"])]),
            Case("What is 2+2?", name="typed", evaluators=[Typed(int)]),
            Case("What is 2+2?", name="not a model", evaluators=[Typed(Sum)]),
        ]
    )
    report = await evaluate(weather_agent(), data, progress=False)
    passed = {case.name: case.passed for case in report.cases}
    assert passed == {
        "default equals": True,
        "wrong": False,
        "pattern": True,
        "contains": True,
        "typed": True,
        "not a model": False,
    }
    assert report.case("wrong").runs[0].outcomes["equals"].reason == "expected '5', got '4'"


async def test_a_typed_agents_output_is_its_value() -> None:
    class City(BaseModel):
        name: str
        country: str

    model = ScriptedTransport([], then=lambda _: Reply('{"name": "Oslo", "country": "Norway"}'))
    agent = Agent(system="", transport=model, output_type=City)
    data = Dataset(
        [
            Case("Capital of Norway?", expected={"name": "Oslo", "country": "Norway"}),
            Case("x", name="typed", evaluators=[Typed(City), Contains("Norway")]),
        ]
    )
    report = await evaluate(agent, data, progress=False)
    assert report.passed, report.to_json()
    assert report.cases[0].runs[0].output == City(name="Oslo", country="Norway")
    assert '"country": "Norway"' in report.to_json()


async def test_repeats_give_pass_rates_and_show_flaky_cases() -> None:
    flips = itertools.cycle(["yes", "no"])

    def answer(inputs: str) -> str:
        return next(flips) if inputs == "flip" else "yes"

    data = Dataset([Case("flip", expected="yes"), Case("steady", expected="yes")])
    report = await evaluate(answer, data, repeat=4, concurrency=1, progress=False)
    flip, steady = report.cases
    assert (flip.passes, len(flip.runs), flip.flaky, flip.passed) == (2, 4, True, False)
    assert (steady.pass_rate, steady.flaky, steady.passed) == (1.0, False, True)
    assert report.pass_rate == 6 / 8 and not report.passed


async def test_no_more_runs_at_once_than_asked() -> None:
    running = most = 0

    async def slow(inputs: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        return inputs

    data = Dataset([Case(i, expected=i) for i in range(12)])
    report = await evaluate(slow, data, repeat=2, concurrency=3, progress=False)
    assert report.passed and most == 3
    assert [case.name for case in report.cases] == [f"case {i}" for i in range(1, 13)]


async def test_a_broken_evaluator_fails_its_check_and_no_other() -> None:
    def broken(ctx: EvalContext) -> bool:
        raise KeyError("oops")

    async def slow_yes(ctx: EvalContext) -> Verdict:
        await asyncio.sleep(0)
        return Verdict(True, 0.9, "fine")

    data = Dataset(
        [
            Case(
                "What is 2+2?",
                evaluators=[
                    broken,
                    slow_yes,
                    lambda ctx: "yes",
                    lambda ctx: 0.2,
                    lambda ctx: 7,
                    Equals("4"),
                ],
            )
        ]
    )
    report = await evaluate(weather_agent(), data, progress=False)
    outcomes = report.cases[0].runs[0].outcomes
    assert list(outcomes) == [
        "broken",
        "slow_yes",
        "<lambda>",
        "<lambda> 2",
        "<lambda> 3",
        "equals",
    ]
    assert outcomes["broken"].error and "KeyError" in outcomes["broken"].reason
    assert outcomes["slow_yes"].passed and outcomes["slow_yes"].score == 0.9
    assert outcomes["<lambda>"].error and "not str" in outcomes["<lambda>"].reason
    assert not outcomes["<lambda> 2"].passed and outcomes["<lambda> 2"].score == 0.2
    assert outcomes["<lambda> 3"].error
    assert outcomes["equals"].passed


async def test_a_failing_function_or_agent_is_that_cases_failure() -> None:
    def picky(inputs: str) -> str:
        if inputs == "bad":
            raise RuntimeError("cannot answer")
        return inputs

    report = await evaluate(picky, Dataset([Case("bad"), Case("good")]), progress=False)
    bad, good = report.cases
    assert not bad.passed and bad.runs[0].error == "RuntimeError: cannot answer"
    assert good.passed
    failing = Agent(system="", transport=ScriptedTransport([], then=RuntimeError("model down")))
    report = await evaluate(failing, Dataset([Case("hi")]), progress=False)
    assert "model down" in (report.cases[0].runs[0].error or "")


async def test_wrong_targets_and_inputs_are_refused_before_anything_runs() -> None:
    with pytest.raises(EvalError, match="case 'case 2': an agent takes its message"):
        await evaluate(weather_agent(), Dataset([Case("ok"), Case({"city": "Oslo"})]))
    with pytest.raises(EvalError, match="not int"):
        await evaluate(42, Dataset([Case("x")]))
    with pytest.raises(ValueError, match="repeat"):
        await evaluate(str, Dataset([Case("x")]), repeat=0)
    with pytest.raises(ValueError, match="concurrency"):
        await evaluate(str, Dataset([Case("x")]), concurrency=True)


async def test_cancelling_an_evaluation_cancels_its_runs() -> None:
    started = asyncio.Event()
    cancelled: list[int] = []

    async def endless(inputs: int) -> int:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(inputs)
            raise
        return inputs

    task = asyncio.create_task(
        evaluate(endless, Dataset([Case(i) for i in range(5)]), concurrency=2, progress=False)
    )
    await started.wait()
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == [0, 1]
    assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


async def test_a_dataset_path_is_loaded(tmp_path: Any) -> None:
    path = tmp_path / "cases.json"
    path.write_text('{"cases": [{"inputs": "What is 2+2?", "expected": "4"}]}')
    report = await evaluate(weather_agent(), path, progress=False)
    assert report.passed and report.name == "cases"
