"""The ingest's index hook reads its records' rows back (to take out one a racing forget erased) only
in a package where a forget was ever claimed: elsewhere a forget claimed later runs its own index hook
after this segment is in the manifest."""

from __future__ import annotations

import pytest

from acx.core.package import PackageRef
from acx.core.rows import RecordWrite
from acx.usecases import search
from tests.factories import memory
from tests.fakes import chained_deps, ingest_records

REF = PackageRef("t1", "notes")


@pytest.fixture
def deps(fake_search_index):
    return chained_deps()


def _watch_reads(deps, monkeypatch) -> list[set[str]]:
    reads: list[set[str]] = []
    active_ids = deps.log.rows.active_ids

    def watched(ref, ids):
        reads.append(set(ids))
        return active_ids(ref, ids)

    monkeypatch.setattr(deps.log.rows, "active_ids", watched)
    return reads


def test_no_forget_ever_claimed_no_row_read_back(deps, monkeypatch) -> None:
    reads = _watch_reads(deps, monkeypatch)
    ingest_records(deps, REF, memory("a", title="Kestrel rollout"), memory("b", title="Heron cache"))
    assert reads == []
    out = search.search(deps, "t1", "notes", search.parse_query("kestrel"))
    assert [r.id for r in out.results] == ["a"]


def test_after_a_forget_the_rows_are_read_back_and_a_forgotten_one_taken_out(deps, monkeypatch) -> None:
    ingest_records(deps, REF, memory("old", title="Old note"))
    deps.log.forget(REF, "ops", record_id="old")
    reads = _watch_reads(deps, monkeypatch)
    race = memory("race-7Qx", title="Quarterly vendor escalation")
    deps.log.append(REF, "agent", [RecordWrite(race, "slot-race")])
    deps.log.forget(REF, "ops", record_id="race-7Qx")  # lands before the ingest's index hook runs
    search.SearchIndexer(deps).indexed("t1", "notes", [race], {}, new_package=False)
    assert {"race-7Qx"} in reads
    search.CACHE.views.clear()
    assert search.search(deps, "t1", "notes", search.parse_query("vendor escalation")).results == []
