"""Request options every wire format understands, validated once when a transport is built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeAlias

__all__ = ["ModelOptions", "ToolChoice", "split_options"]

ToolChoice: TypeAlias = Literal["auto", "none", "required"] | str
"""``"auto"``, ``"none"``, ``"required"``, or the name of one tool the model must call."""


@dataclass(frozen=True, slots=True)
class ModelOptions:
    """Sampling and output options; ``None`` leaves the provider's default.

    ``response_format`` is a JSON Schema for structured output (``{"name": ..., "schema": ...,
    "strict": ...}`` or a bare schema). ``reasoning_effort`` (``"low"``/``"medium"``/``"high"``)
    and ``thinking_budget`` (tokens, Anthropic) turn on reasoning. ``prompt_cache_key`` (OpenAI's
    chat and Responses APIs) groups requests that share a prefix so the provider's prompt cache
    finds them. ``extra_body`` is merged into the request's top level last, for provider options
    tether has no name for.
    """

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: Sequence[str] | None = None
    seed: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: Mapping[str, Any] | None = None
    reasoning_effort: str | None = None
    thinking_budget: int | None = None
    prompt_cache_key: str | None = None
    extra_body: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise ValueError("temperature must be between 0 and 2")
        if self.prompt_cache_key is not None and not (
            isinstance(self.prompt_cache_key, str) and self.prompt_cache_key
        ):
            raise ValueError("prompt_cache_key must be a non-empty string")
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))


_NAMES = frozenset(f.name for f in fields(ModelOptions))


def split_options(options: Mapping[str, Any]) -> ModelOptions:
    """Build ``ModelOptions`` from keyword arguments, naming any unknown one."""
    unknown = sorted(set(options) - _NAMES)
    if unknown:
        raise TypeError(
            f"unknown transport option(s) {', '.join(unknown)}; known: {', '.join(sorted(_NAMES))}"
            " (put provider-specific fields in extra_body=)"
        )
    return ModelOptions(**options)
