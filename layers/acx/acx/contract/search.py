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
    trust: str = Field(default="belief", description="candidate | belief")
    author: dict[str, str] | None = Field(default=None, description="{actor, agent?}: who wrote it")


class SearchResponse(BaseModel):
    model_config = ConfigDict(defer_build=True)
    advisory: str = c.ADVISORY
    engine: str
    k: int
    results: list[SearchResult]
