"""Errors of the local model: one for "this machine cannot run it", one for bad weights."""

from __future__ import annotations

from ..errors import TetherError

__all__ = ["LocalModelUnavailable", "WeightsError"]


class LocalModelUnavailable(TetherError):
    """The local model cannot run here: unsupported platform, missing extra, or a server that
    would not start. The message says what to do about it."""


class WeightsError(TetherError):
    """The model weights could not be fetched, or what was fetched is not what was expected."""
