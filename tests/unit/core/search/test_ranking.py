"""Ranking (acx.core.search.ranking and search()): BM25 scores recomputed here in plain Python from
the formula (Lucene's idf, k1 = 1.2, b = 0.75, written out), fusion of reciprocal ranks (k = 60), the
vector signal and its weight, filters, deleted ids, engine tagging, and the view refusing a damaged segment.
The fusion that respects missing evidence, the relevance floor and long queries (issue 32) are at the
end of the module.
A changed constant or a dropped term changes an answer a client sees (order, score, terms).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from typing import Any

import pytest

import acx.core.search as core_search
from acx.core.embedding import LocalHash128, embed
from acx.core.search import DEFAULT_SEMANTIC_FLOOR, embed_query, search, similarity_floor, to_docs
from acx.core.search.ranking import (
    MAX_QUERY_TERMS,
    NO_MATCH,
    NO_MEMORIES,
    RRF_K,
    EngineMismatch,
    Hit,
    IndexView,
    Ranking,
)
from acx.core.search.segment import Doc, Packed, Segment, SegmentError, merge
from acx.core.search.text import tokenize
from tests.factories import search_record

ENGINE = LocalHash128()
RECORDS = [
    {
        "id": "a",
        "title": "retry deploy",
        "summary": "deploy failed then retry worked",
        "portable": True,
        "tags": ["Ops"],
    },
    {
        "id": "b",
        "title": "cache warm",
        "summary": "warm the cache before deploy",
        "portable": False,
        "tags": [],
    },
    {
        "id": "c",
        "title": "queue shard",
        "summary": "shard the queue by tenant id",
        "portable": True,
        "tags": ["ops", "db"],
    },
    {
        "id": "d",
        "title": "retry budget",
        "summary": "retry budget of three retries per call",
        "portable": True,
        "tags": [],
    },
]


def _docs() -> list[Doc]:
    return to_docs(RECORDS, ENGINE)


def _bm25(docs: list[Doc], terms: list[str]) -> dict[str, float]:
    n = len(docs)
    avgdl = sum(len(d.terms) for d in docs) / n
    out: dict[str, float] = {}
    for d in docs:
        tf = Counter(d.terms)
        score = 0.0
        for term, qtf in Counter(terms).items():
            df = sum(1 for e in docs if term in e.terms)
            if not df or not tf[term]:
                continue
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            score += qtf * idf * tf[term] / (tf[term] + 1.2 * (1.0 - 0.75 + 0.75 * len(d.terms) / avgdl))
        if score:
            out[d.id] = score
    return out


def _view_of_docs(*batches: list[Doc], deleted: frozenset[str] = frozenset()) -> IndexView:
    segs = [Segment.build(ENGINE.id, ENGINE.dim, b) for b in batches]
    return IndexView(ENGINE.id, ENGINE.dim, segs, deleted)


@pytest.mark.parametrize("query", ["retry", "deploy retry", "retry retry cache", "shard tenant queue", "zzz"])
def test_lexical_scores_are_bm25_and_the_fused_score_is_rrf(query: str) -> None:
    docs = _docs()
    terms = tokenize(query)
    want = _bm25(docs, terms)
    for view in (
        _view_of_docs(docs),
        _view_of_docs(docs[:1], docs[1:3], docs[3:]),
    ):  # one segment or three: same answer
        hits = view.search(terms, None, None, k=10)
        assert [h.id for h in hits] == sorted(want, key=lambda i: (-want[i], i))
        for rank, hit in enumerate(hits, 1):
            assert hit.lexical_score == pytest.approx(want[hit.id], rel=1e-5)
            assert hit.lexical_rank == rank
            assert hit.score == pytest.approx(1.0 / (60 + rank))
            assert hit.vector_rank is None and hit.vector_score is None
            held = next(d.terms for d in docs if d.id == hit.id)
            assert set(hit.terms) == {t for t in terms if t in held}


def test_deleted_ids_leave_the_statistics_too() -> None:
    """A retired id is not ranked and counts in neither N, df nor the average length."""
    docs = _docs()
    live = [d for d in docs if d.id != "d"]
    terms = tokenize("retry")
    want = _bm25(live, terms)
    hits = _view_of_docs(docs, deleted=frozenset({"d"})).search(terms, None, None, k=10)
    assert [h.id for h in hits] == sorted(want, key=lambda i: (-want[i], i))
    assert hits[0].lexical_score == pytest.approx(want["a"], rel=1e-5)
    assert sorted(_view_of_docs(docs, deleted=frozenset({"d"})).ids()) == ["a", "b", "c"]


def test_k_zone_and_tag_filters() -> None:
    view = _view_of_docs(_docs())
    terms = tokenize("deploy retry shard warm")
    all_hits = view.search(terms, None, None, k=10)
    assert len(all_hits) == 4
    assert [h.id for h in view.search(terms, None, None, k=2)] == [h.id for h in all_hits[:2]]
    assert {h.id for h in view.search(terms, None, None, k=10, zone="save")} == {"b"}
    assert {h.id for h in view.search(terms, None, None, k=10, zone="rom")} == {"a", "c", "d"}
    assert {h.id for h in view.search(terms, None, None, k=10, tag="ops")} == {"a", "c"}
    assert {h.id for h in view.search(terms, None, None, k=10, zone="rom", tag="db")} == {"c"}


def test_equal_scores_rank_by_position() -> None:
    docs = to_docs(
        [{"id": i, "title": "same words here", "summary": "", "portable": True} for i in "xyz"], ENGINE
    )
    hits = _view_of_docs(docs).search(tokenize("words"), None, None, k=3)
    assert [h.id for h in hits] == ["x", "y", "z"]
    assert [h.lexical_rank for h in hits] == [1, 2, 3]


def test_the_vector_signal_joins_with_its_weight() -> None:
    view = _view_of_docs(_docs())
    hits = search(view, ENGINE, "retry deploy", k=4)
    for h in hits:
        lex = 1.0 / (60 + h.lexical_rank) if h.lexical_rank else 0.0
        vec = 0.1 / (60 + h.vector_rank) if h.vector_rank else 0.0  # a hash engine's weight
        weights = (1.0 if h.lexical_rank else 0.0) + (0.1 if h.vector_rank else 0.0)
        assert h.score == pytest.approx((lex + vec) / weights)  # the mean over the signals that saw it
        assert (h.vector_score is not None) == (h.vector_rank is not None)
    assert any(h.vector_rank for h in hits)


def test_a_query_vector_from_another_engine_or_size_is_refused() -> None:
    view = _view_of_docs(_docs())
    with pytest.raises(EngineMismatch):
        view.search(["retri"], [0.0] * ENGINE.dim, "other-engine", k=3)
    with pytest.raises(EngineMismatch):
        view.search(["retri"], [0.0] * (ENGINE.dim - 1), ENGINE.id, k=3)
    with pytest.raises(EngineMismatch):
        IndexView("other-engine", ENGINE.dim, [Segment.build(ENGINE.id, ENGINE.dim, _docs())])


def test_an_empty_index_answers_nothing() -> None:
    view = IndexView(ENGINE.id, ENGINE.dim, [])
    assert view.search(["retri"], None, None, k=5) == []
    assert (view.n, view.avgdl) == (0, 0.0)


def _codes(view: IndexView) -> Any:
    """The int8 vector codes of every doc of ``view``, one row a doc, read from its segments."""
    import numpy as np

    rows = [np.frombuffer(p.raw("vectors"), dtype=np.int8) for p in view.segments]
    return np.concatenate(rows).reshape(view.total, view.dim)


def _view(*batches: list[dict], deleted: frozenset[str] = frozenset()) -> IndexView:
    segs = [Segment.build(ENGINE.id, ENGINE.dim, to_docs(b, ENGINE)) for b in batches]
    return IndexView(ENGINE.id, ENGINE.dim, segs, deleted)


def test_bm25_ranks_the_rarer_term_higher_and_later_segments_supersede() -> None:
    view = _view(
        [
            search_record("a", "queue worker"),
            search_record("b", "queue"),
            search_record("c", "queue"),
            search_record("d", "worker zebra"),
        ],
        [search_record("b", "unrelated now")],
    )
    hits = view.search(tokenize("queue zebra"), None, None, k=10)
    assert hits[0].id == "d"  # the rare term outweighs the common one
    assert "b" not in [h.id for h in hits]  # b's newer version no longer mentions queue
    assert view.n == 4


def test_deleted_ids_are_hidden_and_without_removes_their_terms() -> None:
    seg = Segment.build(
        ENGINE.id, ENGINE.dim, to_docs([search_record("a", "kestrel"), search_record("b", "falcon")], ENGINE)
    )
    assert [
        h.id
        for h in IndexView(ENGINE.id, ENGINE.dim, [seg], frozenset({"a"})).search(
            ["kestrel"], None, None, k=5
        )
    ] == []
    kept = seg.without({"a"})
    assert kept.ids == ["b"] and "kestrel" not in kept.postings
    assert b"kestrel" not in kept.to_bytes()


def test_filters_by_zone_and_tag() -> None:
    view = _view(
        [
            search_record("rom1", "deploy notes", tags=["Ops"]),
            search_record("save1", "deploy notes", portable=False, tags=["ops"]),
            search_record("rom2", "deploy notes"),
        ]
    )
    assert {h.id for h in search(view, ENGINE, "deploy", k=10, zone="save")} == {"save1"}
    assert {h.id for h in search(view, ENGINE, "deploy", k=10, tag="OPS")} == {"rom1", "save1"}


def test_an_index_is_never_queried_with_another_engines_vectors() -> None:
    view = _view([search_record("a", "alpha")])

    class Other:
        id = "bedrock:amazon.titan-embed-text-v2:0:256"
        dim = 256
        lexical = False

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0 / 16] * 256 for _ in texts]

    with pytest.raises(EngineMismatch):
        search(view, Other(), "alpha", k=5)
    with pytest.raises(EngineMismatch):  # same dimension, other engine: still refused
        view.search(["alpha"], embed("alpha"), "some-other-128", k=5)
    other_seg = Segment.build(Other.id, 256, [Doc("x", "rom", (), ["alpha"], [1.0 / 16] * 256)])
    with pytest.raises(EngineMismatch):
        IndexView(ENGINE.id, ENGINE.dim, [*view.segments, other_seg])
    with pytest.raises(SegmentError):
        merge([*(p.segment() for p in view.segments), other_seg], ENGINE.id, ENGINE.dim, lambda s, i: True)


def test_a_weak_vector_signal_cannot_outrank_a_lexical_match() -> None:
    # "b" shares no word with the query, only hashed dimensions; "a" matches it lexically.
    docs = [search_record("a", "kestrel migration"), search_record("b", "completely different words here")]
    view = _view(docs)
    hits = search(view, ENGINE, "kestrel migration", k=2)
    assert hits[0].id == "a" and hits[0].lexical_rank == 1


def test_vector_signal_scans_every_doc_and_the_sparse_and_dense_paths_agree() -> None:
    rng = random.Random(3)
    words = "cache retry deploy queue shard lock timeout parser socket worker".split()
    view = _view([search_record(f"d{i}", " ".join(rng.choice(words) for _ in range(6))) for i in range(300)])
    q = embed("gamma delta")  # no shared word: only hashed dimensions can match
    sparse = view.vector(q, view.live)
    dense = _codes(view).astype("float32") @ __import__("numpy").asarray(q, dtype="float32") * view.scales
    assert all(abs(a - max(b, 0.0)) < 1e-5 for a, b in zip(sparse.tolist(), dense.tolist(), strict=True))
    q2 = embed("retry the queue")
    hits = view.search([], q2, ENGINE.id, k=5)
    assert hits and all(h.lexical_rank is None and h.vector_rank for h in hits)


def test_a_titan_index_ranks_by_meaning_where_words_differ() -> None:
    """A semantic engine (here a fake that maps synonyms together) gets full weight in the fusion."""

    class Synonyms:
        id = "fake-semantic-4"
        dim = 4
        lexical = False
        groups = ({"car", "automobile"}, {"fast", "quick"}, {"red"}, {"blue"})

        def embed(self, texts: list[str]) -> list[list[float]]:
            out = []
            for text in texts:
                words = set(text.lower().split())
                v = [float(len(words & g)) for g in self.groups]
                n = math.sqrt(sum(x * x for x in v)) or 1.0
                out.append([x / n for x in v])
            return out

    engine = Synonyms()
    docs = to_docs([search_record("a", "automobile quick"), search_record("b", "blue red")], engine)
    view = IndexView(engine.id, engine.dim, [Segment.build(engine.id, engine.dim, docs)])
    hits = search(view, engine, "fast car", k=2)
    assert [h.id for h in hits] == ["a"] and hits[0].lexical_rank is None and hits[0].vector_rank == 1


def test_dense_queries_score_every_doc_as_the_full_product_does() -> None:
    """A semantic engine's query has every dimension set: the blocked float path must give the same
    cosines as the plain product (here over more docs than one block)."""
    import numpy as np

    from acx.core.search import ranking

    rng = random.Random(9)
    dim = 16
    docs = [Doc(f"d{i}", "rom", (), ["x"], [rng.uniform(-1, 1) for _ in range(dim)]) for i in range(700)]
    view = IndexView("dense-16", dim, [Segment.build("dense-16", dim, docs)])
    q = [rng.uniform(-1, 1) for _ in range(dim)]
    old, ranking.DENSE_CHUNK = ranking.DENSE_CHUNK, 256
    try:
        got = view.vector(q, None)
    finally:
        ranking.DENSE_CHUNK = old
    want = np.maximum(_codes(view).astype(np.float32) @ np.asarray(q, np.float32) * view.scales, 0)
    assert np.allclose(got, want, atol=1e-5) and (got > 0).sum() > 100


def test_a_sparse_query_copies_only_its_dimensions_and_scores_as_the_full_product() -> None:
    import numpy as np

    rng = random.Random(5)
    words = "cache retry deploy queue shard lock timeout parser socket worker".split()
    view = _view([search_record(f"d{i}", " ".join(rng.choice(words) for _ in range(6))) for i in range(257)])
    first, second = embed("retry the queue"), embed("shard lock parser")
    wanted = set(np.flatnonzero(first).tolist())
    assert 0 < len(wanted) * 2 <= ENGINE.dim  # the sparse path
    reference = _codes(view).astype(np.float32)
    for q in (first, second, first):
        got = view.vector(q, None)
        want = np.maximum(reference @ np.asarray(q, dtype=np.float32) * view.scales, 0.0)
        assert np.allclose(got, want, atol=1e-5)
        if q is first:
            # private: which columns a sparse query copies is a cost, shown by no answer
            assert set(view._columns) >= wanted
    assert set(view._columns) == wanted | set(np.flatnonzero(second).tolist())  # nothing else copied
    assert all(c.flags.c_contiguous and c.shape == (257,) for c in view._columns.values())


@pytest.mark.parametrize("n", [4, 5, 9])
def test_the_ranked_pool_keeps_the_best_depth_scores_best_first(n: int) -> None:
    """More non-zero scores than the pool's depth: the best ``depth`` are kept, best first (a zero score
    is never ranked), one candidate more than the depth included."""
    import numpy as np

    # Private: the pool's edges (n = depth - 1, depth, depth + 1) need a depth a test can choose; search
    # fixes it at 1000.
    from acx.core.search.ranking import _ranked

    scores = np.zeros(n + 2, dtype=np.float32)
    scores[1 : n + 1] = np.arange(1, n + 1, dtype=np.float32)[::-1] / 10  # doc 1 best, doc n worst
    assert _ranked(scores, depth=3).tolist() == [1, 2, 3]
    assert _ranked(scores, depth=n).tolist() == list(range(1, n + 1))


# A posting naming a doc one past the segment's last is refused, and a vector signal weighted 0 leaves
# the lexical ranking alone.


def _seg(*titles: str) -> Segment:
    recs = [search_record(f"d{i}", t) for i, t in enumerate(titles)]
    return Segment.build(ENGINE.id, ENGINE.dim, to_docs(recs, ENGINE))


def test_a_posting_naming_the_doc_one_past_the_last_is_refused_by_the_view() -> None:
    """Ordinals run 0..n-1: a posting naming ordinal n (a bit flip in the docs section) is refused."""
    data = bytearray(_seg("alpha beta", "beta gamma").to_bytes())
    offset, count = Packed.parse(bytes(data)).sections["docs"]
    n = Packed.parse(bytes(data)).n
    assert n == 2 and count >= 1
    data[offset : offset + 4] = n.to_bytes(4, "little")
    with pytest.raises(SegmentError, match="doc it does not hold"):
        IndexView(ENGINE.id, ENGINE.dim, [Packed.parse(bytes(data))])


def test_a_zero_vector_weight_ranks_by_the_lexical_signal_alone() -> None:
    """With the vector signal weighted 0 a doc that only the vector matches is not a hit, and no hit
    carries a vector rank or score."""
    view = IndexView(ENGINE.id, ENGINE.dim, [_seg("alpha beta", "retry the queue worker")])
    q = embed("retry the queue")
    both = view.search(["alpha"], q, ENGINE.id, k=10)
    assert {h.id for h in both} == {"d0", "d1"}  # the vector signal alone finds d1
    hits = view.search(["alpha"], q, ENGINE.id, k=10, vector_weight=0.0)
    assert [h.id for h in hits] == ["d0"]
    assert hits[0].vector_rank is None and hits[0].vector_score is None
    assert hits[0].lexical_rank == 1


def test_a_hit_cannot_be_edited_and_hashes_by_value() -> None:
    hit = Hit("mem-1", 0.5, lexical_rank=1, terms=("deploy",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.score = 1.0  # type: ignore[misc]
    assert {hit, Hit("mem-1", 0.5, lexical_rank=1, terms=("deploy",))} == {hit}


def test_the_impact_cache_stays_within_its_bound_across_many_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm api function keeps one view for many queries: the BM25 parts it caches are flushed once
    they pass IMPACT_CACHE_POSTINGS, so memory stays bounded whatever the queries ask."""
    from acx.core.embedding import LocalHash128
    from acx.core.search import ranking, to_docs
    from acx.core.search.segment import Segment

    engine = LocalHash128()
    words = [f"w{i}" for i in range(60)]
    recs = [
        {"id": f"m{i}", "title": " ".join(words[i : i + 10]), "summary": "", "portable": True, "tags": []}
        for i in range(50)
    ]
    seg = Segment.build(engine.id, engine.dim, to_docs(recs, engine))
    monkeypatch.setattr(ranking, "IMPACT_CACHE_POSTINGS", 40)
    view = ranking.IndexView(engine.id, engine.dim, [seg])
    first = view.lexical(["w5"], None).copy()
    for word in words:
        view.lexical([word], None)
        held = sum(len(docs) for docs, _ in view._impacts.values())  # private: a memory bound
        assert held <= 40 + 10  # the bound, plus the one term added after a flush
    assert (view.lexical(["w5"], None) == first).all()  # a flushed term is recomputed the same


def test_a_tag_filter_returns_nothing_from_segments_without_the_tag() -> None:
    """Each segment's first doc matches the query but carries no such tag: a tag no doc has finds
    nothing, and a tag only the second segment holds finds only its doc."""
    view = _view(
        [search_record("a1", "deploy notes"), search_record("a2", "deploy notes", tags=["db"])],
        [search_record("b1", "deploy notes"), search_record("b2", "deploy notes", tags=["ops"])],
    )
    assert search(view, ENGINE, "deploy", k=10, tag="absent") == []
    assert [h.id for h in search(view, ENGINE, "deploy", k=10, tag="ops")] == ["b2"]
    assert [h.id for h in search(view, ENGINE, "deploy", k=10, tag="db")] == ["a2"]


DEPTH = 1000  # the documented depth of each signal's ranking that the fusion reads


def test_the_fusion_reads_each_signal_1000_deep() -> None:
    """Of 1001 docs that all hold the query term, a lexical query returns 1000 (the deepest one gets
    nothing from the fusion), the last of them at lexical rank 1000."""
    docs = [
        Doc(f"d{i:04d}", "rom", (), ["alpha"] * (1 + i % 7) + ["beta"] * (i % 5), [0.0])
        for i in range(DEPTH + 1)
    ]
    view = IndexView("flat-1", 1, [Segment.build("flat-1", 1, docs)])
    hits = view.search(["alpha"], None, None, k=2 * DEPTH)
    assert len(hits) == DEPTH
    assert [h.lexical_rank for h in hits] == list(range(1, DEPTH + 1))
    assert len({h.id for h in hits}) == DEPTH


# ---- issue 32: the fusion respects missing evidence, a relevance floor, long queries ------------------

HASH = LocalHash128()


class Dense:
    """A semantic engine of 4 dimensions whose vectors the test picks (by the text's first known word)."""

    id = "test-dense-4"
    dim = 4
    lexical = False
    max_input_chars: int | None = None

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        known = [next((w for w in t.split() if w in self.vectors), "") for t in texts]
        return [self.vectors.get(w, [0.0, 0.0, 0.0, 1.0]) for w in known]


def _dense_doc(rid: str, text: str, vector: list[float], tags: tuple[str, ...] = ()) -> Doc:
    return Doc(id=rid, zone="rom", tags=tags, terms=tokenize(text), vector=vector)


def _dense_view(docs: list[Doc], engine_id: str = "test-dense-4", dim: int = 4) -> IndexView:
    return IndexView(engine_id, dim, [Segment.build(engine_id, dim, docs)])


def _unit(*v: float) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


QUERY_VECTOR = _unit(1, 0, 0, 0)


def _first_hit_unseen_by_vectors() -> IndexView:
    """Doc "a" matches both query words but points away from the query's vector (cosine 0: the vector
    signal has nothing to say about it); "b", "c", "d" match one word each and sit next to the
    query's vector; "e".."h" match no word and are near the query's vector too."""
    return _dense_view(
        [
            _dense_doc("a", "kestrel migration route", [0.0, 0.0, 1.0, 0.0]),
            _dense_doc("b", "kestrel sighting notes and other words", _unit(1, 0.1, 0, 0)),
            _dense_doc("c", "kestrel feeding notes and more words", _unit(1, 0.2, 0, 0)),
            _dense_doc("d", "migration of data between the shards", _unit(1, 0.3, 0, 0)),
            *(_dense_doc(r, "unrelated text", _unit(1, 0.4 + i / 10, 0, 0)) for i, r in enumerate("efgh")),
        ]
    )


def test_a_lexical_first_hit_with_no_vector_signal_stays_first() -> None:
    view = _first_hit_unseen_by_vectors()
    hits = view.search(tokenize("kestrel migration"), QUERY_VECTOR, "test-dense-4", k=5)
    assert hits[0].id == "a"
    assert hits[0].lexical_rank == 1 and hits[0].vector_rank is None
    assert hits[0].score == pytest.approx(1 / (RRF_K + 1))  # the lexical signal's word alone


def test_weighted_rrf_would_have_pushed_that_hit_below_every_doc_the_vector_ranked() -> None:
    """What the previous fusion did with the same signals (the bench measures both): a doc the vector
    signal did not rank was scored as if it ranked last there."""
    import numpy as np

    from acx.core.search.ranking import _ranked

    view = _first_hit_unseen_by_vectors()
    lex = view.lexical(tokenize("kestrel migration"), None)
    vec = view.vector(QUERY_VECTOR, None)
    fused = np.zeros(view.total)
    for order in (_ranked(lex), _ranked(vec)):
        fused[order] += 1.0 / (RRF_K + np.arange(1, len(order) + 1))
    rrf = [view.id_of(g) for g in np.argsort(-fused, kind="stable").tolist()]
    assert rrf.index("a") == 3  # fourth, behind b, c, d


def test_a_hash_engine_lexical_first_hit_stays_first_whatever_the_vector_says() -> None:
    records = [
        {"id": "a", "title": "kestrels migrate", "summary": "", "portable": True},  # stems match only
        *(
            {"id": f"n{i}", "title": f"kestrel migration {w}", "summary": "x " * 40, "portable": True}
            for i, w in enumerate(["one", "two", "three"])
        ),
    ]
    view = IndexView(HASH.id, HASH.dim, [Segment.build(HASH.id, HASH.dim, to_docs(records, HASH))])
    hits = core_search.rank(view, HASH, "kestrel migration", k=4).hits
    assert hits[0].lexical_rank == 1 and hits[0].id == "a"


def test_agreement_of_both_signals_still_ranks_above_one_signal_alone() -> None:
    view = _dense_view(
        [
            _dense_doc("both", "kestrel", QUERY_VECTOR),
            _dense_doc("lexical", "kestrel kestrel notes", _unit(0.2, 1, 0, 0)),
            _dense_doc("vector", "other", _unit(1, 0.05, 0, 0)),
        ]
    )
    hits = view.search(["kestrel"], QUERY_VECTOR, "test-dense-4", k=3)
    assert hits[0].id == "both" and hits[0].lexical_rank and hits[0].vector_rank == 1


def test_a_low_vector_rank_counts_against_a_doc_but_less_than_silence_would_have() -> None:
    """A vector rank below the lexical one pulls the mean down; a doc the vector never saw keeps its
    lexical score."""
    view = _dense_view(
        [
            _dense_doc("seen-low", "kestrel kestrel kestrel", _unit(0.01, 1, 0, 0)),
            _dense_doc("unseen", "kestrel kestrel", [0.0, 0.0, 1.0, 0.0]),
            *(_dense_doc(f"v{i}", "other", _unit(1, i / 10, 0, 0)) for i in range(5)),
        ]
    )
    hits = view.search(["kestrel"], QUERY_VECTOR, "test-dense-4", k=10)
    by_id = {h.id: h for h in hits}
    assert by_id["unseen"].score == pytest.approx(1 / (RRF_K + 2))
    assert by_id["seen-low"].vector_rank == 6
    assert by_id["seen-low"].score == pytest.approx((1 / (RRF_K + 1) + 1 / (RRF_K + 6)) / 2)


def test_a_query_with_nothing_relevant_returns_no_hit_and_says_so() -> None:
    engine = Dense({"kestrel": QUERY_VECTOR, "banana": _unit(0, 0, 0, 1)})
    view = _dense_view(
        [
            _dense_doc("a", "kestrel migration", _unit(1, 0.2, 0, 0)),
            _dense_doc("b", "shard notes", _unit(0.1, 1, 0, 0)),
        ]
    )
    ranking = core_search.rank(view, engine, "banana bread", k=5)
    assert ranking == Ranking([], NO_MATCH)


def test_a_hash_engine_never_makes_a_hit_from_its_vector_alone() -> None:
    """Its similarity is word overlap and collisions: a query of stopwords only (no lexical term)
    matches nothing, though its hashed vector touches every doc that has the same stopwords."""
    records = [{"id": "a", "title": "what is it", "summary": "the kestrel", "portable": True}]
    view = IndexView(HASH.id, HASH.dim, [Segment.build(HASH.id, HASH.dim, to_docs(records, HASH))])
    assert similarity_floor(HASH) is None
    ranking = core_search.rank(view, HASH, "what is it", k=5)
    assert ranking.hits == [] and ranking.reason == NO_MATCH


def test_a_semantic_vector_above_the_floor_finds_a_memory_that_shares_no_word() -> None:
    engine = Dense({"bird": _unit(1, 0.1, 0, 0)})
    view = _dense_view(
        [
            _dense_doc("a", "kestrel migration", QUERY_VECTOR),
            _dense_doc("b", "shard notes", _unit(0, 1, 0, 0)),
        ]
    )
    assert similarity_floor(engine) == DEFAULT_SEMANTIC_FLOOR
    hits = core_search.rank(view, engine, "bird journeys", k=5).hits
    assert [h.id for h in hits] == ["a"]  # b's cosine (0.1) is under the floor
    assert hits[0].lexical_rank is None and hits[0].vector_rank == 1


def test_an_engine_may_declare_its_own_floor() -> None:
    engine = Dense({"bird": _unit(1, 0.1, 0, 0)})
    engine.min_similarity = 0.05  # type: ignore[attr-defined]
    view = _dense_view(
        [
            _dense_doc("a", "kestrel migration", QUERY_VECTOR),
            _dense_doc("b", "shard notes", _unit(0, 1, 0, 0)),
        ]
    )
    assert [h.id for h in core_search.rank(view, engine, "bird journeys", k=5).hits] == ["a", "b"]


def test_no_memory_passing_the_filters_says_no_memories() -> None:
    view = _dense_view([_dense_doc("a", "kestrel migration", QUERY_VECTOR, tags=("birds",))])
    engine = Dense({"kestrel": QUERY_VECTOR})
    assert core_search.rank(view, engine, "kestrel", k=5, tag="fish") == Ranking([], NO_MEMORIES)
    assert core_search.rank(view, engine, "kestrel", k=5, zone="save") == Ranking([], NO_MEMORIES)
    assert core_search.rank(view, engine, "kestrel", k=5, tag="birds").hits[0].id == "a"


def test_an_empty_index_says_no_memories() -> None:
    assert _dense_view([]).rank(["kestrel"], QUERY_VECTOR, "test-dense-4", k=5) == Ranking([], NO_MEMORIES)


# ---- long queries


def test_a_long_query_is_embedded_window_by_window_within_the_engines_input_limit() -> None:
    engine = Dense({"kestrel": _unit(1, 0, 0, 0), "shard": _unit(0, 1, 0, 0)})
    engine.max_input_chars = 100
    query = "kestrel " + "word " * 30 + "shard " + "word " * 30
    vector = embed_query(engine, query)
    windows = engine.calls[-1]
    assert len(windows) > 1 and all(len(w) <= 100 for w in windows)
    assert " ".join(windows).split() == query.split()  # nothing lost, no word cut
    assert vector[0] > 0 and vector[1] > 0  # both ends of the question count
    assert sum(v * v for v in vector) == pytest.approx(1.0)


def test_a_short_query_is_embedded_whole() -> None:
    engine = Dense({"kestrel": QUERY_VECTOR})
    engine.max_input_chars = 100
    assert embed_query(engine, "kestrel migration") == QUERY_VECTOR
    assert engine.calls == [["kestrel migration"]]


def test_a_query_of_many_terms_scores_only_its_rarest_held_terms() -> None:
    common = [f"common{i}" for i in range(MAX_QUERY_TERMS)]
    docs = [_dense_doc(f"d{i}", " ".join(common), QUERY_VECTOR) for i in range(3)]
    docs.append(_dense_doc("rare", "kestrel " + " ".join(common[:5]), QUERY_VECTOR))
    view = _dense_view(docs)
    terms = tokenize(" ".join(common) + " kestrel never-seen-word")
    kept = view._query_terms(terms)
    assert len(kept) == MAX_QUERY_TERMS and "kestrel" in kept and "never" not in kept
    hits = {h.id: h for h in view.search(terms, None, None, k=4)}
    assert "kestrel" in hits["rare"].terms


def test_a_4kb_query_is_ranked_by_the_hash_engine() -> None:
    records = [
        {"id": f"r{i}", "title": f"note {i} kestrel", "summary": "shard retry " * i, "portable": True}
        for i in range(20)
    ]
    view = IndexView(HASH.id, HASH.dim, [Segment.build(HASH.id, HASH.dim, to_docs(records, HASH))])
    query = ("why does the kestrel shard retry loop stall after a deploy " * 80)[:4096]
    assert len(query) == 4096
    assert core_search.rank(view, HASH, query, k=5).hits
