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

from ..base.lazy import lazy_names as _lazy_names

# The public names, each with the module it loads from on first use: ``__all__`` is this table,
# and the imports below repeat it for type checkers only (tests/test_public_api.py checks them).
_HOMES = {
    "OpenTelemetry": "otel",
    "Recorder": "recorder",
    "Span": "spans",
    "SpanSink": "spans",
    "TraceWriteWarning": "recorder",
    "Tracing": "middleware",
}

__all__ = list(_HOMES)

if TYPE_CHECKING:
    from .middleware import Tracing as Tracing
    from .otel import OpenTelemetry as OpenTelemetry
    from .recorder import Recorder as Recorder
    from .recorder import TraceWriteWarning as TraceWriteWarning
    from .spans import Span as Span
    from .spans import SpanSink as SpanSink

__getattr__ = _lazy_names(__name__, _HOMES)
