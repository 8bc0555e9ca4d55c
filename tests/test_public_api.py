"""The public contract: names importable as DESIGN.md fixes them, a light import, layers that
only point down."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tether

SRC = Path(tether.__file__).parent
DOCS = SRC.parent.parent / "docs"

# The modules users import from. Every other module is internal (engine parts whose names may
# move): what users need of it is re-exported by ``tether`` or one of these.
PUBLIC_MODULES = (
    "tether",
    "tether.a2a",  # ``A2AAgent``: a remote agent over A2A 1.0 (the a2a extra)
    "tether.cli",
    "tether.durable",
    "tether.errors",  # the exception tree, each class to catch by name
    "tether.evals",  # evaluations: datasets, evaluators, reports
    "tether.local",
    "tether.loop",  # ``Run.events()``, for a door that drives a run an iteration at a time
    "tether.mcp",  # ``serve_agent()``: an agent as an MCP server
    "tether.prompty",
    "tether.serve",  # ``app()``: an agent behind HTTP (the serve extra)
    "tether.session",
    "tether.skills",
    "tether.skills.hooks",
    "tether.stores",
    "tether.testing",
    "tether.tracing",
    "tether.transports",
)


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
    from tether.a2a import A2AAgent  # noqa: F401
    from tether.durable import TemporalAgent  # noqa: F401
    from tether.evals import Case, Dataset, Report, evaluate  # noqa: F401
    from tether.prompty import ExecuteError, load, turn, turn_async  # noqa: F401
    from tether.skills import (  # noqa: F401
        Action,
        AgentState,
        CallSkillAction,
        EvaluatorOptimizer,
        EventStream,
        FinalAnswerAction,
        JsonLinesPersistence,
        MaxIterationsObservation,
        MockModel,
        Observation,
        OrchestratorWorker,
        Parallel,
        PromptChain,
        Registry,
        Result,
        Router,
        Skill,
        SkillAgent,
        SkillObservation,
        Soul,
        SoulParseError,
        ToolErrorObservation,
        ValidationErrorObservation,
        get_registry,
        register_skill,
        skill,
    )
    from tether.testing import (  # noqa: F401
        Cassette,
        ScriptedTransport,
        StubTransport,
        make_text_response,
        make_tool_use_response,
    )


def test_axio_names_import_beside_tethers_own() -> None:
    from tether import PermissionGuard, StreamError, TetherError
    from tether.tools.guards import PermissionGuard as FromGuards

    assert FromGuards is PermissionGuard
    assert issubclass(StreamError, TetherError)


def test_cantus_names_import_beside_the_doors_own() -> None:
    from tether.skills import Registry, register_validator

    assert callable(register_validator)
    assert Registry.KINDS == ("skill",)


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


def _lazy_table(tree: ast.Module) -> dict[str, str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) in ("_LAZY", "_HOMES"):
            table = ast.literal_eval(node.value)
            assert isinstance(table, dict)
            return table
    return None


def _type_checking_imports(tree: ast.Module) -> dict[str, str]:
    """Name -> module (relative to its package) of the imports under ``if TYPE_CHECKING:``."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.level == 1, ast.unparse(imp)
                for alias in imp.names:
                    # ``X as X``: the form a strict type checker reads as a re-export
                    assert alias.asname == alias.name, ast.unparse(imp)
                    found[alias.name] = imp.module or ""
    return found


LAZY_PACKAGES = [
    "",
    "a2a",
    "context",
    "durable",
    "evals",
    "loop",
    "prompty",
    "skills",
    "tracing",
    "transports",
]


@pytest.mark.parametrize("package", LAZY_PACKAGES, ids=lambda p: p or "tether")
def test_public_names_come_from_one_table(package: str) -> None:
    tree = ast.parse((SRC / package / "__init__.py").read_text())
    table = _lazy_table(tree)
    assert table is not None, f"{package or 'tether'} has no table of its public names"
    assert _type_checking_imports(tree) == table
    module = importlib.import_module(".".join(filter(None, ["tether", package])))
    extra = ["__version__"] if not package else []
    assert sorted(module.__all__) == sorted([*table, *extra])
    for name in table:
        assert getattr(module, name) is not None, name


def test_every_lazy_package_is_checked() -> None:
    lazy = sorted(
        str(p.parent.relative_to(SRC)).replace(".", "")
        for p in SRC.rglob("__init__.py")
        if "lazy_names" in p.read_text() or "_LAZY" in p.read_text()
    )
    assert lazy == sorted(LAZY_PACKAGES)


def test_names_users_write_are_exported() -> None:
    from tether import GuardDecision, RunRequest
    from tether.loop.middleware import RunRequest as FromMiddleware
    from tether.tools.decisions import GuardDecision as FromDecisions

    assert RunRequest is FromMiddleware
    assert GuardDecision == FromDecisions


def _docs_modules() -> set[str]:
    """Every module of the package the docs site names, in code (``from tether import prompty``
    too) or in text (``tether.loop.Run.events()`` names ``tether.loop``)."""
    modules = _modules()
    named: list[list[str]] = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text()
        found = re.finditer(r"\btether(?:\.[A-Za-z_]\w*)*", text)
        named += [m.group(0).split(".")[1:] for m in found]
        for code in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M):
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.ImportFrom) and node.module == "tether":
                    named.extend([a.name] for a in node.names if a.name in modules)
    return {".".join(["tether", *filter(None, [_resolve(".".join(p), modules)])]) for p in named}


def test_the_docs_name_public_modules_only() -> None:
    assert _docs_modules() == set(PUBLIC_MODULES)


def test_the_api_reference_documents_every_public_module() -> None:
    pages = sorted((DOCS / "reference").glob("*.md"))
    documented = [
        module for page in pages for module in re.findall(r"^::: ([\w.]+)$", page.read_text(), re.M)
    ]
    assert sorted(documented) == sorted(PUBLIC_MODULES)


def test_the_package_docstring_lists_the_public_modules() -> None:
    doc = tether.__doc__ or ""
    listed = doc.split("Public modules:", 1)[1].split("Every other module")[0]
    assert sorted(re.findall(r"``([\w.]+)``", listed)) == sorted(PUBLIC_MODULES)


def test_public_modules_import() -> None:
    out = _fresh(f"import importlib; [importlib.import_module(m) for m in {PUBLIC_MODULES!r}]")
    assert out == ""


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


# Layers, lowest first. A module may import its own family and any lower layer; within the parts
# layer a family may not import another part (a transport never imports a tool, and so on), but
# for those of ``PART_USES``: a compaction names the model that summarises (a transport).
LAYERS: dict[str, set[str]] = {
    "data": {"types", "errors", "messages", "events"},
    "base": {"base"},
    "parts": {"tools", "transports", "context"},
    "sources": {"mcp", "stores"},
    "engine": {"loop", "agent", "tracing"},
    "doors": {
        "testing",
        "providers",
        "local",
        "cli",
        "session",
        "prompty",
        "skills",
        "durable",
        "serve",
        "a2a",
        "evals",
    },
}
RANK = {family: rank for rank, members in enumerate(LAYERS.values()) for family in members}
PARTS = LAYERS["parts"]
PART_USES = {"context": {"transports"}}


def _family(module: str) -> str:
    return module.split(".", maxsplit=1)[0]


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name relative to ``tether`` (packages by name)."""
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module an imported name refers to (``pkg.mod.Name`` -> ``pkg.mod``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _tether_imports(path: Path) -> set[str]:
    """Dotted names (relative to ``tether``) this file imports, at any depth in it."""
    rel = path.relative_to(SRC).with_suffix("")
    package = list(rel.parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = [*base, *(node.module.split(".") if node.module else [])]
            elif node.module and (node.module == "tether" or node.module.startswith("tether.")):
                target = node.module.split(".")[1:]
            else:
                continue
            found.update(".".join([*target, a.name]) for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("tether.") for a in node.names if a.name.startswith("tether.")
            )
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for me, path in modules.items():
        targets = {_resolve(name, modules) for name in _tether_imports(path)}
        graph[me] = {t for t in targets if t is not None and t not in (me, "")}
    return graph


def test_every_module_has_a_layer() -> None:
    unknown = sorted({_family(m) for m in _modules() if m} - set(RANK))
    assert not unknown, f"modules outside every layer: {unknown}"


def test_layers_only_point_down() -> None:
    problems = []
    for me, targets in _graph().items():
        if not me:
            continue  # the package's own __init__ re-exports (lazily) from every layer
        family = _family(me)
        for target in targets:
            tfam = _family(target)
            if not target or tfam == family:
                continue
            if RANK[tfam] > RANK[family]:
                problems.append(f"{me} imports {target}, a layer above")
            elif family in PARTS and tfam in PARTS and tfam not in PART_USES.get(family, ()):
                problems.append(f"{me} imports {target}, another part")
    assert not problems, "\n".join(sorted(problems))


PROMPTY_LAYERS: dict[str, set[str]] = {
    "data": {"env", "errors", "serial", "messages", "paths", "model", "schema", "registry"},
    "tracing": {"tracing"},
    "stages": {"loading", "render", "discovery", "turns"},
    "execution": {"execution"},
    "operations": {"pipeline"},
    "kinds": {"kinds"},
}
"""The Prompty door's own layers: each module or subpackage of ``tether.prompty`` by the
part of the door it is, lowest first."""


LOOP_LAYERS: dict[str, set[str]] = {
    "shared": {"middleware", "control", "state", "approval"},
    "config": {"limits", "config"},
    "steps": {
        "history_view",
        "reply",
        "dispatch",
        "output",
        "handoff",
        "compact",
        "call_start",
        "steps",
        "transcript",
        "offer",
        "resume",
        "outcome",
        "notices",
    },
    "run": {"run"},
    "around": {"entry", "stream", "delegation"},
}
"""The loop's own order: each module (or subpackage) of ``tether.loop`` by rank, lowest first:
what every step shares (the middleware seam, run controls, run state, approval records), what
configures a run, the steps, the run that calls them, and what wraps a run for a caller."""

NEW_LOOP_MODULE = (
    "put each in the LOWEST rank of LOOP_LAYERS (tests/test_public_api.py) that is at or above "
    "every loop module it imports (a new rank between two if none fits), and add it to the "
    "table of the loop's order in ARCHITECTURE.md"
)


def _inside(package: str, layers: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    """The parts (first name below ``package``) of ``tether.<package>`` in no rank of ``layers``,
    and each import of a part ranked above the importer's."""
    rank = {part: r for r, members in enumerate(layers.values()) for part in members}
    inside = {m: t for m, t in _graph().items() if m.startswith(package + ".")}
    unknown = sorted({m.split(".")[1] for m in inside} - set(rank))
    problems = [
        f"{me} imports {target}, a layer above"
        for me, targets in inside.items()
        for target in targets
        if target in inside  # an unranked part is reported as unknown
        and rank.get(target.split(".")[1], -1) > rank.get(me.split(".")[1], len(layers))
    ]
    return unknown, sorted(problems)


def test_the_prompty_door_is_layered_too() -> None:
    unknown, problems = _inside("prompty", PROMPTY_LAYERS)
    assert not unknown, f"parts of the Prompty door outside every layer: {unknown}"
    assert not problems, "\n".join(sorted(problems))


def test_the_loop_is_layered_too() -> None:
    """No module of ``tether.loop`` imports one ranked above it, and every one has a rank."""
    unknown, problems = _inside("loop", LOOP_LAYERS)
    assert not unknown, f"modules of tether.loop in no rank: {unknown}; {NEW_LOOP_MODULE}"
    gone = sorted(
        set().union(*LOOP_LAYERS.values())
        - {m.split(".")[1] for m in _modules() if m.startswith("loop.")}
    )
    assert not gone, f"LOOP_LAYERS ranks modules tether.loop no longer has: {gone}"
    assert not problems, "\n".join([*problems, f"(a module that moved: {NEW_LOOP_MODULE})"])


def test_the_prompty_door_has_a_short_top_level() -> None:
    top = [
        p for p in (SRC / "prompty").iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()
    ]
    modules = [p for p in top if p.suffix == ".py"]
    assert len(modules) <= 12, sorted(p.name for p in modules)


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node and node not in state:
            visit(node)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_data_layer_imports_alone() -> None:
    out = _fresh(
        "import sys, tether.messages, tether.events, tether.types, tether.errors; "
        "print(sorted(m for m in sys.modules if m.startswith('tether')))"
    )
    loaded = {m.removeprefix("tether.") for m in eval(out)} - {"tether"}
    assert loaded <= LAYERS["data"], loaded - LAYERS["data"]


def test_the_package_has_a_short_top_level() -> None:
    """A newcomer sees the layers in the folders: at most 25 modules and packages at the top."""
    top = [p for p in SRC.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()]
    assert len(top) <= 25, sorted(p.name for p in top)


FACES = {"loop", "context"}
"""Packages whose modules only their own package and the engine's layer import; the doors use
the names of the package itself (``tether.loop``'s face for door authors)."""


def test_doors_build_on_the_faces_of_loop_and_context() -> None:
    problems = [
        f"{me} imports {target}; import it from tether.{_family(target)}"
        for me, targets in _graph().items()
        if me and RANK[_family(me)] == RANK["testing"]
        for target in targets
        if _family(target) in FACES and target != _family(target)
    ]
    assert not problems, "\n".join(sorted(problems))
