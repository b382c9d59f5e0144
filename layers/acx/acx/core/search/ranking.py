"""Ranking over a package's segments: BM25 (lexical), cosine (vector), fused by weighted RRF.

Pure Python on purpose: the Lambda layer stays small (no numpy/scipy), and the cost per query is
bounded by the postings of the query's terms, not by the package size (see bench/search.py).

What it does NOT stop: a memory written to rank first (keyword stuffing) does rank first for those
words; ranking says what is relevant, never what is true (hence the advisory banner on results).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from acx.core.search.segment import Segment

K1 = 1.2
B = 0.75
RRF_K = 60
POOL = 1000  # lexical candidates the vector signal rescores when a full scan is over budget
SCAN_BUDGET = 400_000  # multiply-adds the vector signal may spend per query on a full scan
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

    ``deleted`` holds ids retired by merges: hidden here, dropped physically at compaction.
    """

    engine: str
    dim: int
    segments: list[Segment]
    deleted: frozenset[str] = frozenset()
    live: list[bytearray] = field(default_factory=list)
    n: int = 0
    avgdl: float = 0.0

    def __post_init__(self) -> None:
        for seg in self.segments:
            if seg.engine != self.engine or seg.dim != self.dim:
                raise EngineMismatch(f"segment built by {seg.engine} in an index of {self.engine}")
        seen: set[str] = set(self.deleted)
        live: list[bytearray] = [bytearray(len(s)) for s in self.segments]
        total = 0
        count = 0
        for si in range(len(self.segments) - 1, -1, -1):
            seg = self.segments[si]
            mask = live[si]
            for i, rid in enumerate(seg.ids):
                if rid not in seen:
                    seen.add(rid)
                    mask[i] = 1
                    total += seg.lengths[i]
                    count += 1
        self.live = live
        self.n = count
        self.avgdl = total / count if count else 0.0

    def ids(self) -> Iterable[str]:
        for seg, mask in zip(self.segments, self.live, strict=True):
            for i, rid in enumerate(seg.ids):
                if mask[i]:
                    yield rid

    def _allowed(self, zone: str | None, tag: str | None) -> list[bytearray]:
        if zone is None and tag is None:
            return self.live
        out = []
        for seg, mask in zip(self.segments, self.live, strict=True):
            allowed = bytearray(mask)
            for i in range(len(seg)):
                if allowed[i] and (
                    (zone is not None and seg.zones[i] != zone)
                    or (tag is not None and tag not in seg.tags[i])
                ):
                    allowed[i] = 0
            out.append(allowed)
        return out

    def lexical(self, terms: list[str], allowed: list[bytearray]) -> dict[tuple[int, int], float]:
        """BM25 (Lucene's idf, k1=1.2, b=0.75) of every allowed doc holding a query term."""
        scores: dict[tuple[int, int], float] = {}
        if not self.n:
            return scores
        avgdl = self.avgdl or 1.0
        for term, qtf in _counts(terms).items():
            hits: list[tuple[tuple[int, int], int, int]] = []
            df = 0
            for si, seg in enumerate(self.segments):
                where = seg.postings.get(term)
                if where is None:
                    continue
                start, count = where
                live, ok = self.live[si], allowed[si]
                docs, tfs, lengths = seg.docs, seg.tfs, seg.lengths
                for j in range(start, start + count):
                    d = docs[j]
                    if live[d]:
                        df += 1
                        if ok[d]:
                            hits.append(((si, d), tfs[j], lengths[d]))
            if not hits:
                continue
            idf = math.log(1.0 + (self.n - df + 0.5) / (df + 0.5)) * qtf
            norm = K1 * (1.0 - B)
            slope = K1 * B / avgdl
            for key, tf, dl in hits:
                scores[key] = scores.get(key, 0.0) + idf * tf / (tf + norm + slope * dl)
        return scores

    def vector(
        self, query: list[float], candidates: Iterable[tuple[int, int]] | None
    ) -> dict[tuple[int, int], float]:
        """Cosine of the query with each candidate (every live doc when ``candidates`` is None)."""
        dim = self.dim
        nz = [(j, q) for j, q in enumerate(query) if q != 0.0]
        out: dict[tuple[int, int], float] = {}
        if not nz:
            return out
        if candidates is None:
            candidates = ((si, i) for si, mask in enumerate(self.live) for i in range(len(mask)) if mask[i])
        for si, i in candidates:
            seg = self.segments[si]
            vec, base = seg.vectors, i * dim
            dot = 0.0
            for j, q in nz:
                dot += q * vec[base + j]
            if dot > 0.0:
                out[(si, i)] = dot * seg.scales[i]
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
        allowed = self._allowed(zone, tag)
        lex = self.lexical(terms, allowed)
        vec: dict[tuple[int, int], float] = {}
        if query_vector is not None and vector_weight > 0:
            nnz = sum(1 for q in query_vector if q != 0.0)
            if self.n * max(nnz, 1) <= SCAN_BUDGET:
                vec = {key: s for key, s in self.vector(query_vector, None).items() if _ok(allowed, key)}
            else:
                vec = self.vector(query_vector, heapq.nlargest(POOL, lex, key=lex.__getitem__))
        lex_rank = _ranks(lex)
        vec_rank = _ranks(vec)
        fused: dict[tuple[int, int], float] = {}
        for key, rank in lex_rank.items():
            fused[key] = 1.0 / (RRF_K + rank)
        for key, rank in vec_rank.items():
            fused[key] = fused.get(key, 0.0) + vector_weight / (RRF_K + rank)
        top = heapq.nlargest(k, fused, key=lambda key: (fused[key], -key[0], -key[1]))
        query_terms = set(terms)
        hits = []
        for key in top:
            si, i = key
            hits.append(
                Hit(
                    id=self.segments[si].ids[i],
                    score=fused[key],
                    lexical_rank=lex_rank.get(key),
                    lexical_score=lex.get(key),
                    vector_rank=vec_rank.get(key),
                    vector_score=vec.get(key),
                    terms=tuple(sorted(t for t in query_terms if self._holds(key, t))),
                )
            )
        return hits

    def _holds(self, key: tuple[int, int], term: str) -> bool:
        seg = self.segments[key[0]]
        where = seg.postings.get(term)
        if where is None:
            return False
        start, count = where
        lo, hi = start, start + count
        docs = seg.docs
        while lo < hi:  # postings are sorted by ordinal
            mid = (lo + hi) // 2
            if docs[mid] < key[1]:
                lo = mid + 1
            else:
                hi = mid
        return lo < start + count and docs[lo] == key[1]


def _ok(allowed: list[bytearray], key: tuple[int, int]) -> bool:
    return bool(allowed[key[0]][key[1]])


def _counts(terms: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in terms:
        out[t] = out.get(t, 0) + 1
    return out


def _ranks(scores: dict[tuple[int, int], float], depth: int = POOL) -> dict[tuple[int, int], int]:
    """1-based ranks of the best ``depth``, best first; ties broken by position (reproducible).

    Deeper docs get nothing from the signal: at rank 1000 an RRF term is already 1/1060."""
    ordered = heapq.nsmallest(depth, scores, key=lambda key: (-scores[key], key))
    return {key: r for r, key in enumerate(ordered, start=1)}


def vector_weight(lexical_engine: bool) -> float:
    """The fusion weight of an engine's vector signal (see the constants above)."""
    return LEXICAL_ENGINE_WEIGHT if lexical_engine else SEMANTIC_ENGINE_WEIGHT
