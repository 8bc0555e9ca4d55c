"""Secrets blanked out of captured content: values that look like credentials, and the values of
environment variables whose names say they hold one. Linear-time patterns only."""

from __future__ import annotations

import os
import re

__all__ = ["BLANK", "redact"]

BLANK = "[REDACTED]"
_NAMED = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
_PATTERNS = re.compile(
    r"\b(?:sk|pk|rk|ghp|gho|ghs|xox[abpr])[-_][A-Za-z0-9_-]{12,}"  # provider API keys
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key ids
    r"|\b[Bb]earer\s+[A-Za-z0-9._~+/=-]{8,}"  # Authorization header values
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWTs
)
_PAIRS = re.compile(
    r"""(["']?(?:api[_-]?key|password|passwd|secret|token|access[_-]?token|authorization)"""
    r"""["']?\s*[:=]\s*["']?)([^"'\s,}&]{4,})""",
    re.IGNORECASE,
)


def _environment_secrets() -> list[str]:
    found = {v for k, v in os.environ.items() if _NAMED.search(k) and len(v) >= 8}
    return sorted(found, key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED]``."""
    for secret in _environment_secrets():
        if secret in text:
            text = text.replace(secret, BLANK)
    text = _PATTERNS.sub(BLANK, text)
    return _PAIRS.sub(lambda m: m.group(1) + BLANK, text)
