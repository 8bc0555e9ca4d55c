"""``ListedTools``: an agent's tool sources (MCP servers) as the workflow sees them. Listing is
I/O, so each iteration's list comes from an activity on a worker; the workflow gets the tools'
specs only (their calls are activities anyway)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from ..errors import RemoteError
from ..tools.tool import Tool
from .options import DurableOptions
from .payloads import spec_to_dict

__all__ = ["ListedTools", "listing_of"]


def listing_of(tool: Tool) -> dict[str, Any]:
    """What the workflow needs of a tool: its spec, whether it is idempotent, its timeout."""
    return {**spec_to_dict(tool.spec), "idempotent": tool.idempotent, "timeout": tool.timeout}


def _on_a_worker(**arguments: Any) -> Any:
    raise RuntimeError("a durable agent's tools run on workers, as activities")


def _stand_in(listed: Mapping[str, Any]) -> Tool:
    return Tool(
        listed["name"],
        _on_a_worker,
        listed["description"],
        schema=listed["schema"],
        strict=listed.get("strict"),
        idempotent=bool(listed.get("idempotent")),
        timeout=listed.get("timeout"),
    )


class ListedTools:
    """A ``ToolSource`` inside the workflow: the worker's tools, listed by an activity, tried
    ``options.model_attempts`` times; then the run ends with the listing's error."""

    __slots__ = ("activity", "options", "timeout")

    def __init__(self, activity: str, options: DurableOptions, timeout: float = 60.0) -> None:
        self.activity = activity
        self.options = options
        self.timeout = timeout

    async def list_tools(self) -> list[Tool]:
        options = self.options
        retry = options.activity_retry(options.model_attempts)
        try:
            listed: list[dict[str, Any]] = await workflow.execute_activity(
                self.activity,
                0,
                result_type=list,
                start_to_close_timeout=timedelta(seconds=self.timeout),
                retry_policy=retry,
            )
        except ActivityError as exc:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            raise RemoteError(
                "ToolListingError",
                f"the agent's tools could not be listed ({options.model_attempts} attempts): "
                f"{cause}",
            ) from None
        return [_stand_in(item) for item in listed]
