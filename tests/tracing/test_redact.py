"""Secrets are blanked from captured content; ordinary text is left as it is; adversarial
input stays linear (a quadratic pattern would run into the test timeout)."""

from __future__ import annotations

import pytest

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
