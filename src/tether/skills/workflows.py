"""The workflow patterns of "Building effective agents" as small composable objects.
Every step is any one-argument callable; every workflow has ``run`` and is callable itself."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sized
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from .base import Skill
from .result import Result

__all__ = [
    "ChainStopped",
    "EvaluatorOptimizer",
    "OrchestratorWorker",
    "Parallel",
    "PromptChain",
    "Router",
    "Workflow",
]

Step = Callable[[Any], Any]
"""Any one-argument callable: a function, a skill, a bound ``run`` or a workflow object."""

Gate = Callable[[int, Any], bool]
"""``(step_index, value) -> keep_going`` checked after each step of a ``PromptChain``."""

Aggregate = Callable[[list[Any]], Any]
"""Folds a list of outputs (branch results, worker outputs) into one value."""

_S = TypeVar("_S", bound=Sized)


@runtime_checkable
class Workflow(Protocol):
    """Anything with ``run(input) -> output``; every workflow here is one."""

    def run(self, input: Any) -> Any: ...


class ChainStopped(ValueError):
    """A ``PromptChain`` gate returned False after step ``index``, whose output was ``value``."""

    def __init__(self, index: int, value: Any) -> None:
        super().__init__(index, value)
        self.index = index
        self.value = value

    def __str__(self) -> str:
        return f"the gate stopped the chain after step {self.index}"


def _nonempty(items: _S, what: str) -> _S:
    if not items:
        raise ValueError(f"{what} must not be empty")
    return items


class PromptChain:
    """Threads the input through ``steps`` in order; an optional ``gate`` may stop it early."""

    __slots__ = ("gate", "steps")

    def __init__(self, steps: Iterable[Step], *, gate: Gate | None = None) -> None:
        self.steps: tuple[Step, ...] = _nonempty(tuple(steps), "PromptChain steps")
        self.gate = gate

    def run(self, input: Any) -> Any:
        """The last step's output; raises ``ChainStopped`` when the gate says no."""
        out = input
        for index, step in enumerate(self.steps):
            out = step(out)
            if self.gate is not None and not self.gate(index, out):
                raise ChainStopped(index, out)
        return out

    __call__ = run


class Router:
    """Sends the input to the route named by ``classifier(input)``, else to ``default``."""

    __slots__ = ("classifier", "default", "routes")

    def __init__(
        self,
        routes: Mapping[str, Step],
        classifier: Callable[[Any], str],
        *,
        default: Step | None = None,
    ) -> None:
        self.routes: dict[str, Step] = _nonempty(dict(routes), "Router routes")
        self.classifier = classifier
        self.default = default

    def run(self, input: Any) -> Any:
        """The chosen route's output; ``KeyError`` for an unknown key without a default."""
        key = self.classifier(input)
        route = self.routes.get(key, self.default)
        if route is None:
            raise KeyError(f"classifier returned '{key}', not in routes {sorted(self.routes)}")
        return route(input)

    __call__ = run


class Parallel:
    """Runs every branch on the same input (sectioning, voting); optionally on threads."""

    __slots__ = ("aggregate", "branches", "max_workers")

    def __init__(
        self,
        branches: Iterable[Step],
        *,
        max_workers: int | None = None,
        aggregate: Aggregate | None = None,
    ) -> None:
        self.branches: tuple[Step, ...] = _nonempty(tuple(branches), "Parallel branches")
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, not {max_workers}")
        self.max_workers = max_workers
        self.aggregate = aggregate

    def run(self, input: Any) -> Any:
        """The branch outputs in branch order, or ``aggregate`` of them."""
        outputs = self._fan_out(input)
        return outputs if self.aggregate is None else self.aggregate(outputs)

    __call__ = run

    def _fan_out(self, input: Any) -> list[Any]:
        workers = min(self.max_workers or 1, len(self.branches))
        if workers == 1:
            return [branch(input) for branch in self.branches]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(branch, input) for branch in self.branches]
        return [future.result() for future in futures]  # all have finished: the pool is shut


class OrchestratorWorker:
    """Splits the input into subtasks, hands them to workers round-robin, then synthesizes."""

    __slots__ = ("orchestrator", "synthesizer", "workers")

    def __init__(
        self,
        orchestrator: Callable[[Any], Iterable[Any]],
        workers: Iterable[Step],
        *,
        synthesizer: Aggregate | None = None,
    ) -> None:
        self.orchestrator = orchestrator
        self.workers: tuple[Step, ...] = _nonempty(tuple(workers), "OrchestratorWorker workers")
        self.synthesizer = synthesizer

    def run(self, input: Any) -> Any:
        """Worker ``i % len(workers)`` handles subtask ``i``; outputs come in subtask order."""
        subtasks = list(self.orchestrator(input))
        n = len(self.workers)
        outputs = [self.workers[i % n](task) for i, task in enumerate(subtasks)]
        return outputs if self.synthesizer is None else self.synthesizer(outputs)

    __call__ = run


Attempt = tuple[Any, Any]
"""One pass of an ``EvaluatorOptimizer``: ``(candidate, verdict)``."""


@dataclass(frozen=True, slots=True)
class EvaluatorOptimizer:
    """Generates, evaluates and regenerates with the evaluator's feedback, ``max_iters`` times.

    A verdict is a ``Result`` (``ok``, ``value``, ``feedback``) or any truthy/falsy value. A
    ``generator`` that takes two positional arguments is called ``generate(input, feedback)``
    on every pass, as in cantus: ``feedback`` is None on the first, then the previous
    ``Result.feedback`` (None after a plain falsy verdict). One taking one argument gets the
    input alone.
    """

    generator: Callable[..., Any]
    evaluator: Step
    max_iters: int = 3

    def __post_init__(self) -> None:
        if self.max_iters < 1:
            raise ValueError(f"max_iters must be at least 1, not {self.max_iters}")

    def run(self, input: Any) -> Any:
        """The accepted candidate (or the accepting ``Result``'s value), else the last one."""
        return self.run_with_history(input)[0]

    __call__ = run

    def run_with_history(self, input: Any) -> tuple[Any, list[Attempt]]:
        """``run``'s value with every ``(candidate, verdict)`` pass of this run, in order."""
        with_feedback = _takes_two_positionals(self.generator)
        history: list[Attempt] = []
        feedback: str | None = None
        candidate: Any = None
        for _ in range(self.max_iters):
            args = (input, feedback) if with_feedback else (input,)
            candidate = self.generator(*args)
            verdict = self.evaluator(candidate)
            history.append((candidate, verdict))
            ok, value, feedback = _judge(verdict)
            if ok:
                return (candidate if value is None else value), history
        return candidate, history


def _takes_two_positionals(fn: Callable[..., Any]) -> bool:
    if isinstance(fn, Skill):  # a skill's ``__call__`` takes anything: ask what it runs
        fn = fn._target()
    try:
        inspect.signature(fn).bind(None, None)
    except (TypeError, ValueError):  # too few/many parameters, or no signature (some builtins)
        return False
    return True


def _judge(verdict: Any) -> tuple[bool, Any, str | None]:
    """``(accepted, value, feedback)`` from a ``Result`` or a plain truthy/falsy verdict."""
    if isinstance(verdict, Result):
        return verdict.ok, verdict.value, verdict.feedback
    return bool(verdict), None, None
