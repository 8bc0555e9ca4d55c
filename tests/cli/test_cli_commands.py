"""``main`` dispatches from one table: every subcommand the parser knows has its handler."""

from __future__ import annotations

import argparse

from tether.cli import COMMANDS
from tether.cli.args import build_parser


def _subcommands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    raise AssertionError("the tether parser has no subcommands")


def test_every_subcommand_has_a_handler() -> None:
    assert set(COMMANDS) == _subcommands(build_parser())
    assert set(COMMANDS) >= {"run", "chat", "sessions", "trace", "worker"}
