"""usecases.ingest on fakes: a bundle lands whole or not at all, and forgotten knowledge stays out.

The log is ``tests.fakes.ChainedLog`` (real entries and tombstones); the search index is a recording
``IndexHooks`` fake. "Nothing written" is checked on all three stores: no log entry, no row, no
canonical bundle object.
"""

from __future__ import annotations

import json

import pytest

from acx.core.package import PackageRef
from acx.usecases import forget as forget_uc
from acx.usecases import ingest
from acx.usecases.errors import ServiceError
from tests.factories import bundle_json, memory, note, tier_fields
from tests.fakes import FakeIndex, chained_deps

REF = PackageRef("t1", "notes")
TOKEN = "ghp_" + "Q7x2Lm9Kp4Rt8Vw1Yz3Bn6Cd5Fg0Hj2Kl4Mn"


@pytest.fixture
def deps():
    d = chained_deps()
    d.index_hooks = FakeIndex()
    return d


def body(*records: dict, **extra: object) -> bytes:
    return bundle_json(list(records), **extra)


def nothing_written(deps) -> bool:
    return deps.log.head(REF).size == 0 and not deps.log.rows.of(REF) and not deps.data.objects


def test_a_bundle_lands_in_one_append_with_its_canonical_copy(deps) -> None:
    out = ingest.ingest_bundle(
        deps, "t1", "notes", "agent", body(note("a", "Retry budget"), note("b", "Cache warmup"))
    )
    assert (out.accepted, out.merged, out.unchanged, out.from_seq, out.to_seq) == (2, 0, 0, 0, 1)
    assert out.checkpoint == deps.log.latest_checkpoint(REF)
    assert sorted(deps.log.rows.of(REF)) == ["a", "b"] and deps.log.appends == 1
    assert out.bundle in deps.data.objects and out.bundle.startswith("bundles/t1/notes/")
    assert deps.index_hooks.calls == [("indexed", (["a", "b"], {}, True))]
    assert out.to_dict()["log"] == {"fromSeq": 0, "toSeq": 1}


def test_the_same_bundle_again_writes_no_entry(deps) -> None:
    data = body(memory("a"))
    ingest.ingest_bundle(deps, "t1", "notes", "agent", data)
    again = ingest.ingest_bundle(deps, "t1", "notes", "agent", data)
    assert (again.accepted, again.unchanged, again.from_seq) == (0, 1, None)
    assert deps.log.head(REF).size == 1 and deps.log.appends == 1


def test_one_invalid_record_refuses_the_whole_bundle_naming_its_path(deps) -> None:
    with pytest.raises(ServiceError) as info:
        ingest.ingest_bundle(deps, "t1", "notes", "a", body(memory("a"), memory("b", xpAwarded="lots")))
    assert info.value.status == 422 and info.value.path.startswith("$.records[1]")
    assert nothing_written(deps)


def test_a_secret_blocks_the_bundle_and_the_report_never_echoes_it(deps) -> None:
    with pytest.raises(ServiceError) as info:
        ingest.ingest_bundle(deps, "t1", "notes", "a", body(memory("a"), memory("b", summary=f"use {TOKEN}")))
    assert (info.value.status, info.value.code) == (422, "blocked")
    assert TOKEN not in json.dumps(info.value.body()) and TOKEN[4:20] not in json.dumps(info.value.body())
    assert nothing_written(deps)


def test_a_record_that_changes_tier_under_its_id_is_a_merge_conflict(deps) -> None:
    ingest.ingest_bundle(deps, "t1", "notes", "a", body(memory("a")))
    with pytest.raises(ServiceError) as info:
        ingest.ingest_bundle(deps, "t1", "notes", "a", body(memory("a", **tier_fields(False))))
    assert (info.value.status, info.value.code) == (422, "merge_conflict")
    assert deps.log.head(REF).size == 1


def test_a_locked_package_or_an_unknown_policy_writes_nothing(deps) -> None:
    with pytest.raises(ServiceError) as info:
        ingest.ingest_bundle(deps, "t1", "notes", "a", body(memory("a")), on_forgotten="ignore")
    assert (info.value.status, info.value.path) == (400, "onForgotten")
    deps.log.locks[REF] = True
    with pytest.raises(ServiceError) as info:
        ingest.ingest_bundle(deps, "t1", "notes", "a", body(memory("a")))
    assert info.value.status == 423 and nothing_written(deps)


def forget_first(deps) -> None:
    ingest.ingest_bundle(deps, "t1", "notes", "a", body(note("old", "Leaked runbook")))
    forget_uc.forget(deps, "t1", "notes", "ops", record_id="old")


def test_forgotten_knowledge_under_a_new_id_is_refused_whole_with_the_rule(deps) -> None:
    forget_first(deps)
    size, objects = deps.log.head(REF).size, dict(deps.data.objects)
    fresh = note("new", "Leaked runbook")  # same text, new id: the exact rule
    with pytest.raises(ServiceError) as info:
        ingest.ingest_bundle(deps, "t1", "notes", "a", body(note("ok", "Unrelated lesson"), fresh))
    assert (info.value.status, info.value.code) == (409, "forgotten")
    [hit] = info.value.extra["forgotten"]
    assert (hit["index"], hit["id"], hit["rule"]) == (1, "new", "exact")
    assert "Leaked" not in info.value.message
    assert (
        deps.log.head(REF).size == size and deps.data.objects == objects and "ok" not in deps.log.rows.of(REF)
    )


def test_the_forgotten_id_itself_is_refused_whatever_its_text(deps) -> None:
    forget_first(deps)
    with pytest.raises(ServiceError) as info:
        ingest.ingest_bundle(deps, "t1", "notes", "a", body(note("old", "Brand new text")))
    assert info.value.extra["forgotten"][0]["rule"] == "id"


def test_skip_lands_the_rest_and_keeps_the_forgotten_text_out_of_every_store(deps) -> None:
    forget_first(deps)
    out = ingest.ingest_bundle(
        deps,
        "t1",
        "notes",
        "a",
        body(note("ok", "Unrelated lesson"), note("new", "Leaked runbook")),
        on_forgotten="skip",
    )
    assert out.accepted == 1 and out.refused == 1 and [h.record_id for h in out.skipped] == ["new"]
    assert deps.log.rows.get(REF, "ok").active and deps.log.rows.get(REF, "new") is None
    stored = deps.data.objects[out.bundle].decode()
    assert "Unrelated" in stored and "Leaked runbook" not in stored


def test_a_forgotten_file_is_refused_and_skipped_like_a_record(deps) -> None:
    ingest.ingest_bundle(
        deps, "t1", "notes", "a", body(knowledge=[{"path": "k.md", "content": "# secret plan"}])
    )
    forget_uc.forget_file(deps, "t1", "notes", "ops", path="k.md")
    again = body(memory("a"), knowledge=[{"path": "other.md", "content": "# secret plan"}])
    with pytest.raises(ServiceError) as info:
        ingest.ingest_bundle(deps, "t1", "notes", "a", again)
    assert info.value.extra["forgottenFiles"] == ["other.md"]
    out = ingest.ingest_bundle(deps, "t1", "notes", "a", again, on_forgotten="skip")
    assert out.accepted == 1 and "# secret plan" not in deps.data.objects[out.bundle].decode()
    assert "other.md" not in deps.log.rows.files[REF]


def test_lost_claims_are_retried_from_a_fresh_read_then_503(deps, monkeypatch) -> None:
    monkeypatch.setattr(ingest.time, "sleep", lambda _s: None)
    deps.log.conflicts = ingest.MAX_CONFLICT_RETRIES - 1
    assert ingest.ingest_bundle(deps, "t1", "notes", "a", body(note("a", "First"))).accepted == 1
    deps.log.conflicts = ingest.MAX_CONFLICT_RETRIES
    with pytest.raises(ServiceError) as info:
        ingest.ingest_bundle(deps, "t1", "notes", "a", body(note("b", "Second")))
    assert (info.value.status, info.value.code, info.value.headers) == (
        503,
        "contention",
        {"Retry-After": "1"},
    )
    assert deps.log.rows.get(REF, "b") is None


def test_an_index_failure_never_fails_the_acknowledged_write(deps) -> None:
    deps.index_hooks.fail = True
    out = ingest.ingest_bundle(deps, "t1", "notes", "a", body(memory("a")))
    assert out.accepted == 1 and deps.log.rows.get(REF, "a").active
    assert deps.index_hooks.calls == [("drop_index", "notes")]  # the next search rebuilds from the log


def test_a_copy_under_another_id_folds_into_the_survivor_which_keeps_its_id(deps) -> None:
    ingest.ingest_bundle(deps, "t1", "notes", "a", body(note("b", "First wording")))
    out = ingest.ingest_bundle(deps, "t1", "notes", "a", body(note("a", "First wording")))  # same slot
    assert (out.accepted, out.merged) == (0, 1)
    [row] = list(deps.log.rows.iter_active(REF))
    assert row.id == "a" and row.past_ids == ["b"] and deps.log.rows.get(REF, "b") is None
    # the folded id is tombstoned with its survivor: it cannot come back under its old id
    forget_uc.forget(deps, "t1", "notes", "ops", record_id="a")
    with pytest.raises(ServiceError) as info:
        ingest.ingest_bundle(deps, "t1", "notes", "a", body(note("b", "Rewritten entirely")))
    assert info.value.extra["forgotten"][0]["rule"] == "id"


@pytest.mark.parametrize("enabled", [True, False])
def test_an_ingest_runs_with_the_collector_paused_and_gives_it_back(deps, monkeypatch, enabled) -> None:
    """From the scrub gate to the index step (outside merge_into's own pause) the collector is off;
    afterwards it is as it was, also when the ingest is refused."""
    import gc

    seen: list[bool] = []
    gate = ingest.gate

    def watched_gate(bundle, *args, **kwargs):
        seen.append(gc.isenabled())
        return gate(bundle, *args, **kwargs)

    indexed = deps.index_hooks.indexed

    def watched_indexed(*args, **kwargs):
        seen.append(gc.isenabled())
        return indexed(*args, **kwargs)

    monkeypatch.setattr(ingest, "gate", watched_gate)
    monkeypatch.setattr(deps.index_hooks, "indexed", watched_indexed)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        ingest.ingest_bundle(deps, "t1", "notes", "agent", body(note("a", "Retry budget")))
        assert seen == [False, False]
        assert gc.isenabled() is enabled
        with pytest.raises(ServiceError):
            ingest.ingest_bundle(deps, "t1", "notes", "a", body(memory("b", summary=f"use {TOKEN}")))
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
