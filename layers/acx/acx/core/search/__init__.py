"""Ranked hybrid search over a package's memories (pure: no I/O; the index lives in S3 via adapters).

- ``text``: tokenisation (NFKC, casefold, stopwords, Snowball stemming)
- ``segment``: one immutable index segment (postings + int8 vectors) and its binary form
- ``ranking``: BM25 + cosine over the live docs of several segments, fused over each signal's evidence
"""

from __future__ import annotations

import math
from typing import Any

from acx.core.embedding import EmbeddingEngine
from acx.core.search.ranking import Hit, IndexView, Ranking, vector_weight
from acx.core.search.segment import Doc
from acx.core.search.text import record_text, tokenize


def record_terms(record: dict[str, Any]) -> list[str]:
    """Lexical terms of a memory: its title, summary and tags."""
    tags = " ".join(t for t in record.get("tags") or () if isinstance(t, str))
    return tokenize(f"{record_text(record.get('title'), record.get('summary'))}\n\n{tags}")


def to_docs(records: list[dict[str, Any]], engine: EmbeddingEngine) -> list[Doc]:
    """Index docs of validated records; vectors come from ``engine`` in one batch call."""
    vectors = engine.embed([record_text(r.get("title"), r.get("summary")) for r in records])
    return [
        Doc(
            id=r["id"],
            zone="rom" if r.get("portable") else "save",
            tags=tuple(sorted({t.casefold() for t in r.get("tags") or () if isinstance(t, str)})),
            terms=record_terms(r),
            vector=v,
        )
        for r, v in zip(records, vectors, strict=True)
    ]


# A semantic engine's floor when it declares none: the cosine below which its vector alone does not
# make a memory a hit (see ``similarity_floor``).
DEFAULT_SEMANTIC_FLOOR = 0.25


def similarity_floor(engine: EmbeddingEngine) -> float | None:
    """The cosine at which the engine's vector alone makes a memory a hit: the engine's own
    ``min_similarity`` if it declares one, None for a lexical (hash) engine, whose similarity is word
    overlap and hash collisions (it only re-orders what matched a query term), else
    ``DEFAULT_SEMANTIC_FLOOR``."""
    floor = getattr(engine, "min_similarity", None)
    if floor is not None:
        return float(floor)
    return None if engine.lexical else DEFAULT_SEMANTIC_FLOOR


def embed_query(engine: EmbeddingEngine, query: str) -> list[float]:
    """The query's vector, whatever its length: an engine that declares ``max_input_chars`` (a model
    that reads a bounded number of tokens) embeds a longer query window by window, on word
    boundaries, and the query's vector is the normalised mean of the windows' vectors, so every part
    of a long question counts instead of only its start. An engine with ``embed_queries`` (a model
    that embeds a question apart from a document) embeds the query with it."""
    embed = getattr(engine, "embed_queries", None) or engine.embed
    limit = getattr(engine, "max_input_chars", None)
    if not limit or len(query) <= limit:
        return embed([query])[0]
    windows = _windows(query, int(limit))
    vectors = embed(windows)
    mean = [sum(col) for col in zip(*vectors, strict=True)]
    norm = math.sqrt(sum(v * v for v in mean))
    return [v / norm for v in mean] if norm else mean


def _windows(text: str, limit: int) -> list[str]:
    """``text`` cut into pieces of at most ``limit`` characters, at whitespace where there is some."""
    out = []
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit + 1)
        cut = cut if cut > 0 else limit
        out.append(text[:cut])
        text = text[cut:].lstrip()
    if text.strip() or not out:
        out.append(text)
    return out


def rank(
    view: IndexView,
    engine: EmbeddingEngine,
    query: str,
    *,
    k: int,
    zone: str | None = None,
    tag: str | None = None,
) -> Ranking:
    """Top ``k`` hits of ``query`` and, when there are none, why: the engine must be the one that
    built ``view`` (else EngineMismatch)."""
    vector = embed_query(engine, query)
    return view.rank(
        tokenize(query),
        vector,
        engine.id,
        k=k,
        zone=zone,
        tag=tag.casefold() if tag is not None else None,
        vector_weight=vector_weight(engine.lexical),
        min_similarity=similarity_floor(engine),
    )


def search(
    view: IndexView,
    engine: EmbeddingEngine,
    query: str,
    *,
    k: int,
    zone: str | None = None,
    tag: str | None = None,
) -> list[Hit]:
    """Top ``k`` hits of ``query`` (see ``rank``)."""
    return rank(view, engine, query, k=k, zone=zone, tag=tag).hits
