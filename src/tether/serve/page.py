"""The chat page at ``/``: one self-contained HTML file (no CDN, works offline) served with a
content security policy that lets only its own inline script and style run."""

from __future__ import annotations

import functools
import secrets
from importlib import resources

from starlette.responses import HTMLResponse

__all__ = ["page_response"]


@functools.cache
def _template() -> str:
    return resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8")


def page_response() -> HTMLResponse:
    """The page, its script and style allowed by a nonce of this response's own."""
    nonce = secrets.token_urlsafe(16)
    policy = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )
    headers = {
        "content-security-policy": policy,
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store",
    }
    return HTMLResponse(_template().replace("{{nonce}}", nonce), headers=headers)
