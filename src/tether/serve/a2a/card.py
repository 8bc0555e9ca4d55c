"""The agent card: who the served agent is and how to reach it, at the well-known path.

Its skills are the agent's tools (one skill for the agent itself when it has none); its
interfaces are the two bindings served (JSON-RPC at ``/a2a``, HTTP+JSON under it), at the URL the
request reached the server by, or the one the app was told (``url=``, behind a proxy). With a
token the card names the Bearer scheme the other requests need; the card itself is public, as A2A
clients expect to read it before they authenticate.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from ...tools.tool import Tool

__all__ = ["CARD_PATH", "CARD_PATHS", "PATH", "PROTOCOL", "SCHEME", "agent_card"]

CARD_PATH = "/.well-known/agent-card.json"
PATH = "/a2a"  # JSON-RPC here, HTTP+JSON under it (``/a2a/message:send``)
CARD_PATHS = (CARD_PATH, PATH + CARD_PATH)  # also under the interface URL, where some look
PROTOCOL = "1.0"
SCHEME = "bearer"  # the security scheme's name on the card
_MODES = ["text/plain", "application/json"]


def agent_card(name: str, about: str, tools: Sequence[Tool], base: str, secured: bool) -> AgentCard:
    """The card of the agent ``name`` with ``tools``, served at ``base`` (no trailing slash)."""
    url = base.rstrip("/") + PATH
    card = AgentCard(
        name=name,
        description=about,
        version=_version(),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version=PROTOCOL)
            for binding in ("JSONRPC", "HTTP+JSON")
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=_MODES,
        default_output_modes=_MODES,
        skills=_skills(name, about, tools),
    )
    if secured:
        scheme = HTTPAuthSecurityScheme(scheme="Bearer", description="the server's token")
        card.security_schemes[SCHEME].CopyFrom(SecurityScheme(http_auth_security_scheme=scheme))
        card.security_requirements.append(SecurityRequirement(schemes={SCHEME: StringList()}))
    return card


def _skills(name: str, about: str, tools: Sequence[Tool]) -> list[AgentSkill]:
    if not tools:
        return [AgentSkill(id="chat", name=name, description=about, tags=["chat"])]
    return [
        AgentSkill(
            id=tool.name,
            name=tool.name,
            description=tool.description or f"the tool {tool.name}",
            tags=["tool"],
        )
        for tool in tools
    ]


def _version() -> str:
    try:
        return version("tether")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0"
