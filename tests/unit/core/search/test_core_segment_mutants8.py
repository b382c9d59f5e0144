"""Search and segment behaviours the eighth round's fresh draw (seed 29) found unguarded: the fusion
reads each signal 1000 deep, a parsed segment's length, a header that is not a segment header, an
engine of one dimension, and a doc tag one past the vocabulary."""

from __future__ import annotations

import struct

import pytest

from acx.core.search.ranking import IndexView
from acx.core.search.segment import MAGIC, Doc, Packed, Segment, SegmentError
from tests.unit.core.search.test_index_guards import _bytes, _put_u32

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


def test_a_parsed_segment_has_the_length_of_its_docs() -> None:
    assert len(Packed.parse(bytes(_bytes()))) == 2
    one = Segment.build("flat-1", 1, [Doc("a", "rom", (), ["alpha"], [0.5])])
    assert len(Packed.parse(one.to_bytes())) == 1


def _with_header(raw: bytes) -> bytes:
    return MAGIC + struct.pack("<I", len(raw)) + raw


@pytest.mark.parametrize(
    "header",
    [
        b"not json",
        b'{"engine": "x"}',
        b'["engine", "dim"]',
        b'{"engine": "x", "dim": "wide", "n": 0, "terms": 0, "postings": 0, "tags": 0, "docTags": 0,'
        b' "text": [0, 0, 0]}',
        b'{"engine": "x", "dim": 1, "n": 0, "terms": 0, "postings": 0, "tags": 0, "docTags": 0, "text": [0]}',
    ],
    ids=["not-json", "missing-keys", "not-an-object", "dim-not-a-number", "short-text-counts"],
)
def test_a_header_that_is_not_a_segment_header_is_refused_as_such(header: bytes) -> None:
    with pytest.raises(SegmentError, match="bad segment header"):
        Packed.parse(_with_header(header))


def test_a_one_dimension_engine_parses_and_zero_dimensions_do_not() -> None:
    """One dimension is the smallest an engine may have: its segment reads back with its vector."""
    seg = Segment.build(
        "flat-1", 1, [Doc("a", "rom", (), ["alpha"], [0.5]), Doc("b", "save", (), ["beta"], [-1.0])]
    )
    packed = Packed.parse(seg.to_bytes())
    assert (packed.dim, packed.n) == (1, 2)
    back = packed.segment()
    assert list(back.vectors) == [127, -127] and back.zones == ["rom", "save"]
    assert list(back.scales) == pytest.approx([0.5 / 127, 1.0 / 127])
    with pytest.raises(SegmentError, match="negative"):
        Packed.parse(Segment.build("flat-0", 0, [Doc("a", "rom", (), ["alpha"], [])]).to_bytes())


def test_a_doc_tag_one_past_the_vocabulary_is_refused() -> None:
    """The vocabulary holds one tag (index 0): a doc naming tag 1 is refused as damage, not read."""
    data = _bytes()
    assert Packed.parse(bytes(data)).sections["tag_offs"][1] == 2  # one tag: offsets 0 and its end
    with pytest.raises(SegmentError, match="tags do not fit their vocabulary"):
        Packed.parse(_put_u32(bytearray(data), "doc_tags", 0, 1)).segment()
