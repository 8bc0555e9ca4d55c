"""Blob stores and the offload codec on their own: bytes back as put, a key per content, a
tampered or missing blob a clear error, small payloads untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload

from tether.durable import FileBlobs, OffloadCodec, StoreBlobs
from tether.durable.blobs import BlobMissingError
from tether.durable.codec import REFERENCE
from tether.errors import StoreDamagedError
from tether.stores import SQLiteStore


async def test_file_and_store_blobs_give_back_what_was_put(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    for blobs in (FileBlobs(tmp_path / "b"), StoreBlobs(store)):
        data = bytes(range(256)) * 5000
        await blobs.put("k1", data)
        await blobs.put("k1", data)  # a retry's put of the same key
        assert await blobs.get("k1") == data
        with pytest.raises(BlobMissingError):
            await blobs.get("nothing")
        with pytest.raises(ValueError, match="blob key"):
            await blobs.put("../escape", b"x")
    await store.aclose()


async def test_the_codec_offloads_only_large_payloads_and_checks_what_it_reads(
    tmp_path: Path,
) -> None:
    blobs = FileBlobs(tmp_path)
    codec = OffloadCodec(blobs, 4096)
    small = Payload(metadata={"encoding": b"json/plain"}, data=b'"hi"')
    large = Payload(metadata={"encoding": b"json/plain"}, data=b'"' + b"x" * 10_000 + b'"')
    out = await codec.encode([small, large])
    assert out[0] == small and out[1].metadata["encoding"] == REFERENCE
    assert out[1].ByteSize() < 200
    assert await codec.decode(out) == [small, large]
    (stored,) = list(tmp_path.iterdir())  # noqa: ASYNC240 - a test's own folder
    stored.write_bytes(stored.read_bytes()[:-1] + b"y")  # damaged on disk
    with pytest.raises(StoreDamagedError, match="does not hold the bytes"):
        await codec.decode(out)
    with pytest.raises(ValueError, match="1024"):
        OffloadCodec(blobs, 10)
