"""Ranking over a package's segments: BM25 (lexical), cosine (vector), fused by weighted RRF.

Building and merging segments is pure Python (the ingest and verify functions run it); scoring uses
numpy, imported lazily by the api function only (see ``IndexView``; the measurement that decided it
is in docs/ARCHITECTURE.md).

What it does NOT stop: a memory written to rank first (keyword stuffing) does rank first for those
words; ranking says what is relevant, never what is true (hence the advisory banner on results).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from acx.core.search.segment import Segment, live_masks

K1 = 1.2
B = 0.75
RRF_K = 60
POOL = 1000  # depth of each signal's ranking that the fusion reads (at rank 1000 RRF adds 1/1060)
# Weight of the vector signal in the fusion: a hash engine only sees surface tokens, as BM25 does
# but worse (nDCG@10 0.139 against 0.35 on Cranfield), so it may only break near-ties.
LEXICAL_ENGINE_WEIGHT = 0.1
SEMANTIC_ENGINE_WEIGHT = 1.0


class EngineMismatch(ValueError):
    """A query vector from one engine against an index built by another: refused, never compared."""


@dataclass(frozen=True)
class Hit:
    """One ranked memory: fused score and what each signal said about it."""

    id: str
    score: float
    lexical_rank: int | None = None
    lexical_score: float | None = None
    vector_rank: int | None = None
    vector_score: float | None = None
    terms: tuple[str, ...] = ()


@dataclass
class IndexView:
    """The live documents of a package across its segments (later segments supersede earlier ones).

    ``deleted`` holds ids retired by merges: hidden here, dropped physically at compaction. Scoring
    runs on numpy views of the segments' arrays (zero-copy): one vectorised pass per query term and
    one matrix-vector product for the vectors, so a query costs milliseconds at 100,000 records
    where the same loops in Python cost seconds (bench/search.py). numpy is imported here only: the
    ingest and verify functions, which build and merge segments, never load it.
    """

    engine: str
    dim: int
    segments: list[Segment]
    deleted: frozenset[str] = frozenset()
    live: list[Any] = field(default_factory=list)
    n: int = 0
    avgdl: float = 0.0

    def __post_init__(self) -> None:
        import numpy as np

        for seg in self.segments:
            if seg.engine != self.engine or seg.dim != self.dim:
                raise EngineMismatch(f"segment built by {seg.engine} in an index of {self.engine}")
        live = [np.array(m, dtype=bool) for m in live_masks(self.segments, self.deleted)]
        self.live = live
        self._all_live = [bool(m.all()) for m in live]
        self._np = [_arrays(seg) for seg in self.segments]
        self.n = int(sum(int(m.sum()) for m in live))
        total = sum(float(a["lengths"][m].sum()) for a, m in zip(self._np, live, strict=True))
        self.avgdl = total / self.n if self.n else 0.0
        self._slope = np.float32(K1 * B / (self.avgdl or 1.0))
        self._impacts: list[dict[str, Any]] = [{} for _ in self.segments]

    def _impact(self, si: int, term: str, start: int, count: int) -> Any:
        """BM25's tf part of a term's postings in one segment (it depends on the package's avgdl),
        computed on first use and kept for the view's life: a query then costs one gather-add per term,
        and a cold load does not pay for the terms nobody searched."""
        import numpy as np

        cached = self._impacts[si].get(term)
        if cached is None:
            arrays = self._np[si]
            tf = arrays["tfs"][start : start + count].astype(np.float32)
            dl = arrays["lengths"][arrays["docs"][start : start + count]].astype(np.float32)
            cached = tf / (tf + np.float32(K1 * (1.0 - B)) + self._slope * dl)
            self._impacts[si][term] = cached
        return cached

    def ids(self) -> Iterable[str]:
        for seg, mask in zip(self.segments, self.live, strict=True):
            for i, rid in enumerate(seg.ids):
                if mask[i]:
                    yield rid

    def _allowed(self, zone: str | None, tag: str | None) -> list[Any]:
        import numpy as np

        if zone is None and tag is None:
            return self.live
        out = []
        for seg, mask in zip(self.segments, self.live, strict=True):
            keep = np.fromiter(
                (
                    (zone is None or z == zone) and (tag is None or tag in t)
                    for z, t in zip(seg.zones, seg.tags, strict=True)
                ),
                dtype=bool,
                count=len(seg),
            )
            out.append(mask & keep)
        return out

    def lexical(self, terms: list[str], allowed: list[Any]) -> list[Any]:
        """BM25 (Lucene's idf, k1=1.2, b=0.75) per segment: a float32 array, 0 where no term matched."""
        import numpy as np

        scores = [np.zeros(len(s), dtype=np.float32) for s in self.segments]
        if not self.n:
            return scores
        for term, qtf in _counts(terms).items():
            found = []
            df = 0
            for si, seg in enumerate(self.segments):
                where = seg.postings.get(term)
                if where is None:
                    continue
                start, count = where
                arrays = self._np[si]
                docs = arrays["docs"][start : start + count]
                impact = self._impact(si, term, start, count)
                if not self._all_live[si]:
                    alive = self.live[si][docs]
                    docs, impact = docs[alive], impact[alive]
                df += len(docs)
                found.append((si, docs, impact))
            if not df:
                continue
            idf = np.float32(math.log(1.0 + (self.n - df + 0.5) / (df + 0.5)) * qtf)
            for si, docs, impact in found:
                scores[si][docs] += idf * impact  # a term's postings hold each doc once
        return [np.where(ok, s, 0.0).astype(np.float32) for s, ok in zip(scores, allowed, strict=True)]

    def vector(self, query: list[float], allowed: list[Any]) -> list[Any]:
        """Cosine of the query with every allowed live doc (int8 vectors x per-vector scale)."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32)
        nz = np.flatnonzero(q)
        out = []
        for arrays, ok in zip(self._np, allowed, strict=True):
            if len(nz) * 4 < self.dim:  # a hash engine's query touches a few dimensions
                dots = arrays["columns"][nz].astype(np.float32).T @ q[nz]
            else:
                dots = arrays["dense"]() @ q
            sims = dots * arrays["scales"]
            out.append(np.where(ok & (sims > 0), sims, 0.0).astype(np.float32))
        return out

    def search(
        self,
        terms: list[str],
        query_vector: list[float] | None,
        engine: str | None,
        *,
        k: int,
        zone: str | None = None,
        tag: str | None = None,
        vector_weight: float = SEMANTIC_ENGINE_WEIGHT,
    ) -> list[Hit]:
        """The top ``k`` live docs matching the filters, by weighted reciprocal rank fusion."""
        if query_vector is not None:
            if engine != self.engine or len(query_vector) != self.dim:
                raise EngineMismatch(
                    f"query embedded by {engine} (dim {len(query_vector)}), index built by "
                    f"{self.engine} (dim {self.dim})"
                )
        import numpy as np

        allowed = self._allowed(zone, tag)
        offsets = np.cumsum([0] + [len(seg) for seg in self.segments])
        total = int(offsets[-1])
        lex = _concat(self.lexical(terms, allowed), total)
        use_vec = query_vector is not None and vector_weight > 0
        vec = _concat(self.vector(query_vector, allowed), total) if use_vec and query_vector else None
        fused = np.zeros(total, dtype=np.float64)
        lex_rank = _rank_into(lex, fused, 1.0)
        vec_rank = _rank_into(vec, fused, vector_weight) if vec is not None else None
        top = _top(fused, k)
        query_terms = set(terms)
        hits = []
        for g in top.tolist():
            si = int(np.searchsorted(offsets, g, side="right")) - 1
            i = g - int(offsets[si])
            lr = int(lex_rank[g]) if lex_rank is not None and lex_rank[g] else None
            vr = int(vec_rank[g]) if vec_rank is not None and vec_rank[g] else None
            hits.append(
                Hit(
                    id=self.segments[si].ids[i],
                    score=float(fused[g]),
                    lexical_rank=lr,
                    lexical_score=float(lex[g]) if lr else None,
                    vector_rank=vr,
                    vector_score=float(vec[g]) if vr and vec is not None else None,
                    terms=tuple(sorted(t for t in query_terms if self._holds((si, i), t))),
                )
            )
        return hits

    def _holds(self, key: tuple[int, int], term: str) -> bool:
        import numpy as np

        seg = self.segments[key[0]]
        where = seg.postings.get(term)
        if where is None:
            return False
        start, count = where
        docs = self._np[key[0]]["docs"][start : start + count]
        at = int(np.searchsorted(docs, key[1]))  # postings are sorted by ordinal
        return at < count and int(docs[at]) == key[1]


def _arrays(seg: Segment) -> dict[str, Any]:
    """Zero-copy numpy views of a segment's arrays (and its vectors as float32, made on first use)."""
    import numpy as np

    vectors = (
        np.frombuffer(seg.vectors, dtype=np.int8).reshape(len(seg), seg.dim)
        if len(seg)
        else np.zeros((0, seg.dim), dtype=np.int8)
    )
    dense: list[Any] = []

    def as_float() -> Any:
        if not dense:
            dense.append(vectors.astype(np.float32))
        return dense[0]

    return {
        "columns": np.ascontiguousarray(vectors.T),  # dimension-major: a sparse query reads few rows
        "docs": np.frombuffer(seg.docs, dtype=np.uint32) if len(seg.docs) else np.zeros(0, np.uint32),
        "tfs": np.frombuffer(seg.tfs, dtype=np.uint16) if len(seg.tfs) else np.zeros(0, np.uint16),
        "lengths": np.frombuffer(seg.lengths, dtype=np.uint32) if len(seg) else np.zeros(0, np.uint32),
        "scales": np.frombuffer(seg.scales, dtype=np.float32) if len(seg) else np.zeros(0, np.float32),
        "vectors": vectors,
        "dense": as_float,
    }


def _concat(per_segment: list[Any], total: int) -> Any:
    import numpy as np

    return np.concatenate(per_segment) if per_segment else np.zeros(total, dtype=np.float32)


def _order(scores: Any, candidates: Any) -> Any:
    """``candidates`` sorted best first; ties by position, so a ranking is reproducible."""
    import numpy as np

    return candidates[np.lexsort((candidates, -scores[candidates]))]


def _rank_into(scores: Any, fused: Any, weight: float, depth: int = POOL) -> Any:
    """Add ``weight / (RRF_K + rank)`` for the best ``depth`` non-zero scores; returns the 1-based
    ranks (0 = unranked). Deeper docs get nothing: at rank 1000 an RRF term is already 1/1060."""
    import numpy as np

    ranks = np.zeros(len(scores), dtype=np.int32)
    cand = np.flatnonzero(scores)
    if len(cand) > depth:
        cand = cand[np.argpartition(-scores[cand], depth - 1)[:depth]]
    ordered = _order(scores, cand)
    ranks[ordered] = np.arange(1, len(ordered) + 1, dtype=np.int32)
    fused[ordered] += weight / (RRF_K + ranks[ordered].astype(np.float64))
    return ranks


def _top(fused: Any, k: int) -> Any:
    import numpy as np

    cand = np.flatnonzero(fused)
    if len(cand) > k:
        cand = cand[np.argpartition(-fused[cand], k - 1)[:k]]
    return _order(fused, cand)


def _counts(terms: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in terms:
        out[t] = out.get(t, 0) + 1
    return out


def vector_weight(lexical_engine: bool) -> float:
    """The fusion weight of an engine's vector signal (see the constants above)."""
    return LEXICAL_ENGINE_WEIGHT if lexical_engine else SEMANTIC_ENGINE_WEIGHT
