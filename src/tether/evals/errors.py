"""The errors of evaluations: a dataset, report or evaluator that cannot be used as given."""

from __future__ import annotations

from ..errors import TetherError

__all__ = ["EvalError"]


class EvalError(TetherError):
    """A dataset or report file that cannot be read, an evaluator named wrongly, or a target
    that cannot take a case's inputs. The message names the file or case and what to fix."""
