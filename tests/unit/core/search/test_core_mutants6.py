"""Ranking guards: a posting naming a doc one past the segment's last, and a vector signal weighted 0."""

from __future__ import annotations

import pytest

from acx.core.embedding import LocalHash128, embed
from acx.core.search import to_docs
from acx.core.search.ranking import IndexView
from acx.core.search.segment import Packed, Segment, SegmentError

ENGINE = LocalHash128()


def _rec(rid: str, title: str) -> dict:
    return {"id": rid, "title": title, "summary": "", "portable": True, "tags": []}


def _seg(*titles: str) -> Segment:
    recs = [_rec(f"d{i}", t) for i, t in enumerate(titles)]
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
