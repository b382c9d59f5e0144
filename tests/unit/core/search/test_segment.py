"""The index segment as bytes read back from S3: a damaged or forged segment is a ``SegmentError``
(the index is then rebuilt from the records), never a wrong answer, a crash or a silent miss. Every
damage here is made at a place the parsed layout names (``Packed.sections``), as a bit flip or a
truncated upload would make it. Also: building, merging and forgetting, quantisation, and the
tags, zones and vectors a segment carries through its bytes.
"""

from __future__ import annotations

import math
import random
import struct

import pytest

from acx.core.embedding import LocalHash128, embed
from acx.core.search import to_docs
from acx.core.search.ranking import IndexView
from acx.core.search.segment import MAGIC, Doc, Packed, Segment, SegmentError, merge, quantise
from tests.factories import search_record

ENGINE = LocalHash128()


def _bytes() -> bytearray:
    seg = Segment.build(
        ENGINE.id,
        ENGINE.dim,
        to_docs(
            [
                search_record("a", "alpha beta", tags=["ops"]),
                search_record("b", "beta gamma", portable=False),
            ],
            ENGINE,
        ),
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
    (doc,) = to_docs([search_record("a", "alpha")], ENGINE)
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
        return Segment.build(
            ENGINE.id, ENGINE.dim, to_docs([search_record(i, f"text {i}") for i in ids], ENGINE)
        )

    s1, s2, s3 = seg("a", "b", "c"), seg("b", "d"), seg("c")
    assert live_masks([s1, s2, s3]) == [[True, False, False], [True, True], [True]]
    assert live_masks([s1, s2, s3], {"d", "a"}) == [[False, False, False], [True, False], [True]]
    assert live_masks([s1]) == [[True, True, True]]
    assert live_masks([s1], frozenset({"b"})) == [[True, False, True]]
    assert live_masks([]) == []


def test_a_doc_and_a_parsed_segment_are_immutable() -> None:
    import dataclasses

    (doc,) = to_docs([search_record("a", "alpha")], ENGINE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.id = "b"  # type: ignore[misc]
    packed = Packed.parse(bytes(_bytes()))
    with pytest.raises(dataclasses.FrozenInstanceError):
        packed.n = 99  # type: ignore[misc]


def test_a_merged_or_forgotten_segment_is_the_segment_built_from_its_docs() -> None:
    """Compaction and forget rewrite segments by remapping postings; what they write must read back
    and hold, for every term, the postings a fresh build of the surviving docs holds."""
    from acx.core.search.segment import merge

    recs = [
        search_record("a", "alpha beta"),
        search_record("b", "beta gamma"),
        search_record("c", "alpha delta"),
    ]
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


def test_segment_bytes_round_trip_and_refuse_damage() -> None:
    seg = Segment.build(
        ENGINE.id,
        ENGINE.dim,
        to_docs([search_record("a", "alpha beta"), search_record("b", "beta gamma")], ENGINE),
    )
    data = seg.to_bytes()
    back = Segment.from_bytes(data)
    assert back.ids == ["a", "b"] and back.postings == seg.postings
    assert list(back.docs) == list(seg.docs) and list(back.vectors) == list(seg.vectors)
    for bad in (data[:-1], data + b"\x00", b"XXXXXXXX" + data[8:], data[:10]):
        with pytest.raises(SegmentError):
            Segment.from_bytes(bad)


def test_int8_vectors_keep_the_cosine_ranking() -> None:
    rng = random.Random(7)
    words = "cache retry deploy queue shard lock timeout parser socket worker".split()
    texts = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(200)]
    query = embed("retry the queue worker")
    exact = [sum(q * d for q, d in zip(query, embed(t), strict=True)) for t in texts]
    approx = []
    for t in texts:
        codes, scale = quantise(embed(t))
        approx.append(sum(q * c for q, c in zip(query, codes, strict=True)) * scale)
    assert max(abs(a - e) for a, e in zip(approx, exact, strict=True)) < 0.02
    top_exact = sorted(range(200), key=lambda i: -exact[i])[:10]
    top_approx = sorted(range(200), key=lambda i: -approx[i])[:10]
    assert len(set(top_exact) & set(top_approx)) >= 9


def test_merge_keeps_postings_consistent() -> None:
    a = Segment.build(
        ENGINE.id,
        ENGINE.dim,
        to_docs([search_record("1", "one two"), search_record("2", "two three")], ENGINE),
    )
    b = Segment.build(ENGINE.id, ENGINE.dim, to_docs([search_record("3", "three four")], ENGINE))
    m = merge([a, b], ENGINE.id, ENGINE.dim, lambda seg, i: seg.ids[i] != "2")
    assert m.ids == ["1", "3"]
    start, count = m.postings["three"]
    assert [m.ids[m.docs[j]] for j in range(start, start + count)] == ["3"]
    assert "2" not in m.ids and m.postings.keys() == {"one", "two", "three", "four"}
    assert len(m.vectors) == 2 * ENGINE.dim


def test_building_merging_and_forgetting_never_import_numpy() -> None:
    """The ingest and verify functions have no numpy (it ships in the api function's SearchLayer)."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from acx.core.embedding import LocalHash128\n"
        "from acx.core.search import to_docs\n"
        "from acx.core.search.segment import Segment, live_masks, merge\n"
        "e = LocalHash128()\n"
        "a = Segment.build(e.id, e.dim, to_docs([{'id': 'x', 'title': 'kestrel', 'portable': True}], e))\n"
        "b = Segment.from_bytes(a.to_bytes()).without({'x'})\n"
        "m = merge([a, b], e.id, e.dim, lambda s, i: live_masks([a, b])[0][i])\n"
        "print(len(m), len(b))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "0"]


def test_a_damaged_segment_is_refused_by_the_view_too() -> None:
    from acx.core.search.segment import Packed

    seg = Segment.build(
        ENGINE.id, ENGINE.dim, to_docs([search_record("a", "alpha beta"), search_record("b", "beta")], ENGINE)
    )
    data = bytearray(seg.to_bytes())
    packed = Packed.parse(bytes(data))
    offset, _ = packed.sections["docs"]
    data[offset : offset + 4] = (99).to_bytes(4, "little")  # a posting naming doc 99 of 2
    with pytest.raises(SegmentError):
        IndexView(ENGINE.id, ENGINE.dim, [Packed.parse(bytes(data))])
    with pytest.raises(SegmentError):
        Segment.from_bytes(bytes(data))


# A truncated upload names its damage, and a merge that drops a doc of a later segment remaps that
# segment's postings as a fresh build of the kept docs would hold them.


def _build(recs: list[dict]) -> Segment:
    return Segment.build(ENGINE.id, ENGINE.dim, to_docs(recs, ENGINE))


@pytest.mark.parametrize("cut", [1, 8, 64])
def test_a_truncated_segment_is_refused_as_truncated(cut: int) -> None:
    data = _build([search_record("a", "alpha beta"), search_record("b", "beta gamma")]).to_bytes()
    with pytest.raises(SegmentError, match="truncated"):
        Packed.parse(data[:-cut])
    with pytest.raises(SegmentError, match="truncated"):
        Segment.from_bytes(data[:-cut])


def test_a_merge_dropping_a_doc_of_a_later_segment_holds_the_postings_of_the_kept_docs() -> None:
    recs = [
        search_record("a", "alpha beta"),
        search_record("b", "beta gamma"),
        search_record("c", "alpha delta"),
        search_record("d", "gamma"),
    ]
    first, second = _build(recs[:1]), _build(recs[1:])
    merged = merge([first, second], ENGINE.id, ENGINE.dim, lambda seg, i: seg.ids[i] != "b")
    kept = [recs[0], recs[2], recs[3]]
    fresh = _build(kept)
    back = Segment.from_bytes(merged.to_bytes())
    assert back.ids == ["a", "c", "d"]
    assert back.postings == fresh.postings
    assert list(back.docs) == list(fresh.docs) and list(back.tfs) == list(fresh.tfs)


# A segment round-trips the tags of each of its docs, an empty tag (records allow one) included, and
# the per-doc tag lists stay with their own docs.


def test_each_docs_tags_come_back_with_that_doc_an_empty_tag_included() -> None:
    recs = [
        search_record("a", "alpha", tags=["ops", ""]),
        search_record("b", "beta", tags=[]),
        search_record("c", "gamma", tags=["", "db", "ops"]),
        search_record("d", "delta", tags=["db"]),
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

    built = Segment.build(ENGINE.id, ENGINE.dim, to_docs([search_record("abc", "alpha", tags=[])], ENGINE))
    data = bytearray(built.to_bytes())
    offset, count = Packed.parse(bytes(data)).sections["ids_text"]
    assert bytes(data[offset : offset + count]) == b"abc"
    data[offset] = 0xFF
    with pytest.raises(SegmentError, match="segment ids_text is not UTF-8"):
        Segment.from_bytes(bytes(data))


def test_a_segment_of_another_engine_with_the_same_dimension_is_not_merged() -> None:
    import pytest

    from acx.core.search.segment import SegmentError, merge

    seg = Segment.build(ENGINE.id, ENGINE.dim, to_docs([search_record("a", "alpha", tags=[])], ENGINE))
    with pytest.raises(SegmentError, match=f"segment built by {ENGINE.id} cannot merge"):
        merge([seg], "other-engine-128", ENGINE.dim, lambda s, i: True)


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


@pytest.mark.parametrize(("repeats", "stored"), [(254, 254), (255, 255), (256, 255), (400, 255)])
def test_a_term_frequency_saturates_at_255(repeats: int, stored: int) -> None:
    """A term repeated past what a byte holds is stored as 255 (building never fails on it), and up
    to 255 it is stored as counted; the bytes read back say the same."""
    (doc,) = to_docs([search_record("a", "alpha " * repeats + "beta")], ENGINE)
    seg = Segment.build(ENGINE.id, ENGINE.dim, [doc])
    got = dict(zip(seg.terms, seg.tfs, strict=True))
    assert got["alpha"] == stored and got["beta"] == 1
    back = Segment.from_bytes(seg.to_bytes())
    assert dict(zip(back.terms, back.tfs, strict=True)) == got
    assert Packed.parse(seg.to_bytes()).n == 1


@pytest.mark.parametrize("peak", [0.5, 1.0, 3.0])
def test_a_vector_of_many_distinct_values_maps_its_peak_to_127(peak: float) -> None:
    """Past FEW_VALUES distinct values quantise takes the per-entry formula: the peak is still +-127
    (an int8), never 128, and the scale maps the codes back."""
    vector = [peak * (i - 20) / 20 for i in range(41)]  # 41 distinct values, the peak at both ends
    codes, scale = quantise(vector)
    assert codes[0] == -127 and codes[-1] == 127 and codes[20] == 0
    assert max(map(abs, codes)) == 127
    assert scale == pytest.approx(peak / 127)
    assert all(abs(c * scale - x) <= scale / 2 + 1e-12 for c, x in zip(codes, vector, strict=True))


@pytest.mark.parametrize(
    "vector", [[0.0, math.nan], [-0.0, math.nan], [0.0] * 40 + [math.nan], [math.nan, 0.0]]
)
def test_a_nan_beside_zeros_is_refused_in_any_position(vector: list[float]) -> None:
    """A NaN is refused (the error round() gives a NaN), also when every other entry is zero and the
    NaN does not come first: it used to give an all-zero vector then, and a ValueError only when first."""
    with pytest.raises(ValueError, match="NaN"):
        quantise(vector)
