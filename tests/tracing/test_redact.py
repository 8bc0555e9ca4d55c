"""Secrets are blanked from captured content; ordinary text is left as it is; adversarial
input stays linear (a quadratic pattern would run into the test timeout)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether import Agent, tool
from tether.testing import Call, Reply, ScriptedTransport
from tether.tracing import Recorder
from tether.tracing.attributes import content
from tether.tracing.redact import BLANK, environment_secrets, redact


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-abcdefghijklmnop1234",
        "ghp_abcdefghijklmnopqrstuvwx",
        "AKIAABCDEFGHIJKLMNOP",
        "Bearer abc.def-ghi_jkl",
        "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.c2lnbmF0dXJlMTIz",
    ],
)
def test_credentials_are_blanked(secret: str) -> None:
    out = redact(f"call it with {secret} please", ())
    assert secret not in out and BLANK in out and out.startswith("call it with")


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('{"api_key": "abcd1234"}', '{"api_key": "'),
        ("password=hunter22&user=bob", "password="),
        ("Token: zzzzyyyy", "Token: "),
    ],
)
def test_named_values_are_blanked_but_their_names_kept(text: str, kept: str) -> None:
    out = redact(text, ())
    assert out.startswith(kept + BLANK)


def test_environment_secrets_are_blanked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-1234567890")
    monkeypatch.setenv("HOME_PAGE", "example-not-secret")
    assert "tok-1234567890" in environment_secrets()
    assert "example-not-secret" not in environment_secrets()
    assert redact("use tok-1234567890 now") == f"use {BLANK} now"


def test_ordinary_text_is_unchanged() -> None:
    text = "The keyboard skipped; 12:34 in Tokyo, sunny. {'city': 'Oslo'}"
    assert redact(text, ()) == text


def test_adversarial_input_stays_linear() -> None:
    for text in ("sk-" * 200_000, "password=" * 100_000, "Bearer " * 100_000, "eyJ." * 100_000):
        redact(text, ())


@pytest.mark.parametrize("secret", ['pa"ss-word-1234', "pa\\ss-word-1234", "tab\there-1234"])
def test_a_secret_json_would_escape_is_blanked_from_structured_content(secret: str) -> None:
    captured = content({"query": f"log in with {secret}", "items": [secret]}, (secret,))
    assert BLANK in captured
    assert json.dumps(secret)[1:-1] not in captured  # not even in its escaped form
    assert secret not in json.loads(captured)["query"]


def test_values_of_fields_named_like_credentials_are_blanked() -> None:
    captured = json.loads(content({"password": 'a"b\\c-long', "city": "Oslo"}, ()))
    assert captured == {"password": BLANK, "city": "Oslo"}


async def test_an_environment_secret_with_a_quote_never_reaches_the_trace_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = 'q"uo\\te-secret-9876'
    monkeypatch.setenv("MY_SERVICE_TOKEN", secret)

    @tool
    def lookup(term: str) -> str:
        """Look a term up."""
        return f"found {term}"

    model = ScriptedTransport(
        [Reply(tool_calls=[Call("lookup", {"term": secret})]), Reply(f"the key is {secret}")]
    )
    path = tmp_path / "trace.jsonl"
    agent = Agent("sys", model, tools=[lookup], middleware=[Recorder(path)])
    await agent.run(f"use {secret}")
    text = path.read_text(encoding="utf-8")
    assert BLANK in text
    for form in (secret, json.dumps(secret)[1:-1], json.dumps(json.dumps(secret)[1:-1])[1:-1]):
        assert form not in text
