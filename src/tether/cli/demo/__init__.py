"""The CLI's demo: the offline tools ``tether run`` and ``tether chat`` give the model unless
``--no-demo-tools`` (``tools``), with the calculator (``calc``) and unit table (``units``) behind
them. Commands need only ``demo_tools``."""

from __future__ import annotations

from .tools import demo_tools

__all__ = ["demo_tools"]
