"""usecases.forget on fakes: a forget erases the memory from the rows, the canonical bundles and the
stored cartridges, tells the search index, and answers a repeat with the first forget's entry."""

from __future__ import annotations

import pytest

from acx.core import forgetting
from acx.core.package import PackageRef
from acx.core.rows import LogRow
from acx.usecases import forget
from acx.usecases.errors import ServiceError
from tests.factories import note, tier_fields
from tests.fakes import FakeIndex, chained_deps, ingest_records

REF = PackageRef("t1", "notes")
SECRET_TEXT = "Rotate the staging root password monthly"


def put(deps, *records: dict, **extra: object) -> str:
    out = ingest_records(deps, REF, *records, **extra)
    assert out.bundle is not None
    return out.bundle


@pytest.fixture
def deps():
    d = chained_deps()
    d.index_hooks = FakeIndex()
    return d


def stored_text(deps) -> str:
    return " ".join(b.decode() for versions in deps.data.history.values() for b in versions)


def test_a_forget_erases_the_row_every_bundle_version_and_tells_the_index(deps) -> None:
    first = put(deps, note("keep", "Keep this lesson"), note("gone", SECRET_TEXT))
    put(deps, note("gone", SECRET_TEXT, xpAwarded=3))  # a second bundle, a newer version of the row
    out = forget.forget(deps, "t1", "notes", "ops", record_id="gone")
    assert out["forgotten"] == "gone" and not out["repeated"] and out["bundlesRewritten"] == 2
    row = deps.log.rows.get(REF, "gone")
    assert row.state == "tombstoned" and row.record is None
    assert SECRET_TEXT not in stored_text(deps)  # no old version keeps the plaintext
    assert first in deps.data.purged and "Keep this lesson" in stored_text(deps)
    assert ("forgotten", "gone") in deps.index_hooks.calls
    assert out["checkpoint"] == deps.log.latest_checkpoint(REF)
    assert out["log"] == {"fromSeq": 3, "toSeq": 3}


def test_a_repeated_forget_answers_the_first_and_appends_nothing(deps) -> None:
    put(deps, note("gone", SECRET_TEXT))
    first = forget.forget(deps, "t1", "notes", "ops", record_id="gone")
    size = deps.log.head(REF).size
    again = forget.forget(deps, "t1", "notes", "ops", record_id="gone")
    assert again["repeated"] and deps.log.head(REF).size == size
    assert (again["log"], again["checkpoint"], again["contentHash"]) == (
        first["log"],
        first["checkpoint"],
        first["contentHash"],
    )


def test_the_same_knowledge_in_the_other_tier_is_forgotten_with_it(deps) -> None:
    put(deps, note("rom", SECRET_TEXT), note("save", SECRET_TEXT, **tier_fields(False)))
    out = forget.forget(deps, "t1", "notes", "ops", record_id="rom")
    assert out["alsoForgotten"] == ["save"]
    assert not deps.log.rows.get(REF, "save").active


def test_a_forget_by_content_hash_finds_the_row(deps) -> None:
    put(deps, note("gone", SECRET_TEXT))
    digest = deps.log.rows.get(REF, "gone").content_hash
    assert forget.forget(deps, "t1", "notes", "ops", content_hash=digest)["forgotten"] == "gone"


def test_cartridges_exported_after_the_memory_are_revoked_and_purged_older_ones_stay(deps) -> None:
    put(deps, note("early", "Early lesson"))
    deps.jobs.create("t1", "notes", "export", "before", logSize=1, key="cartridges/before.acx")
    deps.jobs.finish("t1", "notes", "export", "before", "ready")
    put(deps, note("gone", SECRET_TEXT))
    for cid in ("after", "queued"):
        deps.jobs.create("t1", "notes", "export", cid, logSize=2, key=f"cartridges/{cid}.acx")
        deps.cartridges.put(f"cartridges/{cid}.acx", b"sqlite")
    deps.jobs.finish("t1", "notes", "export", "after", "ready")
    out = forget.forget(deps, "t1", "notes", "ops", record_id="gone")
    assert sorted(out["revokedCartridges"]) == ["after", "queued"]
    assert deps.jobs.get("t1", "notes", "export", "before")["status"] == "ready"
    assert deps.jobs.get("t1", "notes", "export", "after")["status"] == "revoked"
    assert "cartridges/after.acx" not in deps.cartridges.history


@pytest.mark.parametrize(
    ("package", "rid", "what"), [("notes", "nope", "memory"), ("other", "gone", "package")]
)
def test_an_unknown_memory_or_package_is_404_and_appends_nothing(deps, package, rid, what) -> None:
    put(deps, note("gone", SECRET_TEXT))
    with pytest.raises(ServiceError) as info:
        forget.forget(deps, "t1", package, "ops", record_id=rid)
    assert (info.value.status, info.value.message) == (404, f"{what} not found")
    assert deps.log.head(REF).size == 1 and deps.log.rows.get(REF, "gone").active


def test_a_locked_package_forgets_nothing(deps) -> None:
    put(deps, note("gone", SECRET_TEXT))
    deps.log.locks[REF] = True
    with pytest.raises(ServiceError) as info:
        forget.forget(deps, "t1", "notes", "ops", record_id="gone")
    assert info.value.status == 423 and deps.log.rows.get(REF, "gone").active


def test_forget_file_erases_that_content_under_every_path_of_every_bundle(deps) -> None:
    put(deps, note("a", "Lesson"), knowledge=[{"path": "plan.md", "content": "# the secret plan"}])
    put(deps, knowledge=[{"path": "copy.md", "content": "# the secret plan"}])
    out = forget.forget_file(deps, "t1", "notes", "ops", path="plan.md")
    assert out["forgottenFile"] == "plan.md" and out["bundlesRewritten"] == 2 and not out["repeated"]
    assert "secret plan" not in stored_text(deps) and "Lesson" in stored_text(deps)
    again = forget.forget_file(deps, "t1", "notes", "ops", path="plan.md")
    assert again["repeated"] and again["checkpoint"] == out["checkpoint"]
    with pytest.raises(ServiceError) as info:
        forget.forget_file(deps, "t1", "notes", "ops", path="never.md")
    assert (info.value.status, info.value.message) == (404, "file not found")


def test_the_tombstones_of_a_row_cover_its_text_its_id_and_the_ids_folded_into_it() -> None:
    keyer = forgetting.StaticKeyer(b"k")
    row = LogRow(
        "a", 3, "c" * 64, "e" * 64, "active", note("a", SECRET_TEXT), past_ids=["b"], past_keys=["old-kk"]
    )
    stones = forget.tombstones_for(keyer, forgetting.NearPolicy())(row)
    kk = forgetting.knowledge_key(keyer, row.record["title"], row.record["summary"])
    assert stones.knowledge == (kk, "old-kk")
    assert stones.ids == (forgetting.id_key(keyer, "a"), forgetting.id_key(keyer, "b"))
    assert [k for k, _ in stones.sketches] == [kk]
    assert forget.tombstones_for(keyer, forgetting.NearPolicy("off"))(row).sketches == ()
