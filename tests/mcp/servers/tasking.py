"""A real MCP server (the official SDK's ``MCPServer``) that answers some tool calls with a task,
as the 2026-07-28 extension ``io.modelcontextprotocol/tasks`` has it (``resultType: "task"``,
``tasks/get``, ``tasks/update``, ``tasks/cancel``), some of them badly on purpose. It writes
what it was asked to MARKER_DIR: ``created`` (one line per task made: its id, tool and topic),
``gets`` (one line per ``tasks/get``: the id and the time), ``cancelled`` (the ids of the tasks
cancelled), ``updates`` (one line per ``tasks/update``).

Tools answered with a task: ``research`` (done after ``seconds``, three status messages on the
way), ``forever`` (never done), ``forgetful`` (forgotten at once: ``tasks/get`` fails),
``storm`` (no poll interval, a new status message of 64 KiB on every poll, done after 1 s),
``huge`` (done with a result of 40 MB), ``broken`` (fails with a JSON-RPC error), ``ask``
(asks for input: an elicitation); ``plain`` is answered at once.

Run: python tasking.py [stdio | http PORT] MARKER_DIR
"""

from __future__ import annotations

import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp_types import RequestParams

from mcp import MCPError

EXTENSION = "io.modelcontextprotocol/tasks"
MARKERS = Path(sys.argv[-1])
TASKED = {"research", "forever", "forgetful", "storm", "huge", "broken", "ask"}


class TaskParams(RequestParams):
    task_id: str


class UpdateParams(RequestParams):
    task_id: str
    input_responses: dict[str, Any]


def _note(name: str, line: str) -> None:
    with (MARKERS / name).open("a") as f:
        f.write(line + "\n")


def _now() -> str:
    return datetime.now(UTC).isoformat()


class Tasks(Extension):
    identifier = EXTENSION

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, self.get),
            MethodBinding("tasks/cancel", TaskParams, self.cancel),
            MethodBinding("tasks/update", UpdateParams, self.update),
        ]

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        if params.name not in TASKED:
            return await call_next(ctx)
        declared = (ctx.meta or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
        if EXTENSION not in (declared.get("extensions") or {}):
            raise MCPError(-32021, "Missing required client capability")
        task_id = str(uuid.uuid4())
        arguments = params.arguments or {}
        self.tasks[task_id] = {
            "tool": params.name,
            "started": time.monotonic(),
            "seconds": float(arguments.get("seconds", 0.6)),
            "topic": arguments.get("topic", ""),
            "created": _now(),
            "polls": 0,
            "answer": None,
        }
        _note("created", f"{task_id} {params.name} {arguments.get('topic', '')}".strip())
        return {"resultType": "task", **self._shape(task_id, "working", "started")}

    def _shape(self, task_id: str, status: str, message: str | None = None) -> dict[str, Any]:
        task = self.tasks[task_id]
        shape: dict[str, Any] = {
            "taskId": task_id,
            "status": status,
            "createdAt": task["created"],
            "lastUpdatedAt": _now(),
            "ttlMs": 600_000,
            "pollIntervalMs": 0 if task["tool"] == "storm" else 50,
        }
        if message is not None:
            shape["statusMessage"] = message
        return shape

    async def get(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        _note("gets", f"{params.task_id} {time.time():.3f}")
        task = self.tasks.get(params.task_id)
        if task is None or task["tool"] == "forgetful":
            raise MCPError(-32602, "Failed to retrieve task: Task not found")
        task["polls"] += 1
        return {"resultType": "complete", **self._state(params.task_id, task)}

    def _state(self, task_id: str, task: dict[str, Any]) -> dict[str, Any]:
        tool, elapsed = task["tool"], time.monotonic() - task["started"]
        if task.get("cancelled"):
            return self._shape(task_id, "cancelled")
        if tool == "research":
            if elapsed < task["seconds"]:
                step = 1 + int(3 * elapsed / task["seconds"])
                return self._shape(task_id, "working", f"stage {step} of 3")
            return self._done(task_id, f"report on {task['topic']}")
        if tool == "storm":
            if elapsed < 1.0:
                return self._shape(task_id, "working", f"poll {task['polls']} " + "x" * 65_536)
            return self._done(task_id, "calm again")
        if tool == "huge":
            return self._done(task_id, "y" * 40_000_000)
        if tool == "broken":
            failed = self._shape(task_id, "failed", "Tool execution failed: rate limit")
            return {**failed, "error": {"code": -32603, "message": "API rate limit exceeded"}}
        if tool == "ask":
            return self._asking(task_id, task)
        return self._shape(task_id, "working", "still at it")  # forever

    def _asking(self, task_id: str, task: dict[str, Any]) -> dict[str, Any]:
        if task["answer"] is not None:
            return self._done(task_id, f"you said {task['answer']}")
        request = {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Which colour?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"colour": {"type": "string"}},
                    "required": ["colour"],
                },
            },
        }
        return {**self._shape(task_id, "input_required"), "inputRequests": {"colour": request}}

    def _done(self, task_id: str, text: str) -> dict[str, Any]:
        result = {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"result": text},
            "isError": False,
        }
        return {**self._shape(task_id, "completed"), "result": result}

    async def update(self, ctx: Any, params: UpdateParams) -> dict[str, Any]:
        task = self.tasks.get(params.task_id)
        if task is None:
            raise MCPError(-32602, "Task not found")
        answer = params.input_responses.get("colour") or {}
        _note("updates", f"{params.task_id} {answer}")
        if answer.get("action") == "accept":
            task["answer"] = (answer.get("content") or {}).get("colour")
        else:
            task["answer"] = f"nothing ({answer.get('action')})"
        return {"resultType": "complete"}

    async def cancel(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        task = self.tasks.get(params.task_id)
        if task is None:
            raise MCPError(-32602, "Task not found")
        task["cancelled"] = True
        _note("cancelled", params.task_id)
        return {"resultType": "complete"}


server = MCPServer("tasking", version="1.0.0", extensions=[Tasks()])


@server.tool()
def research(topic: str, seconds: float = 0.6) -> str:
    """Research ``topic`` (answered with a task)."""
    raise AssertionError("answered by the task extension")


@server.tool()
def forever() -> str:
    """Never finishes (answered with a task)."""
    raise AssertionError("answered by the task extension")


@server.tool()
def forgetful() -> str:
    """A task the server forgets at once."""
    raise AssertionError("answered by the task extension")


@server.tool()
def storm() -> str:
    """A task whose status changes on every poll, with no poll interval."""
    raise AssertionError("answered by the task extension")


@server.tool()
def huge() -> str:
    """A task whose result is far too big."""
    raise AssertionError("answered by the task extension")


@server.tool()
def broken() -> str:
    """A task that fails with a JSON-RPC error."""
    raise AssertionError("answered by the task extension")


@server.tool()
def ask() -> str:
    """A task that asks which colour."""
    raise AssertionError("answered by the task extension")


@server.tool()
def plain() -> str:
    """Answered at once."""
    return "plain answer"


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
