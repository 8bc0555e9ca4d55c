"""``OpenTelemetry``: tracing through its sink, spans to a tracer provider and the GenAI
duration and token metrics to a meter provider (the global ones unless given). Only
``opentelemetry-api`` is used, and nothing of it is imported until a sink is made."""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from typing import Any

from .middleware import Tracing
from .redact import redact
from .spans import Attributes, Kind, Span, error_kind

__all__ = ["OpenTelemetry", "OtelSink"]

_METRIC_KEYS = (
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "gen_ai.tool.name",
)


class OtelSink:
    """Spans and metrics through the OpenTelemetry API."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        from opentelemetry import metrics, trace  # noqa: PLC0415 - only when tracing is on

        self._trace = trace
        self.tracer = trace.get_tracer("tether", tracer_provider=tracer_provider)
        meter = metrics.get_meter("tether", meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration"
        )
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used per model call"
        )

    def start(self, kind: Kind, name: str, parent: Span | None, attributes: Attributes) -> Span:
        trace = self._trace
        context = trace.set_span_in_context(parent.span) if isinstance(parent, OtelSpan) else None
        span_kind = trace.SpanKind.CLIENT if kind == "model" else trace.SpanKind.INTERNAL
        span = self.tracer.start_span(name, context=context, kind=span_kind, attributes=attributes)
        return OtelSpan(self, kind, span, dict(attributes))


class OtelSpan:
    """One OpenTelemetry span; on its end, its duration (and a model call's tokens) go to the
    metrics."""

    __slots__ = ("attributes", "kind", "sink", "span", "started")

    def __init__(self, sink: OtelSink, kind: Kind, span: Any, attributes: dict[str, Any]) -> None:
        self.sink, self.kind, self.span, self.attributes = sink, kind, span, attributes
        self.started = time.perf_counter()

    def set(self, attributes: Attributes) -> None:
        self.span.set_attributes(attributes)
        self.attributes.update(attributes)

    def event(self, name: str, attributes: Attributes) -> None:
        self.span.add_event(name, attributes)

    def active(self) -> AbstractContextManager[object]:
        use: AbstractContextManager[object] = self.sink._trace.use_span(
            self.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
        )
        return use

    def end(self, error: BaseException | str | None = None) -> None:
        seconds = time.perf_counter() - self.started
        common = {k: self.attributes[k] for k in _METRIC_KEYS if k in self.attributes}
        if error is not None:
            kind = error if isinstance(error, str) else error_kind(error)
            common["error.type"] = kind
            self.span.set_attribute("error.type", kind)
            detail = kind if isinstance(error, str) else redact(str(error))[:1000]
            self.span.set_status(self.sink._trace.Status(self.sink._trace.StatusCode.ERROR, detail))
        self.sink.duration.record(seconds, common)
        if self.kind == "model":
            for token_type, key in (
                ("input", "gen_ai.usage.input_tokens"),
                ("output", "gen_ai.usage.output_tokens"),
            ):
                if key in self.attributes:
                    self.sink.tokens.record(
                        self.attributes[key], {**common, "gen_ai.token.type": token_type}
                    )
        self.span.end()


class OpenTelemetry(Tracing):
    """Tracing to OpenTelemetry: the given providers, or the global ones."""

    otel = True  # with one of these, the ambient tracing (global SDK) is not added

    def __init__(
        self,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        *,
        capture_content: bool = False,
    ) -> None:
        super().__init__(OtelSink(tracer_provider, meter_provider), capture_content=capture_content)
