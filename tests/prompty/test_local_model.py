"""The spec's fixtures end to end on the real local model: tether's llama.cpp server is the
OpenAI-compatible endpoint, reached through the fixtures' own ``${env:OPENAI_ENDPOINT}`` and
``${env:OPENAI_API_KEY}``, read by a plain ``load(path)`` as the spec reads them (or, for fixtures
that name no connection, one given to the loaded agent by the test's code)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

from tether import prompty
from tether.prompty.model import ConnectionConfig, ModelOptionsConfig

if TYPE_CHECKING:
    from tether.local import LocalModel

FIXTURES = Path(__file__).parents[1] / "conformance" / "prompty" / "fixtures"

WEATHER = """\
---
name: local-weather
model:
  id: local
  provider: openai
  apiType: chat
  connection:
    kind: key
    endpoint: ${env:OPENAI_ENDPOINT}
    apiKey: ${env:OPENAI_API_KEY}
  options:
    temperature: 0
    seed: 7
    maxOutputTokens: 160
tools:
  - name: get_weather
    kind: function
    description: Get the current weather for a city
    parameters:
      - name: city
        kind: string
        required: true
      - name: unit
        kind: string
        description: celsius or fahrenheit
    bindings:
      unit:
        input: preferred_unit
inputs:
  - name: question
    kind: string
  - name: preferred_unit
    kind: string
    default: celsius
---
system:
You are a weather assistant. Always call get_weather for the city asked about, then answer
in one sentence using its result.

user:
{{question}}
"""


@pytest.fixture
def endpoint(local_model: LocalModel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_ENDPOINT", f"{local_model.base_url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", local_model.api_key or "unused-local-key")


@pytest.mark.local_model
async def test_basic_fixture_answers(endpoint: None) -> None:
    agent = prompty.load(FIXTURES / "basic.prompty")
    answer = await prompty.invoke_async(
        agent, {"question": "What is 12 plus 30? Reply with the number only."}
    )
    assert isinstance(answer, str)
    assert "42" in answer, answer


@pytest.mark.local_model
async def test_tool_loop_with_bindings(endpoint: None, tmp_path: Path) -> None:
    path = tmp_path / "weather.prompty"
    path.write_text(WEATHER)
    calls: list[dict[str, Any]] = []

    def get_weather(city: str, unit: str = "fahrenheit") -> str:
        calls.append({"city": city, "unit": unit})
        return "21 degrees and sunny" if unit == "celsius" else "70 degrees and sunny"

    events: list[str] = []
    answer = await prompty.turn_async(
        prompty.load(path),
        {"question": "What is the weather in Paris?"},
        tools={"get_weather": get_weather},
        on_event=lambda kind, _data: events.append(kind),
    )
    assert calls, "the model never called get_weather"
    assert calls[0]["city"].lower().startswith("paris"), calls
    assert all(c["unit"] == "celsius" for c in calls), calls  # the binding, whatever the model sent
    assert "21" in answer, answer
    assert events[:2] == ["status", "tool_call_start"] and events[-1] == "done", events


@pytest.mark.local_model
async def test_threaded_fixture_expands_the_conversation(endpoint: None, tmp_path: Path) -> None:
    path = tmp_path / "threaded.prompty"
    shutil.copy(FIXTURES / "threaded.prompty", path)
    text = path.read_text().replace(
        "  apiType: chat\n",
        "  apiType: chat\n  connection:\n    kind: key\n"
        "    endpoint: ${env:OPENAI_ENDPOINT}\n    apiKey: ${env:OPENAI_API_KEY}\n",
    )
    path.write_text(text)
    thread = [
        {"role": "user", "content": "My name is Ada and my favourite number is 7."},
        {"role": "assistant", "content": "Nice to meet you, Ada."},
    ]
    answer = await prompty.turn_async(
        prompty.load(path),
        {"question": "What is my favourite number? Reply with it only.", "conversation": thread},
    )
    assert "7" in answer, answer


@pytest.mark.local_model
async def test_streamed_tool_loop_gives_the_final_answer_in_chunks(
    endpoint: None, tmp_path: Path
) -> None:
    path = tmp_path / "weather.prompty"
    path.write_text(WEATHER)
    calls: list[str] = []

    def get_weather(city: str, unit: str = "fahrenheit") -> str:
        calls.append(city)
        return "21 degrees and sunny"

    tokens: list[str] = []
    stream = await prompty.turn_async(
        prompty.load(path),
        {"question": "What is the weather in Paris?"},
        tools={"get_weather": get_weather},
        stream=True,
        on_event=lambda kind, data: tokens.append(data["token"]) if kind == "token" else None,
    )
    chunks = [chunk async for chunk in stream]
    assert calls, "the model never called get_weather"
    assert len(chunks) > 1, chunks  # the answer arrived in pieces, not as one buffered string
    assert "".join(chunks) == stream.result == "".join(tokens)
    assert "21" in stream.result, stream.result
    assert [m.role for m in stream.messages][-2:] == ["tool", "assistant"]


@pytest.mark.local_model
async def test_reference_connection_takes_a_registered_sdk_clients_endpoint(
    local_model: LocalModel, tmp_path: Path
) -> None:
    path = tmp_path / "referenced.prompty"
    path.write_text(
        "---\nmodel:\n  id: local\n  connection: {kind: reference, name: local-llm}\n"
        "  options: {temperature: 0, maxOutputTokens: 16}\n---\n"
        "user:\nWhat is 12 plus 30? Reply with the number only.\n"
    )
    client = SimpleNamespace(
        base_url=f"{local_model.base_url}/v1/", api_key=local_model.api_key or "unused-local-key"
    )
    prompty.register_connection("local-llm", client)
    try:
        answer = await prompty.invoke_async(path)
    finally:
        prompty.clear_connections()
    assert "42" in answer, answer


def on_local(agent: prompty.PromptAgent, local_model: LocalModel) -> prompty.PromptAgent:
    """A fixture that names no connection, pointed at the local server (as an application
    would give a shared file its own endpoint)."""
    assert agent.model is not None
    connection = ConnectionConfig(
        kind="key",
        endpoint=f"{local_model.base_url}/v1",
        api_key=local_model.api_key or "unused-local-key",
    )
    options = ModelOptionsConfig(temperature=0, seed=7, max_output_tokens=120)
    model = replace(agent.model, id="local", connection=connection, options=options)
    return replace(agent, model=model)


@pytest.mark.local_model
async def test_tools_function_fixture_binds_the_unit(local_model: LocalModel) -> None:
    agent = on_local(prompty.load(FIXTURES / "tools_function.prompty"), local_model)
    calls: list[dict[str, Any]] = []

    def get_weather(location: str, unit: str = "fahrenheit") -> str:
        calls.append({"location": location, "unit": unit})
        return f"18 degrees {unit} and cloudy in {location}"

    answer = await prompty.turn_async(agent, {}, tools={"get_weather": get_weather})
    assert calls and "paris" in calls[0]["location"].lower(), calls
    assert all(c["unit"] == "celsius" for c in calls), calls  # from preferred_unit's default
    assert "18" in answer, answer


@pytest.mark.local_model
async def test_structured_fixture_returns_the_declared_outputs(local_model: LocalModel) -> None:
    agent = on_local(prompty.load(FIXTURES / "structured.prompty"), local_model)
    data = await prompty.invoke_async(agent)
    assert isinstance(data, dict), data  # the schema went to the server as response_format
    assert set(data) == {"temperature", "condition", "city"}, data
    assert data["temperature"] == 72 and data["city"] == "Paris", data
    assert "sunny" in data["condition"].lower(), data


@pytest.mark.local_model
async def test_summarize_fixture_renders_its_conditional_context(local_model: LocalModel) -> None:
    agent = on_local(prompty.load(FIXTURES / "summarize.prompty"), local_model)
    inputs = {"text": "The meeting moved from Monday to Thursday at 3 pm.", "context": "Memo"}
    messages = await prompty.prepare_async(agent, inputs)
    assert "Context: Memo" in messages[0].text_value
    answer = await prompty.invoke_async(agent, inputs)
    assert "thursday" in answer.lower(), answer
