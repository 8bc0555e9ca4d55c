"""``--agent MODULE:ATTR`` (or ``FILE.py:ATTR``) on ``run``, ``chat`` and ``serve``: the user's own
``Agent``, loaded as ``tether worker`` loads one (``loading.load_attribute``).

The options that shape a run (``--max-iterations``, ``--max-repeated-calls``, ``--compact-at``,
``--trace``, ``--approve``) apply to it; those that make the CLI's own agent (model, system
prompt, tools) are refused with one line saying why, as are the options of a durable run without
``--durable``: no option is ever silently ignored.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..agent import Agent
from ..context import Compaction
from ..loop import Approval, Limits
from .app import trace_middleware
from .args import UsageError
from .loading import ToolSpecError, load_attribute

__all__ = [
    "MAKES_THE_AGENT",
    "SHAPES_A_RUN",
    "agent_spec",
    "load_agent",
    "own_agent",
    "refuse",
    "refuse_durable_options",
]

Flags = Sequence[tuple[str, str]]

# (attribute of the options, the option): each makes the CLI's own agent; a loaded one has its own
MAKES_THE_AGENT: Flags = (
    ("model_given", "--model"),
    ("system_given", "--system"),
    ("temperature", "--temperature"),
    ("max_tokens", "--max-tokens"),
    ("no_stream", "--no-stream"),
    ("tools", "--tools"),
    ("no_demo_tools", "--no-demo-tools"),
    ("root", "--root"),
)

# Each shapes a run in this process: applied to a loaded agent; a durable run's runs in a worker.
SHAPES_A_RUN: Flags = (
    ("max_iterations_given", "--max-iterations"),
    ("max_repeated_calls", "--max-repeated-calls"),
    ("compact_at", "--compact-at"),
    ("trace", "--trace"),
)

_DURABLE_ONLY: Flags = (
    ("task_queue", "--task-queue"),
    ("id", "--id"),
    ("address_given", "--address"),
    ("namespace_given", "--namespace"),
)


def refuse(opts: argparse.Namespace, flags: Flags, why: str) -> None:
    """``UsageError`` (``OPTION why``) for the first of ``flags`` given on the command line."""
    for attribute, option in flags:
        if getattr(opts, attribute, None):
            raise UsageError(f"{option} {why}")


def refuse_durable_options(opts: argparse.Namespace) -> None:
    """The options of a durable run, given without ``--durable``, are a usage error."""
    refuse(opts, _DURABLE_ONLY, "applies only with --durable (a run through Temporal workers)")


def agent_spec(opts: argparse.Namespace) -> str | None:
    """The one ``--agent`` given (None without one); two are a usage error."""
    specs: list[str] = list(getattr(opts, "agent", None) or [])
    if len(specs) > 1:
        raise UsageError(f"tether {opts.command} takes one --agent, got {len(specs)}")
    return specs[0] if specs else None


def load_agent(spec: str) -> Agent:
    """The ``Agent`` ``MODULE:ATTR`` names; ``ToolSpecError`` for anything else."""
    value = load_attribute(spec, "--agent")
    if not isinstance(value, Agent):
        raise ToolSpecError(f"--agent {spec}: a {type(value).__name__}, not an Agent")
    return value


def own_agent(opts: argparse.Namespace, spec: str) -> Agent:
    """The agent ``spec`` names with the options that shape a run applied; ``UsageError`` for an
    option that makes the CLI's own agent, ``ToolSpecError`` for a spec that names no agent."""
    refuse(
        opts,
        MAKES_THE_AGENT,
        f"does not apply with --agent {spec}: that agent brings its own model, system prompt and "
        "tools (set them where it is made, or leave out --agent for the CLI's own agent)",
    )
    agent = load_agent(spec)
    changes: dict[str, Any] = {}
    if getattr(opts, "max_iterations_given", False):
        changes["max_iterations"] = opts.max_iterations
    if getattr(opts, "max_repeated_calls", None) is not None:
        changes["limits"] = with_repeats(agent.limits, opts.max_repeated_calls)
    if getattr(opts, "compact_at", None) is not None:
        changes["context_policy"] = Compaction(max_tokens=opts.compact_at)
    if getattr(opts, "approve", None):
        changes["approval"] = with_approval(agent.approval, opts.approve)
    if getattr(opts, "trace", None) is not None:
        changes["middleware"] = [*trace_middleware(opts.trace), *agent.middleware]
    return agent.copy(**changes) if changes else agent


def with_repeats(own: Limits | None, most: int) -> Limits:
    """The agent's own limits, with ``--max-repeated-calls``'s in place of its own."""
    return Limits(repeated_calls=most) if own is None else replace(own, repeated_calls=most)


def with_approval(own: Approval | None, tools: Collection[str]) -> Approval:
    """The agent's own approval and ``--approve``'s tools: a call waits when either says so."""
    if own is None:
        return frozenset(tools)
    if not callable(own):
        return frozenset(own) | frozenset(tools)
    asks: Callable[[str, Mapping[str, Any]], bool] = own
    extra = frozenset(tools)

    def either(name: str, arguments: Mapping[str, Any]) -> bool:
        return name in extra or asks(name, arguments)

    return either
