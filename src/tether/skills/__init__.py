"""The SkillAgent door (cantus's agent): small local models without native tool calling use
skills through a JSON action protocol, on tether's one loop.

- ``SkillAgent(model, registry=get_registry(), soul=None)``: ``step``, ``run`` (+ ``_async``).
- Skills: ``@skill`` / ``register_skill`` (process-wide), ``Skill``, ``Registry()``; hooks in
  ``tether.skills.hooks`` (``validator``, ``analyzer``) return ``Result``;
  ``register_validator`` names a validator process-wide (``@skill(post_hook="name")``).
- Tests: ``MockModel`` plays scripted replies.
- The record: ``AgentState(query, stream)``, ``EventStream``, the actions and observations,
  ``JsonLinesPersistence``. Identity: ``Soul`` from a SOUL.md. Workflows: ``PromptChain``,
  ``Router``, ``Parallel``, ``OrchestratorWorker``, ``EvaluatorOptimizer``.

Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from .agent import ModelHandle, SkillAgent
    from .base import FunctionSkill, Skill
    from .events import (
        Action,
        AgentState,
        CallSkillAction,
        EventStream,
        FinalAnswerAction,
        MaxIterationsObservation,
        ModelErrorObservation,
        Observation,
        SkillObservation,
        ToolErrorObservation,
        ValidationErrorObservation,
    )
    from .mock import MockModel, MockModelExhausted
    from .persistence import JsonLinesParseError, JsonLinesPersistence
    from .protocol import action_schema, build_prompt, parse_action
    from .registry import Registry, get_registry, register_skill, register_validator, skill
    from .result import Result
    from .soul import Soul, SoulParseError
    from .workflows import (
        ChainStopped,
        EvaluatorOptimizer,
        OrchestratorWorker,
        Parallel,
        PromptChain,
        Router,
        Workflow,
    )

_HOMES = {
    "SkillAgent": "agent",
    "ModelHandle": "agent",
    "Action": "events",
    "AgentState": "events",
    "CallSkillAction": "events",
    "EventStream": "events",
    "FinalAnswerAction": "events",
    "MaxIterationsObservation": "events",
    "ModelErrorObservation": "events",
    "Observation": "events",
    "SkillObservation": "events",
    "ToolErrorObservation": "events",
    "ValidationErrorObservation": "events",
    "JsonLinesParseError": "persistence",
    "JsonLinesPersistence": "persistence",
    "MockModel": "mock",
    "MockModelExhausted": "mock",
    "Result": "result",
    "Skill": "base",
    "FunctionSkill": "base",
    "Registry": "registry",
    "get_registry": "registry",
    "register_skill": "registry",
    "register_validator": "registry",
    "skill": "registry",
    "Soul": "soul",
    "SoulParseError": "soul",
    "PromptChain": "workflows",
    "Router": "workflows",
    "Parallel": "workflows",
    "OrchestratorWorker": "workflows",
    "EvaluatorOptimizer": "workflows",
    "ChainStopped": "workflows",
    "Workflow": "workflows",
    "action_schema": "protocol",
    "parse_action": "protocol",
    "build_prompt": "protocol",
}

__all__ = [
    "Action",
    "AgentState",
    "CallSkillAction",
    "ChainStopped",
    "EvaluatorOptimizer",
    "EventStream",
    "FinalAnswerAction",
    "FunctionSkill",
    "JsonLinesParseError",
    "JsonLinesPersistence",
    "MaxIterationsObservation",
    "MockModel",
    "MockModelExhausted",
    "ModelErrorObservation",
    "ModelHandle",
    "Observation",
    "OrchestratorWorker",
    "Parallel",
    "PromptChain",
    "Registry",
    "Result",
    "Router",
    "Skill",
    "SkillAgent",
    "SkillObservation",
    "Soul",
    "SoulParseError",
    "ToolErrorObservation",
    "ValidationErrorObservation",
    "Workflow",
    "action_schema",
    "build_prompt",
    "get_registry",
    "parse_action",
    "register_skill",
    "register_validator",
    "skill",
]

__getattr__ = _lazy_names(__name__, _HOMES)
