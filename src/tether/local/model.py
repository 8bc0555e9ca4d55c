"""``LocalModel``: the weights, the server and transports pointed at it, behind one object."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..transports.base import PhaseListener
from .phases import LOADING_MODEL, reporting
from .server import LlamaServer, ServerConfig
from .weights import DEFAULT_MODEL, ModelWeights, ensure_weights

if TYPE_CHECKING:
    from ..transports.anthropic import AnthropicTransport
    from ..transports.openai_chat import OpenAIChatTransport
    from ..transports.openai_responses import OpenAIResponsesTransport
    from .handle import TextHandle

__all__ = ["LocalModel", "start_local"]

# llama.cpp's HTTP server closes the connection after every streamed response while announcing
# keep-alive; a pooled client may then send the next request on a dead socket. Closing the
# connection ourselves after each response avoids that race (connections here are cheap).
_TRANSPORT_HEADERS = {"Connection": "close"}
# A small CPU model writes maybe 5-30 tokens a second: give long answers time.
_TRANSPORT_TIMEOUT = 600.0


class LocalModel:
    """A real model served on 127.0.0.1 by llama.cpp, for tests, demos and offline work.

    ``start()`` fetches the weights if they are not cached (``ensure_weights``), loads them and
    waits until the server is healthy; ``stop()`` frees it again. Use it as a context manager::

        async with LocalModel() as local:
            agent = Agent(system="...", transport=local.chat_transport(temperature=0), tools=[...])

    Server settings (``n_ctx``, ``n_parallel``, ``threads``, ``seed``, ``api_key``, ``verbose``,
    ``startup_timeout``) are ``ServerConfig`` fields. ``model_path`` serves a GGUF file you
    already have instead of ``weights`` (whose ``alias`` is still the model name).
    Loading holds the GIL for a second or two; everything else runs off the event loop.
    """

    def __init__(
        self,
        weights: ModelWeights = DEFAULT_MODEL,
        *,
        model_path: Path | str | None = None,
        cache: Path | str | None = None,
        quiet: bool = False,
        **server_options: Any,
    ) -> None:
        self.weights = weights
        self.model = weights.alias
        self.config = ServerConfig(**server_options)
        self._model_path = Path(model_path) if model_path is not None else None
        self._cache = cache
        self._quiet = quiet
        self._server: LlamaServer | None = None
        self._starting = threading.Lock()

    def __repr__(self) -> str:
        where = self._server.url if self.running and self._server else "stopped"
        return f"LocalModel({self.model!r}, {where})"

    @property
    def running(self) -> bool:
        """Whether the server is up."""
        return self._server is not None and self._server.running

    @property
    def base_url(self) -> str:
        """The server's root URL, e.g. ``http://127.0.0.1:41234`` (OpenAI paths under ``/v1``)."""
        if self._server is None or not self._server.running:
            raise RuntimeError("the local model is not running; call start() first")
        return self._server.url

    @property
    def api_key(self) -> str | None:
        """The key the server requires (``None`` when it requires none)."""
        return self.config.api_key

    def start_sync(self, progress: PhaseListener | None = None) -> LocalModel:
        """``start`` for code without an event loop. Two callers at once start one server."""
        with self._starting:  # a start abandoned by a cancelled task may still be running
            if self.running:
                return self
            path = self._model_path or ensure_weights(
                self.weights, cache=self._cache, quiet=self._quiet, progress=progress
            )
            with reporting(progress, LOADING_MODEL):
                server = LlamaServer(path, alias=self.model, config=self.config)
                server.start()
            self._server = server
            return self

    def stop_sync(self) -> None:
        """``stop`` for code without an event loop. Safe to call twice."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()

    async def start(self, progress: PhaseListener | None = None) -> LocalModel:
        """Fetch the weights if needed, start the server and wait until it is healthy.

        ``progress`` is told each phase as it starts and ends (``tether.transports.base.Phase``:
        checking the weights, fetching them when they are not cached, loading the model), from
        the thread that does the work."""
        return await asyncio.to_thread(self.start_sync, progress)

    async def stop(self) -> None:
        """Stop the server and free the model. Safe to call twice."""
        await asyncio.to_thread(self.stop_sync)

    async def __aenter__(self) -> LocalModel:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def __enter__(self) -> LocalModel:
        return self.start_sync()

    def __exit__(self, *exc_info: object) -> None:
        self.stop_sync()

    def _transport_kwargs(self, base_url: str, options: dict[str, Any]) -> dict[str, Any]:
        headers = {**_TRANSPORT_HEADERS, **(options.pop("headers", None) or {})}
        options.setdefault("timeout", _TRANSPORT_TIMEOUT)
        return {"base_url": base_url, "api_key": self.api_key, "headers": headers, **options}

    def chat_transport(self, **options: Any) -> OpenAIChatTransport:
        """An ``OpenAIChatTransport`` on ``/v1/chat/completions`` (options as for the class)."""
        from ..transports.openai_chat import OpenAIChatTransport  # noqa: PLC0415

        return OpenAIChatTransport(
            self.model, **self._transport_kwargs(self.base_url + "/v1", options)
        )

    def responses_transport(self, **options: Any) -> OpenAIResponsesTransport:
        """An ``OpenAIResponsesTransport`` on ``/v1/responses``."""
        from ..transports.openai_responses import OpenAIResponsesTransport  # noqa: PLC0415

        return OpenAIResponsesTransport(
            self.model, **self._transport_kwargs(self.base_url + "/v1", options)
        )

    def text_handle(self, **options: Any) -> TextHandle:
        """A ``TextHandle`` (prompt in, text out) for the SkillAgent door; its decoding is held
        to the action schema the agent passes (``constrained=False`` turns that off)."""
        from .handle import TextHandle  # noqa: PLC0415

        return TextHandle(self.base_url + "/v1", self.model, api_key=self.api_key, **options)

    def anthropic_transport(self, **options: Any) -> AnthropicTransport:
        """An ``AnthropicTransport`` on ``/v1/messages``."""
        from ..transports.anthropic import AnthropicTransport  # noqa: PLC0415

        return AnthropicTransport(self.model, **self._transport_kwargs(self.base_url, options))


async def start_local(weights: ModelWeights = DEFAULT_MODEL, **options: Any) -> LocalModel:
    """Start a ``LocalModel`` (same arguments) and return it running; ``await m.stop()`` ends it."""
    return await LocalModel(weights, **options).start()
