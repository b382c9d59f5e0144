"""usecases.versions on fakes: update supersedes (never refused by what it replaces), invalidate ends
validity without erasing, history and as-of read the versions, forget erases every version, and a
same-id upload says what the merge kept instead of answering ``unchanged``."""

from __future__ import annotations

from typing import Any

import pytest

from acx.core.package import PackageRef
from acx.usecases import forget, recall, versions
from acx.usecases.errors import ServiceError
from acx.usecases.search import parse_query
from acx.usecases.verify import verify_package
from tests.factories import memory, note
from tests.fakes import FakeIndex, chained_deps, ingest_records

REF = PackageRef("t1", "notes")
OLD = "Staging API port is 8080, configured in the nginx upstream block of the gateway."
NEW = "Staging API port is 9090 now."
TOKEN = "ghp_" + "Q7x2Lm9Kp4Rt8Vw1Yz3Bn6Cd5Fg0Hj2Kl4Mn"  # the shape of a GitHub token (not a real one)


@pytest.fixture
def deps() -> Any:
    d = chained_deps()
    d.index_hooks = FakeIndex()
    return d


def staging(**changes: Any) -> dict[str, Any]:
    return memory("staging-port", title="Staging API port", summary=OLD, **changes)


def corrected() -> dict[str, Any]:
    return memory("staging-port", title="Staging API port", summary=NEW)


def at(deps: Any, when: str) -> None:
    deps.log.now = when


def test_a_same_id_shorter_correction_says_what_the_merge_kept_and_never_unchanged(deps) -> None:
    ingest_records(deps, REF, staging())
    out = ingest_records(deps, REF, corrected())
    assert out.unchanged == 0 and out.merged == 1
    (kept,) = out.kept
    assert kept["id"] == "staging-port" and kept["field"] == "summary"
    assert "PUT /v1/packages/notes/memories/staging-port" in kept["reason"]
    assert out.to_dict()["kept"] == [kept]
    again = ingest_records(deps, REF, staging())  # the same text again: unchanged, nothing kept
    assert again.unchanged == 1 and again.kept == []


def test_update_supersedes_and_the_old_version_leaves_default_reads(deps) -> None:
    at(deps, "2026-01-01T00:00:00Z")
    ingest_records(deps, REF, staging(), note("other", "Deploys run on Fridays"))
    first = deps.log.rows.get(REF, "staging-port")
    at(deps, "2026-02-01T00:00:00Z")
    out = versions.update(deps, "t1", "notes", "agent", "staging-port", corrected())
    assert out["supersedes"] == {"seq": first.seq, "hash": first.entry_hash}
    assert out["validFrom"] == "2026-02-01T00:00:00Z" and out["id"] == "staging-port"
    entry = list(deps.log.entries(REF))[out["seq"]]
    assert entry.operation == "supersede" and entry.covers.seq == first.seq
    one = recall.get_memory(deps, "t1", "notes", "staging-port")
    assert one["record"]["summary"] == NEW and one["seq"] == out["seq"]
    listed = recall.recall(deps, "t1", "notes")["records"]
    assert [r["summary"] for r in listed if r["id"] == "staging-port"] == [NEW]
    assert ("indexed", (["staging-port"], {}, False)) in deps.index_hooks.calls
    assert verify_package(deps.log, REF, deps.settings.publisher_id).status == "ok"


def test_history_and_as_of_answer_each_version_for_its_valid_time(deps) -> None:
    at(deps, "2026-01-01T00:00:00Z")
    ingest_records(deps, REF, staging())
    at(deps, "2026-03-01T00:00:00Z")
    versions.update(deps, "t1", "notes", "fixer", "staging-port", corrected(), "2026-02-01T00:00:00Z")
    hist = versions.history(deps, "t1", "notes", "staging-port")
    old, new = hist["versions"]
    assert (old["operation"], old["validFrom"], old["validUntil"], old["record"]["summary"]) == (
        "remember",
        "2026-01-01T00:00:00Z",
        "2026-02-01T00:00:00Z",
        OLD,
    )
    assert (new["operation"], new["validFrom"], new["validUntil"], new["recordedAt"], new["actor"]) == (
        "supersede",
        "2026-02-01T00:00:00Z",
        None,
        "2026-03-01T00:00:00Z",
        "fixer",
    )
    then = versions.get_as_of(deps, "t1", "notes", "staging-port", "2026-01-15T00:00:00Z")
    assert then["record"]["summary"] == OLD and then["seq"] == old["seq"]
    page = versions.list_as_of(deps, "t1", "notes", "2026-01-15T00:00:00Z").to_dict()
    assert [r["summary"] for r in page["records"]] == [OLD]
    now = versions.list_as_of(deps, "t1", "notes", "2026-02-15T00:00:00Z").to_dict()
    assert [r["summary"] for r in now["records"]] == [NEW]
    with pytest.raises(ServiceError) as info:
        versions.get_as_of(deps, "t1", "notes", "staging-port", "2025-12-01T00:00:00Z")
    assert info.value.status == 404
    found = versions.search_as_of(
        deps, "t1", "notes", parse_query("port 8080", None, None, None), "2026-01-15T00:00:00Z"
    )
    assert [r.record["summary"] for r in found.results] == [OLD]
    assert verify_package(deps.log, REF, deps.settings.publisher_id).status == "ok"


def test_as_of_pages_in_id_order_with_a_cursor(deps) -> None:
    ingest_records(deps, REF, *(note(f"n{i}", f"Lesson number {i} about caching") for i in range(5)))
    first = versions.list_as_of(deps, "t1", "notes", "2026-06-01T00:00:00Z", limit=2)
    assert [r.id for r in first.records] == ["n0", "n1"] and first.next_cursor
    rest = versions.list_as_of(
        deps, "t1", "notes", "2026-06-01T00:00:00Z", limit=10, cursor=first.next_cursor
    )
    assert [r.id for r in rest.records] == ["n2", "n3", "n4"] and rest.next_cursor is None
    with pytest.raises(ServiceError) as info:
        versions.list_as_of(deps, "t1", "notes", "last tuesday")
    assert info.value.status == 400 and info.value.path == "$.asOf"


def test_a_correction_is_never_refused_by_what_it_supersedes_but_a_forgotten_memory_stays_forgotten(
    deps,
) -> None:
    ingest_records(deps, REF, staging(), note("wrong", "The staging database is on port 5433 today"))
    versions.update(deps, "t1", "notes", "agent", "staging-port", corrected())  # no tombstone involved
    forget.forget(deps, "t1", "notes", "ops", record_id="wrong")
    with pytest.raises(ServiceError) as info:
        versions.update(
            deps, "t1", "notes", "agent", "wrong", note("wrong", "The staging database is on 5434")
        )
    assert info.value.status == 409 and info.value.code == "forgotten"
    assert "was forgotten and cannot be updated" in info.value.message
    assert "only if it is different knowledge" in info.value.message
    # a correction whose text is forgotten knowledge is refused too, naming the rule, writing nothing
    size = deps.log.head(REF).size
    with pytest.raises(ServiceError) as info:
        versions.update(
            deps, "t1", "notes", "agent", "staging-port",
            note("staging-port", "The staging database is on port 5433 today"),
        )  # fmt: skip
    assert info.value.status == 409 and "forgotten knowledge" in info.value.message
    assert deps.log.head(REF).size == size


def test_forget_erases_every_version_and_refuses_the_knowledge_of_each(deps) -> None:
    ingest_records(deps, REF, staging())
    versions.update(deps, "t1", "notes", "agent", "staging-port", corrected())
    assert deps.log.rows.versions(REF, "staging-port")
    forget.forget(deps, "t1", "notes", "ops", record_id="staging-port")
    assert deps.log.rows.versions(REF, "staging-port") == []  # the old version's text is gone too
    hist = versions.history(deps, "t1", "notes", "staging-port")["versions"]
    assert [v["record"] for v in hist] == [None, None]
    for text in (OLD, NEW):  # the old version's knowledge is refused like the current one's
        with pytest.raises(ServiceError) as info:
            ingest_records(deps, REF, memory("fresh-id", title="Staging API port", summary=text))
        assert info.value.status == 409
    assert verify_package(deps.log, REF, deps.settings.publisher_id).status == "ok"


def test_forgetting_another_memory_with_an_old_versions_text_forgets_this_one_whole(deps) -> None:
    ingest_records(deps, REF, staging())
    versions.update(deps, "t1", "notes", "agent", "staging-port", corrected())
    ingest_records(deps, REF, memory("copy", title="Staging API port", summary=OLD))
    out = forget.forget(deps, "t1", "notes", "ops", record_id="copy")
    assert out["alsoForgotten"] == ["staging-port"] and deps.log.rows.all_versions(REF) is not None
    assert list(deps.log.rows.all_versions(REF)) == []


def test_invalidate_ends_validity_without_erasing(deps) -> None:
    at(deps, "2026-01-01T00:00:00Z")
    ingest_records(deps, REF, staging())
    at(deps, "2026-01-10T00:00:00Z")
    out = versions.invalidate(deps, "t1", "notes", "ops", "staging-port", "moved to the new cluster")
    assert out["validUntil"] == "2026-01-10T00:00:00Z"
    entry = list(deps.log.entries(REF))[out["seq"]]
    assert entry.operation == "invalidate" and "moved" not in str(entry.payload)
    with pytest.raises(ServiceError) as info:
        recall.get_memory(deps, "t1", "notes", "staging-port")
    assert info.value.status == 404
    assert recall.recall(deps, "t1", "notes")["records"] == []
    assert ("forgotten", "staging-port") in deps.index_hooks.calls  # left the search index
    then = versions.get_as_of(deps, "t1", "notes", "staging-port", "2026-01-05T00:00:00Z")
    assert then["record"]["summary"] == OLD
    (only,) = versions.history(deps, "t1", "notes", "staging-port")["versions"]
    assert only["validUntil"] == "2026-01-10T00:00:00Z" and only["record"]["summary"] == OLD
    with pytest.raises(ServiceError) as info:  # nothing current left to update
        versions.update(deps, "t1", "notes", "agent", "staging-port", corrected())
    assert info.value.status == 404
    assert verify_package(deps.log, REF, deps.settings.publisher_id).status == "ok"
    forget.forget(deps, "t1", "notes", "ops", record_id="staging-port")  # an ended memory is forgettable
    assert list(deps.log.rows.all_versions(REF)) == []
    assert verify_package(deps.log, REF, deps.settings.publisher_id).status == "ok"


def test_a_remember_after_invalidate_begins_a_new_version(deps) -> None:
    ingest_records(deps, REF, staging())
    versions.invalidate(deps, "t1", "notes", "ops", "staging-port", "obsolete")
    out = ingest_records(deps, REF, corrected())
    assert out.accepted == 1
    hist = versions.history(deps, "t1", "notes", "staging-port")["versions"]
    assert [v["record"]["summary"] for v in hist] == [OLD, NEW] and hist[1]["validUntil"] is None
    assert verify_package(deps.log, REF, deps.settings.publisher_id).status == "ok"


@pytest.mark.parametrize(
    ("record", "valid_from", "paths"),
    [
        ({"id": "staging-port"}, None, ["$.record.portable", "$.record.title", "$.record.summary"]),
        (memory("other-id"), "soon", ["$.record.id", "$.validFrom"]),
        (memory("staging-port", portable=False, codebaseFingerprint="cbf1_" + "0" * 40), None, []),
    ],
)
def test_a_bad_update_names_every_problem_and_writes_nothing(deps, record, valid_from, paths) -> None:
    ingest_records(deps, REF, staging())
    size = deps.log.head(REF).size
    with pytest.raises(ServiceError) as info:
        versions.update(deps, "t1", "notes", "agent", "staging-port", record, valid_from)
    assert info.value.status == 422
    problems = [p["path"] for p in info.value.extra["report"]["problems"]]
    assert set(paths) <= set(problems), problems
    assert deps.log.head(REF).size == size


def test_update_refuses_a_tier_change_a_past_valid_from_and_a_secret(deps) -> None:
    at(deps, "2026-01-10T00:00:00Z")
    ingest_records(deps, REF, staging())
    size = deps.log.head(REF).size
    save = memory("staging-port", portable=False, codebaseFingerprint="cbf1_" + "0" * 40, repoId="r1")
    for record, valid_from, status, path in [
        (save, None, 422, "$.record.portable"),
        (corrected(), "2026-01-01T00:00:00Z", 422, "$.validFrom"),
        (corrected(), "2999-01-01T00:00:00Z", 422, "$.validFrom"),
        (memory("staging-port", summary="token " + TOKEN), None, 422, None),
    ]:
        with pytest.raises(ServiceError) as info:
            versions.update(deps, "t1", "notes", "agent", "staging-port", record, valid_from)
        assert info.value.status == status
        if path:
            assert info.value.path == path, info.value.message
    assert deps.log.head(REF).size == size


def test_update_of_an_unknown_memory_or_package_is_404(deps) -> None:
    ingest_records(deps, REF, staging())
    for pkg, rid in (("notes", "nope"), ("absent", "staging-port")):
        with pytest.raises(ServiceError) as info:
            versions.update(deps, "t1", pkg, "agent", rid, memory(rid))
        assert info.value.status == 404
    with pytest.raises(ServiceError) as info:
        versions.history(deps, "t1", "notes", "nope")
    assert info.value.status == 404


def test_update_to_another_memorys_content_is_refused_as_a_duplicate(deps) -> None:
    ingest_records(deps, REF, staging(), memory("twin", title="Twin", summary="A different lesson here"))
    with pytest.raises(ServiceError) as info:
        versions.update(
            deps, "t1", "notes", "agent", "staging-port",
            memory("staging-port", title="Twin", summary="A different lesson here"),
        )  # fmt: skip
    assert info.value.status == 409 and info.value.code == "duplicate" and "twin" in info.value.message


def test_invalidate_refuses_a_secret_reason_and_a_bad_time(deps) -> None:
    ingest_records(deps, REF, staging())
    size = deps.log.head(REF).size
    for reason, until in (("key " + TOKEN, None), ("fine", "tomorrow"), ("", None)):
        with pytest.raises(ServiceError) as info:
            versions.invalidate(deps, "t1", "notes", "ops", "staging-port", reason, until)
        assert info.value.status == 422
        assert TOKEN not in info.value.message
    assert deps.log.head(REF).size == size


def test_an_update_retries_when_another_writer_claims_first(deps) -> None:
    ingest_records(deps, REF, staging())
    deps.log.conflicts = 2
    out = versions.update(deps, "t1", "notes", "agent", "staging-port", corrected())
    assert deps.log.rows.get(REF, "staging-port").seq == out["seq"]


def test_forget_erases_the_versions_of_an_id_folded_into_the_forgotten_memory(deps) -> None:
    ingest_records(deps, REF, staging())
    versions.update(deps, "t1", "notes", "agent", "staging-port", corrected())
    out = ingest_records(deps, REF, memory("aaa-copy", title="Staging API port", summary=NEW))
    assert out.merged == 1 and deps.log.rows.get(REF, "staging-port") is None  # folded into aaa-copy
    assert deps.log.rows.versions(REF, "staging-port")  # its old version is still held
    forget.forget(deps, "t1", "notes", "ops", record_id="aaa-copy")
    assert list(deps.log.rows.all_versions(REF)) == []
    with pytest.raises(ServiceError) as info:
        ingest_records(deps, REF, memory("fresh-id", title="Staging API port", summary=OLD))
    assert info.value.status == 409
