"""A remote agent's card: fetched from ``<url>/.well-known/agent-card.json``, checked (the fields
A2A 1.0 requires, and an interface tether's client speaks: A2A 1.0 over JSON-RPC or HTTP+JSON),
and parsed by the SDK. Each failure is a ``TransportError`` saying what is wrong with which
card."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ..errors import TransportError
from .failures import failure

__all__ = ["BINDINGS", "chosen_interface", "fetch_card", "tool_description"]

BINDINGS = ("JSONRPC", "HTTP+JSON")  # what the SDK's client speaks without gRPC
_REQUIRED = (
    "name",
    "description",
    "version",
    "capabilities",
    "defaultInputModes",
    "defaultOutputModes",
)
_SKILL = ("id", "name", "description", "tags")


def card_address(url: str) -> str:
    """Where the card of the agent at ``url`` is."""
    return url.rstrip("/") + "/.well-known/agent-card.json"


async def fetch_card(http: httpx.AsyncClient, url: str) -> Any:
    """The checked card (the SDK's ``AgentCard``) of the agent at ``url``."""
    from a2a.client.card_resolver import parse_agent_card  # noqa: PLC0415

    where = card_address(url)
    try:
        response = await http.get(where)
        body = await response.aread()
    except (httpx.HTTPError, httpx.StreamError) as exc:
        raise failure(exc, f"the agent card at {where}") from None
    if response.status_code != 200:
        raise failure(_status(response), f"the agent card at {where}") from None
    data = _json_object(body, where)
    _check_fields(data, where)
    try:
        card = parse_agent_card(data)
    except Exception as exc:  # the SDK's ParseError, or a field of the wrong type
        raise TransportError(f"the agent card at {where} is not a valid A2A card: {exc}") from None
    chosen_interface(card, where)
    return card


def _status(response: httpx.Response) -> httpx.HTTPStatusError:
    return httpx.HTTPStatusError("", request=response.request, response=response)


def _json_object(body: bytes, where: str) -> dict[str, Any]:
    import json  # noqa: PLC0415

    try:
        data = json.loads(body)
    except ValueError:
        raise TransportError(f"the agent card at {where} is not JSON") from None
    if not isinstance(data, dict):
        raise TransportError(f"the agent card at {where} is not a JSON object")
    return data


def _check_fields(data: Mapping[str, Any], where: str) -> None:
    """Every field A2A 1.0 requires of a card and of its skills, or an error naming those
    missing."""
    missing = [name for name in _REQUIRED if name not in data]
    if "supportedInterfaces" not in data and "url" not in data:  # 0.3 named one ``url``
        missing.append("supportedInterfaces")
    skills = data.get("skills", [])
    if not isinstance(skills, list):
        missing.append("skills (a list)")
    else:
        for at, skill in enumerate(skills):
            lacks = [f for f in _SKILL if not isinstance(skill, dict) or not skill.get(f)]
            missing.extend(f"skills[{at}].{f}" for f in lacks)
    if missing:
        raise TransportError(
            f"the agent card at {where} is not an A2A 1.0 card: it lacks {', '.join(missing)}"
        )


def chosen_interface(card: Any, where: str) -> Any:
    """The card's interface tether calls: A2A 1.0 over a binding the SDK's client speaks, the
    card's own order deciding; an error naming what the card offers when there is none."""
    offered: Sequence[Any] = list(card.supported_interfaces)
    for face in offered:
        if face.protocol_binding in BINDINGS and _is_1_0(face.protocol_version) and face.url:
            return face
    said = ", ".join(
        f"{f.protocol_binding or '?'} {f.protocol_version or '(no version)'}" for f in offered
    )
    raise TransportError(
        f"the agent card at {where} offers no interface tether can call ({said or 'none'}): "
        f"tether's A2A client speaks protocol version 1.0 over {' or '.join(BINDINGS)}"
    )


def _is_1_0(version: str) -> bool:
    head = version.split(".")
    return len(head) >= 2 and head[0] == "1" and head[1] == "0"


def tool_description(card: Any) -> str:
    """What a model reads of the agent: its description, then its skills."""
    lines = [card.description.strip() or f"The remote agent {card.name}."]
    for skill in card.skills:
        lines.append(f"- {skill.name}: {skill.description.strip()}")
    return "\n".join(lines)
