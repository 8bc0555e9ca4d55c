"""A griffe extension for the API reference: tether's packages load their public names on first
use, and their ``__all__`` is built from a table (``_LAZY`` or ``_HOMES``: name -> submodule).
Griffe reads code without running it, so this reads that table and makes its names the
package's exports."""

from __future__ import annotations

import ast
from typing import Any

import griffe

TABLES = ("_LAZY", "_HOMES")


class LazyExports(griffe.Extension):
    def on_module_members(
        self, *, node: ast.AST | griffe.ObjectNode, mod: griffe.Module, **kwargs: Any
    ) -> None:
        if not isinstance(node, ast.Module):
            return
        for statement in node.body:
            if (
                isinstance(statement, ast.Assign)
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id in TABLES
            ):
                table = ast.literal_eval(statement.value)
                mod.exports = sorted(table)
                return
