"""A Prompty agent's model as one of tether's transports (§7): provider and API type pick the
wire format, the connection the host and key, the options tether's ``ModelOptions``.

A key goes only to its connection's endpoint (or, with no endpoint, the provider's own host):
tether's HTTP transports keep credentials to the host they were built for. A key the file read
from the environment (``${env:...}``) does not go to an endpoint written in the file unless that
is the provider's own host (over https; an Azure resource host for ``azure``/``foundry``): see
``credentials``. An endpoint from the environment or the application's code is trusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...transports.anthropic import AnthropicTransport
from ...transports.base import CompletionTransport
from ...transports.http import HttpTransport
from ...transports.openai_chat import OpenAIChatTransport
from ...transports.openai_responses import OpenAIResponsesTransport
from ..env import hidden
from ..errors import WireError
from ..model import ConnectionConfig, Model, ModelOptionsConfig, Property
from ..registry import get_connection
from ..schema import output_format
from .credentials import check_credential, origin

__all__ = ["WireError", "model_options", "spec_wire", "transport_for"]

_OPENAI = ("openai", "azure", "foundry", None)
_AZURE = ("azure", "foundry")
_AZURE_HOSTS = (
    ".openai.azure.com",
    ".cognitiveservices.azure.com",
    ".services.ai.azure.com",
    ".models.ai.azure.com",
    ".inference.ai.azure.com",
)


def model_options(
    options: ModelOptionsConfig | None, outputs: Sequence[Property] = ()
) -> dict[str, Any]:
    """Prompty options (and declared outputs) as keyword arguments of ``ModelOptions``."""
    out: dict[str, Any] = {}
    if options is not None:
        pairs = {
            "temperature": options.temperature,
            "max_tokens": options.max_output_tokens,
            "top_p": options.top_p,
            "top_k": options.top_k,
            "frequency_penalty": options.frequency_penalty,
            "presence_penalty": options.presence_penalty,
            "seed": options.seed,
            "stop": None if options.stop_sequences is None else list(options.stop_sequences),
            "parallel_tool_calls": options.allow_multiple_tool_calls,
        }
        out.update({k: v for k, v in pairs.items() if v is not None})
        if options.additional_properties:
            out["extra_body"] = dict(options.additional_properties)
    response_format = output_format(outputs)
    if response_format is not None:
        out["response_format"] = response_format
    return out


def _endpoint(connection: ConnectionConfig | None) -> tuple[str | None, str | None]:
    """(base URL, key) of a connection; kinds tether cannot dial are refused by name."""
    if connection is None:
        return None, None
    if connection.kind in ("key", "anonymous", "remote"):
        endpoint = connection.endpoint.rstrip("/") if connection.endpoint else None
        return endpoint, connection.api_key
    raise WireError(
        f"connection kind '{hidden(connection.kind)}' needs a registered connection "
        "(tether.prompty.register_connection) or a transport passed to the call"
    )


def _registered(connection: ConnectionConfig) -> Any:
    """§11.1: a ``kind: reference`` connection's client, looked up by name; missing is an error."""
    client = get_connection(connection.name or "")
    if client is None:
        raise WireError(
            f"connection '{hidden(connection.name)}' is not registered "
            "(tether.prompty.register_connection(name, client))"
        )
    return client


def _client_endpoint(client: Any, name: str | None) -> tuple[str | None, str | None]:
    """(base URL, key) of an SDK client (``base_url`` and ``api_key`` attributes, as the
    OpenAI and Anthropic SDKs' clients have); the key goes only to that URL."""
    base_url = getattr(client, "base_url", None)
    if base_url is None:
        raise WireError(
            f"the client registered as '{hidden(name)}' is neither a tether transport (a stream() "
            "method) nor an SDK client with a base_url"
        )
    key = getattr(client, "api_key", None)
    return str(base_url).rstrip("/"), None if key is None else str(key)


def transport_for(
    model: Model | None,
    outputs: Sequence[Property] = (),
    *,
    stream: bool = True,
    overrides: Mapping[str, Any] | None = None,
    source: str | None = None,
) -> CompletionTransport:
    """The transport that calls ``model`` (chat, Responses or Anthropic messages). A
    ``kind: reference`` connection names a registered client: a tether transport is used as
    it is (its own options); an SDK client lends its base URL and key. A key from the
    environment bound for an endpoint the file (``source``) wrote is refused here, before any
    request: ``CredentialEndpointError``."""
    if model is None or not model.id:
        raise WireError("the agent names no model (model: id)")
    connection = model.connection
    if connection is not None and connection.kind == "reference":
        client = _registered(connection)
        if isinstance(client, CompletionTransport):
            return client
        base_url, key = _client_endpoint(client, connection.name)
    else:
        base_url, key = _endpoint(connection)
    kwargs: dict[str, Any] = {**model_options(model.options, outputs), **(overrides or {})}
    kwargs.update(base_url=base_url, api_key=key, stream=stream)
    provider = model.provider
    cls = _transport_class(provider, model.api_type)
    kwargs = {**spec_wire(cls), **kwargs}
    check_credential(
        key,
        field="model.connection.apiKey",
        endpoint=None if connection is None else connection.endpoint,
        url=base_url or cls.default_base_url,
        own=lambda url: _own_host(url, cls.default_base_url, provider),
        own_name=origin(cls.default_base_url)[1],
        path=source,
    )
    return cls(model.id, **kwargs)


def spec_wire(cls: type[HttpTransport]) -> dict[str, Any]:
    """What a transport of ``cls`` is given so its requests are the spec's: Anthropic's without
    cache breakpoints (§7.5 sends the system prompt as a string; a breakpoint needs a block).
    A connection whose client is a transport of the caller's own may mark them."""
    return {"cache": False} if cls is AnthropicTransport else {}


def _transport_class(provider: str | None, api_type: str) -> type[HttpTransport]:
    if provider in _OPENAI and api_type == "chat":
        return OpenAIChatTransport
    if provider in _OPENAI and api_type == "responses":
        return OpenAIResponsesTransport
    if provider == "anthropic" and api_type == "chat":
        return AnthropicTransport
    raise WireError(
        f"no chat transport for provider {_shown(provider)} with apiType {_shown(api_type)} "
        "(openai/azure/foundry: chat or responses; anthropic: chat)"
    )


def _shown(value: str | None) -> str:
    return "None" if value is None else f"'{hidden(value)}'"


def _own_host(url: str, own_url: str, provider: str | None) -> bool:
    """Whether ``url`` is the provider's own host: its default one (same scheme and port), or
    an Azure resource over https for azure/foundry."""
    target = origin(url)
    if target == origin(own_url):
        return True
    scheme, host, _ = target
    return provider in _AZURE and scheme == "https" and host.endswith(_AZURE_HOSTS)
