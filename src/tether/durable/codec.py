"""``OffloadCodec``: the Temporal payload codec that keeps every payload a durable run hands
Temporal small. A payload over ``threshold`` bytes (a long conversation, a large tool result or
reply, a page of a stored session, a query's answer) goes to a ``Blobs`` store before it leaves
the process, and Temporal gets a reference; whoever reads the payload back (a worker, a client)
fetches it again. Because a codec sits below every payload, activity inputs and results,
continue-as-new input, signals, queries and heartbeats are all bounded, and the workflow's code
sees the values themselves (a replay reads the same immutable blobs).

A blob's key is the SHA-256 of the payload's bytes: a retried activity that makes the same value
writes the same blob again, and a reference can only ever name the bytes it was made for (a read
checks them). The blob is written before the payload is handed on, so a reference never names a
blob that is not there.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence

from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import PayloadCodec

from ..errors import StoreDamagedError
from .blobs import Blobs

__all__ = ["REFERENCE", "OffloadCodec", "offloading"]

REFERENCE = b"binary/tether-blob"  # the encoding of a payload that names a blob


class OffloadCodec(PayloadCodec):
    """Payloads over ``threshold`` bytes kept in ``blobs``, a reference in their place; ``inner``
    (another codec, e.g. encryption) runs first on the way out and last on the way in."""

    def __init__(self, blobs: Blobs, threshold: int, inner: PayloadCodec | None = None) -> None:
        if threshold < 1024:
            raise ValueError("an offload threshold is at least 1024 bytes")
        self.blobs = blobs
        self.threshold = threshold
        self.inner = inner

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        encoded = list(payloads) if self.inner is None else await self.inner.encode(payloads)
        return [await self._out(p) for p in encoded]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        restored = [await self._in(p) for p in payloads]
        return restored if self.inner is None else await self.inner.decode(restored)

    async def _out(self, payload: Payload) -> Payload:
        if payload.ByteSize() <= self.threshold:
            return payload
        data = payload.SerializeToString(deterministic=True)
        key = hashlib.sha256(data).hexdigest()
        await self.blobs.put(key, data)
        reference = json.dumps({"key": key, "bytes": len(data)}).encode()
        return Payload(metadata={"encoding": REFERENCE}, data=reference)

    async def _in(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != REFERENCE:
            return payload
        key = json.loads(payload.data)["key"]
        data = await self.blobs.get(key)
        if hashlib.sha256(data).hexdigest() != key:
            raise StoreDamagedError(f"blob {key!r} does not hold the bytes its key names")
        return Payload.FromString(data)


def offloading(client: Client, blobs: Blobs | None, threshold: int) -> Client:
    """``client`` with an ``OffloadCodec`` over ``blobs`` (``client`` itself when ``blobs`` is
    None or it has one already), sharing its connection; a codec it has runs inside."""
    converter = client.data_converter
    codec = converter.payload_codec
    if blobs is None or isinstance(codec, OffloadCodec):
        return client
    config = client.config()
    config["data_converter"] = dataclasses.replace(
        converter, payload_codec=OffloadCodec(blobs, threshold, codec)
    )
    return Client(**config)
