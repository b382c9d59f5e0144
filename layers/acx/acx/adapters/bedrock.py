"""Amazon Titan Text Embeddings V2 (Bedrock runtime ``InvokeModel``) behind ``EmbeddingEngine``.

Request body ``{"inputText", "dimensions" (256|512|1024), "normalize": true}``; the response body
carries ``embedding`` (floats). One call per text: the model takes one input per request, so an
ingest of n records costs n calls (the reason it is an option, not the default; see
docs/ARCHITECTURE.md). Texts are cut to ``MAX_CHARS`` (the model's limit is 8,192 tokens /
50,000 characters).

What it does NOT stop: the text is sent to Bedrock in the same account and region; it has passed
the scrub gate first (ingest) or is the caller's own query (search), never anything else.
"""

from __future__ import annotations

import json
import math
from typing import Any

MODEL_ID = "amazon.titan-embed-text-v2:0"
DIMENSIONS = (256, 512, 1024)
MAX_CHARS = 50_000


class TitanEmbeddings:
    """``EmbeddingEngine`` over a ``bedrock-runtime`` client (a botocore Stubber in tests)."""

    lexical = False
    # A longer text is cut by the model; the service embeds a longer query window by window.
    max_input_chars = MAX_CHARS

    def __init__(self, client: Any, model_id: str = MODEL_ID, dim: int = 256) -> None:
        if dim not in DIMENSIONS:
            raise ValueError(f"Titan text embeddings V2 dimensions must be one of {DIMENSIONS}")
        self.client = client
        self.model_id = model_id
        self._dim = dim

    @property
    def id(self) -> str:
        return f"bedrock:{self.model_id}:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        body = json.dumps({"inputText": text[:MAX_CHARS] or " ", "dimensions": self._dim, "normalize": True})
        resp = self.client.invoke_model(
            modelId=self.model_id, body=body, contentType="application/json", accept="application/json"
        )
        payload = json.loads(resp["body"].read())
        vector = [float(v) for v in payload["embedding"]]
        if len(vector) != self._dim:
            raise ValueError(f"{self.model_id} returned {len(vector)} dimensions, expected {self._dim}")
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector
