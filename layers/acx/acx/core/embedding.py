"""The reference embedding engine ``local-hash-128`` (ACX v0.1): deterministic, dependency-free.

Vectors are derived data: an importer re-indexes from the records with its own engine, so this
engine only has to agree with the reference bit for bit, not be good.
"""

from __future__ import annotations

import hashlib
import math
import operator
import re
from collections import Counter
from typing import Any, Protocol

ENGINE_ID = "local-hash-128"
DIM = 128
_TOKEN_RE = re.compile(r"[a-z0-9]+")


# Bytes that are [a-z0-9] stay, every other byte becomes a space: the UTF-8 of a non-ASCII character
# is all bytes >= 0x80, so splitting the translated UTF-8 finds exactly the runs ``_TOKEN_RE`` finds
# (tested), in one C-level pass instead of a regex scan (the index embeds every ingested record).
_TOKEN_BYTES = bytes(c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256))


_CODES: dict[bytes, int] = {}  # token -> 2 * index + (1 if sign is +1 else 0)
MAX_CACHED_TOKENS = 200_000


def _code(token: bytes) -> int:
    """Index and sign of one token in one int (cached: an index embeds the same words over and over)."""
    code = _CODES.get(token)
    if code is None:
        digest = hashlib.sha1(token, usedforsecurity=False).digest()
        code = (int.from_bytes(digest[0:4], "big") % DIM) * 2 + (digest[4] & 1)
        if len(_CODES) < MAX_CACHED_TOKENS:
            _CODES[token] = code
    return code


def tokens(text: str) -> list[bytes]:
    """The standard's tokens of ``text``: runs of ``[a-z0-9]`` of its lowercase form, as ASCII bytes."""
    return text.lower().encode("utf-8", "surrogatepass").translate(_TOKEN_BYTES).split()


def embed(text: str) -> list[float]:
    """The L2-normalised signed token-hash vector of ``text`` (all zeros when it has no token).

    Each entry is a sum of +1s and -1s, exact in floating point in any order, so counting the
    (index, sign) codes first gives the same bits as adding token by token.
    """
    vector = [0.0] * DIM
    toks = tokens(text)
    cached = list(map(_CODES.get, toks))
    codes: list[int] = [_code(t) for t in toks] if None in cached else cached  # type: ignore[assignment]
    for code, count in Counter(codes).items():
        vector[code >> 1] += count if code & 1 else -count
    norm = math.sqrt(sum(map(operator.mul, vector, vector)))
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
