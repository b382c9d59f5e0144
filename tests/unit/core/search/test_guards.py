"""Ranking by the numbers: BM25 scores recomputed here in plain Python from the formula (Lucene's idf,
k1 = 1.2, b = 0.75, written out), RRF fusion with k = 60, filters, deleted ids and the tokeniser's
edges. A changed constant or a dropped term changes an answer a client sees (order, score, terms).
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

from acx.core.embedding import LocalHash128
from acx.core.search import search, to_docs
from acx.core.search.ranking import EngineMismatch, IndexView
from acx.core.search.segment import Doc, Segment
from acx.core.search.text import tokenize

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


def _view(*batches: list[Doc], deleted: frozenset[str] = frozenset()) -> IndexView:
    segs = [Segment.build(ENGINE.id, ENGINE.dim, b) for b in batches]
    return IndexView(ENGINE.id, ENGINE.dim, segs, deleted)


@pytest.mark.parametrize("query", ["retry", "deploy retry", "retry retry cache", "shard tenant queue", "zzz"])
def test_lexical_scores_are_bm25_and_the_fused_score_is_rrf(query: str) -> None:
    docs = _docs()
    terms = tokenize(query)
    want = _bm25(docs, terms)
    for view in (_view(docs), _view(docs[:1], docs[1:3], docs[3:])):  # one segment or three: same answer
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
    hits = _view(docs, deleted=frozenset({"d"})).search(terms, None, None, k=10)
    assert [h.id for h in hits] == sorted(want, key=lambda i: (-want[i], i))
    assert hits[0].lexical_score == pytest.approx(want["a"], rel=1e-5)
    assert sorted(_view(docs, deleted=frozenset({"d"})).ids()) == ["a", "b", "c"]


def test_k_zone_and_tag_filters() -> None:
    view = _view(_docs())
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
    hits = _view(docs).search(tokenize("words"), None, None, k=3)
    assert [h.id for h in hits] == ["x", "y", "z"]
    assert [h.lexical_rank for h in hits] == [1, 2, 3]


def test_the_vector_signal_joins_with_its_weight() -> None:
    view = _view(_docs())
    hits = search(view, ENGINE, "retry deploy", k=4)
    for h in hits:
        lex = 1.0 / (60 + h.lexical_rank) if h.lexical_rank else 0.0
        vec = 0.1 / (60 + h.vector_rank) if h.vector_rank else 0.0  # a hash engine's weight
        weights = (1.0 if h.lexical_rank else 0.0) + (0.1 if h.vector_rank else 0.0)
        assert h.score == pytest.approx((lex + vec) / weights)  # the mean over the signals that saw it
        assert (h.vector_score is not None) == (h.vector_rank is not None)
    assert any(h.vector_rank for h in hits)


def test_a_query_vector_from_another_engine_or_size_is_refused() -> None:
    view = _view(_docs())
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


def test_tokenizer_edges() -> None:
    assert tokenize("x " + "y" * 64 + " " + "z" * 65, stemming=False) == ["y" * 64]  # 2..64 chars
    assert tokenize("ab I a", stemming=False) == ["ab"]
    assert tokenize("The THE the", stemming=False) == []
    assert tokenize("ｒｅｔｒｉｅｓ", stemming=False) == ["retries"]
    assert tokenize("naïve_Straße 42", stemming=False) == ["naïve", "strasse", "42"]
