"""Recall pages: bounded by bytes inside a read chunk, continued exactly after the last record returned."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from acx.core.canonical import dumps_record
from acx.usecases import recall as recall_mod
from tests.integration.service import Service, bundle, record, start_service

PKG = "paged"


@pytest.fixture
def svc() -> Iterator[Service]:
    yield from start_service()


def _size(record: dict[str, object]) -> int:
    """A record's bytes in a page: its canonical JSON, which the page sends as stored."""
    return len(dumps_record(record))


def _ids(svc: Service, **query: str) -> tuple[list[list[str]], list[int]]:
    pages, sizes = [], []
    cursor: str | None = None
    while True:
        q = dict(query, **({"cursor": cursor} if cursor else {}))
        status, page = svc.call("GET", f"/v1/packages/{PKG}/memories", query=q)
        assert status == 200, page
        pages.append([r["id"] for r in page["records"]])
        sizes.append(sum(_size(r) for r in page["records"]))
        cursor = page["nextCursor"]
        if not cursor:
            return pages, sizes


def test_a_page_stops_after_the_record_that_fills_it_and_the_next_page_starts_right_after(
    svc: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [record(i, summary=f"summary {i} " + "x" * 2000) for i in range(1, 21)]  # three pages
    assert svc.call("POST", f"/v1/packages/{PKG}/bundles", body=bundle(records))[0] == 201
    status, whole = svc.call("GET", f"/v1/packages/{PKG}/memories", query={"limit": "1000"})
    assert status == 200 and whole["nextCursor"] is None
    flat = [r["id"] for r in whole["records"]]
    sizes = [_size(r) for r in whole["records"]]
    monkeypatch.setattr(recall_mod, "PAGE_BYTES", sum(sizes[:7]) + 1)  # full inside the first chunk
    pages, page_sizes = _ids(svc, limit="1000")
    assert pages[0] == flat[:8]  # stops after the record that passes the bound, not before
    assert [i for p in pages for i in p] == flat  # nothing skipped, nothing twice
    assert max(page_sizes) <= sum(sorted(sizes)[-9:])
    monkeypatch.setattr(recall_mod, "READ_CHUNK", 3)  # and across chunk boundaries
    assert [i for p in _ids(svc, limit="1000")[0] for i in p] == flat
