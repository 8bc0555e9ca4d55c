"""What real A2A servers send that the SDK's client alone would refuse, read as they meant it:
a timestamp that names no time zone (pydantic's fasta2a writes ``datetime.now().isoformat()``)
is read as UTC instead of failing the whole answer. Only the JSON-RPC binding is made lenient:
it is the one those servers speak."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["lenient_jsonrpc"]

_NAIVE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?")  # no Z, no offset
_DEPTH = 32  # levels of an answer looked into


def lenient_jsonrpc(card: Any, url: str, config: Any) -> Any:
    """The SDK's JSON-RPC transport for ``card`` at ``url``, reading naive timestamps as UTC (a
    transport producer for the SDK's ``ClientFactory.register``)."""
    from a2a.client.transports.jsonrpc import JsonRpcTransport  # noqa: PLC0415

    class Lenient(JsonRpcTransport):
        def _check_jsonrpc_response(self, response_data: Any) -> dict[str, Any]:
            checked: dict[str, Any] = super()._check_jsonrpc_response(response_data)
            _utc(checked.get("result"), _DEPTH)
            return checked

    return Lenient(config.httpx_client, card, url, is_shared_httpx=True)


def _utc(value: Any, depth: int) -> None:
    """Give each naive ``timestamp`` in ``value`` the UTC zone, in place."""
    if depth <= 0:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "timestamp" and isinstance(item, str) and _NAIVE.fullmatch(item):
                value[key] = item + "Z"
            else:
                _utc(item, depth - 1)
    elif isinstance(value, list):
        for item in value:
            _utc(item, depth - 1)
