"""Model discovery (spec §15): ``ModelInfo``, the mapping of each provider's model records to
it, enrichment of sparse records from a small table of known models, and ``list_models`` over a
connection (OpenAI-compatible ``GET /models`` or Anthropic's ``GET /v1/models``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from .errors import DiscoveryError
from .serial import SparseJsonShape

if TYPE_CHECKING:
    import httpx

__all__ = [
    "KNOWN_MODELS",
    "ConnectionLike",
    "ModelInfo",
    "enrich",
    "list_models",
    "map_model",
]

log = logging.getLogger("tether.prompty.discovery")

MAX_BODY = 8 * 1024 * 1024  # bytes of one model-list response read
MAX_PAGES = 100  # pages of a paginated model list followed


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo(SparseJsonShape):
    """One model and what is known of it (§15.2); None: not known."""

    id: str
    display_name: str | None = None
    owned_by: str | None = None
    context_window: int | None = None
    input_modalities: tuple[str, ...] | None = None
    output_modalities: tuple[str, ...] | None = None
    additional_properties: Mapping[str, Any] | None = field(default=None, hash=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelInfo:
        """A ``ModelInfo`` from the spec's JSON shape."""
        if not isinstance(data, Mapping):
            raise DiscoveryError(f"a ModelInfo must be an object, not {type(data).__name__}")
        extra = data.get("additionalProperties")
        if extra is not None and not isinstance(extra, Mapping):
            raise DiscoveryError("additionalProperties must be an object")
        return cls(
            id=_required_text(data, "id"),
            display_name=_text(data, "displayName"),
            owned_by=_text(data, "ownedBy"),
            context_window=_count(data, "contextWindow"),
            input_modalities=_modalities(data, "inputModalities"),
            output_modalities=_modalities(data, "outputModalities"),
            additional_properties=None if extra is None else dict(extra),
        )


# --- provider records -------------------------------------------------------------------------


def map_model(provider: str, raw: Mapping[str, Any]) -> ModelInfo:
    """``raw``, one model record of ``provider``'s listing API, as a ``ModelInfo``; the whole
    record is kept as ``additional_properties``. Providers: openai (and compatible servers),
    anthropic, foundry (alias azure; catalog models and deployments, flat or ARM-nested)."""
    if not isinstance(raw, Mapping):
        raise DiscoveryError(f"a model record must be an object, not {type(raw).__name__}")
    mapper = _MAPPERS.get(provider.lower())
    if mapper is None:
        known = ", ".join(sorted(_MAPPERS))
        raise DiscoveryError(f"no model mapping for provider {provider!r} (known: {known})")
    return mapper(raw)


def _openai(raw: Mapping[str, Any]) -> ModelInfo:
    return ModelInfo(
        id=_required_text(raw, "id"),
        owned_by=_text(raw, "owned_by"),
        additional_properties=dict(raw),
    )


def _anthropic(raw: Mapping[str, Any]) -> ModelInfo:
    return ModelInfo(
        id=_required_text(raw, "id"),
        display_name=_text(raw, "display_name"),
        owned_by="anthropic",
        context_window=_count(raw, "context_length"),
        input_modalities=_modalities(raw, "input_modalities"),
        output_modalities=_modalities(raw, "output_modalities"),
        additional_properties=dict(raw),
    )


def _foundry(raw: Mapping[str, Any]) -> ModelInfo:
    """A catalog model (it has an ``id``) or a deployment (a ``name``, the model's facts flat
    or under ``properties``)."""
    if "id" in raw:
        window = _count(raw, "maxContextLength")
        return ModelInfo(
            id=_required_text(raw, "id"),
            owned_by=_text(raw, "owned_by"),
            context_window=window if window is not None else _count(raw, "max_context_length"),
            additional_properties=dict(raw),
        )
    properties = _object(raw, "properties")
    model = _object(properties, "model", "properties.")
    capabilities = _object(properties, "capabilities", "properties.") or _object(
        raw, "capabilities"
    )
    return ModelInfo(
        id=_required_text(raw, "name"),
        display_name=_text(raw, "modelName") or _text(model, "name", "properties.model."),
        owned_by=_text(raw, "modelPublisher") or _text(model, "publisher", "properties.model."),
        context_window=_count(model, "maxContextLength", "properties.model."),
        input_modalities=_modalities(capabilities, "supportedInputModalities", "capabilities."),
        output_modalities=_modalities(capabilities, "supportedOutputModalities", "capabilities."),
        additional_properties=dict(raw),
    )


_MAPPERS: dict[str, Callable[[Mapping[str, Any]], ModelInfo]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "foundry": _foundry,
    "azure": _foundry,
}


# --- enrichment -------------------------------------------------------------------------------

_TEXT = ("text",)
_VISION = ("text", "image")
_VOICE = ("text", "audio")

KNOWN_MODELS: Mapping[str, tuple[int | None, tuple[str, ...], tuple[str, ...]]] = MappingProxyType(
    {
        # id prefix: (context window, input modalities, output modalities)
        "gpt-3.5-turbo": (16_385, _TEXT, _TEXT),
        "gpt-4": (8_192, _TEXT, _TEXT),
        "gpt-4-32k": (32_768, _TEXT, _TEXT),
        "gpt-4-turbo": (128_000, _VISION, _TEXT),
        "gpt-4o": (128_000, _VISION, _TEXT),
        "gpt-4o-mini": (128_000, _VISION, _TEXT),
        "gpt-4o-audio-preview": (128_000, _VOICE, _VOICE),
        "gpt-4o-realtime-preview": (128_000, _VOICE, _VOICE),
        "gpt-4.1": (1_047_576, _VISION, _TEXT),
        "gpt-4.1-mini": (1_047_576, _VISION, _TEXT),
        "gpt-4.1-nano": (1_047_576, _VISION, _TEXT),
        "gpt-5": (400_000, _VISION, _TEXT),
        "gpt-5-mini": (400_000, _VISION, _TEXT),
        "gpt-5-nano": (400_000, _VISION, _TEXT),
        "o1": (200_000, _VISION, _TEXT),
        "o1-mini": (128_000, _TEXT, _TEXT),
        "o1-preview": (128_000, _TEXT, _TEXT),
        "o3": (200_000, _VISION, _TEXT),
        "o3-mini": (200_000, _TEXT, _TEXT),
        "o4-mini": (200_000, _VISION, _TEXT),
        "text-embedding-3-small": (8_191, _TEXT, ()),
        "text-embedding-3-large": (8_191, _TEXT, ()),
        "text-embedding-ada-002": (8_191, _TEXT, ()),
        "dall-e-2": (None, _TEXT, ("image",)),
        "dall-e-3": (None, _TEXT, ("image",)),
        "gpt-image-1": (None, _VISION, ("image",)),
        "whisper-1": (None, ("audio",), _TEXT),
        "tts-1": (None, _TEXT, ("audio",)),
        "tts-1-hd": (None, _TEXT, ("audio",)),
    }
)
"""A best-effort table of models whose listing says little (OpenAI's): an id matches the longest
entry it equals or starts with followed by ``-`` (``gpt-4o-mini-2024-07-18``: ``gpt-4o-mini``)."""


def enrich(info: ModelInfo) -> ModelInfo:
    """``info`` with its unknown context window and modalities filled in from ``KNOWN_MODELS``;
    what the provider said (even an empty list) wins. An unknown id is returned as it is."""
    known = _known(info.id)
    if known is None:
        return info
    window, inputs, outputs = known
    return replace(
        info,
        context_window=info.context_window if info.context_window is not None else window,
        input_modalities=info.input_modalities if info.input_modalities is not None else inputs,
        output_modalities=(
            info.output_modalities if info.output_modalities is not None else outputs
        ),
    )


def _known(model_id: str) -> tuple[int | None, tuple[str, ...], tuple[str, ...]] | None:
    best = ""
    for prefix in KNOWN_MODELS:
        if len(prefix) > len(best) and (model_id == prefix or model_id.startswith(prefix + "-")):
            best = prefix
    return KNOWN_MODELS[best] if best else None


# --- listing ----------------------------------------------------------------------------------


class ConnectionLike(Protocol):
    """What ``list_models`` reads of a connection (``model.ConnectionConfig`` is one)."""

    @property
    def endpoint(self) -> str | None: ...

    @property
    def api_key(self) -> str | None: ...


async def list_models(
    connection: ConnectionLike | Mapping[str, Any] | None = None,
    *,
    provider: str = "openai",
    enrich_known: bool = True,
    http_timeout: float = 30.0,
    client: httpx.AsyncClient | None = None,
) -> list[ModelInfo]:
    """The models ``connection`` offers (§15.3), mapped and (``enrich_known``) enriched.

    ``provider`` openai: ``GET {endpoint}/models`` (the endpoint includes ``/v1``; any
    OpenAI-compatible server). anthropic: ``GET {endpoint}/v1/models``, every page. The endpoint
    defaults to the provider's own; the connection's key goes to its endpoint only, and a key
    from the environment only to the provider's own host. Redirects are not followed.
    ``http_timeout`` bounds each request in seconds; ``client`` is an ``httpx.AsyncClient`` to
    use instead of a new one. Records that cannot be mapped are logged and left out.
    HTTP failures raise tether's ``TransportError`` kinds; a malformed list, ``DiscoveryError``.
    """
    import httpx  # noqa: PLC0415 - only when listing

    api = _api(provider)
    endpoint, key = _endpoint_and_key(connection, api.default_base_url)
    key = _resolve_key(key, api.env_key, endpoint, api.default_base_url)
    own = client or httpx.AsyncClient(timeout=http_timeout, follow_redirects=False)
    try:
        records = await _fetch_all(own, api, endpoint, key)
    finally:
        if client is None:
            await own.aclose()
    found = []
    for n, record in enumerate(records):
        try:
            info = map_model(api.name, record)
        except DiscoveryError as exc:
            log.warning("model record %d of %s left out: %s", n, api.name, exc)
            continue
        found.append(enrich(info) if enrich_known else info)
    return found


@dataclass(frozen=True, slots=True)
class _Api:
    name: str
    default_base_url: str
    env_key: str
    path: str
    paginated: bool

    def headers(self, key: str | None) -> dict[str, str]:
        if self.name == "anthropic":
            from ..transports.anthropic import API_VERSION  # noqa: PLC0415

            return {"anthropic-version": API_VERSION, **({"x-api-key": key} if key else {})}
        return {"Authorization": f"Bearer {key}"} if key else {}


def _api(provider: str) -> _Api:
    name = provider.lower()
    if name == "openai":
        from ..transports.openai_chat import OpenAIChatTransport as Chat  # noqa: PLC0415

        return _Api(name, Chat.default_base_url, Chat.env_key or "", "/models", False)
    if name == "anthropic":
        from ..transports.anthropic import AnthropicTransport as Messages  # noqa: PLC0415

        return _Api(name, Messages.default_base_url, Messages.env_key or "", "/v1/models", True)
    raise DiscoveryError(f"listing models is supported for openai and anthropic, not {provider!r}")


def _endpoint_and_key(
    connection: ConnectionLike | Mapping[str, Any] | None, default: str
) -> tuple[str, str | None]:
    if connection is None:
        endpoint, key = None, None
    elif isinstance(connection, Mapping):
        endpoint = connection.get("endpoint")
        key = connection.get("apiKey", connection.get("api_key"))
    else:
        endpoint, key = connection.endpoint, connection.api_key
    if endpoint is not None and not isinstance(endpoint, str):
        raise DiscoveryError("connection.endpoint must be a string")
    if key is not None and not isinstance(key, str):
        raise DiscoveryError("connection.apiKey must be a string")
    endpoint = (endpoint or default).rstrip("/")
    if not endpoint.startswith(("https://", "http://")):
        raise DiscoveryError(f"connection.endpoint must be an http(s) URL, not {endpoint!r}")
    return endpoint, key or None


def _resolve_key(key: str | None, env_var: str, endpoint: str, default: str) -> str | None:
    from ..transports.credentials import resolve_api_key  # noqa: PLC0415

    return resolve_api_key(key, env_var or None, endpoint, default)


async def _fetch_all(
    client: httpx.AsyncClient, api: _Api, endpoint: str, key: str | None
) -> list[Any]:
    records: list[Any] = []
    params: dict[str, str] = {"limit": "1000"} if api.paginated else {}
    for _ in range(MAX_PAGES):
        page = await _get_json(client, endpoint + api.path, api.headers(key), params, key)
        data = page.get("data") if isinstance(page, dict) else None
        if not isinstance(data, list):
            raise DiscoveryError(f"the {api.name} model list has no 'data' list")
        records.extend(data)
        last = page.get("last_id")
        if not (api.paginated and page.get("has_more") is True and isinstance(last, str)):
            break
        params = {**params, "after_id": last}
    return records


async def _get_json(
    client: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    params: Mapping[str, str],
    key: str | None,
) -> Any:
    import httpx  # noqa: PLC0415

    from ..errors import ConnectionFailedError, TransportError  # noqa: PLC0415
    from ..transports.status import error_from_response  # noqa: PLC0415

    try:
        async with client.stream("GET", url, headers=headers, params=params) as response:
            body, whole = await _read(response)
            if response.status_code >= 300:  # redirects are not followed: they are errors too
                raise error_from_response(response.status_code, response.headers, body)
    except TransportError as exc:
        raise _scrubbed(exc, key) from None
    except httpx.TimeoutException as exc:
        raise ConnectionFailedError("listing models timed out", retryable=True) from exc
    except httpx.RequestError as exc:
        reason = _scrubbed(exc, key)
        raise ConnectionFailedError(f"listing models failed: {reason!r}", retryable=True) from None
    if not whole:
        raise DiscoveryError(f"the model list exceeded {MAX_BODY} bytes")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise DiscoveryError(f"the model list is not JSON: {exc}") from None


async def _read(response: httpx.Response) -> tuple[bytes, bool]:
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        parts.append(chunk)
        size += len(chunk)
        if size > MAX_BODY:
            return b"".join(parts)[:MAX_BODY], False
    return b"".join(parts), True


def _scrubbed(exc: BaseException, key: str | None) -> BaseException:
    """``exc`` with ``key`` blanked from its message (a provider may echo what it was sent)."""
    from ..tracing.redact import BLANK  # noqa: PLC0415

    if key:
        exc.args = tuple(a.replace(key, BLANK) if isinstance(a, str) else a for a in exc.args)
    return exc


# --- field readers ------------------------------------------------------------------------------


def _text(data: Mapping[str, Any], key: str, where: str = "") -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise DiscoveryError(f"{where}{key} must be a string, not {type(value).__name__}")


def _required_text(data: Mapping[str, Any], key: str) -> str:
    value = _text(data, key)
    if not value:
        raise DiscoveryError(f"a model record needs a non-empty {key!r}")
    return value


def _count(data: Mapping[str, Any], key: str, where: str = "") -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DiscoveryError(f"{where}{key} must be a whole number >= 0, not {value!r}")
    return value


def _modalities(data: Mapping[str, Any], key: str, where: str = "") -> tuple[str, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DiscoveryError(f"{where}{key} must be a list of strings")
    return tuple(value)


def _object(data: Mapping[str, Any], key: str, where: str = "") -> Mapping[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise DiscoveryError(f"{where}{key} must be an object, not {type(value).__name__}")
    return value
