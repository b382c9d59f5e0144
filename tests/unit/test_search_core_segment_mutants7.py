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
