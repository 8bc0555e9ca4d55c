"""``DevServer`` with the real ``temporal`` binary: a port that another process holds is never
taken for a running server; a port it picked itself and lost meanwhile is picked again."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from temporalio.client import Client

from tether.durable import DevServer, devserver

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def taken() -> Iterator[int]:
    """A port some other process listens on (connections to it succeed)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


def test_a_given_port_held_by_another_process_is_an_error_not_a_dead_server(taken: int) -> None:
    server = DevServer(port=taken)
    with pytest.raises(RuntimeError, match="address already in use"):
        server.start()
    assert server.process is None  # stopped, its log closed


async def test_a_picked_port_taken_meanwhile_is_picked_again(
    taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    picks = iter([taken])
    pick = devserver._free_port
    monkeypatch.setattr(devserver, "_free_port", lambda: next(picks, None) or pick())
    with DevServer() as server:
        assert server.port != taken
        client = await Client.connect(server.address)
        assert (await client.service_client.check_health()) is True
