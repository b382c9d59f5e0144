"""The search index on the directory bucket: the manifest's compare-and-swap, segments, purges."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acx.adapters.search_index import Manifest, ManifestConflict, SegmentMissing
from acx.local.embedded.objects import DirectoryObjects
from acx.local.embedded.search_index import DirectorySearchIndex
from acx.local.presigned import Presigner
from acx.usecases.ports import SearchIndexPort


@pytest.fixture()
def index(tmp_path: Path) -> DirectorySearchIndex:
    return DirectorySearchIndex(DirectoryObjects(tmp_path, "acx-data", Presigner(os.urandom(32))))


def test_the_manifest_is_replaced_only_from_the_etag_read(index: DirectorySearchIndex) -> None:
    port: SearchIndexPort = index
    assert port.manifest("t", "p") is None
    etag = port.put_manifest("t", "p", Manifest("e", 8))  # etag None: create
    with pytest.raises(ManifestConflict):
        port.put_manifest("t", "p", Manifest("e", 8))  # a second creator loses
    read = port.manifest("t", "p")
    assert read.etag == etag
    assert port.manifest("t", "p", if_none_match=etag) is port.NOT_MODIFIED
    read.segments, read.docs = ["s"], [1]
    new = port.put_manifest("t", "p", read)
    stale = Manifest("e", 8, etag=etag)
    with pytest.raises(ManifestConflict):
        port.put_manifest("t", "p", stale)  # written from an old read
    assert port.manifest("t", "p").etag == new and port.manifest("t", "p").segments == ["s"]


def test_segments_are_listed_read_and_purged(index: DirectorySearchIndex) -> None:
    a = index.put_segment("t", "p", b"A")
    b = index.put_segment("t", "p", b"B")
    index.put_segment("t", "q", b"C")
    assert index.segment_keys("t", "p") == sorted([a, b])
    assert index.get_segment(a) == b"A"
    index.purge(a)
    with pytest.raises(SegmentMissing):
        index.get_segment(a)
    assert index.segment_keys("t", "p") == [b]
