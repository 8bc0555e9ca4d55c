"""Prompty tracing (spec §3): the backend registry, ``@trace`` on every kind of function, nesting
across concurrent tasks, ``to_dict``, redaction, usage hoisting, and the ``.tracy``, console and
OpenTelemetry backends."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
import os
import re
import stat
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

from tether import Agent, Usage
from tether.prompty.messages import Part, PromptMessage
from tether.prompty.tracing.console import ConsoleTracer
from tether.prompty.tracing.otel import OtelTracer
from tether.prompty.tracing.tracer import (
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_STRING,
    Tracer,
    hoist_usage,
    redacted,
    to_dict,
    trace,
)
from tether.prompty.tracing.tracy import TracyTracer, tracy_file_name
from tether.testing import Reply, ScriptedTransport
from tether.tracing import OpenTelemetry
from tether.tracing.redact import is_sensitive_key

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"


class Recording:
    """A backend keeping every span it is given, with what was emitted into it."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []

    @contextmanager
    def __call__(self, name: str) -> Iterator[Any]:
        span: dict[str, Any] = {"name": name, "values": {}, "ended": False}
        self.spans.append(span)
        try:
            yield span["values"].__setitem__
        finally:
            span["ended"] = True

    def named(self, name: str) -> dict[str, Any]:
        (span,) = [s for s in self.spans if s["name"] == name]
        return span


@pytest.fixture(autouse=True)
def _no_tracers() -> Iterator[None]:
    Tracer.clear()
    yield
    Tracer.clear()


@pytest.fixture
def recording() -> Recording:
    backend = Recording()
    Tracer.add("recording", backend)
    return backend


@pytest.fixture
def tracy(tmp_path: Path) -> TracyTracer:
    backend = TracyTracer(tmp_path / "runs")
    Tracer.add("tracy", backend)
    return backend


def read_traces(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.tracy"))]


# --- the registry ---------------------------------------------------------------------------


def test_add_remove_and_clear_name_the_backends() -> None:
    first, second = Recording(), Recording()
    Tracer.add("a", first)
    Tracer.add("b", second)
    Tracer.add("a", second)  # the same name again replaces it
    assert Tracer.names() == ("b", "a")
    Tracer.remove("b")
    Tracer.remove("missing")
    assert Tracer.names() == ("a",)
    Tracer.clear()
    assert Tracer.names() == () and not Tracer.active()


def test_start_fans_every_emission_out_to_every_backend() -> None:
    first, second = Recording(), Recording()
    Tracer.add("first", first)
    Tracer.add("second", second)
    with Tracer.start("turn 3") as emit:
        emit("signature", "prompty.turn")
        emit("custom", {"n": 1})
    for backend in (first, second):
        assert backend.spans == [
            {
                "name": "turn 3",
                "values": {"signature": "prompty.turn", "custom": {"n": 1}},
                "ended": True,
            }
        ]


def test_a_failing_backend_fails_neither_the_others_nor_the_call(
    recording: Recording, caplog: pytest.LogCaptureFixture
) -> None:
    @contextmanager
    def bad_emitter(name: str) -> Iterator[Any]:
        def emit(key: str, value: Any) -> None:
            raise RuntimeError("emit broke")

        yield emit
        raise RuntimeError("exit broke")

    def bad_factory(name: str) -> Any:
        raise RuntimeError("open broke")

    Tracer.add("bad-open", bad_factory)
    Tracer.add("bad-emit", bad_emitter)
    Tracer.add("good", recording)

    @trace
    def double(x: int) -> int:
        return 2 * x

    assert double(4) == 8
    assert recording.spans[0]["values"]["result"] == 8
    assert recording.spans[0]["ended"]
    assert "open broke" in caplog.text and "emit broke" in caplog.text


def test_a_backend_ending_badly_does_not_replace_the_call_s_own_error() -> None:
    @contextmanager
    def backend(name: str) -> Iterator[Any]:
        try:
            yield lambda k, v: None
        finally:
            raise RuntimeError("backend broke")

    Tracer.add("bad", backend)

    @trace
    def fails() -> None:
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        fails()


def test_the_registry_is_safe_from_many_threads(recording: Recording) -> None:
    errors: list[BaseException] = []

    @trace
    def work(n: int) -> int:
        return n

    def churn(i: int) -> None:
        try:
            for n in range(200):
                Tracer.add(f"t{i}", Recording())
                assert work(n) == n
                Tracer.remove(f"t{i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Tracer.names() == ("recording",)
    assert len(recording.spans) == 8 * 200 and all(s["ended"] for s in recording.spans)


# --- the decorator ----------------------------------------------------------------------------


def test_with_no_backend_the_function_is_simply_called() -> None:
    @trace
    def add(a: int, b: int) -> int:
        return a + b

    @trace(name="custom")
    async def later(x: int) -> int:
        return x

    assert add(1, 2) == 3
    assert asyncio.run(later(5)) == 5
    assert add.__name__ == "add"


def test_a_sync_call_records_signature_inputs_and_result(recording: Recording) -> None:
    @trace
    def greet(name: str, greeting: str = "Hello") -> str:
        return f"{greeting}, {name}"

    assert greet("Ada") == "Hello, Ada"
    (span,) = recording.spans
    signature = f"{__name__}.test_a_sync_call_records_signature_inputs_and_result.<locals>.greet"
    assert span["name"] == signature
    assert span["values"] == {
        "signature": signature,
        "inputs": {"name": "Ada", "greeting": "Hello"},
        "result": "Hello, Ada",
    }


def test_options_name_the_span_drop_parameters_and_add_attributes(recording: Recording) -> None:
    class Renderer:
        @trace(name="render", ignore_params=["secret_sauce"], description="renders", version=2)
        def render(self, template: str, secret_sauce: str) -> str:
            return template.upper()

    assert Renderer().render("hi", "x") == "HI"
    values = recording.named("render")["values"]
    assert values["inputs"] == {"template": "hi"}  # no self, no ignored parameter
    assert values["description"] == "renders" and values["version"] == 2
    assert values["signature"].endswith("Renderer.render")


def test_an_exception_is_recorded_and_raised_unchanged(recording: Recording) -> None:
    class Oops(Exception):
        pass

    error = Oops("it broke")

    @trace
    def breaks() -> None:
        raise error

    with pytest.raises(Oops) as raised:
        breaks()
    assert raised.value is error
    result = recording.spans[0]["values"]["result"]
    assert result["exception"] == "Oops" and result["message"] == "it broke"
    assert "Traceback" in result["traceback"] and "raise error" in result["traceback"]
    assert recording.spans[0]["ended"]


async def test_an_async_function_is_awaited_inside_its_span(recording: Recording) -> None:
    seen: list[bool] = []

    @trace
    async def slow(x: int) -> dict[str, int]:
        await asyncio.sleep(0.01)
        seen.append(recording.spans[0]["ended"])
        return {"x": x}

    assert await slow(3) == {"x": 3}
    assert seen == [False]
    assert recording.spans[0]["values"]["result"] == {"x": 3} and recording.spans[0]["ended"]


async def test_an_async_generator_s_items_are_its_result(recording: Recording) -> None:
    @trace
    async def count(n: int) -> AsyncGenerator[int, None]:
        for i in range(n):
            await asyncio.sleep(0)
            yield i

    assert [i async for i in count(3)] == [0, 1, 2]
    assert recording.spans[0]["values"]["result"] == [0, 1, 2]

    stream = count(10)
    assert await anext(stream) == 0
    await stream.aclose()  # stopped early: what was taken is the result
    assert recording.spans[1]["values"]["result"] == [0] and recording.spans[1]["ended"]


async def test_an_async_generator_failing_is_recorded(recording: Recording) -> None:
    @trace
    async def fails() -> AsyncIterator[int]:
        yield 1
        raise ValueError("half way")

    with pytest.raises(ValueError, match="half way"):
        async for _ in fails():
            pass
    assert recording.spans[0]["values"]["result"]["exception"] == "ValueError"


def test_a_generator_keeps_its_items_and_return_value(recording: Recording) -> None:
    @trace
    def letters() -> Generator[str, None, str]:
        yield "a"
        yield "b"
        return "done"

    def drive() -> Iterator[str]:
        returned = yield from letters()
        assert returned == "done"

    assert list(drive()) == ["a", "b"]
    assert recording.spans[0]["values"]["result"] == ["a", "b"]


def test_generator_items_are_capped(recording: Recording) -> None:
    @trace
    def many() -> Iterator[int]:
        yield from range(MAX_ITEMS + 5)

    assert sum(1 for _ in many()) == MAX_ITEMS + 5
    assert len(recording.spans[0]["values"]["result"]) == MAX_ITEMS


# --- nesting ----------------------------------------------------------------------------------


@trace
async def leaf(n: int) -> dict[str, Any]:
    await asyncio.sleep(0.01 * (n % 3))
    return {
        "n": n,
        "usage": {"prompt_tokens": 10 * n, "completion_tokens": n, "total_tokens": 11 * n},
    }


@trace
async def branch(label: str, n: int) -> str:
    first = await leaf(n)
    second = await leaf(n + 1)
    return f"{label}:{first['n']}+{second['n']}"


@trace(name="root")
async def root(label: str) -> list[str]:
    return list(await asyncio.gather(branch(f"{label}-a", 1), branch(f"{label}-b", 2)))


async def test_concurrent_tasks_build_separate_trees(tracy: TracyTracer) -> None:
    results = await asyncio.gather(root("x"), root("y"))
    assert list(results) == [["x-a:1+2", "x-b:2+3"], ["y-a:1+2", "y-b:2+3"]]
    traces = read_traces(tracy.directory)
    assert len(traces) == 2
    for document in traces:
        tree = document["trace"]
        label = tree["inputs"]["label"]
        assert tree["name"] == "root" and tree["result"] == [f"{label}-a:1+2", f"{label}-b:2+3"]
        branches = tree["__frames"]
        assert sorted(b["inputs"]["label"] for b in branches) == [f"{label}-a", f"{label}-b"]
        for b in branches:
            assert b["name"].endswith(".branch")
            assert [leaf["inputs"]["n"] for leaf in b["__frames"]] == [
                b["inputs"]["n"],
                b["inputs"]["n"] + 1,
            ]
            assert all(leaf["__frames"] == [] for leaf in b["__frames"])


async def test_work_in_a_thread_nests_under_its_caller(tracy: TracyTracer) -> None:
    @trace
    def blocking(x: int) -> int:
        return x + 1

    @trace(name="outer")
    async def outer() -> int:
        return await asyncio.to_thread(blocking, 1)

    assert await outer() == 2
    (document,) = read_traces(tracy.directory)
    assert [f["inputs"] for f in document["trace"]["__frames"]] == [{"x": 1}]


# --- usage hoisting ---------------------------------------------------------------------------


async def test_usage_is_hoisted_to_every_parent_by_its_own_names(tracy: TracyTracer) -> None:
    @trace(name="anthropic_call")
    def anthropic_call() -> dict[str, Any]:
        return {"usage": {"input_tokens": 7, "output_tokens": 3, "service_tier": "standard"}}

    @trace(name="pipeline")
    async def pipeline() -> None:
        await branch("z", 1)  # leaves n=1 and n=2
        anthropic_call()

    await pipeline()
    (document,) = read_traces(tracy.directory)
    tree = document["trace"]
    assert tree["__usage"] == {
        "prompt_tokens": 30,
        "completion_tokens": 3,
        "total_tokens": 33,
        "input_tokens": 7,
        "output_tokens": 3,
    }
    branch_frame, anthropic_frame = tree["__frames"]
    assert branch_frame["__usage"] == {
        "prompt_tokens": 30,
        "completion_tokens": 3,
        "total_tokens": 33,
    }
    assert [f["__usage"]["prompt_tokens"] for f in branch_frame["__frames"]] == [10, 20]
    assert anthropic_frame["__usage"] == {"input_tokens": 7, "output_tokens": 3}


def test_hoist_usage_follows_the_spec_algorithm_on_a_plain_tree() -> None:
    tree: dict[str, Any] = {
        "result": {"usage": {"total_tokens": 1, "flag": True, "nested": {"x": 1}}},
        "__frames": [
            {"result": {"usage": {"total_tokens": 2}}, "__frames": []},
            {"result": "no usage", "__frames": [{"result": {"usage": {"total_tokens": 4.5}}}]},
        ],
    }
    assert hoist_usage(tree) == {"total_tokens": 7.5}
    assert tree["__frames"][1]["__usage"] == {"total_tokens": 4.5}
    assert tree["__frames"][0]["__usage"] == {"total_tokens": 2}


# --- redaction --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apiKey",
        "OPENAI_API_KEY",
        "x-api-key",
        "Authorization",
        "password",
        "db_password",
        "client_secret",
        "secret_key",
        "access_token",
        "refresh_token",
        "credentials",
        "Cookie",
        "private_key",
    ],
)
def test_credential_keys_are_sensitive(key: str) -> None:
    assert is_sensitive_key(key)


@pytest.mark.parametrize(
    "key", ["key", "name", "max_tokens", "maxOutputTokens", "prompt_tokens", "total_tokens", "id"]
)
def test_other_keys_are_not(key: str) -> None:
    assert not is_sensitive_key(key)


def test_redaction_reaches_every_level_before_any_backend(
    recording: Recording, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "env-held-value-123456")

    @trace
    def call(connection: dict[str, Any], api_key: str, note: str) -> dict[str, Any]:
        return {"headers": {"Authorization": "Bearer abc"}, "echo": note, "max_tokens": 5}

    call(
        {"endpoint": "https://example.invalid", "apiKey": "k1", "nested": [{"password": "pw"}]},
        "k2",
        f"uses {SECRET} and env-held-value-123456",
    )
    values = recording.spans[0]["values"]
    assert values["inputs"] == {
        "connection": {
            "endpoint": "https://example.invalid",
            "apiKey": "[REDACTED]",
            "nested": [{"password": "[REDACTED]"}],
        },
        "api_key": "[REDACTED]",
        "note": "uses [REDACTED] and [REDACTED]",
    }
    assert values["result"] == {
        "headers": {"Authorization": "[REDACTED]"},
        "echo": "uses [REDACTED] and [REDACTED]",
        "max_tokens": 5,
    }
    with Tracer.start("direct") as emit:
        emit("client_secret", "plain")
        emit("api_key", None)
    assert recording.named("direct")["values"] == {"client_secret": "[REDACTED]", "api_key": None}


def test_the_tracy_file_holds_no_secret(tracy: TracyTracer) -> None:
    @trace
    def connect(api_key: str, options: dict[str, Any]) -> str:
        return f"connected with {SECRET}"

    connect("plain-key-value", {"token": "tok-value-1", "temperature": 0.2})
    assert tracy.last_path is not None
    text = tracy.last_path.read_text()
    for leaked in ("plain-key-value", "tok-value-1", SECRET):
        assert leaked not in text
    assert '"temperature": 0.2' in text


def test_redacted_is_to_dict_with_secrets_blanked() -> None:
    value = {"auth": {"user": "u"}, "list": [SECRET], "key": "k"}
    assert redacted(value) == {"auth": "[REDACTED]", "list": ["[REDACTED]"], "key": "k"}
    assert to_dict(value) == {"auth": {"user": "u"}, "list": [SECRET], "key": "k"}


# --- to_dict ----------------------------------------------------------------------------------


@dataclasses.dataclass
class Point:
    x: int
    label: Path


class Settings(BaseModel):
    temperature: float
    stops: list[str]


class Opaque:
    def __str__(self) -> str:
        return "opaque!"


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_to_dict_follows_the_conversion_table() -> None:
    moment = dt.datetime(2026, 4, 4, 12, 0, tzinfo=dt.UTC)
    value = {
        "text": "t",
        "numbers": (1, 2.5, True, None),
        "when": moment,
        "day": dt.date(2026, 4, 4),
        "point": Point(3, Path("a") / "b.txt"),
        "model": Settings(temperature=0.5, stops=["x"]),
        "message": PromptMessage("user", (Part("text", "hi"),)),
        "other": Opaque(),
        "broken": Unprintable(),
        "nan": float("nan"),
        7: "int key",
    }
    assert to_dict(value) == {
        "text": "t",
        "numbers": [1, 2.5, True, None],
        "when": "2026-04-04T12:00:00Z",
        "day": "2026-04-04",
        "point": {"x": 3, "label": str(Path("a") / "b.txt")},
        "model": {"temperature": 0.5, "stops": ["x"]},
        "message": PromptMessage("user", (Part("text", "hi"),)).to_dict(),
        "other": "opaque!",
        "broken": "<Unprintable object>",
        "nan": "nan",
        "7": "int key",
    }
    json.dumps(to_dict(value))


def test_to_dict_survives_cycles_depth_and_size() -> None:
    looped: list[Any] = [1]
    looped.append(looped)
    assert to_dict(looped) == [1, "[circular reference]"]
    shared = {"a": 1}
    assert to_dict([shared, shared]) == [{"a": 1}, {"a": 1}]  # shared is not a cycle

    deep: list[Any] = []
    cursor = deep
    for _ in range(MAX_DEPTH + 10):
        cursor.append([])
        cursor = cursor[0]
    text = json.dumps(to_dict(deep))
    assert "[too deep]" in text

    wide = to_dict({str(i): i for i in range(MAX_ITEMS + 3)})
    assert len(wide) == MAX_ITEMS + 1 and wide["…"] == "[3 more entries]"
    long = to_dict("x" * (MAX_STRING + 10))
    assert len(long) < MAX_STRING + 20 and long.endswith("[cut]")


# --- the .tracy file --------------------------------------------------------------------------


def test_the_tracy_file_is_named_placed_and_shaped_as_the_spec_says(tracy: TracyTracer) -> None:
    @trace(name="invoke")
    def invoke(question: str) -> str:
        return inner(question)

    @trace(name="prepare")
    def inner(question: str) -> str:
        assert not list(tracy.directory.glob("*.tracy"))  # nothing written before the root ends
        return question * 2

    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    assert invoke("ab") == "abab"
    after = dt.datetime.now(dt.UTC)
    (path,) = tracy.directory.glob("*.tracy")
    assert path == tracy.last_path
    match = re.fullmatch(r"invoke\.(\d{8}\.\d{6})\.tracy", path.name)
    assert match is not None
    stamp = dt.datetime.strptime(match.group(1), "%Y%m%d.%H%M%S").replace(tzinfo=dt.UTC)
    assert before <= stamp <= after
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

    document = json.loads(path.read_text())
    assert document["runtime"] == "python" and isinstance(document["version"], str)
    tree = document["trace"]
    assert list(tree) == ["name", "__time", "signature", "inputs", "result", "__frames", "__usage"]
    assert tree["name"] == "invoke" and tree["inputs"] == {"question": "ab"}
    assert tree["result"] == "abab" and tree["__usage"] == {}
    times = tree["__time"]
    start = dt.datetime.fromisoformat(times["start"])
    end = dt.datetime.fromisoformat(times["end"])
    assert times["start"].endswith("Z") and start <= end
    assert isinstance(times["duration"], int | float) and times["duration"] >= 0
    (child,) = tree["__frames"]
    assert child["name"] == "prepare" and child["result"] == "abab" and child["__frames"] == []


def test_file_names_are_sanitised_and_never_overwrite(tmp_path: Path) -> None:
    ended = dt.datetime(2026, 4, 4, 12, 30, 5, tzinfo=dt.UTC)
    assert tracy_file_name("a/b c:..\\d", ended) == "a_b_c_.._d.20260404.123005.tracy"
    assert tracy_file_name("", ended) == "trace.20260404.123005.tracy"
    backend = TracyTracer(tmp_path)
    Tracer.add("tracy", backend)
    for _ in range(3):
        with Tracer.start("same") as emit:
            emit("result", 1)
    assert len(list(tmp_path.glob("same.*.tracy"))) == 3


def test_emitted_keys_cannot_replace_the_frame_s_own(tracy: TracyTracer) -> None:
    with Tracer.start("mine") as emit:
        emit("name", "other")
        emit("__frames", "bogus")
        emit("extra", [1])
    (document,) = read_traces(tracy.directory)
    assert document["trace"]["name"] == "mine" and document["trace"]["__frames"] == []
    assert document["trace"]["extra"] == [1]


# --- the console ----------------------------------------------------------------------------


def test_the_console_tracer_prints_starts_and_ends_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Tracer.add("console", ConsoleTracer())

    @trace(name="outer")
    def outer() -> None:
        inner()

    @trace(name="inner\x1b[31m")
    def inner() -> None:
        pass

    outer()
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert lines[:2] == ["[prompty] ▶ outer", "[prompty] ▶ inner?[31m"]
    assert re.fullmatch(r"\[prompty\] ◀ inner\?\[31m \(\d+ms\)", lines[2])
    assert re.fullmatch(r"\[prompty\] ◀ outer \(\d+ms\)", lines[3])


# --- OpenTelemetry ----------------------------------------------------------------------------


class Exported:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def named(self, name: str) -> ReadableSpan:
        (span,) = [s for s in self.exporter.get_finished_spans() if s.name == name]
        return span


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


async def test_otel_spans_nest_carry_genai_attributes_and_errors() -> None:
    exported = Exported()
    Tracer.add("otel", OtelTracer(exported.provider))

    @trace(name="Executor")
    async def execute(api_key: str) -> dict[str, Any]:
        with Tracer.start("gen") as emit:
            emit("gen_ai.operation.name", "chat")
            emit("gen_ai.request.model", "gpt-4o")
        return {
            "id": "resp-1",
            "model": "gpt-4o-2024-08-06",
            "choices": [{"finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 4},
        }

    @trace(name="turn 1")
    async def turn() -> None:
        await execute("k")
        raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        await turn()
    top, call, inner = exported.named("turn 1"), exported.named("Executor"), exported.named("gen")
    assert parent_of(top) is None
    assert parent_of(call) == span_id(top) and parent_of(inner) == span_id(call)
    assert call.kind is SpanKind.CLIENT and top.kind is SpanKind.INTERNAL
    attributes = dict(call.attributes or {})
    assert attributes["gen_ai.usage.input_tokens"] == 12
    assert attributes["gen_ai.usage.output_tokens"] == 4
    assert attributes["gen_ai.response.id"] == "resp-1"
    assert attributes["gen_ai.response.model"] == "gpt-4o-2024-08-06"
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert "prompty.inputs" not in attributes  # content only when asked for
    assert dict(inner.attributes or {})["gen_ai.request.model"] == "gpt-4o"
    assert top.status.status_code is StatusCode.ERROR
    assert dict(top.attributes or {})["error.type"] == "RuntimeError"
    assert call.status.status_code is StatusCode.UNSET


def test_otel_captures_content_redacted_when_asked() -> None:
    exported = Exported()
    Tracer.add("otel", OtelTracer(exported.provider, capture_content=True))

    @trace(name="prepare")
    def prepare(question: str, api_key: str) -> list[str]:
        return [question]

    prepare("why?", "hidden-key-value")
    attributes = dict(exported.named("prepare").attributes or {})
    assert json.loads(str(attributes["prompty.inputs"])) == {
        "question": "why?",
        "api_key": "[REDACTED]",
    }
    assert json.loads(str(attributes["prompty.result"])) == ["why?"]


async def test_tether_s_engine_spans_nest_under_the_prompty_span() -> None:
    exported = Exported()
    Tracer.add("otel", OtelTracer(exported.provider))
    agent = Agent(
        "sys",
        ScriptedTransport([Reply("hello", usage=Usage(5, 2))]),
        middleware=[OpenTelemetry(exported.provider)],
    )

    @trace(name="turn 1")
    async def turn() -> str:
        answer: str = await agent.run("hi")
        return answer

    assert await turn() == "hello"
    top = exported.named("turn 1")
    run = exported.named("invoke_agent agent")
    assert parent_of(run) == span_id(top)
