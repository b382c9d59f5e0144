"""The directory bucket: versioned like S3, atomic and checksummed writes, prefix listings."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from acx.local.embedded.objects import DirectoryObjects, NoSuchKey, ObjectDamaged
from acx.local.presigned import Presigner
from acx.usecases.ports import ObjectsPort


@pytest.fixture()
def bucket(tmp_path: Path) -> DirectoryObjects:
    return DirectoryObjects(tmp_path, "acx-data", Presigner(os.urandom(32), "http://gw"))


def test_put_get_size_and_streams_read_back_what_was_written(bucket: DirectoryObjects) -> None:
    port: ObjectsPort = bucket
    port.put("a/b.json", b"one")
    port.put_file("a/c.bin", io.BytesIO(b"x" * 3_000_000))
    assert port.get("a/b.json") == b"one" and port.size("a/b.json") == 3
    assert b"".join(port.chunks("a/c.bin", 1 << 20)) == b"x" * 3_000_000
    assert port.size("a/missing") is None
    with pytest.raises(NoSuchKey):
        port.get("a/missing")


def test_a_key_and_its_prefix_are_separate_objects_and_dots_stay_inside(
    bucket: DirectoryObjects, tmp_path: Path
) -> None:
    bucket.put("a", b"1")
    bucket.put("a/b", b"2")
    bucket.put("../../escape", b"3")
    bucket.put("x//y", b"4")
    assert [bucket.get(k) for k in ("a", "a/b", "../../escape", "x//y")] == [b"1", b"2", b"3", b"4"]
    assert not (tmp_path.parent / "escape@o").exists()
    assert all(p.resolve().is_relative_to(bucket.base) for p in bucket.base.rglob("*"))
    assert list(bucket.keys("")) == ["../../escape", "a", "a/b", "x//y"]


def test_versions_delete_and_purge_behave_as_a_versioned_bucket(bucket: DirectoryObjects) -> None:
    v1 = bucket.put("k", b"one")
    v2 = bucket.put("k", b"two")
    assert v1 is not None and v2 is not None and int(v2) > int(v1)
    assert bucket.get("k") == b"two"
    bucket.delete("k")
    assert bucket.size("k") is None  # deleted: the current version is a marker
    assert [v for _, v in bucket.versions("k")][:2] == [v1, v2] and len(list(bucket.versions("k"))) == 3
    bucket.put("k2", b"other")
    assert bucket.purge("k") == 3
    assert list(bucket.versions("k")) == [("k2", next(v for _, v in bucket.versions("k2")))]
    assert bucket.get("k2") == b"other"  # the control: a purge removes only its key


def test_a_flipped_byte_in_a_stored_object_is_refused_at_read_and_at_check(bucket: DirectoryObjects) -> None:
    bucket.put("p/k", b"hello world")
    assert bucket.check() == 1  # the control: intact
    (file,) = [p for p in bucket.base.rglob("*.v")]
    file.write_bytes(b"hellO world")
    with pytest.raises(ObjectDamaged):
        bucket.get("p/k")
    with pytest.raises(ObjectDamaged):
        b"".join(bucket.chunks("p/k"))
    with pytest.raises(ObjectDamaged):
        bucket.check()
    assert bucket.get("p/k", checksum=False) == b"hellO world"  # only derived data reads unchecked


def test_a_stream_that_fails_stores_nothing(bucket: DirectoryObjects) -> None:
    def chunks() -> object:
        yield b"part"
        raise TimeoutError

    with pytest.raises(TimeoutError):
        bucket.put_stream("u", chunks())  # type: ignore[arg-type]
    assert bucket.size("u") is None and not [p for p in bucket.base.rglob(".tmp-*")]
    bucket.put_stream("u", iter([b"whole"]))
    assert bucket.get("u") == b"whole"  # the control


def test_presigned_urls_point_at_the_gateway_and_bind_the_object(bucket: DirectoryObjects) -> None:
    put = bucket.presign_put("uploads/t/p/1.json", "application/json", 900)
    assert put.url.startswith("http://gw/acx-data/uploads/t/p/1.json?") and put.headers == {
        "Content-Type": "application/json"
    }
    get = bucket.presign_get("c/1.zip", 300)
    assert get.url.startswith("http://gw/acx-data/c/1.zip?") and get.expires_in == 300
