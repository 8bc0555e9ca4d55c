"""The typed answer a judge model gives: a score and a reason."""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = ["Grade"]


class Grade(BaseModel):
    """A judge's grade: ``score`` from 0 (fails the rubric) to 1 (meets it), and why."""

    score: float = Field(ge=0.0, le=1.0, description="0 fails the rubric, 1 fully meets it")
    reason: str = Field(description="one sentence saying why")
