"""The Temporal workflow class of a durable agent: its run, signals and queries, each handed to
the ``DurableSession`` that does the work. One class per agent name, made when the agent is."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

from .payloads import Decision, RunInput, RunOutput
from .session import DurableSession
from .spec import DurableSpec

__all__ = ["workflow_class"]


def workflow_class(durable: DurableSpec) -> type:
    """A workflow class named ``durable.name`` that runs ``durable``'s agent.

    Not sandboxed: the loop's time and chance come from Temporal (``WorkflowClock``), every
    call is an activity, and tether's modules are imported once per worker, not per run.
    """

    @workflow.defn(name=durable.name, sandboxed=False)
    class DurableAgentWorkflow:
        @workflow.init
        def __init__(self, start: RunInput) -> None:
            self.session = DurableSession(durable, start)

        async def run(self, start: RunInput) -> RunOutput:
            return await self.session.main(start)

        # Temporal refuses run methods of local classes, which a sandbox could not import again
        # by name; this workflow runs unsandboxed, so the class made here is all it needs.
        run.__qualname__ = "DurableAgentWorkflow.run"
        run = workflow.run(run)

        @workflow.signal(name="user_message")
        def user_message(self, text: str) -> None:
            self.session.user_message(text)

        @workflow.signal(name="decide")
        def decide(self, decision: Decision) -> None:
            self.session.decide(decision.call_id, decision.approved, decision.reason)

        @workflow.signal(name="cancel")
        def cancel(self) -> None:
            self.session.cancel()

        @workflow.signal(name="close")
        def close(self) -> None:
            self.session.close()

        @workflow.query(name="progress")
        def progress(self) -> dict[str, Any]:
            return self.session.progress()

        @workflow.query(name="transcript")
        def transcript(self) -> list[dict[str, Any]]:
            return self.session.transcript()

        @workflow.query(name="events")
        def events(self, after: int) -> dict[str, Any]:
            return self.session.events(after)

    DurableAgentWorkflow.__qualname__ = f"DurableAgentWorkflow[{durable.name}]"
    return DurableAgentWorkflow
