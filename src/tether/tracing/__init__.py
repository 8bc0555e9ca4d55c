"""Tracing: OpenTelemetry spans and metrics after the GenAI semantic conventions, and a local
JSON-lines recorder, both through the engine's middleware seam.

- ``OpenTelemetry(tracer_provider=None, meter_provider=None, capture_content=False)``: to
  explicit providers (with none given and an SDK set up globally, every run is traced anyway).
- ``Recorder(path)``: every run to a JSON-lines file (``tether trace FILE`` shows it).
- ``Tracing(sink)``: the middleware both are, for a sink of one's own.
"""

from __future__ import annotations

from typing import Any

from .middleware import Tracing
from .recorder import Recorder
from .spans import Span, SpanSink

__all__ = ["OpenTelemetry", "Recorder", "Span", "SpanSink", "Tracing"]


class OpenTelemetry(Tracing):
    """Tracing to OpenTelemetry: the given providers, or the global ones."""

    def __init__(
        self,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        *,
        capture_content: bool = False,
    ) -> None:
        from .otel import OtelSink  # noqa: PLC0415 - imports opentelemetry

        super().__init__(OtelSink(tracer_provider, meter_provider), capture_content=capture_content)
