"""``TemporalAgent``: an ``Agent`` run as a Temporal workflow, every model call and tool call an
activity, so a run outlives the process that started it and a worker killed mid-run costs no
finished call."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from ..agent import Agent
from ..context import Compaction
from ..loop import Approval, check_approval, spec_for
from ..stores.base import SessionRows
from ..tools.tool import Tool
from .activities import AgentActivities, activity_names
from .blobs import Blobs, StoreBlobs
from .client import DurableRun
from .codec import offloading
from .live import FLUSH
from .options import DurableOptions
from .payloads import RunInput, RunOutput
from .spec import DurableSpec
from .workflow import workflow_class

__all__ = ["TemporalAgent"]


class TemporalAgent:
    """``agent`` as the durable workflow ``name`` (default: the agent's own name).

    - ``store``: a tether store (``PostgresStore`` shared by all workers) keeping each run's
      messages under its workflow id; without one they live in the workflow's history.
    - ``approval``: tool names (or a test of name and arguments) whose calls wait for
      ``DurableRun.approve`` / ``deny``.
    - ``options``: timeouts, retries, history limits (``DurableOptions``).
    - ``blobs``: where payloads too large for Temporal go (``FileBlobs`` on a disk every worker
      and client shares, or any ``Blobs``); with a store and no ``blobs``, the store's rows.
      ``worker``, ``serving``, ``start`` and ``get`` add the codec that does it to the client.

    The agent's tools run on workers; its selector, guardrails and context policy run inside
    the workflow and must be deterministic (no I/O, no clock).
    """

    def __init__(
        self,
        agent: Agent,
        *,
        name: str | None = None,
        store: SessionRows | None = None,
        approval: Approval | None = None,
        options: DurableOptions | None = None,
        blobs: Blobs | None = None,
    ) -> None:
        name = agent.name if name is None else name
        _check_durable(agent, name, store, approval, blobs)
        self.agent = agent
        self.name = name
        self.store = store
        self.approval = approval
        self.options = options if options is not None else DurableOptions()
        self.blobs = blobs if blobs is not None or store is None else StoreBlobs(store)
        self.names = activity_names(name)
        self.spec = DurableSpec(agent, name, store, approval, self.options, self.names, self.blobs)
        self.activities = AgentActivities(
            agent, name, store, options=self.options, offloads=self.blobs is not None
        )
        self.workflow = workflow_class(self.spec)

    def connected(self) -> AbstractAsyncContextManager[TemporalAgent]:
        """Connect the agent's tool sources that need it (MCP servers) for a worker's life:
        ``async with agent.connected(), agent.worker(client, queue): ...``."""
        return _connected(self)

    def worker(self, client: Client, task_queue: str, **options: Any) -> Worker:
        """A Temporal worker running this agent's workflow and activities on ``task_queue``
        (``options`` go to ``temporalio.worker.Worker``)."""
        return TemporalAgent.serving([self], client, task_queue, **options)

    async def start(
        self,
        client: Client,
        prompt: str,
        *,
        task_queue: str,
        id: str | None = None,
        keep_open: bool = False,
        execution_timeout: float | None = None,
    ) -> DurableRun:
        """Start a run on ``prompt`` (``keep_open``: wait for more messages after answering,
        until ``close``); its handle."""
        client = self.client(client)
        handle = await client.start_workflow(
            self.name,
            RunInput(prompt, keep_open),
            id=id if id is not None else f"{self.name}-{os.urandom(8).hex()}",
            task_queue=task_queue,
            result_type=RunOutput,
            execution_timeout=(
                None if execution_timeout is None else timedelta(seconds=execution_timeout)
            ),
        )
        return DurableRun(handle, client)

    async def run(
        self, client: Client, prompt: str, *, task_queue: str, id: str | None = None
    ) -> Any:
        """Run ``prompt`` durably to its answer (``DurableRunError`` if it ended with an error):
        its text, or for an agent with ``output_type`` the value (validated, and sent back for
        repair, inside the workflow as ``Agent.run`` does)."""
        started = await self.start(client, prompt, task_queue=task_queue, id=id)
        answer = await started.answer()
        if self.agent.output_type is None:
            return answer
        return spec_for(self.agent.output_type).read(answer)

    def get(self, client: Client, id: str) -> DurableRun:
        """The handle of the run ``id`` (started earlier, by anyone)."""
        client = self.client(client)
        return DurableRun(client.get_workflow_handle(id, result_type=RunOutput), client)

    def client(self, client: Client) -> Client:
        """``client`` able to read and write this agent's payloads (the same connection, with
        the codec that offloads large ones to its blobs; ``client`` itself when it has none)."""
        return offloading(client, self.blobs, self.options.offload_bytes)

    @staticmethod
    def serving(
        agents: Sequence[TemporalAgent], client: Client, task_queue: str, **options: Any
    ) -> Worker:
        """One worker for several durable agents on one task queue. Its activities' heartbeats
        go out as they come (at most every ``FLUSH`` seconds, not Temporal's default of most of
        the heartbeat timeout): they carry what running calls show to ``DurableRun.events()``
        (a worker made otherwise needs ``max_heartbeat_throttle_interval`` so for that)."""
        options.setdefault("max_heartbeat_throttle_interval", timedelta(seconds=FLUSH))
        offloads = {(id(a.blobs), a.options.offload_bytes) for a in agents if a.blobs is not None}
        if len(offloads) > 1:
            raise ValueError(
                "one worker serves durable agents that offload to one blob store, at one size; "
                f"{', '.join(a.name for a in agents)} differ: serve them apart"
            )
        offloading_agents = [a for a in agents if a.blobs is not None]
        if offloading_agents:
            client = offloading_agents[0].client(client)
        return Worker(
            client,
            task_queue=task_queue,
            workflows=[a.workflow for a in agents],
            activities=[d for a in agents for d in a.activities.definitions()],
            **options,
        )

    def __repr__(self) -> str:
        return f"TemporalAgent({self.name!r}, agent={self.agent.name!r})"


def _check_durable(
    agent: Agent,
    name: str,
    store: SessionRows | None,
    approval: Approval | None,
    blobs: Blobs | None,
) -> None:
    """Refuse what cannot run durably: a name with spaces, a store or blob store of the wrong
    kind, and the agent features that would not run inside a workflow."""
    if not name or any(c.isspace() for c in name):
        raise ValueError(f"a durable agent needs a name without spaces, got {name!r}")
    if store is not None and not isinstance(store, SessionRows):
        raise TypeError(f"durable agent {name!r}: {store!r} is not a tether store")
    if blobs is not None and not isinstance(blobs, Blobs):
        raise TypeError(f"durable agent {name!r}: {blobs!r} is not a blob store (put/get)")
    check_approval(approval)  # one definition with Agent(approval=)
    if agent.handoffs or agent.approval is not None:
        raise ValueError(
            f"durable agent {name!r}: handoffs and Agent(approval=) do not run in a workflow "
            "yet (TemporalAgent(approval=) waits for a person durably)"
        )
    policy = agent.context_policy
    if isinstance(policy, Compaction) and policy.summarizer is not None:
        raise ValueError(
            f"durable agent {name!r}: Compaction(summarizer=...) would call a model from the "
            "workflow; leave summarizer=None (the agent's own model summarises, in an activity)"
        )


@asynccontextmanager
async def _connected(durable: TemporalAgent) -> AsyncIterator[TemporalAgent]:
    async with AsyncExitStack() as stack:
        for source in durable.agent.tools:
            if not isinstance(source, Tool) and hasattr(source, "__aenter__"):
                await stack.enter_async_context(source)  # type: ignore[arg-type]
        yield durable
