"""Response models of ``GET /v1/packages/{pkg}/memories/search`` (``usecases/search.py`` fills them).

Declared here, not in :mod:`acx.contract.models` (which re-exports them: the route table, the OpenAPI
document and the CLI see the same classes), so that a search imports five models, not the module of
every body: importing ``acx.contract.models`` cost a cold search about 0.03 s of CPU (its ~40
classes, deferred or not, are still created at import).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from acx import contract as c

# Longest query accepted, in characters (``$.q``): an agent asks in its own words, a paragraph or a
# pasted error included; the engine's own input limit is handled by the service (``core.search``).
MAX_QUERY_CHARS = 4096


class Signal(BaseModel):
    model_config = ConfigDict(defer_build=True)
    rank: int
    score: float


class LexicalSignal(Signal):
    terms: list[str] = Field(description="query terms (stemmed) found in the memory")


class Signals(BaseModel):
    model_config = ConfigDict(defer_build=True)
    lexical: LexicalSignal | None = None
    vector: Signal | None = None


class SearchResult(BaseModel):
    model_config = ConfigDict(defer_build=True)
    id: str
    score: float
    signals: Signals
    record: dict[str, Any]


class SearchResponse(BaseModel):
    model_config = ConfigDict(defer_build=True)
    advisory: str = c.ADVISORY
    engine: str
    k: int
    results: list[SearchResult]
    reason: str | None = Field(
        default=None,
        description="why results is empty, None when it is not: no_match (no memory holds a query "
        "term or is close enough in meaning: nothing relevant) or no_memories (no memory passes "
        "the filters)",
    )
