"""``tether serve --allow-origin``: a front end on another origin (``http://localhost:3000``)
gets its browser's preflight answered and may run the agent, reading the answers; every other
origin is refused as before, and the token rule is not loosened."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from served import ask, client, serving
from tether import Agent
from tether.serve import app
from tether.stores import SQLiteStore
from tether.testing import Reply, ScriptedTransport

FRONT = "http://localhost:3000"
TOKEN = "a-token-of-enough-length-0123456789"
PREFLIGHT = {
    "origin": FRONT,
    "access-control-request-method": "POST",
    "access-control-request-headers": "content-type, authorization, x-other",
}


def agent() -> Agent:
    return Agent("s", ScriptedTransport([], then=Reply("hello")))


async def test_an_allowed_origin_is_answered_and_reads_what_it_asked(tmp_path: Path) -> None:
    served = app(agent(), SQLiteStore(tmp_path / "c.db"), allow_origins=[FRONT])
    async with serving(served) as base, client(base) as http:
        pre = await http.options("/agui", headers=PREFLIGHT)
        assert pre.status_code == 204
        assert pre.headers["access-control-allow-origin"] == FRONT
        assert "POST" in pre.headers["access-control-allow-methods"]
        granted = {h.strip() for h in pre.headers["access-control-allow-headers"].split(",")}
        assert granted == {"content-type", "authorization"}
        cross = {"origin": FRONT, "sec-fetch-site": "same-site"}
        ran = await http.post("/agui", json=ask("hi"), headers=cross)
        assert ran.status_code == 200 and "hello" in ran.text
        assert ran.headers["access-control-allow-origin"] == FRONT
        listed = await http.get("/api/sessions", headers={"origin": FRONT})
        assert listed.headers["access-control-allow-origin"] == FRONT and len(listed.json()) == 1


async def test_another_origin_is_refused_as_before(tmp_path: Path) -> None:
    served = app(agent(), SQLiteStore(tmp_path / "c.db"), allow_origins=[FRONT])
    async with serving(served) as base, client(base) as http:
        other = {**PREFLIGHT, "origin": "http://localhost:3001"}
        pre = await http.options("/agui", headers=other)
        assert "access-control-allow-origin" not in pre.headers
        refused = await http.post("/agui", json=ask("hi"), headers={"origin": other["origin"]})
        assert refused.status_code == 403
        read = await http.get("/api/sessions", headers={"origin": other["origin"]})
        assert "access-control-allow-origin" not in read.headers
        assert read.json() == []


async def test_the_token_rule_stays_for_an_allowed_origin(tmp_path: Path) -> None:
    served = app(agent(), SQLiteStore(tmp_path / "c.db"), token=TOKEN, allow_origins=[FRONT])
    async with serving(served) as base, client(base, headers={"host": "chat.example"}) as http:
        assert (await http.options("/agui", headers=PREFLIGHT)).status_code == 204
        bare = await http.post("/agui", json=ask("hi"), headers={"origin": FRONT})
        assert bare.status_code == 401
        carried = {"origin": FRONT, "authorization": f"Bearer {TOKEN}"}
        ran = await http.post("/agui", json=ask("hi"), headers=carried)
        assert ran.status_code == 200 and ran.headers["access-control-allow-origin"] == FRONT


@pytest.mark.parametrize("bad", ["*", "http://localhost:3000/app", "localhost:3000", "ftp://x"])
def test_what_is_not_an_origin_is_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="--allow-origin takes an origin"):
        app(agent(), SQLiteStore(tmp_path / "c.db"), allow_origins=[bad])


def test_tether_serve_refuses_a_bad_origin_as_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tether.cli", "serve", "--store", str(tmp_path / "c.db"),
         "--allow-origin", "*", "--port", "0"],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--allow-origin takes an origin" in done.stderr
