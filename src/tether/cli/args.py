"""The command line: ``tether run PROMPT`` (or ``FILE.prompty``) and ``tether chat``, with the
options both share."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from ..stores.home import chats_path

__all__ = [
    "DEFAULT_SYSTEM",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "MCP_SECRET_VARIABLE",
    "CommandError",
    "UsageError",
    "build_parser",
    "resolve_defaults",
    "store_path",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
DEFAULT_MAX_ITERATIONS = 10

# Tried on the small local model: naming "several calls at once" or "briefly" made it call
# unrelated tools or answer before the second call; this wording keeps it on the question.
DEFAULT_SYSTEM = (
    "You are a helpful assistant. Use a tool only for what the user asks. Once the tool results "
    "answer the question, reply to the user in plain text."
)

EPILOG = f"""\
examples:
  tether run "What time is it in Tokyo and in Paris? Use the current_time tool for each city."
  tether run --model openai:gpt-4.1 "What is 17.5% of 2,340? Use the calculate tool."
  tether run weather.prompty --input city=Paris --tools ./tools.py:get_weather
  tether chat --tools ./my_tools.py:search --system "You answer from search results."
  tether chat --agent ./my_agent.py:agent --approve delete_event

models (--model): local (the default: a small model that runs offline, fetched on first use),
  openai:MODEL, anthropic:MODEL, openai-responses:MODEL, groq:, gemini:, deepseek:, mistral:,
  openrouter:, together:, ollama:, vllm:, llamacpp:, or the URL of an OpenAI-compatible server.
  The key comes from the provider's variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...).
  $TETHER_MODEL, when set, replaces the default.

exit codes:
  {EXIT_OK}    the turn (or the chat session) ended normally
  {EXIT_FAILED}    the run failed: model, transport or loop error (the message says which)
  {EXIT_USAGE}    usage error: a bad option, a bad --tools value, an unknown model string, a
       .prompty file that cannot be loaded, a missing, unknown or ill-typed input
  {EXIT_INTERRUPTED}  interrupted with Ctrl-C (in chat, Ctrl-C only cancels the current turn)
"""


class UsageError(Exception):
    """A bad command line; the message is one line, exit code 2."""


class CommandError(Exception):
    """A command that could not do its work (a store it cannot read, a file it cannot write);
    the message is one line, exit code 1."""

    @classmethod
    def about(cls, what: str, cause: BaseException) -> CommandError:
        """``what: why``, the why read from ``cause`` (an ``OSError``'s words, no errno)."""
        why = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(cause)
        return cls(f"{what}: {why or type(cause).__name__}")


class _Parser(argparse.ArgumentParser):
    """Reports usage errors as a one-line message instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {value}")
    return value


def _ranged(convert: Callable[[str], float], low: float, high: float) -> Callable[[str], Any]:
    """An argparse type: ``convert`` of the text, which must lie from ``low`` to ``high``."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected a number from {low} to {high}, got {text}")
        return value

    return parse


_temperature = _ranged(float, 0, 2)
_port = _ranged(int, 0, 65535)


def _directory(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"not a directory: {text}")
    return path


def _common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    model = common.add_argument_group("model")
    model.add_argument(
        "--model",
        help="the model string, e.g. local, openai:gpt-4.1, anthropic:claude-sonnet-4-5 "
        "(default: $TETHER_MODEL, else local; for a .prompty file, the file's own model)",
    )
    model.add_argument("--system", help="the system prompt (default: a short helpful one)")
    model.add_argument(
        "--max-iterations",
        type=_positive_int,
        metavar="N",
        help=f"model calls per turn, at most (default: {DEFAULT_MAX_ITERATIONS}; with --agent, "
        "the agent's own)",
    )
    model.add_argument(
        "--max-repeated-calls",
        type=_positive_int,
        metavar="N",
        help="end a turn at the N-th repeated tool call (the same tool, arguments and result "
        "again); each repeat before it is told to the model (default: off)",
    )
    model.add_argument("--temperature", type=_temperature, metavar="T", help="sampling, 0 to 2")
    model.add_argument(
        "--max-tokens", type=_positive_int, metavar="N", help="output tokens per model call"
    )
    model.add_argument(
        "--compact-at",
        type=_positive_int,
        metavar="TOKENS",
        help="once a model call would send more than TOKENS tokens, summarise the older part "
        "of the conversation (the summary is kept with the session)",
    )
    model.add_argument(
        "--no-stream",
        action="store_true",
        help="ask the model for whole responses instead of streamed ones",
    )
    model.add_argument(
        "--trace",
        type=Path,
        metavar="FILE",
        help="record the run (spans, timings, usage, arguments and results) to FILE as JSON "
        "lines; tether trace FILE shows it",
    )
    own = common.add_argument_group("your own agent")
    own.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="run your own Agent instead of the one the model and tools options make: ATTR names "
        "it in MODULE, an importable module or a .py file; --model, --system, --temperature, "
        "--max-tokens, --no-stream, --tools, --no-demo-tools and --root do not apply to it (it "
        "brings its own), --max-iterations, --max-repeated-calls, --compact-at, --trace and "
        "--approve do",
    )
    tools = common.add_argument_group("tools")
    tools.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="add your own tools: ATTR is a Tool, a function or a list of them; MODULE is an "
        "importable module or a .py file (repeatable)",
    )
    tools.add_argument(
        "--no-demo-tools",
        action="store_true",
        help="leave out the built-in demo tools (time, calculator, units, files)",
    )
    tools.add_argument(
        "--root",
        type=_directory,
        default=None,
        metavar="DIR",
        help="the one directory the demo file tools may read (default: the current directory)",
    )
    output = common.add_argument_group("output")
    output.add_argument(
        "--json",
        action="store_true",
        help="print every event as one JSON line (nothing else on stdout)",
    )
    output.add_argument(
        "--verbose",
        action="store_true",
        help="log HTTP requests and responses (secrets redacted) and show tracebacks on errors",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    """The ``tether`` parser; ``parse_args`` raises ``UsageError`` on a bad command line."""
    from .. import __version__  # noqa: PLC0415 - the package imports this module

    parser = _Parser(
        prog="tether",
        description="Run an agent (a model with tools) from the terminal.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tether {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common: Any = _common_options()
    run = commands.add_parser(
        "run",
        parents=[common],
        help="one agent turn on PROMPT (or a FILE.prompty), streamed to the terminal",
        description="Run one agent turn on PROMPT, or run FILE.prompty, and stream it to the "
        "terminal.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "prompt",
        nargs="?",
        metavar="PROMPT",
        help="what to ask; '-' or nothing reads it from stdin (when stdin is not a terminal); "
        "or FILE.prompty to run that file",
    )
    _prompty_options(run)
    durable = run.add_argument_group("durable runs (Temporal)")
    durable.add_argument(
        "--durable",
        action="store_true",
        help="run --agent through the workers of --task-queue (start them with tether worker)",
    )
    _temporal_options(durable, agent=False)
    durable.add_argument("--id", metavar="ID", help="the run's workflow id (default: a new one)")
    worker = commands.add_parser(
        "worker",
        help="serve durable agents (Temporal workflows) on a task queue",
        description="Serve durable agents on a Temporal task queue until SIGINT or SIGTERM: "
        "their runs' model and tool calls are activities, so a worker that stops mid-run "
        "costs no finished call. MODULE:ATTR names a TemporalAgent or an Agent.",
    )
    _temporal_options(worker, required=True)
    worker.add_argument(
        "--sticky-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds before a run cached by a worker that went away moves to another one",
    )
    worker.add_argument("-v", "--verbose", action="store_true", help="log what the worker does")
    chat = commands.add_parser(
        "chat",
        parents=[common],
        help="an interactive session that keeps its history",
        description="An interactive session: /reset, /tools, /usage, /help; Ctrl-C cancels the "
        "current turn, Ctrl-D quits. Every chat is kept in the session store; --session NAME "
        "resumes one (or starts it under that name).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    chat.add_argument("--session", metavar="NAME", help="the session to resume or start")
    chat.add_argument(
        "--approve",
        action="append",
        default=[],
        metavar="TOOL",
        help="calls of this tool wait for you to approve them (repeat for more tools)",
    )
    chat.add_argument("--store", metavar="PATH", type=Path, help=STORE_HELP)
    serve = commands.add_parser(
        "serve",
        parents=[common],
        help="serve an agent over HTTP: a chat page, and runs as AG-UI events",
        description="Serve an agent over HTTP until Ctrl-C: the chat page at /, runs streamed "
        "as AG-UI Server-Sent Events (POST /agui), the sessions of the store. Binds 127.0.0.1 "
        "unless told otherwise; any other host needs a token (one is made and printed when "
        "none is given). A client that disconnects cancels nothing: the run finishes and is "
        "stored.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--store", metavar="PATH", type=Path, help=STORE_HELP)
    serve.add_argument(
        "--host", default="127.0.0.1", help="the address to bind (default: %(default)s)"
    )
    serve.add_argument(
        "--port",
        type=_port,
        default=8000,
        help="the port to bind; 0 picks a free one (default: %(default)s)",
    )
    serve.add_argument(
        "--token",
        default=os.environ.get("TETHER_SERVE_TOKEN"),
        help="the token every request must carry (default: $TETHER_SERVE_TOKEN; made up when "
        "--host is not a loopback address)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="a front end's origin (http://localhost:3000) whose page may use the server from "
        "the browser: its preflights are answered; the token rule still applies (repeatable)",
    )
    serve.add_argument(
        "--approve",
        action="append",
        default=[],
        metavar="TOOL",
        help="calls of this tool wait for approval on the page (repeat for more tools)",
    )
    serve.add_argument(
        "--a2a",
        action="store_true",
        help="also serve the agent over A2A 1.0: its card at /.well-known/agent-card.json, "
        "JSON-RPC at /a2a and HTTP+JSON under it (needs the a2a extra)",
    )
    _mcp_serve_options(commands)
    _mcp_options(commands)
    _eval_options(commands)
    sessions = commands.add_parser(
        "sessions",
        help="list the stored chat sessions",
        description="List the chat sessions kept in the session store.",
    )
    sessions.add_argument("--store", metavar="PATH", type=Path, help=STORE_HELP)
    sessions.add_argument("--json", action="store_true", help="one JSON object per line")
    trace = commands.add_parser(
        "trace",
        help="show a run recorded with --trace",
        description="Show a run recorded with --trace FILE: a tree in the terminal, or one "
        "self-contained HTML page with --html (a timeline, tokens and cost, each call's "
        "arguments and result).",
    )
    trace.add_argument("file", type=Path, metavar="FILE", help="the JSON-lines trace")
    trace.add_argument("--html", type=Path, metavar="OUT", help="write the page to OUT")
    trace.add_argument(
        "--price",
        action="append",
        type=_price,
        metavar="MODEL=IN:OUT",
        help="USD per million input and output tokens of MODEL, for the cost (repeatable)",
    )
    return parser


MCP_HOST = "127.0.0.1"
MCP_PORT = 8765


def _mcp_serve_options(commands: Any) -> None:
    """``tether mcp-serve``: an agent as an MCP server (stdio, or Streamable HTTP)."""
    serve = commands.add_parser(
        "mcp-serve",
        help="serve an agent as an MCP server: its tools, and the agent itself as the tool ask",
        description="Serve an agent to MCP clients (Claude Desktop, editors, other agents): "
        "its tools with their schemas, and the agent itself as the tool 'ask' (one string; "
        "a whole turn). Over stdin and stdout by default; --http serves Streamable HTTP at "
        f"/mcp on {MCP_HOST}. Any other host needs --token (or $TETHER_MCP_TOKEN).",
    )
    serve.add_argument(
        "--agent", required=True, metavar="MODULE:ATTR", help="the Agent to serve (or FILE.py:ATTR)"
    )
    serve.add_argument("--http", action="store_true", help="serve Streamable HTTP, not stdio")
    serve.add_argument("--host", help=f"with --http: the address to bind (default: {MCP_HOST})")
    serve.add_argument(
        "--port",
        type=_port,
        help=f"with --http: the port; 0 picks a free one (default: {MCP_PORT})",
    )
    serve.add_argument(
        "--token",
        help="with --http: the token every request must carry as 'Authorization: Bearer ...' "
        "(default: $TETHER_MCP_TOKEN; required when --host is not loopback)",
    )
    serve.add_argument("-v", "--verbose", action="store_true", help="log to stderr")


def _eval_options(commands: Any) -> None:
    """The ``tether eval`` parser."""
    run = commands.add_parser(
        "eval",
        help="run an agent over a dataset of cases and report what passed",
        description="Run an agent (or an async function) over the cases of PATH (YAML or "
        "JSON), grade each run by the dataset's evaluators, print the report and exit 1 when a "
        "case failed, or with --baseline when a case passes less often than in the baseline.",
    )
    run.add_argument("path", metavar="PATH", help="the dataset: a .yaml, .yml or .json file")
    run.add_argument(
        "--agent",
        required=True,
        metavar="MODULE:ATTR",
        help="the Agent (or function taking a case's inputs) to evaluate (or FILE.py:ATTR)",
    )
    run.add_argument(
        "--repeat", type=_positive_int, default=1, metavar="N", help="runs per case (1)"
    )
    run.add_argument(
        "--concurrency", type=_positive_int, default=4, metavar="N", help="runs at once (4)"
    )
    run.add_argument(
        "--baseline", metavar="FILE", help="a report saved with --json: fail only on a regression"
    )
    run.add_argument("--json", metavar="FILE", help="write the report as JSON (a baseline)")
    run.add_argument("--html", metavar="FILE", help="write the report as an HTML page")
    run.add_argument(
        "--no-progress", action="store_true", help="no progress bar (default: on a terminal)"
    )


MCP_SECRET_VARIABLE = "TETHER_MCP_CLIENT_SECRET"


def _mcp_options(commands: Any) -> None:
    """``tether mcp login`` and ``tether mcp logout``."""
    mcp = commands.add_parser(
        "mcp",
        help="log in to (or out of) an MCP server that asks for OAuth",
        description="Log in to an MCP server over HTTP that asks for OAuth 2.1: the tokens are "
        "kept (0600) where McpStreamable(url, auth=OAuth()) finds them.",
    )
    actions = mcp.add_subparsers(dest="mcp_command", metavar="ACTION", parser_class=_Parser)
    login = actions.add_parser(
        "login",
        help="log in with the browser and keep the tokens",
        description="Log in to the MCP server at URL: its authorization server's address is "
        "printed (and opened in the browser), you approve there, the browser comes back to "
        "127.0.0.1, and the tokens are kept. A client registers itself where the "
        f"authorization server offers it; else give --client-id (its secret, if any, in "
        f"${MCP_SECRET_VARIABLE}).",
    )
    login.add_argument("url", metavar="URL", help="the MCP server's address, e.g. .../mcp")
    _token_file(login)
    login.add_argument("--client-id", metavar="ID", help="a client registered beforehand")
    login.add_argument(
        "--client-metadata-url",
        metavar="URL",
        help="an https address of a client ID metadata document describing this client: its "
        "client id where the authorization server takes such documents (no registration)",
    )
    login.add_argument(
        "--authorization-server",
        metavar="URL",
        help="the only authorization server the MCP server may send you to",
    )
    login.add_argument(
        "--port",
        type=_port,
        default=0,
        help="the loopback port the browser comes back to (default: the one registered last, "
        "else a free one; a client given by --client-id needs its registered one)",
    )
    login.add_argument(
        "--no-browser", action="store_true", help="only print the address, do not open it"
    )
    login.add_argument(
        "--timeout",
        type=_ranged(float, 1, 86400),
        default=300.0,
        metavar="S",
        help="seconds to wait for the login (default: %(default)s)",
    )
    login.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    logout = actions.add_parser(
        "logout",
        help="forget the tokens kept for a server",
        description="Remove the tokens (and the registration) kept for the MCP server at URL.",
    )
    logout.add_argument("url", metavar="URL", help="the MCP server's address")
    _token_file(logout)


def _token_file(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help="where the tokens are kept (default: one file per server under $TETHER_HOME/"
        "mcp-oauth, else tether/mcp-oauth in the user's config directory)",
    )


PROMPTY_HELP = """\
Given FILE.prompty, tether run runs that file (Prompty's turn): its messages, tools and
model. --input NAME=VALUE and --inputs FILE.json give its inputs (each is checked against
the file's declared inputs and turned into the declared kind; --input wins over --inputs).
--tools supplies the handlers of the file's function tools (a function taking the arguments
as one dict, or keywords). The model is the file's own connection; --model overrides it, and
a file that names no model runs on --model's default. A .env file beside FILE.prompty is read
first (it never replaces a variable already set), and the file may read the variables its
model section names; --allow-env NAME lets it read others. --max-iterations counts the tool
rounds. --system, --root and --durable do not apply."""


def _prompty_options(run: argparse.ArgumentParser) -> None:
    group = run.add_argument_group("a .prompty file", PROMPTY_HELP)
    group.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="one input of FILE.prompty (repeatable)",
    )
    group.add_argument(
        "--inputs", type=Path, metavar="FILE.json", help="inputs of FILE.prompty as a JSON object"
    )
    group.add_argument(
        "--allow-env",
        action="append",
        default=[],
        metavar="NAME",
        help="let FILE.prompty read environment variable NAME besides those of its model "
        "section (repeatable)",
    )


def resolve_defaults(opts: argparse.Namespace) -> None:
    """Fill the defaults left open so that an explicit value can be told apart:
    ``opts.model_given`` says whether ``--model`` was on the command line (likewise
    ``system_given``, ``max_iterations_given``, ``address_given``, ``namespace_given``)."""
    if hasattr(opts, "model"):
        opts.model_given = opts.model is not None
        if opts.model is None:
            opts.model = os.environ.get("TETHER_MODEL") or "local"
    if hasattr(opts, "system"):
        opts.system_given = opts.system is not None
        if opts.system is None:
            opts.system = DEFAULT_SYSTEM
    late = {
        "max_iterations": DEFAULT_MAX_ITERATIONS,
        "address": os.environ.get("TEMPORAL_ADDRESS") or "127.0.0.1:7233",
        "namespace": "default",
    }
    for name, default in late.items():
        if hasattr(opts, name):
            setattr(opts, f"{name}_given", getattr(opts, name) is not None)
            if getattr(opts, name) is None:
                setattr(opts, name, default)


def _temporal_options(group: Any, *, required: bool = False, agent: bool = True) -> None:
    """The Temporal options; ``agent``: with ``--agent`` (``run`` has it among its own)."""
    if agent:
        group.add_argument(
            "--agent",
            action="append",
            required=required,
            metavar="MODULE:ATTR",
            help="the durable agent" + (" (repeatable)" if required else ""),
        )
    group.add_argument(
        "--task-queue", required=required, metavar="Q", help="the Temporal task queue"
    )
    group.add_argument(
        "--address",
        metavar="HOST:PORT",
        help="the Temporal server (default: $TEMPORAL_ADDRESS or 127.0.0.1:7233)",
    )
    group.add_argument("--namespace", help="the Temporal namespace (default: default)")


def _price(text: str) -> tuple[str, tuple[float, float]]:
    model, _, rates = text.rpartition("=")
    given, _, taken = rates.partition(":")
    try:
        price = (float(given), float(taken))
    except ValueError:
        price = (-1.0, -1.0)
    if not model or min(price) < 0:
        raise argparse.ArgumentTypeError(f"expected MODEL=IN:OUT in USD per million, got {text!r}")
    return model, price


STORE_HELP = (
    "the SQLite file of the sessions (default: $TETHER_HOME/chats.db, else in the user's data "
    "directory)"
)


def store_path(given: Path | None) -> Path:
    """Where the CLI keeps its chats."""
    return chats_path(given)
