"""``ServerLibrary``: one MCP server's resources, resource templates and prompts, for its
``McpServer``. A listing is kept until the server says it changed (when it promises to say so;
otherwise it is read each time), read whole but bounded (``pages.py``), its malformed entries
left out and named in ``problems``; reads and prompts are capped and time-limited; subscriptions
follow the era: ``resources/subscribe`` before 2026, a ``subscriptions/listen`` stream after."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from .pages import read_pages
from .prompts import Prompt, check_arguments, prompt_messages, prompt_of
from .resources import (
    MAX_RESOURCE_BYTES,
    Resource,
    ResourceTemplate,
    TooLarge,
    read_contents,
    resource_of,
    template_of,
)
from .subscriptions import OnUpdate, ResourceSubscription

__all__ = ["ServerLibrary"]

log = logging.getLogger("tether.mcp")

Guarded = Callable[[Coroutine[Any, Any, Any], str], Awaitable[Any]]
# kind: (the SDK's list method, its page's entries, the capability that may promise changes,
# the wire method)
_KINDS = {
    "resources": ("list_resources", "resources", "resources", "resources/list"),
    "resource templates": (
        "list_resource_templates",
        "resource_templates",
        "resources",
        "resources/templates/list",
    ),
    "prompts": ("list_prompts", "prompts", "prompts", "prompts/list"),
}
_WIRE = {"resource": "resources", "resource template": "resource templates", "prompt": "prompts"}


class ServerLibrary:
    """The resources and prompts of one server. ``live()`` gives its connected client,
    ``guarded(request, what)`` awaits a request within the server's timeout (failures as
    ``McpError``), ``describe()`` names the server in errors, ``name()`` in what it lists;
    ``error`` is the type of error raised (``McpError``)."""

    def __init__(
        self,
        live: Callable[[], Awaitable[Any]],
        guarded: Guarded,
        describe: Callable[[], str],
        name: Callable[[], str],
        error: type[Exception],
    ) -> None:
        self._error = error
        self._live = live
        self._guarded = guarded
        self._describe = describe
        self._name = name
        self.problems: dict[str, tuple[str, ...]] = {}  # kind: what its last listing left out
        self._kept: dict[str, list[Any]] = {}  # kind: its last listing, while still current
        self._moved: dict[str, int] = dict.fromkeys(_KINDS, 0)  # kind: changes announced
        self._dropped: dict[str, list[str]] = {}  # kind: entries the wire check took out
        self._subscribed: dict[str, list[ResourceSubscription]] = {}
        self._listens: dict[int, asyncio.Task[None]] = {}  # by id of their subscription

    # -- what the connection hears ----------------------------------------------------------------

    def notice(self, message: Any) -> None:
        """A server notification (handshake era) or listen event (2026 era) the connection
        passes on: list changes and resource updates."""
        kind = type(message).__name__
        if kind in ("ResourceListChangedNotification", "ResourcesListChanged"):
            self._moved_on("resources", "resource templates")
        elif kind in ("PromptListChangedNotification", "PromptsListChanged"):
            self._moved_on("prompts")
        elif kind in ("ResourceUpdatedNotification", "ResourceUpdated"):
            params = getattr(message, "params", message)
            self._updated(str(getattr(params, "uri", "")))

    def dropped(self, kind: str, name: str, reason: str) -> None:
        """The wire check took entry ``name`` of a ``kind`` listing out (the SDK cannot read it)."""
        self._dropped.setdefault(_WIRE.get(kind, kind), []).append(
            f"{kind} {name!r} left out: {reason}"
        )

    def lost(self) -> None:
        """The server went away: its subscriptions end with an error, its listings are read
        again."""
        self.reset(lost=True)

    def reset(self, lost: bool) -> None:
        """The connection changed: listings are read again; ``lost``: the subscriptions made on
        the old one (handshake era) end with an error."""
        self._moved_on(*_KINDS)
        if lost:
            failure = self._error(
                f"{self._describe()} went away: its resource subscriptions ended (subscribe again)"
            )
            for subscriptions in self._subscribed.values():
                for subscription in subscriptions:
                    subscription.end(failure)
            self._subscribed.clear()

    def _moved_on(self, *kinds: str) -> None:
        for kind in kinds:
            self._moved[kind] += 1
            self._kept.pop(kind, None)

    def _updated(self, uri: str) -> None:
        for subscription in list(self._subscribed.get(uri, ())):
            subscription.updated()

    # -- listings ---------------------------------------------------------------------------------

    async def resources(self) -> list[Resource]:
        name = self._name()
        return [resource_of(e, name) for e in await self._listing("resources")]

    async def resource_templates(self) -> list[ResourceTemplate]:
        name = self._name()
        return [template_of(e, name) for e in await self._listing("resource templates")]

    async def prompts(self) -> list[Prompt]:
        name = self._name()
        return [prompt_of(e, name) for e in await self._listing("prompts")]

    async def _listing(self, kind: str) -> list[Any]:
        """The entries of a ``kind`` listing: the kept one, else read now."""
        kept = self._kept.get(kind)
        if kept is not None:
            return kept
        client = await self._live()
        method, key, capability, wire = _KINDS[kind]
        if getattr(client.server_capabilities, capability, None) is None:
            self.problems[kind] = ()
            return []  # the server offers none: asking would only be refused
        moved = self._moved[kind]
        self._dropped[kind] = []

        async def page(cursor: str | None) -> Any:
            request = getattr(client, method)(cursor=cursor, cache_mode="bypass")
            return await self._guarded(request, wire)

        pages = await read_pages(page, key, f"the list of {kind}")
        entries, problems = _unique(kind, pages.entries)
        self.problems[kind] = (*self._dropped.pop(kind, ()), *problems, *pages.problems)
        for problem in self.problems[kind]:
            log.warning("%s: %s", self._describe(), problem)
        promised = getattr(getattr(client.server_capabilities, capability), "list_changed", False)
        if promised and moved == self._moved[kind]:
            self._kept[kind] = entries  # until the server says it changed
        return entries

    # -- reading ----------------------------------------------------------------------------------

    async def read_resource(self, uri: str, max_bytes: int = MAX_RESOURCE_BYTES) -> Resource:
        if not isinstance(uri, str) or not uri:
            raise TypeError(f"read_resource takes a resource's URI as a string, got {uri!r}")
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        client = await self._live()
        result = await self._guarded(client.read_resource(uri), f"the read of {uri}")
        listed = next((e for e in self._kept.get("resources", ()) if str(e.uri) == uri), None)
        known = None if listed is None else resource_of(listed, self._name())
        try:
            return read_contents(uri, list(result.contents), self._name(), known, max_bytes)
        except TooLarge as exc:
            raise self._error(f"{self._describe()} sent too much: {exc} (max_bytes=)") from None
        except ValueError as exc:
            raise self._error(
                f"{self._describe()} answered the read of {uri} badly: {exc}"
            ) from None

    async def get_prompt(self, name: str, arguments: Mapping[str, Any] | None) -> Prompt:
        if not isinstance(name, str) or not name:
            raise TypeError(f"get_prompt takes a prompt's name as a string, got {name!r}")
        given = check_arguments(name, arguments)
        client = await self._live()
        result = await self._guarded(client.get_prompt(name, given), f"the prompt {name!r}")
        try:
            messages = prompt_messages(result)
        except ValueError as exc:
            raise self._error(
                f"{self._describe()} answered the prompt {name!r} badly: {exc}"
            ) from None
        listed = next((e for e in self._kept.get("prompts", ()) if e.name == name), None)
        base = prompt_of(listed, self._name()) if listed is not None else None
        return Prompt(
            name,
            _described(result) or (base.description if base else None),
            base.arguments if base else (),
            messages,
            self._name(),
        )

    # -- subscriptions ----------------------------------------------------------------------------

    async def subscribe(
        self, uri: str, on_update: OnUpdate | None, limit: float
    ) -> ResourceSubscription:
        if not isinstance(uri, str) or not uri:
            raise TypeError(f"subscribe takes a resource's URI as a string, got {uri!r}")
        client = await self._live()
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: PLC0415

        modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
        subscription: ResourceSubscription

        async def stop() -> None:
            await (
                self._unlisten(subscription) if modern else self._unsubscribe(client, subscription)
            )

        subscription = ResourceSubscription(uri, on_update, stop)
        if modern:
            await self._listen(client, subscription, limit)
            return subscription
        resources = getattr(client.server_capabilities, "resources", None)
        if not getattr(resources, "subscribe", False):
            raise self._error(f"{self._describe()} offers no resource subscriptions")
        if not self._subscribed.get(uri):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated in 2026, but this era's way
                await self._guarded(client.subscribe_resource(uri), f"the subscription to {uri}")
        self._subscribed.setdefault(uri, []).append(subscription)
        return subscription

    async def _listen(self, client: Any, subscription: ResourceSubscription, limit: float) -> None:
        """Hold a ``subscriptions/listen`` stream for the subscription in a task of its own."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._hold(client, subscription, ready))
        self._listens[id(subscription)] = task
        task.add_done_callback(lambda _: self._listens.pop(id(subscription), None))
        try:
            await asyncio.wait_for(asyncio.shield(ready), limit)
        except BaseException as exc:
            task.cancel()
            if isinstance(exc, TimeoutError):
                raise self._error(f"the subscription to {subscription.uri} timed out") from None
            if isinstance(exc, Exception) and not isinstance(exc, self._error):
                raise self._error(
                    f"{self._describe()} refused the subscription to {subscription.uri}: {exc}"
                ) from None
            raise

    async def _hold(
        self, client: Any, subscription: ResourceSubscription, ready: asyncio.Future[None]
    ) -> None:
        uri = subscription.uri
        try:
            async with client.listen(resource_subscriptions=[uri]) as stream:
                honored = getattr(stream.honored, "resource_subscriptions", None) or ()
                if uri not in honored:
                    ready.set_exception(
                        self._error(f"{self._describe()} did not accept a subscription to {uri}")
                    )
                    return
                ready.set_result(None)
                async for event in stream:
                    if getattr(event, "uri", None) == uri:
                        subscription.updated()
            subscription.end()
        except asyncio.CancelledError:
            subscription.end()
            raise
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            subscription.end(
                self._error(f"the subscription to {uri} was lost ({exc}): subscribe again")
            )

    async def _unlisten(self, subscription: ResourceSubscription) -> None:
        task = self._listens.get(id(subscription))
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _unsubscribe(self, client: Any, subscription: ResourceSubscription) -> None:
        held = self._subscribed.get(subscription.uri, [])
        if subscription in held:
            held.remove(subscription)
        if held:
            return  # another subscription still wants its updates
        self._subscribed.pop(subscription.uri, None)
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await self._guarded(client.unsubscribe_resource(subscription.uri), "unsubscribe")

    async def close(self) -> None:
        """End every subscription (the server is being left)."""
        for subscriptions in self._subscribed.values():
            for subscription in subscriptions:
                subscription.end()
        self._subscribed.clear()
        tasks = list(self._listens.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _unique(kind: str, entries: list[Any]) -> tuple[list[Any], tuple[str, ...]]:
    """The entries with each key (URI, template or name) once, the first kept."""
    field = {"resources": "uri", "resource templates": "uri_template", "prompts": "name"}[kind]
    seen: set[str] = set()
    kept, problems = [], []
    for entry in entries:
        key = str(getattr(entry, field))
        if key in seen:
            problems.append(f"{kind[:-1]} {key!r} left out: listed twice (the first is kept)")
            continue
        seen.add(key)
        kept.append(entry)
    return kept, tuple(problems)


def _described(result: Any) -> str | None:
    text = getattr(result, "description", None)
    return text if isinstance(text, str) and text else None
