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

from ..base.lazy import lazy_names as _lazy_names

# The public names, each with the module it loads from on first use: ``__all__`` is this table,
# and the imports below repeat it for type checkers only (tests/test_public_api.py checks them).
_HOMES = {
    "Action": "events",
    "AgentState": "events",
    "CallSkillAction": "events",
    "ChainStopped": "workflows",
    "EvaluatorOptimizer": "workflows",
    "EventStream": "events",
    "FinalAnswerAction": "events",
    "FunctionSkill": "base",
    "JsonLinesParseError": "persistence",
    "JsonLinesPersistence": "persistence",
    "MaxIterationsObservation": "events",
    "MockModel": "mock",
    "MockModelExhausted": "mock",
    "ModelErrorObservation": "events",
    "ModelHandle": "agent",
    "Observation": "events",
    "OrchestratorWorker": "workflows",
    "Parallel": "workflows",
    "PromptChain": "workflows",
    "Registry": "registry",
    "Result": "result",
    "Router": "workflows",
    "Skill": "base",
    "SkillAgent": "agent",
    "SkillObservation": "events",
    "Soul": "soul",
    "SoulParseError": "soul",
    "ToolErrorObservation": "events",
    "ValidationErrorObservation": "events",
    "Workflow": "workflows",
    "action_schema": "protocol",
    "build_prompt": "protocol",
    "get_registry": "registry",
    "parse_action": "protocol",
    "register_skill": "registry",
    "register_validator": "registry",
    "skill": "registry",
}

__all__ = list(_HOMES)

if TYPE_CHECKING:
    from .agent import ModelHandle as ModelHandle
    from .agent import SkillAgent as SkillAgent
    from .base import FunctionSkill as FunctionSkill
    from .base import Skill as Skill
    from .events import Action as Action
    from .events import AgentState as AgentState
    from .events import CallSkillAction as CallSkillAction
    from .events import EventStream as EventStream
    from .events import FinalAnswerAction as FinalAnswerAction
    from .events import MaxIterationsObservation as MaxIterationsObservation
    from .events import ModelErrorObservation as ModelErrorObservation
    from .events import Observation as Observation
    from .events import SkillObservation as SkillObservation
    from .events import ToolErrorObservation as ToolErrorObservation
    from .events import ValidationErrorObservation as ValidationErrorObservation
    from .mock import MockModel as MockModel
    from .mock import MockModelExhausted as MockModelExhausted
    from .persistence import JsonLinesParseError as JsonLinesParseError
    from .persistence import JsonLinesPersistence as JsonLinesPersistence
    from .protocol import action_schema as action_schema
    from .protocol import build_prompt as build_prompt
    from .protocol import parse_action as parse_action
    from .registry import Registry as Registry
    from .registry import get_registry as get_registry
    from .registry import register_skill as register_skill
    from .registry import register_validator as register_validator
    from .registry import skill as skill
    from .result import Result as Result
    from .soul import Soul as Soul
    from .soul import SoulParseError as SoulParseError
    from .workflows import ChainStopped as ChainStopped
    from .workflows import EvaluatorOptimizer as EvaluatorOptimizer
    from .workflows import OrchestratorWorker as OrchestratorWorker
    from .workflows import Parallel as Parallel
    from .workflows import PromptChain as PromptChain
    from .workflows import Router as Router
    from .workflows import Workflow as Workflow

__getattr__ = _lazy_names(__name__, _HOMES)
