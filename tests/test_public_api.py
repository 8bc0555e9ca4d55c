"""The public contract: names importable as DESIGN.md fixes them, a light import, layers that
only point down."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import tether

SRC = Path(tether.__file__).parent


def test_design_names_import() -> None:
    from tether import (  # noqa: F401
        Agent,
        AgentStream,
        CompletionTransport,
        ContextStore,
        Error,
        ImageBlock,
        IterationEnd,
        MemoryContextStore,
        Message,
        ReasoningBlock,
        ReasoningDelta,
        SessionEndEvent,
        StopReason,
        StreamEvent,
        TextBlock,
        TextDelta,
        Tool,
        ToolInputDelta,
        ToolResult,
        ToolResultBlock,
        ToolSelector,
        ToolUseBlock,
        ToolUseStart,
        Usage,
        tool,
    )
    from tether.testing import (  # noqa: F401
        ScriptedTransport,
        StubTransport,
        make_text_response,
        make_tool_use_response,
    )


def test_dunder_all_is_complete_and_resolvable() -> None:
    for name in tether.__all__:
        assert getattr(tether, name) is not None, name
    public = {
        n
        for n, v in vars(tether).items()
        if not n.startswith("_")
        and not isinstance(v, type(sys))
        and n not in {"annotations"}
        and n not in {"TYPE_CHECKING", "Any"}
    }
    assert public <= set(tether.__all__), public - set(tether.__all__)


def _fresh(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_import_tether_is_light() -> None:
    heavy = ["pydantic", "httpx", "mcp", "opentelemetry", "rich", "temporalio", "hypothesis"]
    out = _fresh(f"import sys, tether; print([m for m in {heavy!r} if m in sys.modules])")
    assert out == "[]"


def test_tool_loads_pydantic_on_first_use() -> None:
    out = _fresh(
        "import sys, tether; a = 'pydantic' in sys.modules; tether.tool; "
        "print(a, 'pydantic' in sys.modules)"
    )
    assert out == "False True"


# Layers: data <- parts (tools | transports | context) <- engine <- doors. A module may import
# its own layer's family and anything below it, never above or sideways into another part.
DATA = {"types", "errors", "messages", "events", "codec"}
PARTS = {
    "tools": {"tools"},
    "transports": {"transports"},
    "context": {"context"},
    "control": {"control"},
    "budget": {"budget"},
    "testing": {"testing"},
}
ENGINE = {"agent", "loop", "turn", "dispatch", "stream"}


def _family(module: str) -> str:
    return module.split(".", maxsplit=1)[0]


def _tether_imports(path: Path) -> set[str]:
    rel = path.relative_to(SRC).with_suffix("")
    package = list(rel.parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = [*base, *(node.module.split(".") if node.module else [])]
                if not node.module:
                    found.update(".".join([*target, a.name]) for a in node.names)
                else:
                    found.add(".".join(target))
            elif node.module and node.module.startswith("tether."):
                found.add(node.module.removeprefix("tether."))
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("tether.") for a in node.names if a.name.startswith("tether.")
            )
    return {m for m in found if m}


def test_layers_only_point_down() -> None:
    problems = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).with_suffix("")
        me = ".".join(rel.parts)
        if me == "__init__":
            continue
        family = _family(me)
        for target in _tether_imports(path):
            tfam = _family(target)
            if tfam in DATA:
                continue
            if family in DATA:
                problems.append(f"{me} (data) imports {target}")
            elif family in PARTS and tfam not in PARTS[family]:
                problems.append(f"{me} imports {target}, outside its layer")
            elif family in ENGINE and tfam not in ENGINE and tfam not in PARTS:
                problems.append(f"{me} (engine) imports {target}, a layer above")
    assert not problems, "\n".join(problems)
