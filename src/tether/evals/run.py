"""``evaluate``: run an agent (or any function) over a dataset, each case ``repeat`` times, at
most ``concurrency`` runs at once, and grade every run by its evaluators."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..events import StreamEvent
from ..messages import Message
from .checks import Equals
from .dataset import Case, Dataset
from .errors import EvalError
from .grading import EvalContext, Graded, evaluator_name, grade
from .progress import Bar
from .report import Report
from .results import CaseResult, RunResult
from .trajectory import Trajectory, trajectory_of

__all__ = ["evaluate"]

_RESULT_CHARS = 2000  # of each tool result a report keeps


async def evaluate(
    target: Any,
    dataset: Dataset | str | Path,
    *,
    repeat: int = 1,
    concurrency: int = 4,
    prices: Mapping[str, tuple[float, ...]] | None = None,
    progress: bool | None = None,
) -> Report:
    """Run ``target`` on every case of ``dataset`` (a ``Dataset`` or its file) ``repeat`` times
    with at most ``concurrency`` runs at once, and grade each run.

    ``target`` is an ``Agent`` (a case's inputs are the user's message; its trajectory comes from
    the run's events) or any function, sync or async, taking the inputs and returning the answer.
    ``prices`` (as ``Limits.prices``; default the agent's) give each run's cost. ``progress``
    draws a bar on standard error (default: when it is a terminal). A case's evaluators are the
    dataset's and its own; a case with none is checked by ``Equals`` when it has an ``expected``,
    else passes when its run ends without an error.
    """
    data = dataset if isinstance(dataset, Dataset) else Dataset.load(dataset)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be a whole number >= 1, not {repeat!r}")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number >= 1, not {concurrency!r}")
    runner = _runner(target, data, prices)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    clock = time.perf_counter()
    gate = asyncio.Semaphore(concurrency)
    jobs = [(i, k) for i in range(len(data.cases)) for k in range(repeat)]
    results: dict[tuple[int, int], RunResult] = {}
    with Bar(len(jobs), data.name, progress) as bar:

        async def one(i: int, k: int) -> None:
            async with gate:
                result = await _run_case(runner, data, i, k)
            results[i, k] = result
            bar.advance(result.passed)

        async with asyncio.TaskGroup() as group:
            for i, k in jobs:
                group.create_task(one(i, k))
    cases = tuple(
        CaseResult(
            data.names[i],
            case.inputs,
            case.expected,
            dict(case.metadata or {}),
            tuple(results[i, k] for k in range(repeat)),
        )
        for i, case in enumerate(data.cases)
    )
    seconds = round(time.perf_counter() - clock, 3)
    return Report(data.name, cases, repeat, started, seconds, _named(target))


class _Runner:
    """Runs one case's inputs and gives back (answer, error text, trajectory)."""

    transport: Any = None  # the evaluated agent's model, which a judge may use

    async def __call__(self, inputs: Any) -> tuple[Any, str | None, Trajectory]:
        raise NotImplementedError


class _AgentRunner(_Runner):
    def __init__(self, agent: Any, prices: Mapping[str, tuple[float, ...]] | None) -> None:
        self.agent = agent
        self.transport = getattr(agent, "transport", None)
        limits = getattr(agent, "limits", None)
        self.prices = prices if prices is not None else getattr(limits, "prices", None)
        self.typed = getattr(agent, "output_type", None) is not None
        self.model = getattr(self.transport, "model", None)

    async def __call__(self, inputs: Any) -> tuple[Any, str | None, Trajectory]:
        events: list[StreamEvent] = []
        output: Any = None
        error: str | None = None
        clock = time.perf_counter()
        stream = self.agent.run_stream(inputs)
        try:
            async for event in stream:
                events.append(event)
            output = await (stream.get_output() if self.typed else stream.get_final_text())
        except Exception as exc:  # the run's failure is the case's, never the evaluation's
            error = f"{type(exc).__name__}: {exc}"
        finally:
            await stream.aclose()
        seconds = time.perf_counter() - clock
        model = self.model if isinstance(self.model, str) else None
        return output, error, trajectory_of(events, seconds, self.prices, model)


class _FunctionRunner(_Runner):
    def __init__(self, function: Any) -> None:
        self.function = function

    async def __call__(self, inputs: Any) -> tuple[Any, str | None, Trajectory]:
        clock = time.perf_counter()
        output: Any = None
        error: str | None = None
        try:
            output = self.function(inputs)
            if inspect.isawaitable(output):
                output = await output
        except Exception as exc:  # the function's failure is the case's
            output, error = None, f"{type(exc).__name__}: {exc}"
        return output, error, Trajectory(seconds=time.perf_counter() - clock)


def _runner(target: Any, data: Dataset, prices: Mapping[str, tuple[float, ...]] | None) -> _Runner:
    if callable(getattr(target, "run_stream", None)):
        for name, case in zip(data.names, data.cases, strict=True):
            if not isinstance(case.inputs, (str, list, tuple, Message)):
                raise EvalError(
                    f"case {name!r}: an agent takes its message as inputs (text or blocks), not "
                    f"{type(case.inputs).__name__}; evaluate a function that builds the message"
                )
        return _AgentRunner(target, prices)
    if callable(target):
        return _FunctionRunner(target)
    raise EvalError(f"evaluate takes an Agent or a function, not {type(target).__name__}")


async def _run_case(runner: _Runner, data: Dataset, index: int, attempt: int) -> RunResult:
    case = data.cases[index]
    name = data.names[index]
    with _span(name, attempt) as span:
        output, error, path = await runner(case.inputs)
        ctx = EvalContext(
            name,
            case.inputs,
            case.expected,
            case.metadata or {},
            output,
            path,
            error,
            runner.transport,
        )
        evaluators = _evaluators_of(data, case)
        outcomes: dict[str, Graded] = {}
        for evaluator in evaluators:
            outcomes[_unique(evaluator_name(evaluator), outcomes)] = await grade(evaluator, ctx)
        excused = any(getattr(e, "accepts_errors", False) for e in evaluators)
        passed = (error is None or excused) and all(o.passed for o in outcomes.values())
        if span is not None:
            span.set_attribute("tether.eval.passed", passed)
    return RunResult(passed, output, error, outcomes, _plain(path))


def _evaluators_of(data: Dataset, case: Case) -> tuple[Any, ...]:
    found = (*data.evaluators, *case.evaluators)
    if not found and case.expected is not None:
        return (Equals(),)
    return found


def _unique(name: str, taken: Mapping[str, Any]) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name} {n}" in taken:
        n += 1
    return f"{name} {n}"


@contextlib.contextmanager
def _span(case: str, attempt: int) -> Iterator[Any]:
    """A span for the case when OpenTelemetry is installed (a no-op without an SDK); the run's
    own spans nest inside it."""
    try:
        from opentelemetry import trace  # noqa: PLC0415 - optional
    except ImportError:
        yield None
        return
    tracer = trace.get_tracer("tether.evals")
    attributes: dict[str, str | int] = {
        "tether.eval.case": case,
        "tether.eval.attempt": attempt + 1,
    }
    with tracer.start_as_current_span(f"eval {case}", attributes=attributes) as span:
        yield span


def _plain(path: Trajectory) -> dict[str, Any]:
    return {
        "calls": [
            {
                "name": call.name,
                "input": dict(call.input),
                "is_error": call.is_error,
                "result": None if call.result is None else call.result[:_RESULT_CHARS],
            }
            for call in path.calls
        ],
        "iterations": path.iterations,
        "input_tokens": path.usage.input_tokens,
        "output_tokens": path.usage.output_tokens,
        "cost": path.cost,
        "seconds": round(path.seconds, 4),
        "stop_reason": None if path.stop_reason is None else str(path.stop_reason),
        "limit": path.limit,
        "models": list(path.models),
    }


def _named(target: Any) -> str:
    name = getattr(target, "name", None)
    if isinstance(name, str) and name:
        return name
    return getattr(target, "__qualname__", None) or type(target).__name__
