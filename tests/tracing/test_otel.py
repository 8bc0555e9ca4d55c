"""OpenTelemetry spans and metrics of runs, read back from the SDK's in-memory exporter and
reader: names, GenAI attributes, and nesting across parallel tools, retries, errors,
cancellation and sub-agents."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tether import Agent, Compaction, RetryPolicy, Tool, TransportError, Usage
from tether.testing import Call, Reply, ScriptedTransport
from tether.tracing import OpenTelemetry


class Traced:
    """An explicit tracer and meter provider, with what they recorded."""

    def __init__(self, *, capture_content: bool = False) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.middleware = OpenTelemetry(
            provider, MeterProvider(metric_readers=[self.reader]), capture_content=capture_content
        )

    def spans(self) -> list[ReadableSpan]:
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def metrics(self) -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = {}
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    found.setdefault(metric.name, []).extend(metric.data.data_points)
        return found


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


async def slow(n: int) -> str:
    await asyncio.sleep(0.05)
    return f"done {n}"


async def test_a_parallel_tool_loop_nests_its_calls_under_the_run() -> None:
    traced = Traced()
    calls = [Call("slow", {"n": 1}), Call("slow", {"n": 2})]
    model = ScriptedTransport(
        [Reply(tool_calls=calls, usage=Usage(100, 20, cache_read_tokens=40)), Reply("ok")]
    )
    agent = Agent("sys", model, tools=[Tool("slow", slow)], middleware=[traced.middleware])
    assert await agent.run("go") == "ok"

    (run,) = traced.named("invoke_agent")
    chats, tools = traced.named("chat"), traced.named("execute_tool")
    assert run.name == "invoke_agent agent" and parent_of(run) is None
    assert len(chats) == 2 and len(tools) == 2
    assert {parent_of(s) for s in chats + tools} == {span_id(run)}
    assert all(s.kind is SpanKind.CLIENT for s in chats)
    first, second = tools
    assert second.start_time < first.end_time  # type: ignore[operator]  # ran at once
    sent_calls = model.requests[1].messages[-2].tool_uses
    assert {s.attributes["gen_ai.tool.call.id"] for s in tools} == {c.id for c in sent_calls}
    assert {s.attributes["gen_ai.tool.name"] for s in tools} == {"slow"}
    usage = chats[0].attributes
    assert usage["gen_ai.operation.name"] == "chat"
    assert usage["gen_ai.usage.input_tokens"] == 100
    assert usage["gen_ai.usage.output_tokens"] == 20
    assert usage["gen_ai.usage.cache_read.input_tokens"] == 40
    assert usage["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert usage["tether.time_to_first_token"] >= 0
    assert run.attributes["gen_ai.usage.input_tokens"] >= 100
    assert run.attributes["tether.iterations"] == 2
    assert run.status.status_code is StatusCode.UNSET
    assert "gen_ai.input.messages" not in usage  # no content unless asked for

    metrics = traced.metrics()
    tokens = metrics["gen_ai.client.token.usage"]
    assert {p.attributes["gen_ai.token.type"] for p in tokens} == {"input", "output"}
    durations = metrics["gen_ai.client.operation.duration"]
    operations = {p.attributes["gen_ai.operation.name"]: p.count for p in durations}
    assert operations == {"chat": 2, "execute_tool": 2, "invoke_agent": 1}


async def test_a_retry_is_a_failed_chat_span_then_another() -> None:
    traced = Traced()
    model = ScriptedTransport([TransportError("overloaded", retryable=True), Reply("ok")])
    fast = RetryPolicy(max_attempts=2, initial_delay=0.001, max_delay=0.002, jitter=0.0)
    agent = Agent("sys", model, retry=fast, middleware=[traced.middleware])
    assert await agent.run("go") == "ok"
    failed, succeeded = traced.named("chat")
    assert failed.attributes["tether.attempt"] == 1 and succeeded.attributes["tether.attempt"] == 2
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "TransportError"
    assert succeeded.status.status_code is StatusCode.UNSET
    (run,) = traced.named("invoke_agent")
    assert parent_of(failed) == parent_of(succeeded) == span_id(run)


async def test_a_failing_tool_and_a_failed_run_are_errors() -> None:
    traced = Traced()

    def broken() -> str:
        raise RuntimeError("no disk")

    model = ScriptedTransport([Reply(tool_calls=[Call("broken", {})]), TransportError("gone")])
    agent = Agent("sys", model, tools=[Tool("broken", broken)], middleware=[traced.middleware])
    with pytest.raises(TransportError):
        await agent.run("go")
    (tool,) = traced.named("execute_tool")
    assert tool.attributes["error.type"] == "tool_error"
    assert tool.attributes["tether.tool.outcome"] == "error"
    assert tool.status.status_code is StatusCode.ERROR
    (run,) = traced.named("invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"] == "TransportError"
    assert run.attributes["tether.stop_reason"] == "error"


async def test_a_cancelled_run_ends_its_spans_as_cancelled() -> None:
    traced = Traced()
    started = asyncio.Event()

    async def forever() -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    model = ScriptedTransport([Reply(tool_calls=[Call("forever", {})])])
    agent = Agent("sys", model, tools=[Tool("forever", forever)], middleware=[traced.middleware])
    task = asyncio.create_task(agent.run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (tool,) = traced.named("execute_tool")
    (run,) = traced.named("invoke_agent")
    assert tool.attributes["error.type"] == "cancelled"
    assert run.attributes["error.type"] == "cancelled"
    assert parent_of(tool) == span_id(run)


async def test_a_sub_agent_called_from_a_tool_nests_under_that_tool() -> None:
    traced = Traced()
    inner = Agent(
        "inner", ScriptedTransport([Reply("42")]), name="helper", middleware=[traced.middleware]
    )

    async def ask_helper(question: str) -> str:
        return await inner.run(question)

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("ask_helper", {"question": "q"})]), Reply("ok")]
    )
    outer = Agent(
        "outer",
        model,
        tools=[Tool("ask_helper", ask_helper)],
        name="boss",
        middleware=[traced.middleware],
    )
    assert await outer.run("go") == "ok"
    boss, helper = traced.named("invoke_agent")
    assert (boss.name, helper.name) == ("invoke_agent boss", "invoke_agent helper")
    (tool,) = traced.named("execute_tool")
    assert parent_of(helper) == span_id(tool) and parent_of(tool) == span_id(boss)
    helper_chat = [s for s in traced.named("chat") if parent_of(s) == span_id(helper)]
    assert len(helper_chat) == 1
    assert helper.context.trace_id == boss.context.trace_id  # type: ignore[union-attr]


async def test_content_is_captured_only_when_asked_and_secrets_are_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACME_API_KEY", "acme-very-secret-value")
    traced = Traced(capture_content=True)

    def lookup(key: str) -> str:
        return f"found with {key} and sk-abcdefghijklmnopqrstuvwx"

    secret_call = Call("lookup", {"key": "acme-very-secret-value"})
    model = ScriptedTransport([Reply(tool_calls=[secret_call]), Reply("the answer")])
    agent = Agent("be terse", model, tools=[Tool("lookup", lookup)], middleware=[traced.middleware])
    await agent.run("password=hunter2hunter2 please")
    everything = " ".join(str(dict(s.attributes or {})) for s in traced.spans())
    for secret in ("acme-very-secret-value", "sk-abcdefghijklmnopqrstuvwx", "hunter2hunter2"):
        assert secret not in everything
    (tool,) = traced.named("execute_tool")
    assert "[REDACTED]" in tool.attributes["gen_ai.tool.call.arguments"]
    assert "found with [REDACTED]" in tool.attributes["gen_ai.tool.call.result"]
    first, last = traced.named("chat")
    assert "please" in first.attributes["gen_ai.input.messages"]
    assert first.attributes["gen_ai.system_instructions"] == "be terse"
    assert last.attributes["gen_ai.output.messages"] == "the answer"


AMBIENT = textwrap.dedent(
    """
    import asyncio, json, sys
    import tether
    assert "opentelemetry" not in sys.modules, "import tether imported OpenTelemetry"
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from tether import Agent, Tool
    from tether.session import AgentSession
    from tether.testing import Call, Reply, ScriptedTransport
    from tether.tracing import Recorder

    async def main():
        plain = Agent("s", ScriptedTransport([Reply("before")]))
        await plain.run("no sdk yet: no spans, nothing imported")
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        await Agent("s", ScriptedTransport([Reply("hi")]), name="plain").run("go")
        async with AgentSession(client=ScriptedTransport([Reply("yo")])) as session:
            await session.send("hello")
        names = sorted(s.name for s in exporter.get_finished_spans())
        exporter.clear()
        # a Recorder beside the ambient tracing, and a sub-agent: both nest it under the tool
        recorder = Recorder(sys.argv[1])
        inner = Agent("i", ScriptedTransport([Reply("42")]), name="inner", middleware=[recorder])

        async def ask(q: str) -> str:
            return await inner.run(q)

        model = ScriptedTransport([Reply(tool_calls=[Call("ask", {"q": "?"})]), Reply("ok")])
        outer = Agent("o", model, tools=[Tool("ask", ask)], name="outer", middleware=[recorder])
        await outer.run("go")
        spans = {s.name: s for s in exporter.get_finished_spans()}
        tool = spans["execute_tool ask"].context.span_id
        nested = spans["invoke_agent inner"].parent.span_id == tool
        print(json.dumps({"names": names, "otel_nested": nested}))

    asyncio.run(main())
    """
)


def test_with_an_sdk_set_up_every_run_is_traced_with_no_tether_step(tmp_path: Path) -> None:
    recorded = tmp_path / "trace.jsonl"
    out = subprocess.run(
        [sys.executable, "-c", AMBIENT, str(recorded)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    found = json.loads(out)
    names = found["names"]
    assert found["otel_nested"] is True
    lines = {line["name"]: line for line in map(json.loads, recorded.read_text().splitlines())}
    assert lines["invoke_agent inner"]["parent"] == lines["execute_tool ask"]["span"]
    assert names.count("invoke_agent plain") == 1
    assert names.count("chat ScriptedTransport") == 2
    assert len([n for n in names if n.startswith("invoke_agent")]) == 2


async def test_a_compaction_is_a_chat_span_for_the_summary_and_an_event_of_the_run() -> None:
    traced = Traced()
    big = "x" * 2400  # ~600 tokens each, estimated
    replies = [Reply(tool_calls=[Call("look", {"n": n})]) for n in range(3)]
    model = ScriptedTransport([*replies, Reply("ok")])
    summarizer = ScriptedTransport([Reply("looked three times", usage=Usage(90, 6))])
    agent = Agent(
        "sys",
        model,
        tools=[Tool("look", lambda n: big)],
        context_policy=Compaction(max_tokens=1500, keep_last=2, summarizer=summarizer),
        middleware=[traced.middleware],
    )
    assert await agent.run("go") == "ok"
    chats = traced.named("chat")
    summary = [s for s in chats if s.attributes.get("tether.purpose") == "compaction"]
    assert len(summary) == 1 and len(chats) == 5
    assert summary[0].attributes["gen_ai.usage.input_tokens"] == 90
    (run,) = traced.named("invoke_agent")
    assert parent_of(summary[0]) == span_id(run)
    (event,) = [e for e in run.events if e.name == "tether.compaction"]
    assert event.attributes["tether.compaction.summarized"] == 5
    assert event.attributes["tether.compaction.tokens"] > 1500
    assert run.attributes["gen_ai.usage.input_tokens"] == 90  # the summary's tokens count
