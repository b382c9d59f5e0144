"""The reference embedding engine ``local-hash-128`` (ACX v0.1): deterministic, dependency-free.

Vectors are derived data: an importer re-indexes from the records with its own engine, so this
engine only has to agree with the reference bit for bit, not be good.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from functools import lru_cache
from typing import Any, Protocol

ENGINE_ID = "local-hash-128"
DIM = 128
_TOKEN_RE = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=200_000)
def _slot(token: str) -> tuple[int, float]:
    """(index, sign) of one token: cached, since an index embeds the same words over and over."""
    digest = hashlib.sha1(token.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[0:4], "big") % DIM, 1.0 if digest[4] & 1 else -1.0


def embed(text: str) -> list[float]:
    """The L2-normalised signed token-hash vector of ``text`` (all zeros when it has no token)."""
    vector = [0.0] * DIM
    for token, count in Counter(_TOKEN_RE.findall(text.lower())).items():
        index, sign = _slot(token)
        vector[index] += sign * count
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0:
        return vector
    return [v / norm for v in vector]


def embed_record(record: dict[str, Any]) -> list[float]:
    """Embedding of a record: title + blank line + summary, as the standard's text template says."""
    return embed(f"{record.get('title') or ''}\n\n{record.get('summary') or ''}")


def engine_descriptor() -> dict[str, Any]:
    """The ``{"id", "dim"}`` descriptor stored with vectors and in cartridge meta."""
    return {"id": ENGINE_ID, "dim": DIM}


class EmbeddingEngine(Protocol):
    """What the search index needs from an embedding model: a stable id, a dimension, vectors.

    ``id`` names the model and its dimension (``local-hash-128``,
    ``bedrock:amazon.titan-embed-text-v2:0:256``): an index records it, and an index is never
    queried with vectors of another engine.
    ``lexical`` says the engine only sees surface tokens (a hash engine), so fusion weighs it low.
    """

    @property
    def id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    @property
    def lexical(self) -> bool: ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One L2-normalised vector of ``dim`` floats per text, in order."""
        ...


class LocalHash128:
    """The reference engine behind the ``EmbeddingEngine`` interface (no model, no I/O)."""

    id = ENGINE_ID
    dim = DIM
    lexical = True

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [embed(text) for text in texts]
