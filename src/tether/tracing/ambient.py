"""Tracing with no tether-specific step: once an OpenTelemetry SDK has set the global tracer
provider, every run is traced to it. Until then this costs one dictionary lookup per run and
imports nothing."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["with_ambient"]

_NOT_SET = ("ProxyTracerProvider", "NoOpTracerProvider")
_made: list[tuple[Any, Any]] = []  # [(the provider, the Tracing made for it)]


def with_ambient(middleware: Sequence[Any]) -> Sequence[Any]:
    """``middleware``, with OpenTelemetry tracing first when the SDK is set up and no
    OpenTelemetry middleware is there already (a ``Recorder`` records beside it)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return middleware
    provider = trace.get_tracer_provider()
    if type(provider).__name__ in _NOT_SET:
        return middleware
    for m in middleware:
        if getattr(m, "otel", False):
            return middleware
    return (_tracing_for(provider), *middleware)


def _tracing_for(provider: Any) -> Any:
    if not _made or _made[0][0] is not provider:
        from .otel import OpenTelemetry  # noqa: PLC0415

        _made[:] = [(provider, OpenTelemetry())]
    return _made[0][1]
