"""An index segment: the lexical postings and the vectors of one batch of memories, as one S3 object.

A segment is immutable. Ingest writes one per accepted batch (so an upload costs O(batch)),
compaction merges several into one, and forget rewrites the segment holding a memory without it
(the terms and the vector of a forgotten memory are derived plaintext: they must go too).

Binary layout (little-endian): ``MAGIC``, uint32 header length, the header (JSON: engine, ids,
zones, tags, terms, per-term posting counts), then the blobs: postings doc ordinals (uint32),
postings term frequencies (uint16), document lengths (uint32), vectors (int8, ``dim`` per doc) and
per-vector scales (float32). Vectors are quantised to int8 with one scale per vector: 4x smaller
than float32, and the cosine ranking moves by less than the quantisation step (tested).
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

MAGIC = b"ACXSEG1\n"
MAX_TF = 65535


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


def quantise(vector: list[float]) -> tuple[list[int], float]:
    """int8 codes and the scale that maps them back (value ~= code * scale)."""
    peak = max(map(abs, vector), default=0.0)
    if peak == 0.0:
        return [0] * len(vector), 0.0
    inv = 127.0 / peak
    return [round(v * inv) for v in vector], peak / 127.0


@dataclass
class Segment:
    """Postings and vectors of ``n`` docs. ``postings[term] = (start, count)`` into ``docs``/``tfs``."""

    engine: str
    dim: int
    ids: list[str]
    zones: list[str]
    tags: list[tuple[str, ...]]
    lengths: array
    postings: dict[str, tuple[int, int]]
    docs: array
    tfs: array
    vectors: array
    scales: array
    position: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.position:
            self.position = {rid: i for i, rid in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def build(cls, engine: str, dim: int, docs: list[Doc]) -> Segment:
        """A segment of ``docs`` (ids unique within it: the last one of an id wins)."""
        latest: dict[str, Doc] = {}
        for doc in docs:
            latest.pop(doc.id, None)
            latest[doc.id] = doc
        ordered = list(latest.values())
        by_term: dict[str, list[tuple[int, int]]] = {}
        lengths = array("I")
        vectors = array("b")
        scales = array("f")
        for ordinal, doc in enumerate(ordered):
            lengths.append(len(doc.terms))
            for term, tf in Counter(doc.terms).items():
                plist = by_term.get(term)
                if plist is None:
                    plist = by_term[term] = []
                plist.append((ordinal, tf if tf <= MAX_TF else MAX_TF))
            if len(doc.vector) != dim:
                raise SegmentError(
                    f"vector of {doc.id!r} has {len(doc.vector)} dims, engine {engine} has {dim}"
                )
            codes, scale = quantise(doc.vector)
            vectors.extend(codes)
            scales.append(scale)
        postings: dict[str, tuple[int, int]] = {}
        doc_arr = array("I")
        tf_arr = array("H")
        for term in sorted(by_term):
            plist = by_term[term]
            postings[term] = (len(doc_arr), len(plist))
            doc_arr.extend(p[0] for p in plist)
            tf_arr.extend(p[1] for p in plist)
        return cls(
            engine,
            dim,
            [d.id for d in ordered],
            [d.zone for d in ordered],
            [d.tags for d in ordered],
            lengths,
            postings,
            doc_arr,
            tf_arr,
            vectors,
            scales,
        )

    def without(self, drop: set[str]) -> Segment:
        """This segment minus the docs whose id is in ``drop`` (their terms vanish from the postings)."""
        return merge([self], self.engine, self.dim, lambda seg, i: seg.ids[i] not in drop)

    def to_bytes(self) -> bytes:
        terms = list(self.postings)
        header = orjson.dumps(
            {
                "engine": self.engine,
                "dim": self.dim,
                "ids": self.ids,
                "zones": self.zones,
                "tags": [list(t) for t in self.tags],
                "terms": terms,
                "counts": [self.postings[t][1] for t in terms],
            }
        )
        parts = [MAGIC, struct.pack("<I", len(header)), header]
        for arr in (self.docs, self.tfs, self.lengths, self.vectors, self.scales):
            parts.append(_le(array(arr.typecode, arr)).tobytes())
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> Segment:
        """Parse a segment; every inconsistency is a ``SegmentError`` (a corrupt index is rebuilt)."""
        view = memoryview(data)
        if bytes(view[: len(MAGIC)]) != MAGIC or len(data) < len(MAGIC) + 4:
            raise SegmentError("not an index segment")
        (hlen,) = struct.unpack_from("<I", data, len(MAGIC))
        start = len(MAGIC) + 4
        try:
            head: dict[str, Any] = orjson.loads(view[start : start + hlen])
            engine, dim = str(head["engine"]), int(head["dim"])
            ids, zones = list(head["ids"]), list(head["zones"])
            tags = [tuple(t) for t in head["tags"]]
            terms, counts = list(head["terms"]), list(head["counts"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise SegmentError(f"bad segment header: {exc}") from None
        n, total = len(ids), sum(counts)
        if not (len(zones) == len(tags) == n and len(terms) == len(counts)):
            raise SegmentError("segment header lists disagree in length")
        offset = start + hlen
        arrays = []
        for typecode, count in (("I", total), ("H", total), ("I", n), ("b", n * dim), ("f", n)):
            arr = array(typecode)
            size = arr.itemsize * count
            if offset + size > len(data):
                raise SegmentError("segment is truncated")
            arr.frombytes(view[offset : offset + size])
            arrays.append(_le(arr))
            offset += size
        if offset != len(data):
            raise SegmentError("segment has trailing bytes")
        postings: dict[str, tuple[int, int]] = {}
        at = 0
        for term, count in zip(terms, counts, strict=True):
            postings[term] = (at, count)
            at += count
        docs, tfs, lengths, vectors, scales = arrays
        return cls(engine, dim, ids, zones, tags, lengths, postings, docs, tfs, vectors, scales)


def merge(segments: list[Segment], engine: str, dim: int, keep: Any) -> Segment:
    """One segment of the docs of ``segments`` for which ``keep(segment, ordinal)`` is true.

    Postings are remapped, not re-tokenised: compaction and forget never need the plaintext.
    """
    remap: list[dict[int, int]] = []
    ids: list[str] = []
    zones: list[str] = []
    tags: list[tuple[str, ...]] = []
    lengths = array("I")
    vectors = array("b")
    scales = array("f")
    for seg in segments:
        if seg.engine != engine or seg.dim != dim:
            raise SegmentError(f"segment built by {seg.engine} cannot merge into an index of {engine}")
        mapping: dict[int, int] = {}
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
        for term, (start, count) in seg.postings.items():
            kept_docs = array("I")
            kept_tfs = array("H")
            for j in range(start, start + count):
                new = mapping.get(seg.docs[j])
                if new is not None:
                    kept_docs.append(new)
                    kept_tfs.append(seg.tfs[j])
            if kept_docs:
                have = by_term.get(term)
                if have is None:
                    by_term[term] = (kept_docs, kept_tfs)
                else:
                    have[0].extend(kept_docs)
                    have[1].extend(kept_tfs)
    postings: dict[str, tuple[int, int]] = {}
    doc_arr = array("I")
    tf_arr = array("H")
    for term in sorted(by_term):
        d, t = by_term[term]
        postings[term] = (len(doc_arr), len(d))
        doc_arr.extend(d)
        tf_arr.extend(t)
    return Segment(engine, dim, ids, zones, tags, lengths, postings, doc_arr, tf_arr, vectors, scales)


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
