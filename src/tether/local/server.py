"""llama.cpp's own HTTP server, run inside this process by the ``xllamacpp`` wheel.

``LlamaServer`` is synchronous: ``start()`` loads the model (seconds), binds 127.0.0.1 on a free
port and waits for ``/health``; ``stop()`` releases the server, which shuts its HTTP listener and
frees the model. ``xllamacpp`` is imported only by ``start()``.
"""

from __future__ import annotations

import atexit
import importlib
import os
import platform
import secrets
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .errors import LocalModelUnavailable
from .template import TOOL_CALL_TEMPLATE

__all__ = ["XLLAMACPP_REQUIREMENT", "LlamaServer", "ServerConfig", "check_platform"]

XLLAMACPP_REQUIREMENT = "xllamacpp==2026.10.11549"
_INSTALL_HINT = (
    "install the extra: pip install 'tether[local]' (it pins " + XLLAMACPP_REQUIREMENT + ")"
)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """How the server runs.

    ``n_ctx`` is the context of each request (the KV cache is shared by the ``n_parallel``
    slots). ``threads`` defaults to the CPUs this process may use. ``seed`` fixes sampling, so
    that equal requests get equal answers. ``api_key`` defaults to a fresh random key, so that
    other local programs (or web pages) cannot use the server; ``None`` turns the check off.
    ``poll`` is how hard idle compute threads spin waiting for work (llama.cpp's 0-100; its
    default is 50): 0 lets them sleep, which on a small, shared machine is many times faster,
    because spinning threads starve the one that samples (a tool-call grammar makes sampling
    heavy). ``verbose`` shows llama.cpp's info log on stderr (otherwise only its errors).
    """

    n_ctx: int = 4096
    n_parallel: int = 2
    threads: int | None = None
    seed: int = 1234
    poll: int = 0
    host: str = "127.0.0.1"
    port: int = 0
    api_key: str | None = field(default_factory=lambda: "local-" + secrets.token_urlsafe(16))
    chat_template: str = TOOL_CALL_TEMPLATE
    startup_timeout: float = 60.0
    verbose: bool = False

    def __post_init__(self) -> None:
        if self.n_ctx < 256:
            raise ValueError("n_ctx must be >= 256")
        if self.n_parallel < 1:
            raise ValueError("n_parallel must be >= 1")
        if not 0 <= self.poll <= 100:
            raise ValueError("poll must be between 0 and 100")
        if self.threads is not None and self.threads < 1:
            raise ValueError("threads must be >= 1")


def cpu_count() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def check_platform() -> Any:
    """Import and return ``xllamacpp``, or raise ``LocalModelUnavailable`` saying why not."""
    try:
        xllamacpp = importlib.import_module("xllamacpp")
    except ImportError as exc:
        machine = f"{sys.platform}/{platform.machine()}"
        if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
            raise LocalModelUnavailable(
                f"the local model needs {XLLAMACPP_REQUIREMENT}, which has prebuilt wheels for"
                f" Linux x86_64; this is {machine} ({exc})"
            ) from exc
        raise LocalModelUnavailable(f"xllamacpp is not installed: {_INSTALL_HINT}") from exc
    return xllamacpp


_RUNNING: weakref.WeakSet[LlamaServer] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    # Stop servers before the interpreter tears down the objects their threads may touch.
    for server in list(_RUNNING):
        server.stop()


class LlamaServer:
    """One llama.cpp server for one GGUF file, answering to ``alias``."""

    def __init__(self, model_path: Path | str, *, alias: str, config: ServerConfig | None = None):
        self.model_path = Path(model_path)
        self.alias = alias
        self.config = config or ServerConfig()
        self._server: Any = None
        self._url: str | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = self._url or "stopped"
        return f"LlamaServer({self.model_path.name!r}, alias={self.alias!r}, {state})"

    @property
    def url(self) -> str:
        """The server's root URL (``http://127.0.0.1:PORT``)."""
        if self._url is None:
            raise RuntimeError("the server is not running; call start() first")
        return self._url

    @property
    def running(self) -> bool:
        """Whether the server was started and not stopped."""
        return self._server is not None

    def _params(self, xllamacpp: Any) -> Any:
        cfg = self.config
        threads = cfg.threads or cpu_count()
        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.model_alias = {self.alias}
        params.hostnames = [cfg.host]
        params.port = cfg.port
        params.n_ctx = cfg.n_ctx
        params.n_parallel = cfg.n_parallel
        params.kv_unified = True  # every slot may use the whole n_ctx
        params.use_jinja = True
        params.chat_template = cfg.chat_template
        params.offline = True
        params.ui = False
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.cpuparams.poll = cfg.poll
        params.cpuparams_batch.poll = cfg.poll
        params.sampling.seed = cfg.seed
        params.verbosity = 3 if cfg.verbose else 1
        if cfg.api_key is not None:
            params.api_keys = [cfg.api_key]
        return params

    def start(self) -> str:
        """Load the model and serve it; returns the root URL. Blocks until ``/health`` is ok."""
        with self._lock:
            if self._server is not None:
                assert self._url is not None
                return self._url
            xllamacpp = check_platform()
            if not self.model_path.is_file():
                raise LocalModelUnavailable(f"no model file at {self.model_path}")
            try:
                server = xllamacpp.Server(self._params(xllamacpp))
            except RuntimeError as exc:
                raise LocalModelUnavailable(
                    f"llama.cpp could not start on {self.model_path}: {exc} (its log is on"
                    " stderr; ServerConfig(verbose=True) shows more)"
                ) from exc
            self._server = server
            self._url = url = str(server.listening_address).rstrip("/")
            _RUNNING.add(self)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        return url

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.config.startup_timeout
        said = "no answer yet"
        # trust_env=False: a proxy from the environment must not see loopback traffic.
        with httpx.Client(timeout=5.0, trust_env=False) as client:
            while True:
                try:
                    resp = client.get(self.url + "/health")
                    if resp.status_code == 200 and _status(resp) == "ok":
                        return
                    said = f"HTTP {resp.status_code}: {resp.text[:500]}"
                except httpx.HTTPError as exc:
                    said = repr(exc)
                if time.monotonic() > deadline:
                    raise LocalModelUnavailable(
                        f"the llama.cpp server at {self.url} was not healthy after"
                        f" {self.config.startup_timeout:.0f} s; it said: {said}"
                    )
                time.sleep(0.1)

    def stop(self) -> None:
        """Shut the server down and free the model. Safe to call twice, and at exit."""
        with self._lock:
            server, self._server = self._server, None
            self._url = None
            _RUNNING.discard(self)
        # The last reference: its destructor stops the HTTP listener and joins its threads.
        del server

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _status(resp: httpx.Response) -> str | None:
    try:
        body = resp.json()
    except ValueError:
        return None
    return body.get("status") if isinstance(body, dict) else None
