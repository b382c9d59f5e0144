"""An index segment: the lexical postings and the vectors of one batch of memories, as one S3 object.

A segment is immutable. Ingest writes one per accepted batch (so an upload costs O(batch)),
compaction merges several into one, and forget rewrites the segment holding a memory without it
(the terms and the vector of a forgotten memory are derived plaintext: they must go too).

Binary layout (``ACXSEG2``, little-endian): ``MAGIC``, uint32 header length, a small JSON header
(engine, dim and the counts; never a per-doc or per-term list), then fixed sections, each starting
on an 8-byte boundary so numpy maps it in place (``np.frombuffer``, no copy, no Python object per
term or per doc): ids as one UTF-8 text plus code-point offsets, the sorted vocabulary the same way
plus each term's first posting, the tag vocabulary, each doc's tags (CSR), zones (uint8), lengths
(uint32), 64-bit id hashes (to find superseded docs across segments without decoding ids), postings
doc ordinals (uint32) and term frequencies (uint8, capped at 255: BM25's tf part is saturated long
before), vectors (int8, ``dim`` per doc) and per-vector scales (float32). Vectors are quantised to
int8 with one scale per vector: 4x smaller than float32, and the cosine ranking moves by less than
the quantisation step (tested).

``Segment`` is the pure-Python form (build, merge, forget: the ingest and verify functions have no
numpy); ``Packed`` is the parsed layout over the bytes, which the api function's ``IndexView`` reads.
"""

from __future__ import annotations

import hashlib
import math
import struct
import sys
from array import array
from collections import Counter
from dataclasses import dataclass
from itertools import chain, pairwise
from typing import Any

import orjson

MAGIC = b"ACXSEG2\n"
MAX_TF = 255
ZONES = ("rom", "save")
ALIGN = 8

# (name, array typecode or "text") in file order; counts come from the header.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("ids_text", "text"),
    ("id_offs", "I"),
    ("terms_text", "text"),
    ("term_offs", "I"),
    ("starts", "I"),
    ("tags_text", "text"),
    ("tag_offs", "I"),
    ("doc_tag_offs", "I"),
    ("doc_tags", "I"),
    ("zones", "B"),
    ("lengths", "I"),
    ("id_hash", "Q"),
    ("docs", "I"),
    ("tfs", "B"),
    ("vectors", "b"),
    ("scales", "f"),
)


class SegmentError(ValueError):
    """The bytes are not a segment this code wrote (truncated, wrong magic, inconsistent sizes)."""


@dataclass(frozen=True)
class Doc:
    """What the index keeps of one memory: its id, zone and tags (for filters), terms and vector."""

    id: str
    zone: str
    tags: tuple[str, ...]
    terms: list[str]
    vector: list[float]


def _le(a: array) -> array:
    if sys.byteorder != "little":  # pragma: no cover - Lambda (arm64, x86_64) is little-endian
        a.byteswap()
    return a


def id_hash(record_id: str) -> int:
    """64-bit hash of an id: lets the api function compare ids across segments as integers (a
    collision is checked against the ids themselves, so it can never hide a live memory)."""
    return int.from_bytes(hashlib.blake2b(record_id.encode("utf-8"), digest_size=8).digest(), "little")


#: Distinct values up to which :func:`quantise` rounds each distinct value once (a hash engine's
#: vector has a handful: its entries are token counts over one norm, most of them zero).
FEW_VALUES = 32


def quantise(vector: list[float]) -> tuple[list[int], float]:
    """int8 codes and the scale that maps them back (value ~= code * scale).

    A ``local-hash-128`` vector holds few distinct values (~38 of 128 entries non-zero, from a few
    counts), so each distinct value is multiplied and rounded once and the codes are looked up: the
    same float operation on the same value, so the same codes (``0.0`` and ``-0.0`` share an entry
    and both round to ``0``). Segment building spent ~40 us per doc here (py-spy of an ingest, issue
    17). Many distinct values, or a NaN, an infinity or a peak so small that ``127 / peak``
    overflows, take the plain per-entry formula, whose error is then the one raised.
    """
    distinct = set(vector)
    if len(distinct) <= FEW_VALUES and math.isfinite(sum(distinct)):
        peak = max(max(distinct, default=0.0), -min(distinct, default=0.0))
        if peak == 0.0:
            return [0] * len(vector), 0.0
        inv = 127.0 / peak
        if math.isfinite(inv):
            code = {x: round(inv * x) for x in distinct}
            return list(map(code.__getitem__, vector)), peak / 127.0
    peak = max(max(vector, default=0.0), -min(vector, default=0.0))
    if peak == 0.0:
        # Only here with zeros and a NaN that max/min skipped (it came after a zero; zeros alone took
        # the lookup above): refused with the error round() gives a NaN that comes first.
        raise ValueError("cannot convert float NaN to integer")
    inv = 127.0 / peak
    return list(map(round, map(inv.__mul__, vector))), peak / 127.0


def _texts(values: list[str]) -> tuple[bytes, array]:
    """One UTF-8 text and the code-point offsets of each value in it (``len(values) + 1``)."""
    offs = array("I", [0])
    at = 0
    for v in values:
        at += len(v)
        offs.append(at)
    return "".join(values).encode("utf-8"), offs


def _split(text: str, offs: Any) -> list[str]:
    return [text[offs[i] : offs[i + 1]] for i in range(len(offs) - 1)]


@dataclass
class Segment:
    """Postings and vectors of ``n`` docs; term ``terms[i]`` owns postings ``starts[i]:starts[i+1]``."""

    engine: str
    dim: int
    ids: list[str]
    zones: list[str]
    tags: list[tuple[str, ...]]
    lengths: array
    terms: list[str]
    starts: array
    docs: array
    tfs: array
    vectors: array
    scales: array

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def postings(self) -> dict[str, tuple[int, int]]:
        """``term -> (start, count)`` into ``docs``/``tfs`` (pure-Python readers and tests)."""
        s = self.starts
        return {t: (s[i], s[i + 1] - s[i]) for i, t in enumerate(self.terms)}

    @classmethod
    def build(cls, engine: str, dim: int, docs: list[Doc]) -> Segment:
        """A segment of ``docs`` (ids unique within it: the last one of an id wins)."""
        latest: dict[str, Doc] = {}
        for doc in docs:
            latest.pop(doc.id, None)
            latest[doc.id] = doc
        ordered = list(latest.values())
        by_term: dict[str, list[int]] = {}  # term -> [ordinal, tf, ordinal, tf, ...]
        get = by_term.get
        lengths = array("I")
        vectors = array("b")
        scales = array("f")
        for ordinal, doc in enumerate(ordered):
            lengths.append(len(doc.terms))
            for term, tf in Counter(doc.terms).items():
                plist = get(term)
                if plist is None:
                    by_term[term] = [ordinal, tf]
                else:
                    plist += (ordinal, tf)  # interleaved: one list operation per posting
            if len(doc.vector) != dim:
                raise SegmentError(
                    f"vector of {doc.id!r} has {len(doc.vector)} dims, engine {engine} has {dim}"
                )
            codes, scale = quantise(doc.vector)
            vectors.extend(codes)
            scales.append(scale)
        terms = sorted(by_term)
        starts = array("I", [0])
        at = 0
        for term in terms:
            at += len(by_term[term]) >> 1
            starts.append(at)
        flat = list(chain.from_iterable(by_term[t] for t in terms))
        doc_arr = array("I", flat[0::2])
        tf_list = flat[1::2]
        if tf_list and max(tf_list) > MAX_TF:
            tf_list = [tf if tf <= MAX_TF else MAX_TF for tf in tf_list]
        return cls(
            engine,
            dim,
            [d.id for d in ordered],
            [d.zone for d in ordered],
            [d.tags for d in ordered],
            lengths,
            terms,
            starts,
            doc_arr,
            array("B", tf_list),
            vectors,
            scales,
        )

    def without(self, drop: set[str]) -> Segment:
        """This segment minus the docs whose id is in ``drop`` (their terms vanish from the postings)."""
        return merge([self], self.engine, self.dim, lambda seg, i: seg.ids[i] not in drop)

    def to_bytes(self) -> bytes:
        n = len(self.ids)
        if len(self.vectors) != n * self.dim or len(self.scales) != n or len(self.lengths) != n:
            raise SegmentError("segment arrays disagree with its doc count")
        vocab = sorted({t for tags in self.tags for t in tags})
        tag_no = {t: i for i, t in enumerate(vocab)}
        doc_tag_offs = array("I", [0])
        doc_tags = array("I")
        for tags in self.tags:
            doc_tags.extend(tag_no[t] for t in tags)
            doc_tag_offs.append(len(doc_tags))
        ids_text, id_offs = _texts(self.ids)
        terms_text, term_offs = _texts(self.terms)
        tags_text, tag_offs = _texts(vocab)
        values: dict[str, Any] = {
            "ids_text": ids_text,
            "id_offs": id_offs,
            "terms_text": terms_text,
            "term_offs": term_offs,
            "starts": self.starts,
            "tags_text": tags_text,
            "tag_offs": tag_offs,
            "doc_tag_offs": doc_tag_offs,
            "doc_tags": doc_tags,
            "zones": array("B", [ZONES.index(z) for z in self.zones]),
            "lengths": self.lengths,
            "id_hash": array("Q", map(id_hash, self.ids)),
            "docs": self.docs,
            "tfs": self.tfs,
            "vectors": self.vectors,
            "scales": self.scales,
        }
        header = orjson.dumps(
            {
                "engine": self.engine,
                "dim": self.dim,
                "n": n,
                "terms": len(self.terms),
                "postings": len(self.docs),
                "tags": len(vocab),
                "docTags": len(doc_tags),
                "text": [len(ids_text), len(terms_text), len(tags_text)],
            }
        )
        parts = [MAGIC, struct.pack("<I", len(header)), header]
        size = len(MAGIC) + 4 + len(header)
        for name, code in SECTIONS:
            pad = -size % ALIGN
            blob = values[name] if code == "text" else _le(array(code, values[name])).tobytes()
            parts += [b"\x00" * pad, blob]
            size += pad + len(blob)
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> Segment:
        """Parse a segment; every inconsistency is a ``SegmentError`` (a corrupt index is rebuilt)."""
        return Packed.parse(data).segment()


@dataclass(frozen=True)
class Packed:
    """A segment's bytes and where each section lies in them: parsing decodes nothing per doc."""

    data: bytes
    engine: str
    dim: int
    n: int
    sections: dict[str, tuple[int, int]]  # name -> (byte offset, item count)

    def __len__(self) -> int:
        return self.n

    @classmethod
    def parse(cls, data: bytes) -> Packed:
        if len(data) < len(MAGIC) + 4 or data[: len(MAGIC)] != MAGIC:
            raise SegmentError("not an index segment")
        (hlen,) = struct.unpack_from("<I", data, len(MAGIC))
        start = len(MAGIC) + 4
        try:
            head: dict[str, Any] = orjson.loads(data[start : start + hlen])
            engine, dim, n = str(head["engine"]), int(head["dim"]), int(head["n"])
            v, p, t, dt = int(head["terms"]), int(head["postings"]), int(head["tags"]), int(head["docTags"])
            ids_len, terms_len, tags_len = (int(x) for x in head["text"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise SegmentError(f"bad segment header: {exc}") from None
        counts = {
            "ids_text": ids_len,
            "id_offs": n + 1,
            "terms_text": terms_len,
            "term_offs": v + 1,
            "starts": v + 1,
            "tags_text": tags_len,
            "tag_offs": t + 1,
            "doc_tag_offs": n + 1,
            "doc_tags": dt,
            "zones": n,
            "lengths": n,
            "id_hash": n,
            "docs": p,
            "tfs": p,
            "vectors": n * dim,
            "scales": n,
        }
        if min(counts.values()) < 0 or dim <= 0:
            raise SegmentError("bad segment header: negative count")
        sections: dict[str, tuple[int, int]] = {}
        offset = start + hlen
        for name, code in SECTIONS:
            offset += -offset % ALIGN
            size = counts[name] * (1 if code == "text" else array(code).itemsize)
            if offset + size > len(data):
                raise SegmentError("segment is truncated")
            sections[name] = (offset, counts[name])
            offset += size
        if offset != len(data):
            raise SegmentError("segment has trailing bytes")
        return cls(data, engine, dim, n, sections)

    def raw(self, name: str) -> memoryview:
        """The bytes of one section (no copy)."""
        offset, count = self.sections[name]
        code = dict(SECTIONS)[name]
        size = count * (1 if code == "text" else array(code).itemsize)
        return memoryview(self.data)[offset : offset + size]

    def array(self, name: str) -> array:
        out = array(dict(SECTIONS)[name])
        out.frombytes(self.raw(name))
        return _le(out)

    def text(self, name: str) -> str:
        try:
            return str(self.raw(name), "utf-8")
        except UnicodeDecodeError:
            raise SegmentError(f"segment {name} is not UTF-8") from None

    def strings(self, text: str, offs_name: str) -> list[str]:
        offs = self.array(offs_name)
        if offs[0] != 0 or offs[-1] != len(text) or any(a > b for a, b in pairwise(offs)):
            raise SegmentError(f"segment {offs_name} do not fit its text")
        return _split(text, offs)

    def segment(self) -> Segment:
        """The pure-Python form, checked throughout (forget and compaction rewrite from it)."""
        n = self.n
        ids = self.strings(self.text("ids_text"), "id_offs")
        terms = self.strings(self.text("terms_text"), "term_offs")
        vocab = self.strings(self.text("tags_text"), "tag_offs")
        starts, docs = self.array("starts"), self.array("docs")
        if starts[0] != 0 or starts[-1] != len(docs) or any(a > b for a, b in pairwise(starts)):
            raise SegmentError("segment postings do not fit their terms")
        if docs and max(docs) >= n:
            raise SegmentError("segment postings name a doc it does not hold")
        dto, dtags = self.array("doc_tag_offs"), self.array("doc_tags")
        if dto[0] != 0 or dto[-1] != len(dtags) or (dtags and max(dtags) >= len(vocab)):
            raise SegmentError("segment tags do not fit their vocabulary")
        zones = self.array("zones")
        if zones and max(zones) >= len(ZONES):
            raise SegmentError("segment has an unknown zone")
        return Segment(
            self.engine,
            self.dim,
            ids,
            [ZONES[z] for z in zones],
            [tuple(vocab[j] for j in dtags[dto[i] : dto[i + 1]]) for i in range(n)],
            self.array("lengths"),
            terms,
            starts,
            docs,
            self.array("tfs"),
            self.array("vectors"),
            self.array("scales"),
        )


def merge(segments: list[Segment], engine: str, dim: int, keep: Any) -> Segment:
    """One segment of the docs of ``segments`` for which ``keep(segment, ordinal)`` is true.

    Postings are remapped, not re-tokenised: compaction and forget never need the plaintext.
    """
    remap: list[list[int]] = []  # old ordinal -> new ordinal, -1 = dropped
    ids: list[str] = []
    zones: list[str] = []
    tags: list[tuple[str, ...]] = []
    lengths = array("I")
    vectors = array("b")
    scales = array("f")
    for seg in segments:
        if seg.engine != engine or seg.dim != dim:
            raise SegmentError(f"segment built by {seg.engine} cannot merge into an index of {engine}")
        mapping = [-1] * len(seg)
        for i in range(len(seg)):
            if not keep(seg, i):
                continue
            mapping[i] = len(ids)
            ids.append(seg.ids[i])
            zones.append(seg.zones[i])
            tags.append(seg.tags[i])
            lengths.append(seg.lengths[i])
            vectors.extend(seg.vectors[i * dim : (i + 1) * dim])
            scales.append(seg.scales[i])
        remap.append(mapping)
    by_term: dict[str, tuple[array, array]] = {}
    for seg, mapping in zip(segments, remap, strict=True):
        kept_all = bool(mapping) and -1 not in mapping
        base = mapping[0] if mapping else 0
        s = seg.starts
        for ti, term in enumerate(seg.terms):
            lo, hi = s[ti], s[ti + 1]
            if kept_all:
                kept_docs = array("I", [d + base for d in seg.docs[lo:hi]]) if base else seg.docs[lo:hi]
                kept_tfs = seg.tfs[lo:hi]
            else:
                kept_docs = array("I")
                kept_tfs = array("B")
                for j in range(lo, hi):
                    new = mapping[seg.docs[j]]
                    if new >= 0:
                        kept_docs.append(new)
                        kept_tfs.append(seg.tfs[j])
            if kept_docs:
                have = by_term.get(term)
                if have is None:
                    by_term[term] = (array("I", kept_docs), array("B", kept_tfs))
                else:
                    have[0].extend(kept_docs)
                    have[1].extend(kept_tfs)
    terms = sorted(by_term)
    starts = array("I", [0])
    doc_arr = array("I")
    tf_arr = array("B")
    for term in terms:
        d, t = by_term[term]
        doc_arr.extend(d)
        tf_arr.extend(t)
        starts.append(len(doc_arr))
    return Segment(engine, dim, ids, zones, tags, lengths, terms, starts, doc_arr, tf_arr, vectors, scales)


def live_masks(segments: list[Segment], deleted: set[str] | frozenset[str] = frozenset()) -> list[list[bool]]:
    """Which docs of each segment are live: not ``deleted`` and not superseded by the same id in a
    later segment (pure Python: compaction in the verify function uses it without numpy)."""
    seen: set[str] = set(deleted)
    masks: list[list[bool]] = [[] for _ in segments]
    for si in range(len(segments) - 1, -1, -1):
        ids = segments[si].ids
        masks[si] = [True] * len(ids) if not seen else [rid not in seen for rid in ids]
        seen.update(ids)
    return masks
