"""Ctrl-C in the middle of an answer on a terminal: what the person sees is the partial answer
once, then the ``cancelled`` line. The terminal echoes ``^C`` where the cursor is, which must not
make the live display draw the answer a second time; a small terminal emulator below reads what
was written as a screen would show it."""

from __future__ import annotations

import asyncio
import io
import os
import re
import signal
import sys

import pytest
from rich.console import Console

from tether.cli.app import build_agent
from tether.cli.chat import ChatSession
from tether.cli.render import RichRenderer
from tether.testing import Hold, Reply, ScriptedTransport

WIDTH = 60
_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


def screen(written: str, width: int = WIDTH) -> list[str]:
    """The lines a terminal of ``width`` columns shows for ``written`` (CR, LF as CR LF, erase
    in line, cursor up, and the pending wrap of a full line; other sequences change nothing)."""
    rows: list[list[str]] = [[]]
    row = col = 0
    pending = False
    at = 0
    while at < len(written):
        match = _CSI.match(written, at)
        if match is not None:
            at = match.end()
            params, final = match.group(1), match.group(2)
            if final == "K":
                rows[row] = [] if params == "2" else rows[row][:col]
            elif final == "A":
                row = max(0, row - int(params or 1))
            pending = False if final in "KA" else pending
            continue
        char = written[at]
        at += 1
        if char == "\r":
            col, pending = 0, False
        elif char == "\n":
            row, col, pending = row + 1, 0, False
        else:
            if pending:
                row, col, pending = row + 1, 0, False
            while len(rows) <= row:
                rows.append([])
            line = rows[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = char
            if col == width - 1:
                pending = True
            else:
                col += 1
        while len(rows) <= row:
            rows.append([])
    return ["".join(r).rstrip() for r in rows]


class EchoingTerminal(io.StringIO):
    """What the program writes, with the ``^C`` the terminal itself echoes on Ctrl-C."""

    def echo_ctrl_c(self) -> None:
        self.write("^C")


@pytest.mark.skipif(sys.platform == "win32", reason="the event loop takes signal handlers on POSIX")
async def test_a_cancelled_answer_is_shown_once() -> None:
    gate = asyncio.Event()  # never set: the model stops mid-answer until cancelled
    answer = "Partial answer here"
    model = ScriptedTransport([Hold(gate, Reply(answer), after_events=2)])
    terminal = EchoingTerminal()
    out = Console(file=terminal, force_terminal=True, color_system=None, width=WIDTH)
    session = ChatSession(build_agent(model, [], system="s"), RichRenderer(out))
    turn = asyncio.create_task(session.turn("question"))
    for _ in range(500):
        if answer in terminal.getvalue():
            break
        await asyncio.sleep(0.01)
    terminal.echo_ctrl_c()
    os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends
    outcome = await asyncio.wait_for(turn, 5)
    assert outcome.cancelled
    shown = [line for line in screen(terminal.getvalue()) if line]
    assert sum(answer in line for line in shown) == 1, shown
    assert shown[-1].startswith("cancelled · ")


def test_the_emulator_wraps_a_full_line_only_when_more_follows() -> None:
    assert screen("abcd", width=4) == ["abcd"]
    assert screen("abcd^C", width=4) == ["abcd", "^C"]
    assert screen("ab\r\x1b[2Kxy\nz", width=4) == ["xy", "z"]
    assert screen("one\ntwo\r\x1b[2K\x1b[1A\x1b[2Kthree", width=8) == ["three", ""]
