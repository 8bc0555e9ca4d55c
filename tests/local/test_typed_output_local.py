"""Typed output on the real local model: a pydantic model answer, asked for through the server's
JSON-schema response format and validated, in at least 9 of 10 seeded runs; and an agent whose
transport has no response format (asked in words) still gets a valid value."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tether import Agent, OutputValidationError
from tether.local import LocalModel

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(900)]


class Capital(BaseModel):
    country: str
    capital: str
    population_millions: float


QUESTIONS = [
    "France",
    "Japan",
    "Kenya",
    "Peru",
    "Norway",
    "Egypt",
    "Canada",
    "India",
    "Chile",
    "Italy",
]


async def test_nine_of_ten_seeded_runs_answer_a_valid_model(local_model: LocalModel) -> None:
    valid: list[Capital] = []
    failures: list[str] = []
    for seed, country in enumerate(QUESTIONS):
        options: dict[str, Any] = {"temperature": 0.7, "seed": seed, "max_tokens": 120}
        transport = local_model.chat_transport(**options)
        agent = Agent("You answer geography questions.", transport, output_type=Capital)
        try:
            valid.append(await agent.run(f"The capital of {country}, with its population."))
        except OutputValidationError as exc:
            failures.append(f"{country}: {exc.text!r}")
        finally:
            await transport.aclose()
    assert len(valid) >= 9, failures
    assert all(isinstance(v, Capital) and v.capital for v in valid)


async def test_asked_in_words_when_the_transport_has_no_response_format(
    local_model: LocalModel,
) -> None:
    """A transport without ``with_response_format`` (here a thin wrapper) is asked in the system
    prompt; the answer still validates (with repairs if needed)."""

    inner = local_model.chat_transport(temperature=0, seed=3, max_tokens=120)

    class Plain:
        def stream(self, messages: Any, tools: Any, system: str) -> Any:
            return inner.stream(messages, tools, system)

    agent = Agent("You answer geography questions.", Plain(), output_type=Capital)
    try:
        answer = await agent.run("The capital of Spain, with its population.")
    finally:
        await inner.aclose()
    assert isinstance(answer, Capital) and answer.capital
