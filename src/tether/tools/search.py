"""Deferred loading for large tool sets: past a threshold the model is offered one search tool
and the tools its searches found, not every schema (178 MCP tools took 62 % of a context window
before the first word).

``ToolSearch`` is a ``ToolSelector``: it reads what was found from the history (the search
tool's results), so it keeps no state per run and a resumed or durable run offers the same
tools. Its ``tool`` must be among the agent's tools; ``over(tools)`` adds it::

    search = ToolSearch(threshold=40)
    agent = Agent(system, model, tools=search.over(many_tools), selector=search)

A tool marked ``deferred`` (an MCP server past its ``tool_search`` threshold marks its own) is
searched for whatever the count; an agent with no selector gets a search of its own for them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..messages import Message, ToolResultBlock, ToolUseBlock
from .tool import Tool

__all__ = ["FOUND_NONE", "FOUND_START", "ToolSearch"]

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# How a search result that found tools begins, and one that found none (a template reads them).
FOUND_START = '{"found": [{'
FOUND_NONE = '{"found": []'
_MAX_QUERY = 1000  # characters of a query read: the model's text is untrusted
_FOUND = (
    "These tools are offered to you now. Call the one that does the task, with its arguments;"
    " do not describe the call in words."
)
_NONE = (
    "No tool matched. Search again with other words: the action (create, find, send, delete...)"
    " and the kind of thing it acts on."
)
# Words too common to tell tools apart: a query's "to" or "my" must not pick a tool.
_COMMON = frozenset(
    _WORD.findall(
        "a about all an and any are as at be by can do for from how i in is it me my of on or our"
        " please that the their this to up what with you your"
    )
)


def _words(text: str) -> set[str]:
    """The words of ``text``, lower-cased, camelCase and snake_case split, plural ``s`` dropped."""
    spaced = _CAMEL.sub(" ", text).lower()
    found = _WORD.findall(spaced)
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in found if w not in _COMMON}


def _tool_words(tool: Tool) -> tuple[set[str], set[str]]:
    """The words of ``tool``'s name, and of all it shows (name, description, parameters)."""
    properties = (tool.schema or {}).get("properties") or {}
    named = _words(tool.name)
    return named, named | _words(" ".join([tool.description, *map(str, properties)]))


class ToolSearch:
    """Offers ``tool`` (``search_tools(query)``) and what it found once an agent has more than
    ``threshold`` tools, or any ``deferred`` one; each search gives at most ``limit`` tools.
    Tools the model already called stay offered."""

    def __init__(self, threshold: int = 40, limit: int = 5, name: str = "search_tools") -> None:
        if threshold < 0 or limit < 1:
            raise ValueError("threshold must be >= 0 and limit >= 1")
        self.threshold, self.limit = threshold, limit
        self._all: Sequence[Tool] = ()
        self._request = ""  # the user's latest words, which a search also reads
        self.tool = Tool(
            name,
            self._search,
            description=(
                "Find tools for a task. Describe the action and the kind of thing it acts on, in"
                " a few plain words (for example 'send sms message' or 'resize image'). The tools"
                " found are offered from your next reply on; call them then."
            ),
            schema={
                "type": "object",
                "properties": {"query": {"type": "string", "description": "what to do"}},
                "required": ["query"],
            },
        )

    def over(self, tools: Iterable[Any]) -> list[Any]:
        """``tools`` with the search tool added (for ``Agent(tools=...)``)."""
        return [*tools, self.tool]

    async def select(self, messages: Iterable[Message], tools: Iterable[Tool]) -> list[Tool]:
        """Every tool while none is deferred and there are at most ``threshold``; else the
        search tool, the tools not deferred, and of the deferred ones (all of them, past the
        threshold) those its searches found and those the model called."""
        messages = list(messages)
        self._request = _latest_request(messages)
        others = [t for t in tools if t.name != self.tool.name]
        deferred = others if len(others) > self.threshold else [t for t in others if t.deferred]
        self._all = deferred
        if not deferred:
            return others
        wanted = _found(messages, self.tool.name)
        hidden = {id(t) for t in deferred if t.name not in wanted}
        return [self.tool, *(t for t in others if id(t) not in hidden)]

    def _search(self, query: str) -> str:
        found = self.find(query[:_MAX_QUERY], self._request[:_MAX_QUERY])
        if not found:
            return json.dumps({"found": [], "note": _NONE})
        shown = [{"name": t.name, "description": t.description} for t in found]
        return json.dumps({"found": shown, "note": _FOUND})

    def find(self, query: str, request: str = "") -> list[Tool]:
        """The ``limit`` tools that best match ``query`` (rarer words count more, and a word of
        a tool's name twice); the words of the user's ``request`` count half, so a query in
        other words than the tools' still finds what the user asked for."""
        weight = dict.fromkeys(_words(request), 0.5)
        weight.update((w, weight.get(w, 0.0) + 1.0) for w in _words(query))
        words = [_tool_words(tool) for tool in self._all]
        count = len(words) or 1
        rarity = {w: math.log(1 + count / (1 + sum(w in ws for _, ws in words))) for w in weight}
        scored = [
            (sum(weight[w] * rarity[w] * (2 if w in named else 1) for w in ws & weight.keys()), i)
            for i, (named, ws) in enumerate(words)
        ]
        best = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
        return [self._all[i] for _, i in best[: self.limit]]


def _latest_request(messages: Sequence[Message]) -> str:
    """The text of the user's latest message (not a tool result)."""
    for message in reversed(messages):
        if message.role == "user" and message.text:
            return message.text
    return ""


def _found(messages: Iterable[Message], search: str) -> set[str]:
    """The names the history's searches found, and of the tools the model called."""
    searches: set[str] = set()
    names: set[str] = set()
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolUseBlock) and block.name == search:
                searches.add(block.id)
            elif isinstance(block, ToolUseBlock):
                names.add(block.name)
            elif isinstance(block, ToolResultBlock) and block.tool_use_id in searches:
                names.update(_names(block.content))
    return names


def _names(content: object) -> list[str]:
    """The tool names in a search result (nothing from a result that is not one)."""
    if not isinstance(content, str):
        return []
    try:
        return [str(item["name"]) for item in json.loads(content)["found"]]
    except (ValueError, TypeError, KeyError):
        return []
