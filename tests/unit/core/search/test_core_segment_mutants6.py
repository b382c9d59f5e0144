"""Segment guards: a truncated upload names its damage, and a merge that drops a doc of a later
segment remaps that segment's postings as a fresh build of the kept docs would hold them."""

from __future__ import annotations

import pytest

from acx.core.embedding import LocalHash128
from acx.core.search import to_docs
from acx.core.search.segment import Packed, Segment, SegmentError, merge

ENGINE = LocalHash128()


def _rec(rid: str, title: str) -> dict:
    return {"id": rid, "title": title, "summary": "", "portable": True, "tags": []}


def _build(recs: list[dict]) -> Segment:
    return Segment.build(ENGINE.id, ENGINE.dim, to_docs(recs, ENGINE))


@pytest.mark.parametrize("cut", [1, 8, 64])
def test_a_truncated_segment_is_refused_as_truncated(cut: int) -> None:
    data = _build([_rec("a", "alpha beta"), _rec("b", "beta gamma")]).to_bytes()
    with pytest.raises(SegmentError, match="truncated"):
        Packed.parse(data[:-cut])
    with pytest.raises(SegmentError, match="truncated"):
        Segment.from_bytes(data[:-cut])


def test_a_merge_dropping_a_doc_of_a_later_segment_holds_the_postings_of_the_kept_docs() -> None:
    recs = [_rec("a", "alpha beta"), _rec("b", "beta gamma"), _rec("c", "alpha delta"), _rec("d", "gamma")]
    first, second = _build(recs[:1]), _build(recs[1:])
    merged = merge([first, second], ENGINE.id, ENGINE.dim, lambda seg, i: seg.ids[i] != "b")
    kept = [recs[0], recs[2], recs[3]]
    fresh = _build(kept)
    back = Segment.from_bytes(merged.to_bytes())
    assert back.ids == ["a", "c", "d"]
    assert back.postings == fresh.postings
    assert list(back.docs) == list(fresh.docs) and list(back.tfs) == list(fresh.tfs)
