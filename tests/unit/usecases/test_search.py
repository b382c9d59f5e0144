"""usecases.search on fakes: query checks, results re-read from the log, and the index kept in step.

The index objects live in ``FakeObjects`` behind ``tests.fakes.FakeIndexStore``, given to the use case
as ``Deps.index_store`` like every other adapter.
"""

from __future__ import annotations

import pytest

from acx.core.package import PackageRef
from acx.core.rows import RecordWrite
from acx.usecases import forget, search
from acx.usecases.errors import ServiceError
from tests.factories import memory
from tests.fakes import chained_deps, ingest_records

REF = PackageRef("t1", "notes")
NOTES = {
    "retry": ("Retry with exponential backoff", "The flaky payment test passed after jittered retries"),
    "cache": ("Warm the cache before deploys", "Cold caches made the first requests time out"),
    "lint": ("Pin the linter version", "A new ruff release changed the formatting of every file"),
}


@pytest.fixture
def deps(fake_search_index):
    d = chained_deps()
    put(d, *(memory(rid, title=t, summary=s) for rid, (t, s) in NOTES.items()))
    return d


def put(deps, *records: dict) -> None:
    ingest_records(deps, REF, *records)


def ids(deps, q: str, **kw: object) -> list[str]:
    search.CACHE.views.clear()  # each call sees the stored index, not this process's warm copy
    return [r.id for r in search.search(deps, "t1", "notes", search.parse_query(q, **kw)).results]


def index_bytes(deps) -> bytes:
    return b"".join(b for k, vs in deps.data.history.items() if k.startswith("indexes/") for b in vs)


def test_a_query_finds_the_memory_that_matches_with_its_signals(deps) -> None:
    out = search.search(deps, "t1", "notes", search.parse_query("payment retries backoff", k=2))
    assert out.results[0].id == "retry" and out.results[0].record["title"] == NOTES["retry"][0]
    lexical = out.results[0].signals.lexical
    assert lexical is not None and "retri" in lexical.terms  # stemmed
    assert len(out.results) <= 2 and out.engine == "local-hash-128"


def test_a_forgotten_memory_is_never_a_result_even_while_the_index_still_holds_it(deps) -> None:
    deps.log.forget(REF, "ops", record_id="retry")  # the log only: the index hook did not run
    assert "retry" not in ids(deps, "payment retries backoff")


def test_forget_removes_the_memory_from_every_stored_segment_version(deps) -> None:
    assert b"jitter" in index_bytes(deps) and b"payment" in index_bytes(deps)
    forget.forget(deps, "t1", "notes", "ops", record_id="retry")
    assert b"jitter" not in index_bytes(deps) and b"payment" not in index_bytes(deps)
    assert ids(deps, "warm cache deploys")[0] == "cache"


def test_each_ingest_adds_a_segment_and_compaction_merges_them(deps) -> None:
    put(deps, memory("db", title="Vacuum the database weekly", summary="Bloat slowed every query down"))
    store = deps.search_index()
    assert len(store.manifest("t1", "notes").segments) == 2
    assert search.compact(deps, "t1", "notes") == {"segments": 2, "compacted": 1}
    assert len(store.manifest("t1", "notes").segments) == 1 and len(store.segment_keys("t1", "notes")) == 1
    assert ids(deps, "database bloat vacuum")[0] == "db"


def test_a_large_batch_is_indexed_in_slices_listed_in_one_manifest_update(deps, monkeypatch) -> None:
    # The hook builds SEGMENT_DOCS records at a time (ingest's peak memory), and the slices appear
    # together: one manifest write, every record of the batch findable, each slice counted.
    monkeypatch.setattr(search, "SEGMENT_DOCS", 2)
    store = deps.search_index()
    writes: list[int] = []
    real = store.put_manifest
    monkeypatch.setattr(
        store, "put_manifest", lambda t, p, m: (writes.append(len(m.segments)), real(t, p, m))[1]
    )
    batch = [
        memory(f"m{i}", title=f"Topic {w} notes", summary=f"All about {w}")
        for i, w in enumerate(["zeppelins", "quasars", "marmots", "fjords", "glaciers"])
    ]
    put(deps, *batch)
    manifest = store.manifest("t1", "notes")
    assert writes == [1 + 3]  # the first ingest's segment, then this batch's three slices at once
    assert manifest.docs[1:] == [2, 2, 1]
    for i, w in enumerate(["zeppelins", "quasars", "marmots", "fjords", "glaciers"]):
        assert ids(deps, w)[0] == f"m{i}"
    assert search.compact(deps, "t1", "notes") == {"segments": 4, "compacted": 1}
    assert ids(deps, "marmots")[0] == "m2" and ids(deps, "backoff")[0] == "retry"


def test_a_missing_index_is_rebuilt_from_the_log_and_an_unknown_package_is_404(deps) -> None:
    search.SearchIndexer(deps).drop_index("t1", "notes")
    assert not any(k.startswith("indexes/") for k in deps.data.objects)
    assert ids(deps, "linter formatting")[0] == "lint"
    assert deps.search_index().manifest("t1", "notes") is not None  # installed for the next search
    with pytest.raises(ServiceError) as info:
        search.search(deps, "t1", "nope", search.parse_query("x"))
    assert info.value.status == 404


def test_a_writer_that_keeps_losing_the_manifest_race_drops_the_index_for_a_rebuild(deps) -> None:
    deps.search_index().conflicts = search.MAX_RETRIES
    put(deps, memory("db", title="Vacuum the database weekly", summary="Bloat slowed every query down"))
    assert deps.search_index().manifest("t1", "notes") is None
    assert ids(deps, "database bloat vacuum")[0] == "db"  # rebuilt from the log, nothing lost


def test_tier_and_tag_filter_the_results(deps) -> None:
    put(
        deps, memory("tagged", title="Retry the flaky upload", summary="Jittered retries again", tags=["ops"])
    )
    assert ids(deps, "retries jittered", tag="ops") == ["tagged"]
    assert ids(deps, "retries jittered", tier="save") == []


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"q": None}, "$.q"),
        ({"q": "   "}, "$.q"),
        ({"q": "x" * (search.MAX_QUERY_CHARS + 1)}, "$.q"),
        ({"q": "a\x00b"}, "$.q"),
        ({"q": "x", "k": "0"}, "$.k"),
        ({"q": "x", "k": search.MAX_K + 1}, "$.k"),
        ({"q": "x", "k": True}, "$.k"),
        ({"q": "x", "k": "ten"}, "$.k"),
        ({"q": "x", "tier": "field"}, "$.tier"),
        ({"q": "x", "tag": ""}, "$.tag"),
    ],
)
def test_a_query_search_cannot_run_is_400_naming_the_parameter(kwargs, path) -> None:
    with pytest.raises(ServiceError) as info:
        search.parse_query(**kwargs)
    assert (info.value.status, info.value.path) == (400, path)
    q = kwargs["q"]
    assert not q or not q.strip() or q not in info.value.message  # the query may hold a secret


def test_a_valid_query_keeps_its_values() -> None:
    assert search.parse_query("x", "7", "rom", "ops") == search.SearchQuery(q="x", k=7, tier="rom", tag="ops")
    assert search.parse_query("x").k == search.DEFAULT_K


def test_a_memory_forgotten_while_its_ingest_indexed_it_is_taken_out_again(deps) -> None:
    race = memory("race-7Qx", title="Quarterly vendor escalation", summary="Escalate to the vendor hotline")
    deps.log.append(REF, "agent", [RecordWrite(race, "slot-race")])
    deps.log.forget(REF, "ops", record_id="race-7Qx")  # lands before the ingest's index hook runs
    search.SearchIndexer(deps).indexed("t1", "notes", [race], {}, new_package=False)
    assert b"race-7Qx" not in index_bytes(deps) and b"escal" not in index_bytes(deps)


class Synonyms:
    """A semantic engine as a deployment would configure one (here under a Bedrock model's name):
    "throttled" and "backoff" land on one axis, so the question below shares no word with its memory."""

    id = "bedrock:cohere.embed-english-v3:1024"
    dim = 4
    lexical = False
    axes = ({"backoff", "retries", "throttled"}, {"cache", "caches", "warm"}, {"linter", "ruff"})

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            words = set(text.lower().replace(",", " ").split())
            v = [float(len(words & axis)) for axis in self.axes] + [0.1]
            n = sum(x * x for x in v) ** 0.5
            out.append([x / n for x in v])
        return out


def test_a_deployment_that_changes_its_engine_rebuilds_every_index_with_it(deps, monkeypatch) -> None:
    store = deps.search_index()
    assert ids(deps, "jittered retries")[0] == "retry"
    before = store.manifest("t1", "notes")
    assert (before.engine, before.dim) == ("local-hash-128", 128)
    # The same package under a deployment whose SEARCH_ENGINE names another engine.
    name = "bedrock:cohere.embed-english-v3"  # SEARCH_ENGINE; its engine answers with Synonyms
    monkeypatch.setitem(search._ENGINES, (name, deps.settings.search_embed_dim), Synonyms())
    hash_deps = chained_deps()
    deps.settings = deps.settings.model_copy(update={"search_engine": name})
    out = search.search(deps, "t1", "notes", search.parse_query("throttled"))
    assert out.engine == Synonyms.id and out.results[0].id == "retry"
    assert out.results[0].signals.lexical is None and out.results[0].signals.vector is not None
    after = store.manifest("t1", "notes")
    assert (after.engine, after.dim) == (Synonyms.id, 4) and not set(before.segments) & set(after.segments)
    assert all(k not in store.segment_keys("t1", "notes") for k in before.segments)  # old vectors purged
    # An ingest under the new engine adds a segment of its vectors; one by a process still on the old
    # engine is discarded, never mixed into the index (the next search would rebuild if it had been).
    put(deps, memory("warm", title="Warm the caches", summary="before the deploy"))
    assert len(store.manifest("t1", "notes").segments) == 2
    hash_deps.log, hash_deps.data, hash_deps.index_store = deps.log, deps.data, deps.index_store
    put(hash_deps, memory("pin", title="Pin ruff", summary="formatting churn"))
    assert store.manifest("t1", "notes").engine == Synonyms.id
    assert len(store.manifest("t1", "notes").segments) == 2


def test_an_uploaded_bundles_vectors_never_reach_the_index(fake_search_index) -> None:
    """A bundle may carry vectors tagged with an engine; the index is built from the records with the
    deployment's engine whatever the tag says (here it claims the deployment's own engine)."""
    from acx.core.embedding import embed
    from acx.core.search.segment import Segment, quantise

    d = chained_deps()
    rec = memory("retry", title=NOTES["retry"][0], summary=NOTES["retry"][1])
    claimed = [1.0 / 128**0.5] * 128
    tagged = {"engine": {"id": "local-hash-128", "dim": 128}, "items": [{"id": "retry", "vector": claimed}]}
    ingest_records(d, REF, rec, vectors=tagged)
    store = d.search_index()
    (key,) = store.manifest("t1", "notes").segments
    seg = Segment.from_bytes(store.get_segment(key))
    codes, scale = quantise(embed(f"{NOTES['retry'][0]}\n\n{NOTES['retry'][1]}"))
    assert (list(seg.vectors), list(seg.scales)) == (codes, [pytest.approx(scale)])
    assert list(seg.vectors) != quantise(claimed)[0]
