"""The pytest plugin: a test that takes the ``cassette`` fixture records its HTTP exchanges beside
itself on the first run and replays them after; ``--record`` records what is new, and
``--record=none`` (CI) replays only, failing the test on a request not recorded. Run as real
pytest processes."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from misbehaving_server import MisbehavingServer, json_reply

SRC = Path(__file__).parents[2] / "src"
TEST = """
import asyncio, os
import httpx

def test_asks(cassette):
    async def ask(q):
        async with httpx.AsyncClient() as client:
            return (await client.post(os.environ["ASK_URL"], json={{"q": q}})).json()
    assert [asyncio.run(ask(q)) for q in {questions}] == [{{"answer": "yes"}}] * {count}
"""


def _write(folder: Path, *questions: int) -> None:
    text = TEST.format(questions=list(questions), count=len(questions))
    (folder / "test_inner.py").write_text(text)


async def _pytest(folder: Path, url: str, *args: str) -> tuple[int, str]:
    path = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pytest", "-p", "tether.testing.plugin", "-p", "no:cacheprovider",
        "-q", *args, cwd=folder, env={**os.environ, "ASK_URL": url, "PYTHONPATH": path},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode()


async def test_the_cassette_fixture_records_then_replays_by_the_record_option(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "cassettes" / "test_inner" / "test_asks.json"
    async with MisbehavingServer(json_reply({"answer": "yes"})) as server:
        url = server.url + "/ask"
        _write(tmp_path, 1)
        code, out = await _pytest(tmp_path, url)
        assert code == 0, out
        assert cassette.exists() and len(server.requests) == 1
        _write(tmp_path, 1, 2)
        code, out = await _pytest(tmp_path, url, "--record")  # records only the new question
        assert code == 0, out
        assert len(server.requests) == 2
    exchanges = json.loads(cassette.read_text())["exchanges"]
    assert [e["request"]["json"] for e in exchanges] == [{"q": 1}, {"q": 2}]
    code, out = await _pytest(tmp_path, url, "--record=none")  # the server is gone
    assert code == 0, out
    _write(tmp_path, 1, 3)
    code, out = await _pytest(tmp_path, url, "--record=none")
    assert code == 1, out
    assert "CassetteError" in out and '-    "q": 2' in out and '+    "q": 3' in out
    code, out = await _pytest(tmp_path, url, "--record=sometimes")
    assert code == 4 and "invalid choice" in out, out
