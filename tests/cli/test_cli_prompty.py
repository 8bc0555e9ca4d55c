"""``tether run FILE.prompty``: the file's inputs from ``--input``/``--inputs`` (checked and
coerced to their declared kinds), its tools' handlers from ``--tools``, its own connection (or
``--model``), rendered and ended as ``tether run PROMPT`` is. The model is a scripted one,
registered as the connection the file names (Prompty's own seam), or given through the CLI's
``make_transport``; one test runs the command in a child process against a local HTTP server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tether.cli import main
from tether.prompty import registry
from tether.testing import Call, Hold, Reply, ScriptedTransport

pytestmark = pytest.mark.timeout(60)

CONNECTION = "cli-scripted"

WEATHER = f"""\
---
name: weather
model:
  id: scripted
  provider: openai
  connection: {{kind: reference, name: {CONNECTION}}}
tools:
  - name: get_weather
    kind: function
    description: The weather in a city
    parameters:
      - {{name: city, kind: string, required: true}}
inputs:
  - {{name: question, kind: string, required: true}}
  - {{name: tone, kind: string, default: plain}}
---
system:
You answer questions about the weather, in a {{{{tone}}}} tone.

user:
{{{{question}}}}
"""

TOOLS = """\
def get_weather(args):
    return f"sunny in {args['city']}"
"""


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    registry.clear_connections()
    registry.clear_tools()
    yield
    registry.clear_connections()
    registry.clear_tools()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "weather.prompty").write_text(WEATHER)
    (tmp_path / "tools.py").write_text(TOOLS)
    return tmp_path


def weather_model() -> ScriptedTransport:
    model = ScriptedTransport(
        [Reply(tool_calls=[Call("get_weather", {"city": "Paris"})]), Reply("It is sunny.")]
    )
    registry.register_connection(CONNECTION, model)
    return model


def sent(model: ScriptedTransport, call: int = 0) -> str:
    request = model.requests[call]
    return request.system + "\n".join(m.text for m in request.messages)


def error_line(err: str) -> str:
    (line,) = err.strip().splitlines()
    assert line.startswith("tether: error: ") and "Traceback" not in err
    return line


QUESTION = ["--input", "question=Weather in Paris?"]
TOOL = ["--tools", "tools.py:get_weather"]


# -- a run ---------------------------------------------------------------------------------------


def test_a_run_streams_like_tether_run(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = weather_model()
    assert main(["run", "weather.prompty", *QUESTION, *TOOL]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == '→ get_weather(city="Paris")'
    assert lines[1] == "← get_weather: sunny in Paris"
    assert lines[2] == "It is sunny."
    assert lines[3].startswith("2 iterations · ")
    assert err == ""
    assert "Weather in Paris?" in sent(model) and "in a plain tone" in sent(model)
    assert model.requests[0].tool_names == ["get_weather"]  # the file's tools, no demo tools


def test_json_prints_every_event(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    weather_model()
    assert main(["run", "weather.prompty", "--json", *QUESTION, *TOOL]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "session_end" and events[-1]["stop_reason"] == "end_turn"
    assert kinds.count("tool_dispatch") == 1
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["content"] == "sunny in Paris" and not result["is_error"]


def test_trace_records_the_run(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    weather_model()
    trace = folder / "run.jsonl"
    assert main(["run", "weather.prompty", "--trace", str(trace), *QUESTION, *TOOL]) == 0
    capsys.readouterr()
    assert main(["trace", str(trace)]) == 0
    shown = capsys.readouterr().out
    assert "get_weather" in shown and "1 tool call(s)" in shown


def test_keyword_tools_and_tool_objects_are_handlers_too(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "typed.py").write_text(
        "from tether import tool\n"
        "def get_weather(city: str) -> str:\n"
        "    return f'typed {city}'\n"
        "@tool(name='get_weather')\n"
        "def as_tool(city: str) -> str:\n"
        "    return f'tool {city}'\n"
    )
    weather_model()
    assert main(["run", "weather.prompty", *QUESTION, "--tools", "typed.py:get_weather"]) == 0
    assert "← get_weather: typed Paris" in capsys.readouterr().out
    weather_model()
    assert main(["run", "weather.prompty", *QUESTION, "--tools", "typed.py:as_tool"]) == 0
    assert "← get_weather: tool Paris" in capsys.readouterr().out


def test_a_failed_run_exits_1(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedTransport([Reply(tool_calls=[Call("launch", {})])])
    registry.register_connection(CONNECTION, model)
    assert main(["run", "weather.prompty", *QUESTION, *TOOL]) == 1
    assert error_line(capsys.readouterr().err) == "tether: error: Tool not registered: launch"


def test_a_tool_without_a_handler_is_an_error_result_not_a_crash(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = weather_model()
    assert main(["run", "weather.prompty", *QUESTION]) == 0
    out, err = capsys.readouterr()
    assert "← get_weather: ValueError: No handler registered for tool: get_weather" in out
    assert err == (
        "warning: weather.prompty declares tool 'get_weather' and no --tools handler serves it; "
        "its calls will be error results\n"
    )
    assert model.requests[1].last_message.tool_results[0].is_error


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to the event loop is POSIX only")
def test_ctrl_c_exits_130(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    model = ScriptedTransport([Hold(asyncio.Event(), Reply("never"))])
    registry.register_connection(CONNECTION, model)

    def interrupt() -> None:
        for _ in range(500):
            if model.requests:
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.01)

    threading.Thread(target=interrupt, daemon=True).start()
    assert main(["run", "weather.prompty", "--json", *QUESTION, *TOOL]) == 130
    out, err = capsys.readouterr()
    assert json.loads(out.splitlines()[-1])["stop_reason"] == "cancelled"
    assert err.strip() == "interrupted"


# -- inputs ----------------------------------------------------------------------------------------

TYPED = f"""\
---
model:
  id: scripted
  provider: openai
  connection: {{kind: reference, name: {CONNECTION}}}
inputs:
  - {{name: n, kind: integer, required: true}}
  - {{name: x, kind: float, default: 0.5}}
  - {{name: ok, kind: boolean, default: false}}
  - {{name: o, kind: object, default: {{}}}}
  - {{name: a, kind: array, default: []}}
  - {{name: s, kind: string, default: ""}}
---
user:
n+1={{{{ n + 1 }}}} x*2={{{{ x * 2 }}}} ok={{{{ 'yes' if ok else 'no' }}}} \
o.k={{{{ o.k }}}} a={{{{ a | length }}}} s={{{{ s }}}}
"""


@pytest.fixture
def typed(folder: Path) -> ScriptedTransport:
    (folder / "typed.prompty").write_text(TYPED)
    model = ScriptedTransport([Reply("done")])
    registry.register_connection(CONNECTION, model)
    return model


def test_inputs_are_coerced_to_their_declared_kinds(
    typed: ScriptedTransport, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "typed.prompty", "--input", "n=41", "--input", "x=1.25", "--input", "ok=true"]
    argv += ["--input", 'o={"k": "v"}', "--input", "a=[1, 2, 3]", "--input", "s=a=b"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "n+1=42 x*2=2.5 ok=yes o.k=v a=3 s=a=b" in sent(typed)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("n=4.5", "tether: error: --input n=4.5: input 'n' is an integer; got '4.5'"),
        ("x=abc", "tether: error: --input x=abc: input 'x' is a number; got 'abc'"),
        (
            "ok=maybe",
            "tether: error: --input ok=maybe: input 'ok' is a boolean (true or false); got ",
        ),
        ("o=[1]", "tether: error: --input o=[1]: input 'o' is a JSON object; got a JSON array"),
        ("a={", "tether: error: --input a={: input 'a' is a JSON array; got text that is not JSON"),
        (
            "zzz=1",
            "tether: error: --input zzz=1: the file declares no input 'zzz' (it declares: n, x, ",
        ),
        ("novalue", "tether: error: --input novalue: expected NAME=VALUE"),
    ],
)
def test_bad_inputs_are_usage_errors_and_nothing_runs(
    typed: ScriptedTransport, capsys: pytest.CaptureFixture[str], given: str, message: str
) -> None:
    extra = [] if given.startswith("n=") else ["--input", "n=1"]
    assert main(["run", "typed.prompty", "--input", given, *extra]) == 2
    assert error_line(capsys.readouterr().err).startswith(message)
    assert typed.requests == []


def test_a_missing_required_input_is_a_usage_error(
    typed: ScriptedTransport, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "typed.prompty"]) == 2
    assert error_line(capsys.readouterr().err) == (
        "tether: error: typed.prompty needs input 'n' (--input n=VALUE)"
    )
    assert typed.requests == []


def test_inputs_from_a_json_file_and_input_overrides_it(
    typed: ScriptedTransport, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "in.json").write_text(json.dumps({"n": 1, "ok": True, "a": [1], "s": "from file"}))
    assert main(["run", "typed.prompty", "--inputs", "in.json", "--input", "s=given"]) == 0
    assert "n+1=2 x*2=1.0 ok=yes o.k= a=1 s=given" in sent(typed)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "[1, 2]",
            "tether: error: --inputs in.json: expected a JSON object of inputs, got a JSON array",
        ),
        ("{nope", "tether: error: --inputs in.json: not JSON: "),
        ('{"n": "one"}', "tether: error: --inputs in.json: input 'n' is an integer; got 'one'"),
        ('{"n": 1, "q": 2}', "tether: error: --inputs in.json: the file declares no input 'q'"),
        (None, "tether: error: --inputs in.json: no such file"),
    ],
)
def test_bad_input_files_are_usage_errors(
    typed: ScriptedTransport,
    folder: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    message: str,
) -> None:
    if content is not None:
        (folder / "in.json").write_text(content)
    assert main(["run", "typed.prompty", "--inputs", "in.json"]) == 2
    assert error_line(capsys.readouterr().err).startswith(message)
    assert typed.requests == []


# -- usage errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "missing.prompty"], "tether: error: no such file: missing.prompty"),
        (["run", "hello", "--input", "a=b"], "tether: error: --input needs a FILE.prompty"),
        (
            ["run", "weather.prompty", *QUESTION, "--system", "s"],
            "tether: error: --system does not apply to a .prompty file",
        ),
        (
            ["run", "weather.prompty", *QUESTION, "--durable"],
            "tether: error: --durable does not apply to a .prompty file",
        ),
        (
            ["run", "weather.prompty", *QUESTION, "--tools", "tools.py:nope"],
            "tether: error: --tools tools.py:nope: tools.py has no attribute 'nope'",
        ),
    ],
)
def test_usage_errors(
    folder: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    model = weather_model()
    assert main(argv) == 2
    assert error_line(capsys.readouterr().err).startswith(message)
    assert model.requests == []


def test_a_handler_for_a_tool_the_file_does_not_declare_is_a_usage_error(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "more.py").write_text("def get_wether(args):\n    return 'typo'\n")
    weather_model()
    assert main(["run", "weather.prompty", *QUESTION, "--tools", "more.py:get_wether"]) == 2
    assert error_line(capsys.readouterr().err) == (
        "tether: error: --tools more.py:get_wether: weather.prompty declares no tool 'get_wether' "
        "(it declares: get_weather)"
    )


def test_a_broken_file_is_a_usage_error(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "broken.prompty").write_text("---\nmodel: [unclosed\n---\nuser: hi\n")
    assert main(["run", "broken.prompty"]) == 2
    assert "broken.prompty" in error_line(capsys.readouterr().err)


# -- the model -----------------------------------------------------------------------------------

NO_MODEL = """\
---
name: bare
---
user:
Say hello.
"""


def test_a_file_without_a_model_runs_on_model(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "bare.prompty").write_text(NO_MODEL)
    asked: list[str] = []
    script = ScriptedTransport([Reply("hello")])

    def make_transport(opts: Any, **_: Any) -> ScriptedTransport:
        asked.append(opts.model)
        return script

    monkeypatch.setattr("tether.cli.make_transport", make_transport)
    monkeypatch.delenv("TETHER_MODEL", raising=False)
    assert main(["run", "bare.prompty"]) == 0
    assert asked == ["local"]
    assert capsys.readouterr().out.splitlines()[0] == "hello"


def test_an_explicit_model_overrides_the_files(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files_own = weather_model()
    asked: list[str] = []
    script = ScriptedTransport([Reply("from --model")])

    def make_transport(opts: Any, **_: Any) -> ScriptedTransport:
        asked.append(opts.model)
        return script

    monkeypatch.setattr("tether.cli.make_transport", make_transport)
    monkeypatch.setenv("TETHER_MODEL", "openai:from-env")
    assert main(["run", "weather.prompty", *QUESTION, "--model", "openai:gpt-4.1"]) == 0
    assert asked == ["openai:gpt-4.1"] and files_own.requests == []
    # $TETHER_MODEL replaces only the default: the file's own model wins over it.
    assert main(["run", "weather.prompty", *QUESTION, *TOOL]) == 0
    assert asked == ["openai:gpt-4.1"] and len(files_own.requests) == 2


# -- the environment ------------------------------------------------------------------------------

FROM_ENV = """\
---
model:
  id: scripted
  provider: openai
  connection: {kind: reference, name: "${env:TETHER_TEST_CONNECTION}"}
inputs:
  - {name: who, kind: string, default: "${env:TETHER_TEST_WHO}"}
---
user:
Hello {{who}}.
"""


def test_the_model_section_may_read_the_environment_and_the_rest_only_when_allowed(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "env.prompty").write_text(FROM_ENV)
    monkeypatch.setenv("TETHER_TEST_CONNECTION", CONNECTION)
    monkeypatch.setenv("TETHER_TEST_WHO", "Ada")
    model = ScriptedTransport([Reply("hi")])
    registry.register_connection(CONNECTION, model)
    assert main(["run", "env.prompty"]) == 2
    assert error_line(capsys.readouterr().err).startswith(
        "tether: error: ${env:TETHER_TEST_WHO} is not allowed: tether run reads only the variables "
        "of the file's model section; --allow-env TETHER_TEST_WHO lets it read this one"
    )
    assert model.requests == []
    assert main(["run", "env.prompty", "--allow-env", "TETHER_TEST_WHO"]) == 0
    assert "Hello Ada." in sent(model)


def test_a_dotenv_file_beside_the_file_is_read_without_overriding_the_environment(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (folder / "env.prompty").write_text(FROM_ENV)
    (folder / ".env").write_text(f"TETHER_TEST_CONNECTION={CONNECTION}\nTETHER_TEST_WHO=Dotenv\n")
    monkeypatch.setenv("TETHER_TEST_CONNECTION", "")  # so that the end of the test restores it
    monkeypatch.delenv("TETHER_TEST_CONNECTION")
    # short of the 8 characters from which a value read is blanked in all later text (a value
    # like "Environment" would blank that word in every later error message of the process)
    monkeypatch.setenv("TETHER_TEST_WHO", "Environ")
    model = ScriptedTransport([Reply("hi")])
    registry.register_connection(CONNECTION, model)
    assert main(["run", "env.prompty", "--allow-env", "TETHER_TEST_WHO"]) == 0
    assert "Hello Environ." in sent(model)


def test_help_tells_of_prompty_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    shown = capsys.readouterr().out
    for words in ("FILE.prompty", "--input NAME=VALUE", "--inputs FILE.json", "--allow-env"):
        assert words in shown


# -- as users run it: a child process against a local OpenAI-compatible server ------------------


class _ChatServer(BaseHTTPRequestHandler):
    """Answers chat completions: a get_weather call first, then text; keeps what it was sent."""

    seen: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.headers.get("Authorization", ""), body))
        called = any(m.get("role") == "tool" for m in body["messages"])
        delta: dict[str, Any] = (
            {"role": "assistant", "content": "Sunny, says the tool."}
            if called
            else {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            }
        )
        finish = "stop" if called else "tool_calls"
        chunks = [
            {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [c]}
            for c in (
                {"index": 0, "delta": delta, "finish_reason": None},
                {"index": 0, "delta": {}, "finish_reason": finish},
            )
        ]
        payload = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        data = payload.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


SERVED = """\
---
name: weather
model:
  id: test-model
  provider: openai
  connection:
    kind: key
    endpoint: ${env:TETHER_TEST_ENDPOINT}
    apiKey: ${env:TETHER_TEST_KEY}
tools:
  - name: get_weather
    kind: function
    description: The weather in a city
    parameters:
      - {name: city, kind: string, required: true}
inputs:
  - {name: question, kind: string, required: true}
---
user:
{{question}}
"""


def test_python_m_tether_cli_runs_a_prompty_file(tmp_path: Path) -> None:
    _ChatServer.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (tmp_path / "weather.prompty").write_text(SERVED)
        (tmp_path / "tools.py").write_text(TOOLS)
        env = {
            **os.environ,
            "TETHER_TEST_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}/v1",
            "TETHER_TEST_KEY": "sk-test-0123456789",
        }
        proc = subprocess.run(
            [sys.executable, "-m", "tether.cli", "run", "weather.prompty", *QUESTION, *TOOL],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:3] == [
        '→ get_weather(city="Paris")',
        "← get_weather: sunny in Paris",
        "Sunny, says the tool.",
    ]
    (auth, first), (_, second) = _ChatServer.seen
    assert auth == "Bearer sk-test-0123456789"
    assert first["model"] == "test-model"
    assert first["messages"][-1] == {"role": "user", "content": "Weather in Paris?"}
    assert second["messages"][-1]["content"] == "sunny in Paris"
