"""The engine: the one loop and its steps, and the face the doors build on.

A door (``session``, ``prompty``, ``skills``, ``durable``, ``serve``, ``cli``) imports the engine
only from here, never from a module of this package, so the modules may move while these names
stay. The face, by what a door does with it:

- run an agent: ``AgentConfig`` (what an ``Agent`` holds), ``run_loop`` / ``Run`` (the loop;
  ``RunState`` and ``UserInput`` its state and input), ``AgentStream`` and ``observed`` (the
  events of a run, with the final answer);
- bracket calls: ``Middleware`` and its requests (``RunRequest``, ``ModelRequest``,
  ``ToolRequest``) and handlers (``RunHandler``, ``ModelHandler``, ``ToolHandler``),
  ``model_chain``, ``call_transport`` and ``as_generator`` to build and call a chain;
- steer and stop: ``CancellationToken``, ``Steering``, ``Limits``;
- pause for a person: ``Approval``, ``approver``, ``check_approval``, ``Decisions``,
  ``pending``, ``open_calls``, ``RECORD`` and ``without_record`` (the pause record in a history);
- run tools outside a run (a durable activity, a door's own step): ``dispatcher_for``,
  ``run_calls``, ``run_in_tasks``, ``tools_by_name``, ``CompleteCalls``, ``ReplyBuilder``
  (a reply from events), ``spec_for`` (typed output), ``agent_tool`` (an agent as a tool).

Every name loads its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.lazy import lazy_names as _lazy_names

# Each name with the module it loads from on first use; ``__all__`` is this table.
_HOMES = {
    "agent_tool": "delegation",
    "AgentConfig": "config",
    "AgentStream": "stream",
    "Approval": "approval",
    "approver": "approval",
    "as_generator": "middleware",
    "call_transport": "middleware",
    "CancellationToken": "control",
    "check_approval": "approval",
    "CompleteCalls": "call_start",
    "Decisions": "approval",
    "dispatcher_for": "dispatch",
    "Limits": "limits",
    "Middleware": "middleware",
    "model_chain": "middleware",
    "ModelHandler": "middleware",
    "ModelRequest": "middleware",
    "observed": "stream",
    "open_calls": "approval",
    "pending": "approval",
    "RECORD": "approval",
    "ReplyBuilder": "reply",
    "reply_cost": "limits",
    "Run": "run",
    "run_calls": "dispatch",
    "run_in_tasks": "dispatch",
    "run_loop": "entry",
    "RunHandler": "middleware",
    "RunRequest": "middleware",
    "RunState": "state",
    "spec_for": "output",
    "Steering": "control",
    "ToolHandler": "middleware",
    "ToolRequest": "middleware",
    "tools_by_name": "dispatch",
    "UserInput": "state",
    "without_record": "approval",
}

__all__ = list(_HOMES)

if TYPE_CHECKING:
    from .approval import RECORD as RECORD
    from .approval import Approval as Approval
    from .approval import Decisions as Decisions
    from .approval import approver as approver
    from .approval import check_approval as check_approval
    from .approval import open_calls as open_calls
    from .approval import pending as pending
    from .approval import without_record as without_record
    from .call_start import CompleteCalls as CompleteCalls
    from .config import AgentConfig as AgentConfig
    from .control import CancellationToken as CancellationToken
    from .control import Steering as Steering
    from .delegation import agent_tool as agent_tool
    from .dispatch import dispatcher_for as dispatcher_for
    from .dispatch import run_calls as run_calls
    from .dispatch import run_in_tasks as run_in_tasks
    from .dispatch import tools_by_name as tools_by_name
    from .entry import run_loop as run_loop
    from .limits import Limits as Limits
    from .limits import reply_cost as reply_cost
    from .middleware import Middleware as Middleware
    from .middleware import ModelHandler as ModelHandler
    from .middleware import ModelRequest as ModelRequest
    from .middleware import RunHandler as RunHandler
    from .middleware import RunRequest as RunRequest
    from .middleware import ToolHandler as ToolHandler
    from .middleware import ToolRequest as ToolRequest
    from .middleware import as_generator as as_generator
    from .middleware import call_transport as call_transport
    from .middleware import model_chain as model_chain
    from .output import spec_for as spec_for
    from .reply import ReplyBuilder as ReplyBuilder
    from .run import Run as Run
    from .state import RunState as RunState
    from .state import UserInput as UserInput
    from .stream import AgentStream as AgentStream
    from .stream import observed as observed

__getattr__ = _lazy_names(__name__, _HOMES)
