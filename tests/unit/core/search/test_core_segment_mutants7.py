"""A segment round-trips the tags of each of its docs, an empty tag (records allow one) included, and
the per-doc tag lists stay with their own docs."""

from __future__ import annotations

from acx.core.embedding import LocalHash128
from acx.core.search import to_docs
from acx.core.search.segment import Segment

ENGINE = LocalHash128()


def _rec(rid: str, title: str, tags: list[str]) -> dict:
    return {"id": rid, "title": title, "summary": "", "portable": True, "tags": tags}


def test_each_docs_tags_come_back_with_that_doc_an_empty_tag_included() -> None:
    recs = [
        _rec("a", "alpha", ["ops", ""]),
        _rec("b", "beta", []),
        _rec("c", "gamma", ["", "db", "ops"]),
        _rec("d", "delta", ["db"]),
    ]
    built = Segment.build(ENGINE.id, ENGINE.dim, to_docs(recs, ENGINE))
    back = Segment.from_bytes(built.to_bytes())
    assert dict(zip(back.ids, back.tags, strict=True)) == {
        "a": ("", "ops"),
        "b": (),
        "c": ("", "db", "ops"),
        "d": ("db",),
    }


def test_a_segment_whose_text_is_not_utf8_is_refused_by_name() -> None:
    import pytest

    from acx.core.search.segment import Packed, SegmentError

    built = Segment.build(ENGINE.id, ENGINE.dim, to_docs([_rec("abc", "alpha", [])], ENGINE))
    data = bytearray(built.to_bytes())
    offset, count = Packed.parse(bytes(data)).sections["ids_text"]
    assert bytes(data[offset : offset + count]) == b"abc"
    data[offset] = 0xFF
    with pytest.raises(SegmentError, match="segment ids_text is not UTF-8"):
        Segment.from_bytes(bytes(data))


def test_a_segment_of_another_engine_with_the_same_dimension_is_not_merged() -> None:
    import pytest

    from acx.core.search.segment import SegmentError, merge

    seg = Segment.build(ENGINE.id, ENGINE.dim, to_docs([_rec("a", "alpha", [])], ENGINE))
    with pytest.raises(SegmentError, match=f"segment built by {ENGINE.id} cannot merge"):
        merge([seg], "other-engine-128", ENGINE.dim, lambda s, i: True)
