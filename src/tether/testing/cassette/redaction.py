"""What a cassette never writes: credentials in headers, query strings, form bodies and token
answers, the values of the environment's keys, and the secrets the user names; each is
``<redacted>``."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["REDACTED", "Redactor", "environment_secrets"]

REDACTED = "<redacted>"

_HEADER = re.compile(r"key|token|secret|auth|cookie|password|signature|credential", re.I)
_PARAM = re.compile(r"key|token|secret|password|signature|^sig$|^code$|credential", re.I)
_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
_TOKEN_FIELD = re.compile(
    r'"(access_token|refresh_token|id_token|client_secret|api_key)"\s*:\s*"([^"\\]+)"'
)
_PIECES = re.compile(r"[\s,;]+")
_SHORTEST = 6  # a shorter value is too likely to be ordinary text to blank everywhere
_ENV_SHORTEST = 12  # an environment's keys are long; its short values are settings


def environment_secrets() -> tuple[str, ...]:
    """The values of environment variables whose names say they hold a key or a token."""
    return tuple(v for k, v in os.environ.items() if _ENV.search(k) and len(v) >= _ENV_SHORTEST)


@dataclass
class Redactor:
    """Blanks what it is told, and every credential it meets on the way (a header's value is
    blanked in the bodies too, should a server echo it)."""

    secrets: set[str] = field(default_factory=set)

    def learn(self, values: Iterable[str]) -> None:
        self.secrets.update(v for v in values if len(v) >= _SHORTEST)

    def text(self, text: str) -> str:
        """``text`` with every secret (longest first) and token field blanked."""
        for match in _TOKEN_FIELD.finditer(text):
            self.learn([match.group(2)])
        for secret in sorted(self.secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def pieces(self, texts: list[str]) -> list[str]:
        """Consecutive pieces of one text (a stream's chunks) each redacted, a secret split
        between pieces included: its blank stands where it starts, the rest of it is dropped
        from the pieces after, and there are as many pieces as before."""
        whole = "".join(texts)
        for match in _TOKEN_FIELD.finditer(whole):
            self.learn([match.group(2)])
        spans = self._spans(whole)
        if not spans:
            return list(texts)
        out, start = [], 0
        for text in texts:
            end = start + len(text)
            out.append(_cut(whole, start, end, spans))
            start = end
        return out

    def _spans(self, text: str) -> list[tuple[int, int]]:
        if not self.secrets:
            return []
        found = re.finditer(
            "|".join(re.escape(s) for s in sorted(self.secrets, key=len, reverse=True)), text
        )
        return [match.span() for match in found]

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Credential headers blanked whole (their values learnt first)."""
        for name, value in headers.items():
            if _HEADER.search(name):
                self.learn([value, *(p.partition("=")[2] or p for p in _PIECES.split(value))])
        return {
            name: REDACTED if _HEADER.search(name) else self.text(value)
            for name, value in headers.items()
        }

    def url(self, url: str) -> str:
        """``url`` with credential query parameters blanked."""
        parts = urlsplit(url)
        if not parts.query:
            return self.text(url)
        query = self.form(parts.query)
        return self.text(urlunsplit(parts._replace(query=query)))

    def form(self, body: str) -> str:
        """A form-encoded body (or query string) with its credential fields blanked."""
        pairs = parse_qsl(body, keep_blank_values=True)
        self.learn(v for k, v in pairs if _PARAM.search(k))
        kept = [(k, REDACTED if _PARAM.search(k) and v else v) for k, v in pairs]
        return urlencode(kept, safe="<>")

    def json(self, value: Any) -> Any:
        """A JSON value with every string redacted (keys too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(v) for v in value]
        if isinstance(value, dict):
            return {self.text(k): self._field(k, v) for k, v in value.items()}
        return value

    def _field(self, key: str, value: Any) -> Any:
        if isinstance(value, str) and _TOKEN_FIELD.match(f'"{key}":"{value}"'):
            self.learn([value])
            return REDACTED
        return self.json(value)


def _cut(whole: str, start: int, end: int, spans: list[tuple[int, int]]) -> str:
    """``whole[start:end]`` with each secret span blanked where it starts and dropped after."""
    kept, at = [], start
    for first, last in spans:
        if last <= start or first >= end:
            continue
        kept.append(whole[at : max(first, at)])
        if first >= start:
            kept.append(REDACTED)
        at = min(last, end)
    kept.append(whole[at:end])
    return "".join(kept)
