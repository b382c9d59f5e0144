"""The index segment as bytes read back from S3: a damaged or forged segment is a ``SegmentError``
(the index is then rebuilt from the records), never a wrong answer, a crash or a silent miss. Every
damage here is made at a place the parsed layout names (``Packed.sections``), as a bit flip or a
truncated upload would make it.
"""

from __future__ import annotations

import pytest

from acx.core.embedding import LocalHash128
from acx.core.search import to_docs
from acx.core.search.ranking import IndexView
from acx.core.search.segment import Doc, Packed, Segment, SegmentError

ENGINE = LocalHash128()


def _rec(rid: str, title: str, **over: object) -> dict:
    return {"id": rid, "title": title, "summary": "", "portable": True, "tags": [], **over}


def _bytes() -> bytearray:
    seg = Segment.build(
        ENGINE.id,
        ENGINE.dim,
        to_docs([_rec("a", "alpha beta", tags=["ops"]), _rec("b", "beta gamma", portable=False)], ENGINE),
    )
    return bytearray(seg.to_bytes())


def _put_u32(data: bytearray, section: str, item: int, value: int) -> bytes:
    offset, count = Packed.parse(bytes(data)).sections[section]
    at = offset + 4 * (item % count)
    data[at : at + 4] = value.to_bytes(4, "little")
    return bytes(data)


def _refused_everywhere(data: bytes) -> None:
    with pytest.raises(SegmentError):
        IndexView(ENGINE.id, ENGINE.dim, [Packed.parse(data)])
    with pytest.raises(SegmentError):
        Segment.from_bytes(data)


def test_term_offsets_that_overrun_the_term_text_are_refused() -> None:
    data = _bytes()
    terms_len = Packed.parse(bytes(data)).sections["terms_text"][1]
    _refused_everywhere(_put_u32(data, "term_offs", -1, terms_len + 3))


def _repack(data: bytes, **header: object) -> bytes:
    """The same sections under an edited header, laid out as the module docstring says: MAGIC, uint32
    header length, JSON header, then each section on an 8-byte boundary (a forged segment)."""
    import struct

    import orjson

    from acx.core.search.segment import MAGIC, SECTIONS

    packed = Packed.parse(data)
    start = len(MAGIC) + 4
    (hlen,) = struct.unpack_from("<I", data, len(MAGIC))
    head = {**orjson.loads(data[start : start + hlen]), **header}
    raw = orjson.dumps(head)
    out = bytearray(MAGIC + struct.pack("<I", len(raw)) + raw)
    for name, _code in SECTIONS:
        out += b"\x00" * (-len(out) % 8)
        out += bytes(packed.raw(name))
    return bytes(out)


def test_the_id_hash_is_the_first_8_bytes_of_blake2b_little_endian() -> None:
    """Stored in every segment (superseded docs are found by it): a changed derivation would make
    every segment already in S3 disagree with the view about which doc is live."""
    import hashlib

    from acx.core.search.segment import id_hash

    for rid in ("a", "mem-1", "é"):
        want = int.from_bytes(hashlib.blake2b(rid.encode(), digest_size=8).digest(), "little")
        assert id_hash(rid) == want
    assert id_hash("a") < 1 << 64 and id_hash("a") >= 1 << 56  # 8 bytes, not 7 (with odds 255/256)


def test_quantise_maps_the_peak_to_127_and_a_zero_vector_to_zeros() -> None:
    from acx.core.search.segment import quantise

    assert quantise([0.0, 0.0, 0.0]) == ([0, 0, 0], 0.0)
    assert quantise([]) == ([], 0.0)
    codes, scale = quantise([0.5, -0.25, 0.1])
    assert codes == [127, -64, 25] and scale == pytest.approx(0.5 / 127)
    codes, scale = quantise([-2.0, 1.0])
    assert codes == [-127, 64] and scale == pytest.approx(2.0 / 127)


def test_a_doc_whose_vector_has_the_wrong_size_is_refused_at_build() -> None:
    (doc,) = to_docs([_rec("a", "alpha")], ENGINE)
    with pytest.raises(SegmentError, match="dims"):
        Segment.build(ENGINE.id, ENGINE.dim + 1, [doc])
    with pytest.raises(SegmentError, match="dims"):
        Segment.build(ENGINE.id, ENGINE.dim, [doc, type(doc)("b", "rom", (), ["beta"], [0.5] * 3)])


def test_tags_zones_and_vectors_survive_the_bytes() -> None:
    seg = Segment.from_bytes(bytes(_bytes()))
    assert seg.ids == ["a", "b"] and seg.zones == ["rom", "save"] and seg.tags == [("ops",), ()]
    assert len(seg.vectors) == 2 * ENGINE.dim and len(seg.scales) == 2
    start, count = seg.postings["beta"]
    assert count == 2 and [seg.ids[seg.docs[j]] for j in range(start, start + count)] == ["a", "b"]


def test_damaged_postings_offsets_are_refused() -> None:
    data = _bytes()
    postings = Packed.parse(bytes(data)).sections["docs"][1]
    _refused_everywhere(_put_u32(bytearray(data), "starts", -1, postings + 1))  # past the postings
    _refused_everywhere(_put_u32(bytearray(data), "starts", 0, 1))  # the first term starts at 1


def test_damaged_id_offsets_are_refused() -> None:
    data = _bytes()
    with pytest.raises(SegmentError, match="id_offs"):
        Segment.from_bytes(_put_u32(bytearray(data), "id_offs", 0, 1))


def test_damaged_doc_tags_are_refused() -> None:
    data = _bytes()
    with pytest.raises(SegmentError, match="tags"):
        Segment.from_bytes(_put_u32(bytearray(data), "doc_tags", 0, 5))  # tag 5 of a 1-tag vocabulary
    with pytest.raises(SegmentError, match="tags"):
        Segment.from_bytes(_put_u32(bytearray(data), "doc_tag_offs", 0, 1))


def test_a_forged_header_with_a_negative_count_or_no_dimensions_is_refused() -> None:
    data = bytes(_bytes())
    assert Segment.from_bytes(_repack(data)).ids == ["a", "b"]  # the re-layout itself is faithful
    for header in ({"tags": -2}, {"postings": -2}, {"n": -1}, {"docTags": -1}):
        with pytest.raises(SegmentError, match="negative"):
            Packed.parse(_repack(data, **header))
    flat = Segment.build("flat-0", 0, [_flat_doc("a")]).to_bytes()
    with pytest.raises(SegmentError, match="negative"):
        Packed.parse(flat)


def _flat_doc(rid: str) -> Doc:
    """A doc with no vector (an engine of zero dimensions: no segment may claim one)."""
    return Doc(rid, "rom", (), ["alpha"], [])


def test_live_masks_hide_superseded_and_deleted_docs() -> None:
    """Compaction keeps exactly the live docs: the last segment holding an id wins, deleted ids go."""
    from acx.core.search.segment import live_masks

    def seg(*ids: str) -> Segment:
        return Segment.build(ENGINE.id, ENGINE.dim, to_docs([_rec(i, f"text {i}") for i in ids], ENGINE))

    s1, s2, s3 = seg("a", "b", "c"), seg("b", "d"), seg("c")
    assert live_masks([s1, s2, s3]) == [[True, False, False], [True, True], [True]]
    assert live_masks([s1, s2, s3], {"d", "a"}) == [[False, False, False], [True, False], [True]]
    assert live_masks([s1]) == [[True, True, True]]
    assert live_masks([s1], frozenset({"b"})) == [[True, False, True]]
    assert live_masks([]) == []


def test_a_doc_and_a_parsed_segment_are_immutable() -> None:
    import dataclasses

    (doc,) = to_docs([_rec("a", "alpha")], ENGINE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.id = "b"  # type: ignore[misc]
    packed = Packed.parse(bytes(_bytes()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        packed.n = 99  # type: ignore[misc]


def test_a_merged_or_forgotten_segment_is_the_segment_built_from_its_docs() -> None:
    """Compaction and forget rewrite segments by remapping postings; what they write must read back
    and hold, for every term, the postings a fresh build of the surviving docs holds."""
    from acx.core.search.segment import merge

    recs = [_rec("a", "alpha beta"), _rec("b", "beta gamma"), _rec("c", "alpha delta")]
    a = Segment.build(ENGINE.id, ENGINE.dim, to_docs(recs[:2], ENGINE))
    b = Segment.build(ENGINE.id, ENGINE.dim, to_docs(recs[2:], ENGINE))
    fresh = Segment.build(ENGINE.id, ENGINE.dim, to_docs(recs, ENGINE))
    merged = Segment.from_bytes(merge([a, b], ENGINE.id, ENGINE.dim, lambda s, i: True).to_bytes())
    assert merged.ids == fresh.ids and merged.postings == fresh.postings
    assert list(merged.docs) == list(fresh.docs) and list(merged.tfs) == list(fresh.tfs)
    kept = Segment.from_bytes(fresh.without({"a"}).to_bytes())
    rebuilt = Segment.build(ENGINE.id, ENGINE.dim, to_docs(recs[1:], ENGINE))
    assert kept.ids == ["b", "c"] and kept.postings == rebuilt.postings
    assert list(kept.docs) == list(rebuilt.docs)
