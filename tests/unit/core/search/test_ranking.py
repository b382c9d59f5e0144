"""The fusion respects missing evidence and a relevance floor (issue 32); long queries stay bounded."""

from __future__ import annotations

import math

import pytest

from acx.core.embedding import LocalHash128
from acx.core.search import DEFAULT_SEMANTIC_FLOOR, embed_query, rank, similarity_floor, to_docs
from acx.core.search.ranking import (
    MAX_QUERY_TERMS,
    NO_MATCH,
    NO_MEMORIES,
    RRF_K,
    IndexView,
    Ranking,
)
from acx.core.search.segment import Doc, Segment
from acx.core.search.text import tokenize

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


def _doc(rid: str, text: str, vector: list[float], tags: tuple[str, ...] = ()) -> Doc:
    return Doc(id=rid, zone="rom", tags=tags, terms=tokenize(text), vector=vector)


def _view(docs: list[Doc], engine_id: str = "test-dense-4", dim: int = 4) -> IndexView:
    return IndexView(engine_id, dim, [Segment.build(engine_id, dim, docs)])


def _unit(*v: float) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


QUERY_VECTOR = _unit(1, 0, 0, 0)


def _first_hit_unseen_by_vectors() -> IndexView:
    """Doc "a" matches both query words but points away from the query's vector (cosine 0: the vector
    signal has nothing to say about it); "b", "c", "d" match one word each and sit next to the
    query's vector; "e".."h" match no word and are near the query's vector too."""
    return _view(
        [
            _doc("a", "kestrel migration route", [0.0, 0.0, 1.0, 0.0]),
            _doc("b", "kestrel sighting notes and other words", _unit(1, 0.1, 0, 0)),
            _doc("c", "kestrel feeding notes and more words", _unit(1, 0.2, 0, 0)),
            _doc("d", "migration of data between the shards", _unit(1, 0.3, 0, 0)),
            *(_doc(r, "unrelated text", _unit(1, 0.4 + i / 10, 0, 0)) for i, r in enumerate("efgh")),
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
    hits = rank(view, HASH, "kestrel migration", k=4).hits
    assert hits[0].lexical_rank == 1 and hits[0].id == "a"


def test_agreement_of_both_signals_still_ranks_above_one_signal_alone() -> None:
    view = _view(
        [
            _doc("both", "kestrel", QUERY_VECTOR),
            _doc("lexical", "kestrel kestrel notes", _unit(0.2, 1, 0, 0)),
            _doc("vector", "other", _unit(1, 0.05, 0, 0)),
        ]
    )
    hits = view.search(["kestrel"], QUERY_VECTOR, "test-dense-4", k=3)
    assert hits[0].id == "both" and hits[0].lexical_rank and hits[0].vector_rank == 1


def test_a_low_vector_rank_counts_against_a_doc_but_less_than_silence_would_have() -> None:
    """A vector rank below the lexical one pulls the mean down; a doc the vector never saw keeps its
    lexical score."""
    view = _view(
        [
            _doc("seen-low", "kestrel kestrel kestrel", _unit(0.01, 1, 0, 0)),
            _doc("unseen", "kestrel kestrel", [0.0, 0.0, 1.0, 0.0]),
            *(_doc(f"v{i}", "other", _unit(1, i / 10, 0, 0)) for i in range(5)),
        ]
    )
    hits = view.search(["kestrel"], QUERY_VECTOR, "test-dense-4", k=10)
    by_id = {h.id: h for h in hits}
    assert by_id["unseen"].score == pytest.approx(1 / (RRF_K + 2))
    assert by_id["seen-low"].vector_rank == 6
    assert by_id["seen-low"].score == pytest.approx((1 / (RRF_K + 1) + 1 / (RRF_K + 6)) / 2)


def test_a_query_with_nothing_relevant_returns_no_hit_and_says_so() -> None:
    engine = Dense({"kestrel": QUERY_VECTOR, "banana": _unit(0, 0, 0, 1)})
    view = _view(
        [_doc("a", "kestrel migration", _unit(1, 0.2, 0, 0)), _doc("b", "shard notes", _unit(0.1, 1, 0, 0))]
    )
    ranking = rank(view, engine, "banana bread", k=5)
    assert ranking == Ranking([], NO_MATCH)


def test_a_hash_engine_never_makes_a_hit_from_its_vector_alone() -> None:
    """Its similarity is word overlap and collisions: a query of stopwords only (no lexical term)
    matches nothing, though its hashed vector touches every doc that has the same stopwords."""
    records = [{"id": "a", "title": "what is it", "summary": "the kestrel", "portable": True}]
    view = IndexView(HASH.id, HASH.dim, [Segment.build(HASH.id, HASH.dim, to_docs(records, HASH))])
    assert similarity_floor(HASH) is None
    ranking = rank(view, HASH, "what is it", k=5)
    assert ranking.hits == [] and ranking.reason == NO_MATCH


def test_a_semantic_vector_above_the_floor_finds_a_memory_that_shares_no_word() -> None:
    engine = Dense({"bird": _unit(1, 0.1, 0, 0)})
    view = _view([_doc("a", "kestrel migration", QUERY_VECTOR), _doc("b", "shard notes", _unit(0, 1, 0, 0))])
    assert similarity_floor(engine) == DEFAULT_SEMANTIC_FLOOR
    hits = rank(view, engine, "bird journeys", k=5).hits
    assert [h.id for h in hits] == ["a"]  # b's cosine (0.1) is under the floor
    assert hits[0].lexical_rank is None and hits[0].vector_rank == 1


def test_an_engine_may_declare_its_own_floor() -> None:
    engine = Dense({"bird": _unit(1, 0.1, 0, 0)})
    engine.min_similarity = 0.05  # type: ignore[attr-defined]
    view = _view([_doc("a", "kestrel migration", QUERY_VECTOR), _doc("b", "shard notes", _unit(0, 1, 0, 0))])
    assert [h.id for h in rank(view, engine, "bird journeys", k=5).hits] == ["a", "b"]


def test_no_memory_passing_the_filters_says_no_memories() -> None:
    view = _view([_doc("a", "kestrel migration", QUERY_VECTOR, tags=("birds",))])
    engine = Dense({"kestrel": QUERY_VECTOR})
    assert rank(view, engine, "kestrel", k=5, tag="fish") == Ranking([], NO_MEMORIES)
    assert rank(view, engine, "kestrel", k=5, zone="save") == Ranking([], NO_MEMORIES)
    assert rank(view, engine, "kestrel", k=5, tag="birds").hits[0].id == "a"


def test_an_empty_index_says_no_memories() -> None:
    assert _view([]).rank(["kestrel"], QUERY_VECTOR, "test-dense-4", k=5) == Ranking([], NO_MEMORIES)


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
    docs = [_doc(f"d{i}", " ".join(common), QUERY_VECTOR) for i in range(3)]
    docs.append(_doc("rare", "kestrel " + " ".join(common[:5]), QUERY_VECTOR))
    view = _view(docs)
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
    assert rank(view, HASH, query, k=5).hits
