"""The wire of MCP Tasks, which the SDK (2.3) does not speak itself: its requests (``tasks/get``,
``tasks/result``, ``tasks/update``, ``tasks/cancel``) sent through the SDK session's own request
API, the 2026-07-28 extension's task answer as a result shape the SDK hands on (a
``ResultClaim``), and the 2025-11-25 answer to a task-augmented ``tools/call``, which the SDK
refuses (its tables leave tasks out), reshaped on its way in so that it passes (``TaskAnswers``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

__all__ = ["CARRIED", "EXTENSION", "TaskAnswers", "ask", "extension"]

EXTENSION = "io.modelcontextprotocol/tasks"
CARRIED = "io.github.tether/task"
"""Where ``TaskAnswers`` puts the task of a 2025-11-25 ``CreateTaskResult`` (in ``_meta``)."""

_models: dict[str, Any] = {}


def _wire() -> dict[str, Any]:
    """The request classes and the untyped result adapter, made on first use (the SDK is
    imported lazily)."""
    if _models:
        return _models
    from typing import Literal  # noqa: PLC0415

    from mcp_types import Request, RequestParams  # noqa: PLC0415
    from pydantic import TypeAdapter  # noqa: PLC0415

    class TaskParams(RequestParams):
        task_id: str

    class UpdateParams(TaskParams):
        input_responses: dict[str, Any]

    # name_param: the task id goes in Mcp-Name over Streamable HTTP, as the extension asks
    class TaskGet(Request[TaskParams, Literal["tasks/get"]]):
        method: Literal["tasks/get"] = "tasks/get"
        params: TaskParams
        name_param = "taskId"

    class TaskResult(Request[TaskParams, Literal["tasks/result"]]):
        method: Literal["tasks/result"] = "tasks/result"
        params: TaskParams
        name_param = "taskId"

    class TaskCancel(Request[TaskParams, Literal["tasks/cancel"]]):
        method: Literal["tasks/cancel"] = "tasks/cancel"
        params: TaskParams
        name_param = "taskId"

    class TaskUpdate(Request[UpdateParams, Literal["tasks/update"]]):
        method: Literal["tasks/update"] = "tasks/update"
        params: UpdateParams
        name_param = "taskId"

    _models.update(
        {
            "tasks/get": (TaskGet, TaskParams),
            "tasks/result": (TaskResult, TaskParams),
            "tasks/cancel": (TaskCancel, TaskParams),
            "tasks/update": (TaskUpdate, UpdateParams),
            "any": TypeAdapter(dict[str, Any]),
        }
    )
    return _models


async def ask(session: Any, method: str, task_id: str, **extra: Any) -> dict[str, Any]:
    """Send ``method`` about task ``task_id`` through ``session`` (the SDK's ``ClientSession``);
    its answer as a JSON object, unchecked."""
    wire = _wire()
    request_type, params_type = wire[method]
    request = request_type(params=params_type(task_id=task_id, **extra))
    answer: dict[str, Any] = await session.send_request(request, wire["any"])
    return answer


def extension(resolve: Callable[[Any, Any], Awaitable[Any]]) -> Any:
    """The SDK client extension that declares ``io.modelcontextprotocol/tasks`` and hands each
    task answer of ``tools/call`` (``resultType: "task"``) to ``resolve(created, context)``,
    whose ``CallToolResult`` becomes the call's result."""
    from typing import Literal  # noqa: PLC0415

    from mcp.client.extension import ClientExtension, ResultClaim  # noqa: PLC0415
    from mcp_types import Result  # noqa: PLC0415
    from pydantic import ConfigDict  # noqa: PLC0415

    class CreatedTask(Result):
        """A ``CreateTaskResult`` of the extension (the task's fields, flat)."""

        model_config = ConfigDict(extra="allow")
        result_type: Literal["task"] = "task"
        task_id: str
        status: str

    class Tasks(ClientExtension):
        identifier = EXTENSION

        def claims(self) -> list[ResultClaim[Any]]:
            return [ResultClaim(result_type="task", model=CreatedTask, resolve=resolve)]

    return Tasks()


class TaskAnswers:
    """Notes the ids of task-augmented ``tools/call`` requests going out (``sent``) and reshapes
    the answers to them coming in (``received``): a ``CreateTaskResult`` (``{"task": {...}}``)
    becomes an empty ``CallToolResult`` carrying the task in ``_meta[CARRIED]``."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: set[str] = set()

    def sent(self, item: Any) -> None:
        """Called with each ``SessionMessage`` written to the server."""
        message: Any = getattr(item, "message", None)
        params = getattr(message, "params", None)
        if (
            getattr(message, "method", None) == "tools/call"
            and isinstance(params, Mapping)
            and params.get("task") is not None
            and hasattr(message, "id")
        ):
            self._pending.add(str(message.id))

    def received(self, item: Any) -> None:
        """Called with each ``SessionMessage`` (or ``Exception``) read from the server."""
        from mcp_types import JSONRPCError, JSONRPCResponse  # noqa: PLC0415

        message = getattr(item, "message", None)
        if not self._pending or not isinstance(message, JSONRPCResponse | JSONRPCError):
            return
        key = str(message.id)
        if key not in self._pending:
            return
        self._pending.discard(key)
        if not isinstance(message, JSONRPCResponse):
            return
        result = message.result
        if isinstance(result.get("task"), dict) and "content" not in result:
            message.result = {"content": [], "_meta": {CARRIED: result["task"]}}
