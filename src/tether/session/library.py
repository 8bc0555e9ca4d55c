"""What ``AgentSession`` offers of its MCP servers besides tools: their resources, resource
templates and prompts gathered (each naming the server it came from, by the session's name for
it), reads and prompts sent to the server that lists them, subscriptions, and one ``Sampling``
lent to every server the session opens that has none of its own."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from ..mcp.prompts import Prompt
from ..mcp.resources import MAX_RESOURCE_BYTES, Resource, ResourceTemplate
from ..mcp.sampling import Sampling
from ..mcp.subscriptions import OnUpdate, ResourceSubscription
from .tools import SessionTools

__all__ = ["SessionLibrary", "check_answerers"]

log = logging.getLogger("tether.session")

T = TypeVar("T", Resource, ResourceTemplate, Prompt)


def check_answerers(on_elicit: Any, on_sampling: Any) -> None:
    """A ``TypeError`` for an ``on_elicit`` that is not a function or an ``on_sampling`` that is
    not a ``Sampling``."""
    if on_elicit is not None and not callable(on_elicit):
        raise TypeError(
            "on_elicit must be a function taking an Elicitation and returning a dict "
            f"(accept) or None (decline), got {type(on_elicit).__name__}"
        )
    if on_sampling is not None and not isinstance(on_sampling, Sampling):
        raise TypeError(f"on_sampling= takes a tether.mcp.Sampling, got {on_sampling!r}")


class SessionLibrary:
    """``AgentSession``'s methods for its servers' resources and prompts (a base class of it)."""

    _tools: SessionTools

    async def resources(self) -> list[Resource]:
        """Every resource of the session's MCP servers (listed, not read), each naming its
        server in ``server``. A server that cannot list now is left out, with a warning."""
        return await self._gathered("resources")

    async def resource_templates(self) -> list[ResourceTemplate]:
        """Every resource template of the session's MCP servers, each naming its server."""
        return await self._gathered("resource_templates")

    async def prompts(self) -> list[Prompt]:
        """Every prompt of the session's MCP servers, each naming its server."""
        return await self._gathered("prompts")

    async def read_resource(
        self, uri: str, *, server: str | None = None, max_bytes: int = MAX_RESOURCE_BYTES
    ) -> Resource:
        """Read the resource at ``uri`` from the server that lists it, or from ``server`` (the
        session's name for it, as resources give it); ``ValueError`` when that is not clear."""
        name, found = await self._owner(
            server, "resources", lambda r: r.uri == uri, f"resource {uri}"
        )
        read: Resource = await found.read_resource(uri, max_bytes=max_bytes)
        return dataclasses.replace(read, server=name)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, server: str | None = None
    ) -> Prompt:
        """The prompt ``name`` of the server that lists it (or of ``server``), filled in."""
        owner, found = await self._owner(
            server, "prompts", lambda p: p.name == name, f"prompt {name!r}"
        )
        prompt: Prompt = await found.get_prompt(name, arguments)
        return dataclasses.replace(prompt, server=owner)

    async def subscribe(
        self, uri: str, on_update: OnUpdate | None = None, *, server: str | None = None
    ) -> ResourceSubscription:
        """Follow the resource at ``uri`` on the server that lists it (or on ``server``)."""
        _, found = await self._owner(server, "resources", lambda r: r.uri == uri, f"resource {uri}")
        subscription: ResourceSubscription = await found.subscribe(uri, on_update)
        return subscription

    def _servers(self) -> list[tuple[str, Any]]:
        """The session's servers that have resources and prompts, by the session's names."""
        return [(n, s) for n, s in self._tools.named_servers() if hasattr(s, "resources")]

    async def _gathered(self, kind: str) -> list[Any]:
        gathered: list[Any] = []
        for name, server in self._servers():
            try:
                listed = await getattr(server, kind)()
            except Exception as exc:  # a server that cannot list now: the others still can
                log.warning("the %s of %s are left out: %s", kind.replace("_", " "), name, exc)
                continue
            gathered.extend(dataclasses.replace(item, server=name) for item in listed)
        return gathered

    async def _owner(
        self, wanted: str | None, kind: str, lists: Callable[[Any], bool], what: str
    ) -> tuple[str, Any]:
        """The server named ``wanted``, else the one server whose ``kind`` listing has an entry
        for which ``lists`` holds (or the only server there is)."""
        servers = self._servers()
        names = ", ".join(n for n, _ in servers) or "none"
        if wanted is not None:
            for name, server in servers:
                if name == wanted:
                    return name, server
            raise ValueError(f"no server named {wanted!r} in this session (its servers: {names})")
        if len(servers) == 1:
            return servers[0]
        owners = [(n, s) for n, s in servers if any(lists(e) for e in await _listed(s, kind))]
        if len(owners) == 1:
            return owners[0]
        shown = ", ".join(n for n, _ in owners)
        said = f"listed by {shown}" if owners else "listed by no server"
        raise ValueError(f"{what} is {said}: name the server with server= (one of {names})")


async def _listed(server: Any, kind: str) -> list[Any]:
    try:
        listing: Awaitable[list[Any]] = getattr(server, kind)()
        return await listing
    except Exception:  # it cannot list now: it is not the one
        return []
