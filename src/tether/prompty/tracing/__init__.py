"""Tracing (§3): ``tracer`` holds ``Tracer`` and ``trace`` (spans with secrets blanked); the
backends are ``tracy`` (``.tracy`` files), ``console`` and ``otel`` (OpenTelemetry)."""
