"""Text from outside (model output, tool results, span names, error messages) made safe for a
terminal: control characters that could clear the screen, set the window title, plant a link
(OSC 8) or reorder what is shown (bidi overrides) are written out as visible escapes instead.
Newlines and tabs stay; a carriage return, which could overwrite a shown line, is dropped.
``--json`` output is never passed through this: it stays exact."""

from __future__ import annotations

from rich.text import Text

__all__ = ["ERROR_PREFIX", "error_line", "safe", "safe_text"]

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS = (*range(0x20), *range(0x7F, 0xA0))  # C0, DEL and C1


def _visible(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_TABLE: dict[int, str | None] = {
    code: _visible(code) for code in (*_CONTROLS, *_BIDI) if chr(code) not in "\n\t"
}
_TABLE[ord("\r")] = None  # dropped


def safe(text: str) -> str:
    """``text`` with every terminal control character (but newline and tab) made visible."""
    return text.translate(_TABLE)


def safe_text(text: str, style: str = "") -> Text:
    """``safe(text)`` as a Rich ``Text``: never read as markup, ``[/]`` included."""
    return Text(safe(text), style=style)


ERROR_PREFIX = "tether: error: "
"""What starts each of tether's own error lines, so none reads as a model's "Error: ..." text."""


def error_line(message: str) -> Text:
    """One of tether's own error lines: ``tether: error: message``, the prefix bold red."""
    line = Text(ERROR_PREFIX, style="bold red")
    line.append(safe(message))
    return line
