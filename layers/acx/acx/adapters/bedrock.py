"""Bedrock embedding models (runtime ``InvokeModel``) behind ``EmbeddingEngine``.

- Amazon Titan Text Embeddings V2 (``amazon.titan-embed-text-v2:0``): request body
  ``{"inputText", "dimensions" (256|512|1024), "normalize": true}``, response ``{"embedding": [...]}``.
  One text per request (the model takes a single ``inputText``), so a list is embedded by a small
  pool of concurrent calls (``TitanEmbeddings.concurrency``). Its input limit is 8,192 tokens or
  50,000 characters and it has no truncation option: a text is cut at 50,000 characters, and when
  the model still answers that the input has too many tokens, the text is cut again (in proportion
  to the token count it reports, else by half) and sent again: the first part of a long record is
  embedded, never an error.
- Cohere Embed v3 (``cohere.embed-english-v3``, ``cohere.embed-multilingual-v3``, 1,024 dimensions):
  up to 96 texts per request (``{"texts", "input_type", "truncate": "END"}``), each at most 2,048
  characters; the model cuts a text past its token limit itself (``truncate``). Records are embedded
  as ``search_document``, queries as ``search_query`` (``embed_queries``).

Every call is retried on throttling and transient answers (``RETRYABLE``) with exponential backoff and
full jitter, at most ``Backoff.attempts`` times; then ``EmbeddingUnavailable`` says which model and
which answer. The client is made without botocore's own retries (``runtime_client``), so the attempts
are this module's, not multiplied by botocore's.

What it does NOT stop: the text is sent to Bedrock in the same account and region; it has passed
the scrub gate first (ingest) or is the caller's own query (search), never anything else.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from acx.core.faults import Unavailable

MODEL_ID = "amazon.titan-embed-text-v2:0"
DIMENSIONS = (256, 512, 1024)
MAX_CHARS = 50_000  # Titan V2's character limit (its token limit is 8,192)
MAX_TOKEN_CUTS = 4  # times a text is cut again after "too many input tokens"

COHERE_MODELS = ("cohere.embed-english-v3", "cohere.embed-multilingual-v3")
COHERE_DIM = 1024
COHERE_BATCH = 96  # texts per InvokeModel call: the model's maximum
COHERE_MAX_CHARS = 2048  # characters per text: the model's maximum

#: Error codes answered by Bedrock runtime that a later identical call may not get.
RETRYABLE = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ServiceUnavailable",
        "ModelTimeoutException",
        "ModelNotReadyException",
        "InternalServerException",
    }
)


class EmbeddingUnavailable(Unavailable):
    """Bedrock kept answering with a retryable error; ``code`` is its last answer. A search answers
    503 with Retry-After (``usecases.faults``); an ingest drops the package's index, which the next
    search rebuilds."""

    def __init__(self, model_id: str, code: str, attempts: int) -> None:
        super().__init__(
            f"Bedrock {model_id} answered {code} to {attempts} attempts in a row; giving up (throttled "
            "or unavailable: try again later, or raise the model's quota)"
        )
        self.model_id = model_id
        self.code = code
        self.attempts = attempts


@dataclass(frozen=True)
class Backoff:
    """Bounded exponential backoff with full jitter: before attempt n+1, sleep a uniform draw from
    ``[0, min(cap, base * 2**n))``. The worst case (0.2+0.4+0.8+1.6 s) stays well inside the api
    function's 29 s timeout."""

    attempts: int = 5
    base: float = 0.2
    cap: float = 4.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    rand: Callable[[], float] = field(default=random.random, compare=False)

    def delay(self, attempt: int) -> float:
        return self.rand() * min(self.cap, self.base * 2**attempt)


def runtime_client() -> Any:
    """A ``bedrock-runtime`` client of the service's session, without botocore's retries (this module
    retries) and with a read timeout under the api function's."""
    from botocore.config import Config

    from acx.adapters.aws import session
    from acx.adapters.service_models import install
    from acx.config import settings

    source = session()
    install(source)
    cfg = Config(retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=3, read_timeout=10)
    return source.create_client("bedrock-runtime", region_name=settings().region, config=cfg)


def _error_code(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code") or "") or None
    return None


def _invoke(client: Any, model_id: str, body: dict[str, Any], backoff: Backoff) -> dict[str, Any]:
    """One InvokeModel call, retried on ``RETRYABLE`` answers; other errors go to the caller."""
    code = ""
    for attempt in range(backoff.attempts):
        if attempt:
            backoff.sleep(backoff.delay(attempt - 1))
        try:
            resp = client.invoke_model(
                modelId=model_id,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
        except Exception as exc:
            code = _error_code(exc) or ""
            if code not in RETRYABLE:
                raise
            continue
        payload: dict[str, Any] = json.loads(resp["body"].read())
        return payload
    raise EmbeddingUnavailable(model_id, code, backoff.attempts)


def _unit(vector: list[float], dim: int, model_id: str) -> list[float]:
    if len(vector) != dim:
        raise ValueError(f"{model_id} returned {len(vector)} dimensions, expected {dim}")
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


def _too_many_tokens(exc: Exception) -> str | None:
    """The message of a ValidationException about the input's token count, else None."""
    if _error_code(exc) != "ValidationException":
        return None
    message = str(getattr(exc, "response", {}).get("Error", {}).get("Message") or "")
    return message if "token" in message.lower() else None


class TitanEmbeddings:
    """``EmbeddingEngine`` over Titan Text Embeddings V2 (a botocore Stubber in tests)."""

    lexical = False
    # A longer query is embedded window by window (core.search.embed_query); the search API's own
    # limit (4 KB) is far under it, so a query is one call.
    max_input_chars = MAX_CHARS

    def __init__(
        self,
        client: Any,
        model_id: str = MODEL_ID,
        dim: int = 256,
        *,
        backoff: Backoff | None = None,
        concurrency: int = 4,
    ) -> None:
        if dim not in DIMENSIONS:
            raise ValueError(f"Titan text embeddings V2 dimensions must be one of {DIMENSIONS}")
        self.client = client
        self.model_id = model_id
        self._dim = dim
        self.backoff = backoff or Backoff()
        # Concurrent calls per list: one text per request makes an ingest of n records n calls; a
        # few at a time keep it inside the function's timeout without a burst past the model's
        # requests-per-minute quota (throttled calls back off and retry).
        self.concurrency = max(1, concurrency)

    @property
    def id(self) -> str:
        return f"bedrock:{self.model_id}:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: list[str]) -> list[list[float]]:
        if len(texts) <= 1 or self.concurrency == 1:
            return [self._one(text) for text in texts]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(texts))) as pool:
            return list(pool.map(self._one, texts))

    def _one(self, text: str) -> list[float]:
        text = text[:MAX_CHARS] or " "
        for _ in range(MAX_TOKEN_CUTS + 1):
            body = {"inputText": text, "dimensions": self._dim, "normalize": True}
            try:
                payload = _invoke(self.client, self.model_id, body, self.backoff)
            except Exception as exc:
                message = _too_many_tokens(exc)
                if message is None or len(text) <= 1:
                    raise
                text = text[: _shorter(len(text), message)]
                continue
            return _unit([float(v) for v in payload["embedding"]], self._dim, self.model_id)
        raise ValueError(f"{self.model_id}: the input still has too many tokens after {MAX_TOKEN_CUTS} cuts")


def _shorter(length: int, message: str) -> int:
    """A shorter length for a text the model found too long: in proportion to the limit and the count
    the message reports (``Max input tokens: 8192, request input token count: 11306``), with a 10%
    margin; else half. Numbers under 512 (an HTTP status) are not token counts."""
    numbers = [int(n) for n in re.findall(r"\d+", message) if int(n) >= 512]
    if len(numbers) >= 2 and min(numbers) < max(numbers):
        return max(1, int(length * min(numbers) / max(numbers) * 0.9))
    return max(1, length // 2)


class CohereEmbeddings:
    """``EmbeddingEngine`` over Cohere Embed v3 on Bedrock: 96 texts per call."""

    lexical = False
    # A longer query is embedded window by window (each window one text of the same call).
    max_input_chars = COHERE_MAX_CHARS
    dim = COHERE_DIM

    def __init__(
        self, client: Any, model_id: str = COHERE_MODELS[0], *, backoff: Backoff | None = None
    ) -> None:
        if model_id not in COHERE_MODELS:
            raise ValueError(f"Cohere embedding model must be one of {COHERE_MODELS}")
        self.client = client
        self.model_id = model_id
        self.backoff = backoff or Backoff()

    @property
    def id(self) -> str:
        return f"bedrock:{self.model_id}:{COHERE_DIM}"

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._batched(texts, "search_document")

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Vectors of queries: Cohere v3 embeds a question apart from a document (``input_type``)."""
        return self._batched(texts, "search_query")

    def _batched(self, texts: list[str], input_type: str) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), COHERE_BATCH):
            part = [t[:COHERE_MAX_CHARS] or " " for t in texts[start : start + COHERE_BATCH]]
            body = {"texts": part, "input_type": input_type, "truncate": "END"}
            payload = _invoke(self.client, self.model_id, body, self.backoff)
            vectors = payload["embeddings"]
            if isinstance(vectors, dict):  # asked with embedding_types: keyed by type
                vectors = vectors["float"]
            if len(vectors) != len(part):
                raise ValueError(f"{self.model_id} returned {len(vectors)} vectors for {len(part)} texts")
            out += [_unit([float(v) for v in vec], COHERE_DIM, self.model_id) for vec in vectors]
        return out


def engine_for_model(client: Any, model_id: str, dim: int) -> TitanEmbeddings | CohereEmbeddings:
    """The engine of a Bedrock model id (``SEARCH_ENGINE=bedrock:<model id>``); ``dim`` is Titan's
    (Cohere v3 has one dimension)."""
    if model_id in COHERE_MODELS:
        return CohereEmbeddings(client, model_id)
    return TitanEmbeddings(client, model_id, dim)
