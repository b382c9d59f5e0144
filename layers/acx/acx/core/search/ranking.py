"""Ranking over a package's segments: BM25 (lexical), cosine (vector), fused over the evidence each
signal has (a weighted mean of reciprocal ranks in which a signal that did not see a doc abstains).

Building and merging segments is pure Python (the ingest and verify functions run it); scoring uses
numpy, imported lazily by the api function only (see ``IndexView``; the measurement that decided it
is in docs/ARCHITECTURE.md).

What it does NOT stop: a memory written to rank first (keyword stuffing) does rank first for those
words; ranking says what is relevant, never what is true (hence the advisory banner on results).

One module: ``IndexView`` is one scoring pass (BM25 over the segments'
postings, cosine over their vectors, the fusion, the live masks) whose arrays are built and shared
once per load; its helpers are the numpy steps of that pass.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from acx.core.search.segment import ZONES, Packed, Segment, id_hash

K1 = 1.2
B = 0.75
RRF_K = 60
POOL = 1000  # depth of each signal's ranking that the fusion reads (at rank 1000: 1/1060)
# Weight of the vector signal in the fusion: a hash engine only sees surface tokens, as BM25 does
# but worse (nDCG@10 0.139 against 0.35 on Cranfield), so it may only break near-ties.
LEXICAL_ENGINE_WEIGHT = 0.1
SEMANTIC_ENGINE_WEIGHT = 1.0
# Share of a signal's weight that stays in a doc's mean when the signal did not score the doc: 0, it
# abstains (missing evidence is not negative evidence); 1 would rank as weighted RRF does. Measured in
# docs/SEARCH-ENGINES.md: 0 costs 0.003 nDCG@10 on Cranfield and finds 9 more paraphrases of 30.
ABSENT_SHARE = 0.0
IMPACT_CACHE_POSTINGS = 4_000_000  # BM25 tf parts kept per view (~8 bytes each with their doc ids)
# Distinct query terms scored (the rarest kept): a 4 KB query holds a few hundred, and each costs a
# scatter-add over its postings, so a long query's cost stays bounded; its commonest words carry the
# least weight (idf) anyway.
MAX_QUERY_TERMS = 64
# Docs per block when a dense query scores int8 vectors: each block is converted into one reused
# float32 buffer and multiplied while it is still in the CPU's cache (a block of 1,024 docs of 384
# dimensions is 1.5 MB), instead of writing a large float copy to memory and reading it back.
DENSE_CHUNK = 1024


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


# Why a ranking is empty (``Ranking.reason``; the API returns it as ``reason``).
NO_MEMORIES = "no_memories"  # no live memory passes the filters (tier, tag), or the package has none
NO_MATCH = "no_match"  # no memory holds a query term, and none is close enough in meaning


@dataclass(frozen=True)
class Ranking:
    """The hits of one query, best first; ``reason`` says why there are none (None when there are)."""

    hits: list[Hit]
    reason: str | None


class _Strings(Sequence[str]):
    """The i-th string of a segment's text section, sliced on demand (bisect reads ~log2(n) of them)."""

    def __init__(self, text: str, offs: Any) -> None:
        self.text = text
        self.offs = offs

    def __len__(self) -> int:
        return len(self.offs) - 1

    def __getitem__(self, i: Any) -> Any:
        return self.text[self.offs[i] : self.offs[i + 1]]

    def find(self, value: str) -> int:
        at = bisect.bisect_left(self, value)
        return at if at < len(self) and self[at] == value else -1


class _Seg:
    """numpy views over one packed segment's sections (zero-copy), and its place in the view."""

    def __init__(self, packed: Packed, base: int) -> None:
        import numpy as np

        from acx.core.search.segment import SegmentError

        self.packed = packed
        self.base = base
        self.n = packed.n
        self.starts = self._np("starts", np.uint32)
        self.docs = self._np("docs", np.uint32)
        self.tfs = self._np("tfs", np.uint8)
        if len(self.starts) and (int(self.starts[0]) != 0 or int(self.starts[-1]) != len(self.docs)):
            raise SegmentError("segment postings do not fit their terms")
        if len(self.docs) and int(self.docs.max()) >= self.n:
            raise SegmentError("segment postings name a doc it does not hold")
        self.terms = _Strings(packed.text("terms_text"), self._np("term_offs", np.uint32))
        if len(self.terms.offs) != len(self.starts) or int(self.terms.offs[-1]) != len(self.terms.text):
            raise SegmentError("segment term offsets do not fit its text")
        self._ids: _Strings | None = None
        self._tags: _Strings | None = None

    def _np(self, name: str, dtype: Any) -> Any:
        import numpy as np

        return np.frombuffer(self.packed.raw(name), dtype=np.dtype(dtype).newbyteorder("<"))

    def postings(self, term: str) -> tuple[int, int] | None:
        at = self.terms.find(term)
        if at < 0:
            return None
        return int(self.starts[at]), int(self.starts[at + 1])

    def id(self, i: int) -> str:
        if self._ids is None:
            import numpy as np

            self._ids = _Strings(self.packed.text("ids_text"), self._np("id_offs", np.uint32))
        return str(self._ids[i])

    def tag_docs(self, tag: str) -> Any:
        """Ordinals (in this segment) of the docs carrying ``tag``."""
        import numpy as np

        if self._tags is None:
            self._tags = _Strings(self.packed.text("tags_text"), self._np("tag_offs", np.uint32))
        t = self._tags.find(tag)
        if t < 0:
            return np.zeros(0, dtype=np.int64)
        offs = self._np("doc_tag_offs", np.uint32).astype(np.int64)
        owners = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(offs))
        return owners[self._np("doc_tags", np.uint32) == t]


class IndexView:
    """The live documents of a package across its segments (later segments supersede earlier ones).

    ``deleted`` holds ids retired by merges: hidden here, dropped physically at compaction. The
    segments' bytes are mapped by numpy in place and laid out in one global doc space (segment base
    + ordinal), so a query is one scatter-add per query term over that term's postings, one int8
    matrix-vector product for the vectors (only the query's non-zero dimensions for a hash engine),
    and a fusion over at most ``2 * POOL`` candidates; nothing is decoded per doc or per term at
    load. BM25's tf parts are computed per term on first use and kept for the view's life (the api
    function caches the view across warm invocations). numpy is imported here only: the ingest and
    verify functions, which build and merge segments, never load it.
    """

    def __init__(
        self,
        engine: str,
        dim: int,
        segments: Sequence[Segment | Packed],
        deleted: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        import numpy as np

        self.engine = engine
        self.dim = dim
        packed = [s if isinstance(s, Packed) else Packed.parse(s.to_bytes()) for s in segments]
        for seg in packed:
            if seg.engine != engine or seg.dim != dim:
                raise EngineMismatch(f"segment built by {seg.engine} in an index of {engine}")
        self.segments: list[Packed] = packed
        self.deleted = frozenset(deleted)
        bases = [0]
        for seg in packed:
            bases.append(bases[-1] + seg.n)
        self.total = bases[-1]
        self._bases = np.asarray(bases, dtype=np.int64)
        self._segs = [_Seg(p, b) for p, b in zip(packed, bases, strict=False)]

        def cat(name: str, dtype: Any) -> Any:
            parts = [s._np(name, dtype) for s in self._segs]
            if len(parts) == 1:
                return parts[0]
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        self.lengths = cat("lengths", np.uint32).astype(np.float32)
        self.scales = cat("scales", np.float32)
        self.zones = cat("zones", np.uint8)
        self._vectors = cat("vectors", np.int8).reshape(self.total, dim)  # row-major: dense queries
        self._columns: dict[int, Any] = {}  # dimension -> its column, copied at its first sparse query
        self.live = self._live_mask(cat("id_hash", np.uint64))  # None: every doc is live
        self.n = self.total if self.live is None else int(self.live.sum())
        dl = self.lengths if self.live is None else self.lengths[self.live]
        self.avgdl = float(dl.sum()) / self.n if self.n else 0.0
        self._slope = np.float32(K1 * B / (self.avgdl or 1.0))
        self._impacts: dict[tuple[int, str], tuple[Any, Any]] = {}
        self._cached_postings = 0
        self._tag_masks: dict[str, Any] = {}

    # ---- liveness

    def _live_mask(self, hashes: Any) -> Any:
        """False for a doc superseded by the same id in a later segment or listed in ``deleted``.
        Ids are compared by their 64-bit hashes, and every hash match is confirmed on the ids."""
        import numpy as np

        if len(self._segs) <= 1 and not self.deleted:
            return None
        live = np.ones(self.total, dtype=bool)
        dead_hashes = np.asarray(sorted({id_hash(d) for d in self.deleted}), dtype=np.uint64)
        later: list[_Seg] = []  # the segments after the current one
        for seg in reversed(self._segs):
            mine = hashes[seg.base : seg.base + seg.n]
            if len(dead_hashes):
                for i in np.flatnonzero(np.isin(mine, dead_hashes)).tolist():
                    if seg.id(i) in self.deleted:
                        live[seg.base + i] = False
            if later:
                pool = np.concatenate([hashes[o.base : o.base + o.n] for o in later])
                suspects = np.flatnonzero(np.isin(mine, pool))
                if len(suspects):
                    wanted = mine[suspects]
                    newer: set[str] = set()
                    for other in later:
                        theirs = hashes[other.base : other.base + other.n]
                        newer.update(other.id(j) for j in np.flatnonzero(np.isin(theirs, wanted)).tolist())
                    for i in suspects.tolist():
                        if seg.id(i) in newer:
                            live[seg.base + i] = False
            later.append(seg)
        return None if live.all() else live

    def ids(self) -> Iterator[str]:
        for seg in self._segs:
            for i in range(seg.n):
                if self.live is None or self.live[seg.base + i]:
                    yield seg.id(i)

    def _segment_of(self, g: int) -> _Seg:
        import numpy as np

        return self._segs[int(np.searchsorted(self._bases, g, side="right")) - 1]

    def id_of(self, g: int) -> str:
        seg = self._segment_of(g)
        return seg.id(g - seg.base)

    def _allowed(self, zone: str | None, tag: str | None) -> Any:
        """Bool mask of the docs a query may return (None: every doc)."""
        import numpy as np

        mask = self.live
        if zone is not None:
            z = self.zones == np.uint8(ZONES.index(zone)) if zone in ZONES else np.zeros(self.total, bool)
            mask = z if mask is None else mask & z
        if tag is not None:
            t = self._tag_masks.get(tag)
            if t is None:
                t = np.zeros(self.total, dtype=bool)
                for seg in self._segs:
                    t[seg.base + seg.tag_docs(tag)] = True
                if len(self._tag_masks) > 64:
                    self._tag_masks.clear()
                self._tag_masks[tag] = t
            mask = t if mask is None else mask & t
        return mask

    # ---- the signals

    def _postings(self, term: str) -> list[tuple[Any, Any]]:
        """(global doc ids, BM25 tf part) of ``term``'s live postings in each segment holding it."""
        import numpy as np

        out = []
        for si, seg in enumerate(self._segs):
            key = (si, term)
            cached = self._impacts.get(key)
            if cached is None:
                where = seg.postings(term)
                if where is None:
                    continue
                lo, hi = where
                docs = seg.docs[lo:hi].astype(np.int64) + seg.base
                tf = seg.tfs[lo:hi].astype(np.float32)
                impact = tf / (tf + np.float32(K1 * (1.0 - B)) + self._slope * self.lengths[docs])
                if self.live is not None:
                    alive = self.live[docs]
                    docs, impact = docs[alive], impact[alive]
                cached = (docs, impact)
                if self._cached_postings > IMPACT_CACHE_POSTINGS:
                    self._impacts.clear()
                    self._cached_postings = 0
                self._impacts[key] = cached
                self._cached_postings += len(docs)
            if len(cached[0]):
                out.append(cached)
        return out

    def lexical(self, terms: list[str], allowed: Any) -> Any:
        """BM25 (Lucene's idf, k1=1.2, b=0.75) of every doc: float32, 0 where no term matched."""
        import numpy as np

        scores = np.zeros(self.total, dtype=np.float32)
        if not self.n:
            return scores
        for term, qtf in self._query_terms(terms).items():
            found = self._postings(term)
            df = sum(len(d) for d, _ in found)
            if not df:
                continue
            idf = np.float32(math.log(1.0 + (self.n - df + 0.5) / (df + 0.5)) * qtf)
            for docs, impact in found:
                scores[docs] += idf * impact  # a term's postings hold each doc once
        if allowed is not None:
            scores *= allowed
        return scores

    def _query_terms(self, terms: list[str]) -> dict[str, int]:
        """The query's distinct terms and their counts; past ``MAX_QUERY_TERMS`` only the rarest that
        this index holds (lowest document frequency, then the first in the query) are kept."""
        counts = _counts(terms)
        if len(counts) <= MAX_QUERY_TERMS:
            return counts

        def df(term: str) -> int:
            found = (seg.postings(term) for seg in self._segs)
            return sum(hi - lo for lo, hi in (f for f in found if f is not None))

        held = {t: f for t in counts if (f := df(t))}
        order = sorted(held, key=held.__getitem__)  # stable: equal frequencies keep the query's order
        return {t: counts[t] for t in order[:MAX_QUERY_TERMS]}

    def vector(self, query: list[float], allowed: Any) -> Any:
        """Cosine of the query with every allowed live doc (int8 vectors x per-vector scale), >= 0."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32)
        nz = np.flatnonzero(q)
        if len(nz) * 2 <= self.dim:  # a hash engine's query touches a few dimensions
            # One multiply-add per non-zero dimension straight from int8 (no float copy of the
            # matrix; measured 6x cheaper than a BLAS product of the gathered rows at 100k docs).
            dots = np.zeros(self.total, dtype=np.float32)
            tmp = np.empty(self.total, dtype=np.float32)
            for d in nz.tolist():
                np.multiply(self._column(d), q[d], out=tmp)
                dots += tmp
        else:
            dots = np.empty(self.total, dtype=np.float32)
            block = np.empty((min(DENSE_CHUNK, self.total), self.dim), dtype=np.float32)
            for lo in range(0, self.total, DENSE_CHUNK):
                part = self._vectors[lo : lo + DENSE_CHUNK]
                buf = block[: len(part)]
                np.copyto(buf, part, casting="unsafe")  # int8 -> float32, exact
                np.matmul(buf, q, out=dots[lo : lo + len(part)])
        sims = dots * self.scales
        np.maximum(sims, 0.0, out=sims)
        if allowed is not None:
            sims *= allowed
        return sims

    def _column(self, d: int) -> Any:
        """Dimension ``d`` of every vector, contiguous; copied once, at the first query that needs it.

        Why per dimension: a hash engine's query touches 4-33 of 128 dimensions (median 14 over the
        Cranfield queries), so the first query after a cold load copies those, not the whole
        matrix (measured at 100,000 docs: ~6 ms for 14 columns against 15-35 ms for the blocked
        copy of all 128; warm queries reuse them and copy only dimensions not seen before)."""
        col = self._columns.get(d)
        if col is None:
            import numpy as np

            col = self._columns[d] = np.ascontiguousarray(self._vectors[:, d])
        return col

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
        min_similarity: float | None = 0.0,
    ) -> list[Hit]:
        """The top ``k`` hits of :meth:`rank` (see there)."""
        return self.rank(
            terms,
            query_vector,
            engine,
            k=k,
            zone=zone,
            tag=tag,
            vector_weight=vector_weight,
            min_similarity=min_similarity,
        ).hits

    def rank(
        self,
        terms: list[str],
        query_vector: list[float] | None,
        engine: str | None,
        *,
        k: int,
        zone: str | None = None,
        tag: str | None = None,
        vector_weight: float = SEMANTIC_ENGINE_WEIGHT,
        min_similarity: float | None = 0.0,
    ) -> Ranking:
        """The top ``k`` live docs matching the filters, fused over the evidence each signal has.

        A doc is a candidate when it matched a query term, or when its vector similarity is at least
        ``min_similarity`` (None: the vector signal alone never makes a doc a candidate, as for a
        hash engine). Each candidate's score is the weighted mean, over the signals that have
        evidence about it, of ``1 / (RRF_K + rank)`` (see ``_fuse``). No candidate: no hits, and the
        ranking's ``reason`` says why.
        """
        if query_vector is not None:
            if engine != self.engine or len(query_vector) != self.dim:
                raise EngineMismatch(
                    f"query embedded by {engine} (dim {len(query_vector)}), index built by "
                    f"{self.engine} (dim {self.dim})"
                )
        import numpy as np

        allowed = self._allowed(zone, tag)
        if not self.n or (allowed is not None and not allowed.any()):
            return Ranking([], NO_MEMORIES)
        lex = self.lexical(terms, allowed)
        lex_order = _ranked(lex)
        signals = [(lex, lex_order, 1.0)]
        cand = lex_order
        vec = vec_order = None
        if query_vector is not None and vector_weight > 0:
            vec = self.vector(query_vector, allowed)
            vec_order = _ranked(vec)
            signals.append((vec, vec_order, vector_weight))
            if min_similarity is not None:
                cand = np.concatenate([cand, vec_order[vec[vec_order] >= min_similarity]])
        if not len(cand):
            return Ranking([], NO_MATCH)
        cand = np.unique(cand)
        fused = _fuse(cand, signals, self.total)
        best = np.lexsort((cand, -fused))[:k]  # ties by position, so a ranking is reproducible
        top, top_scores = cand[best], fused[best]
        lex_rank = _ranks_of(lex_order, top)
        vec_rank = _ranks_of(vec_order, top) if vec_order is not None else {}
        matched = self._matched(list(self._query_terms(terms)), top)
        hits = []
        for j, g in enumerate(top.tolist()):
            lr, vr = lex_rank.get(g), vec_rank.get(g)
            hits.append(
                Hit(
                    id=self.id_of(g),
                    score=float(top_scores[j]),
                    lexical_rank=lr,
                    lexical_score=float(lex[g]) if lr else None,
                    vector_rank=vr,
                    vector_score=float(vec[g]) if vr and vec is not None else None,
                    terms=matched[j],
                )
            )
        return Ranking(hits, None)

    def _matched(self, terms: list[str], top: Any) -> list[tuple[str, ...]]:
        """For each doc of ``top``, the query terms it holds (postings are sorted by ordinal)."""
        import numpy as np

        out: list[list[str]] = [[] for _ in range(len(top))]
        for term in sorted(set(terms)):
            for docs, _ in self._postings(term):
                at = np.searchsorted(docs, top)
                holds = (at < len(docs)) & (docs[np.minimum(at, len(docs) - 1)] == top)
                for j in np.flatnonzero(holds).tolist():
                    out[j].append(term)
        return [tuple(t) for t in out]


def _ranked(scores: Any, depth: int = POOL) -> Any:
    """Global ids of the best ``depth`` non-zero scores, best first; ties by position. The fusion
    places a deeper doc just past the end (at rank 1000 a reciprocal rank is already 1/1060)."""
    import numpy as np

    cand = np.flatnonzero(scores)
    if len(cand) > depth:
        cand = cand[np.argpartition(-scores[cand], depth - 1)[:depth]]
    return cand[np.lexsort((cand, -scores[cand]))]


def _fuse(cand: Any, signals: list[tuple[Any, Any, float]], total: int) -> Any:
    """Fused score of each candidate: the weighted mean of ``1 / (RRF_K + rank)`` over the signals
    that have evidence about it.

    A signal has evidence about a doc when it scored it above zero: at its rank in that signal's
    ranking, or just past the ranking's end when the doc scored but fell beyond the ``POOL`` depth
    (a real, weak vote). A signal that did not score a doc at all (no query term in it, no vector
    similarity) abstains: its weight leaves the mean instead of counting as the worst rank, so the
    lexical first hit that the vector signal never saw keeps its place (weighted RRF put it behind
    every doc the vector signal ranked at all). Agreement still counts: a doc two signals rank high
    keeps a high mean, and a low vector rank pulls a doc below one the vector did not see.
    """
    import numpy as np

    num = np.zeros(len(cand), dtype=np.float64)
    den = np.zeros(len(cand), dtype=np.float64)
    for scores, order, weight in signals:
        ranks = np.zeros(total, dtype=np.int64)
        ranks[order] = np.arange(1, len(order) + 1, dtype=np.int64)
        r = ranks[cand]
        seen = (r > 0) | (scores[cand] > 0)
        r = np.where(r > 0, r, len(order) + 1)
        num += np.where(seen, weight / (RRF_K + r.astype(np.float64)), 0.0)
        den += np.where(seen, weight, weight * ABSENT_SHARE)
    return num / np.maximum(den, 1e-300)


def _ranks_of(order: Any, top: Any) -> dict[int, int]:
    """1-based rank in ``order`` (at most ``POOL`` docs) of each doc of ``top`` that ``order`` holds.

    A dict, not ``np.isin``: isin sorts through ``np.unique``, whose first call imports ``numpy.ma``
    (17 ms of a cold start's first query)."""
    wanted = set(top.tolist())
    return {g: i for i, g in enumerate(order.tolist(), start=1) if g in wanted}


def _counts(terms: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in terms:
        out[t] = out.get(t, 0) + 1
    return out


def vector_weight(lexical_engine: bool) -> float:
    """The fusion weight of an engine's vector signal (see the constants above)."""
    return LEXICAL_ENGINE_WEIGHT if lexical_engine else SEMANTIC_ENGINE_WEIGHT
