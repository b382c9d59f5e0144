"""Ranked hybrid search over a package's memories (pure: no I/O; the index lives in S3 via adapters).

- ``text``: tokenisation (NFKC, casefold, stopwords, Snowball stemming)
- ``segment``: one immutable index segment (postings + int8 vectors) and its binary form
- ``ranking``: BM25 + cosine over the live docs of several segments, fused by weighted RRF
"""

from __future__ import annotations

from typing import Any

from acx.core.embedding import EmbeddingEngine
from acx.core.search.ranking import Hit, IndexView, vector_weight
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


def search(
    view: IndexView,
    engine: EmbeddingEngine,
    query: str,
    *,
    k: int,
    zone: str | None = None,
    tag: str | None = None,
) -> list[Hit]:
    """Top ``k`` hits of ``query``: the engine must be the one that built ``view`` (else EngineMismatch)."""
    vector = engine.embed([query])[0]
    return view.search(
        tokenize(query),
        vector,
        engine.id,
        k=k,
        zone=zone,
        tag=tag.casefold() if tag is not None else None,
        vector_weight=vector_weight(engine.lexical),
    )
