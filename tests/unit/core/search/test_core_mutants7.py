"""A ranked hit is a value: it cannot be edited after ranking (a later signal cannot rewrite the score
another caller already holds) and it hashes, so hits can be deduplicated in sets."""

from __future__ import annotations

import dataclasses

import pytest

from acx.core.search.ranking import Hit


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
        held = sum(len(docs) for docs, _ in view._impacts.values())
        assert held <= 40 + 10  # the bound, plus the one term added after a flush
    assert (view.lexical(["w5"], None) == first).all()  # a flushed term is recomputed the same
