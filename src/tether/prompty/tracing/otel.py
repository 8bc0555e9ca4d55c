"""Prompty's OpenTelemetry backend (spec §3.6.3): each Prompty span as an OpenTelemetry span,
made current so whatever runs inside nests under it: other Prompty spans, and the
``invoke_agent``/``chat``/``execute_tool`` spans of tether's own ``tether.tracing.OpenTelemetry``
(the global provider's, or the same provider passed to both).

Emitted ``gen_ai.*`` and ``error.*`` keys become attributes as they are; a result's ``usage``,
``id``, ``model`` and finish reasons become the GenAI response attributes. Inputs and results
themselves are attached (redacted, cut) only with ``capture_content=True``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ...tracing.attributes import content
from ...tracing.redact import redact
from ...tracing.spans import error_kind

__all__ = ["OtelTracer"]

_AS_IS = ("gen_ai.", "error.", "server.")
_SCALARS = (str, bool, int, float)


class OtelTracer:
    """A tracer factory for ``Tracer.add("otel", OtelTracer())``: spans to ``tracer_provider``
    (the global one when None). Spans whose name says they call the model (``execute``,
    ``…Executor``) are ``CLIENT`` spans, the others ``INTERNAL``."""

    def __init__(self, tracer_provider: Any = None, *, capture_content: bool = False) -> None:
        from opentelemetry import trace  # noqa: PLC0415 - only when this backend is used

        self._trace = trace
        self.tracer = trace.get_tracer("tether.prompty", tracer_provider=tracer_provider)
        self.capture_content = capture_content

    @contextmanager
    def __call__(self, name: str) -> Iterator[Any]:
        trace = self._trace
        kind = trace.SpanKind.CLIENT if _calls_model(name) else trace.SpanKind.INTERNAL
        with self.tracer.start_as_current_span(
            name, kind=kind, record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                yield _Emitter(span, self.capture_content).emit
            except BaseException as exc:
                span.set_attribute("error.type", error_kind(exc))
                detail = redact(str(exc))[:1000]
                span.set_status(trace.Status(trace.StatusCode.ERROR, detail))
                raise


def _calls_model(name: str) -> bool:
    lower = name.lower()
    return (lower.startswith("execute") and "tool" not in lower) or lower.endswith("executor")


class _Emitter:
    """Turns one span's emissions into attributes (values arrive serialised and redacted)."""

    __slots__ = ("capture", "span")

    def __init__(self, span: Any, capture: bool) -> None:
        self.span, self.capture = span, capture

    def emit(self, key: str, value: Any) -> None:
        if key.startswith(_AS_IS):
            self.span.set_attribute(key, _attribute(value))
        elif key == "signature" and isinstance(value, str):
            self.span.set_attribute("prompty.signature", value)
        elif key == "inputs":
            if self.capture:
                self.span.set_attribute("prompty.inputs", content(value, ()))
        elif key == "result":
            self.result(value)
        elif isinstance(value, _SCALARS):
            self.span.set_attribute(f"prompty.{key}", value)
        elif self.capture:
            self.span.set_attribute(f"prompty.{key}", content(value, ()))

    def result(self, value: Any) -> None:
        if isinstance(value, Mapping) and isinstance(value.get("exception"), str):
            self.span.set_attribute("error.type", value["exception"])
        elif isinstance(value, Mapping):
            self.span.set_attributes(response_attributes(value))
        if self.capture:
            self.span.set_attribute("prompty.result", content(value, ()))


def response_attributes(response: Mapping[str, Any]) -> dict[str, Any]:
    """The GenAI attributes of a provider response: token usage under either naming
    convention, its id and model, and the finish reasons of its choices (or Anthropic's
    ``stop_reason``)."""
    found: dict[str, Any] = {}
    usage = response.get("usage")
    if isinstance(usage, Mapping):
        for attribute, names in (
            ("gen_ai.usage.input_tokens", ("input_tokens", "prompt_tokens")),
            ("gen_ai.usage.output_tokens", ("output_tokens", "completion_tokens")),
        ):
            count = next((usage[n] for n in names if _is_count(usage.get(n))), None)
            if count is not None:
                found[attribute] = count
    if "usage" in response or "choices" in response:
        for attribute, key in (("gen_ai.response.id", "id"), ("gen_ai.response.model", "model")):
            if isinstance(response.get(key), str):
                found[attribute] = response[key]
    reasons = _finish_reasons(response)
    if reasons:
        found["gen_ai.response.finish_reasons"] = reasons
    return found


def _finish_reasons(response: Mapping[str, Any]) -> list[str]:
    choices = response.get("choices")
    if isinstance(choices, list):
        return [
            c["finish_reason"]
            for c in choices
            if isinstance(c, Mapping) and isinstance(c.get("finish_reason"), str)
        ]
    stop = response.get("stop_reason")
    return [stop] if isinstance(stop, str) else []


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _attribute(value: Any) -> Any:
    """``value`` as an OpenTelemetry attribute: a scalar or a list of one kind of scalar as it
    is, anything else as JSON."""
    if isinstance(value, _SCALARS):
        return value
    if (
        isinstance(value, list)
        and value
        and isinstance(value[0], _SCALARS)
        and all(type(v) is type(value[0]) for v in value)
    ):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
