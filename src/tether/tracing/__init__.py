"""Tracing: OpenTelemetry spans and metrics after the GenAI semantic conventions, and a local
JSON-lines recorder, both through the engine's middleware seam.

- ``OpenTelemetry(tracer_provider=None, meter_provider=None, capture_content=False)``: to
  explicit providers (with none given and an SDK set up globally, every run is traced anyway).
- ``Recorder(path)``: every run to a JSON-lines file (``tether trace FILE`` shows it); a file
  that cannot be written is a ``TraceWriteWarning``, never a failed run.
- ``Tracing(sink)``: the middleware both are, for a sink of one's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from .middleware import Tracing
    from .otel import OpenTelemetry
    from .recorder import Recorder, TraceWriteWarning
    from .spans import Span, SpanSink

__all__ = ["OpenTelemetry", "Recorder", "Span", "SpanSink", "TraceWriteWarning", "Tracing"]

# Loaded on first use: the engine imports ``tracing.ambient`` on every start, and that alone
# must stay cheap.
_HOMES = {
    "OpenTelemetry": "otel",
    "Recorder": "recorder",
    "Span": "spans",
    "SpanSink": "spans",
    "TraceWriteWarning": "recorder",
    "Tracing": "middleware",
}


__getattr__ = _lazy_names(__name__, _HOMES)
