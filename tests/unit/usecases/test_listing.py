"""usecases.listing on fakes: every list is the caller's tenant only, paged, and 404s like recall."""

from __future__ import annotations

import pytest

from acx.core.package import PackageRef
from acx.core.rows import RecordWrite
from acx.usecases import listing
from acx.usecases.errors import ServiceError
from tests.factories import memory
from tests.fakes import FakeCatalog, chained_deps

REF = PackageRef("t1", "notes")


@pytest.fixture
def deps():
    d = chained_deps()
    d.catalog_reader = FakeCatalog(d.log)
    for ref, ids in (
        (REF, ["a", "b", "c"]),
        (PackageRef("t1", "more"), ["x"]),
        (PackageRef("t2", "theirs"), ["y"]),
    ):
        d.log.create(ref)
        d.log.append(ref, "agent", [RecordWrite(memory(i, title=i), f"slot-{i}") for i in ids])
    return d


def test_packages_are_the_callers_only_with_counts_size_checkpoint_and_lock(deps) -> None:
    deps.log.forget(REF, "ops", record_id="a")
    deps.log.locks[PackageRef("t1", "more")] = True
    out = listing.list_packages(deps, "t1", 10, None)
    assert [p["package"] for p in out["packages"]] == ["more", "notes"] and out["nextCursor"] is None
    notes = out["packages"][1]
    assert (notes["records"], notes["logSize"], notes["locked"]) == (2, 4, False)
    assert notes["lastCheckpoint"] == deps.log.latest_checkpoint(REF) and out["packages"][0]["locked"]


def test_package_pages_follow_the_cursor_and_a_foreign_cursor_is_400(deps) -> None:
    first = listing.list_packages(deps, "t1", 1, None)
    second = listing.list_packages(deps, "t1", 1, first["nextCursor"])
    assert [p["package"] for p in first["packages"] + second["packages"]] == ["more", "notes"]
    with pytest.raises(ServiceError) as info:
        listing.list_packages(deps, "t1", 1, "theirs")  # another tenant's key is not a cursor here
    assert (info.value.status, info.value.path) == (400, "$.cursor")


def test_entries_page_by_seq_and_name_their_row(deps) -> None:
    page = listing.list_entries(deps, "t1", "notes", 2, None)
    assert [(e["seq"], e["operation"], e["recordId"]) for e in page["entries"]] == [
        (0, "remember", "a"),
        (1, "remember", "b"),
    ]
    assert page["nextCursor"] == "2" and page["entries"][1]["prevHash"] == page["entries"][0]["hash"]
    rest = listing.list_entries(deps, "t1", "notes", 2, page["nextCursor"])
    assert [e["seq"] for e in rest["entries"]] == [2] and rest["nextCursor"] is None


@pytest.mark.parametrize("cursor", ["-1", "x", "1" * 17])
def test_an_entry_cursor_that_is_not_a_seq_is_400(deps, cursor) -> None:
    with pytest.raises(ServiceError) as info:
        listing.list_entries(deps, "t1", "notes", 2, cursor)
    assert (info.value.status, info.value.code) == (400, "invalid_cursor")


@pytest.mark.parametrize("lister", [listing.list_entries, listing.list_uploads, listing.list_cartridges])
def test_another_tenants_package_is_404(deps, lister) -> None:
    with pytest.raises(ServiceError) as info:
        lister(deps, "t1", "theirs", 10, None)
    assert info.value.status == 404


def test_uploads_and_cartridges_list_their_jobs_without_keys_or_actors(deps) -> None:
    deps.jobs.create("t1", "notes", "upload", "u1", actor="t1/agent", key="uploads/t1/notes/u1.json")
    deps.jobs.create("t1", "notes", "export", "c1", actor="t1/agent", key="cartridges/t1/notes/c1.acx")
    deps.jobs.create("t1", "notes", "export", "c2", actor="t1/agent")
    [upload] = listing.list_uploads(deps, "t1", "notes", 10, None)["uploads"]
    carts = listing.list_cartridges(deps, "t1", "notes", 1, None)
    assert upload["uploadId"] == "u1" and "actor" not in str(upload) and "uploads/" not in str(upload)
    assert [c["cartridgeId"] for c in carts["cartridges"]] == ["c1"] and carts["nextCursor"] == "c1"
    assert "key" not in carts["cartridges"][0] and "createdAt" in carts["cartridges"][0]
    with pytest.raises(ServiceError) as info:
        listing.list_cartridges(deps, "t1", "notes", 1, "not-a-job")
    assert info.value.status == 400
