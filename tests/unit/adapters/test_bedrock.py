"""Bedrock embedding engines (acx.adapters.bedrock) through botocore's Stubber: the request bodies,
retries with backoff on throttling and transient answers, giving up with a clear error, the input
limit handled by cutting the text, and Cohere's batches of 96."""

from __future__ import annotations

import io
import json
import math
import threading
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from acx.adapters.bedrock import (
    COHERE_BATCH,
    COHERE_MAX_CHARS,
    MAX_CHARS,
    Backoff,
    CohereEmbeddings,
    EmbeddingUnavailable,
    TitanEmbeddings,
    engine_for_model,
    runtime_client,
)
from acx.core.search import embed_query
from acx.usecases.faults import classify

TITAN = "amazon.titan-embed-text-v2:0"


def _client() -> Any:
    return boto3.client("bedrock-runtime", region_name="us-east-1")


def _body(payload: dict[str, Any]) -> dict[str, Any]:
    data = json.dumps(payload).encode()
    return {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "application/json"}


def _titan_vector(dim: int = 256, at: int = 3) -> dict[str, Any]:
    vector = [0.0] * dim
    vector[at] = 2.0
    return {"embedding": vector, "inputTextTokenCount": 3}


def _titan_request(text: str, dim: int = 256) -> dict[str, Any]:
    return {
        "modelId": TITAN,
        "body": json.dumps({"inputText": text, "dimensions": dim, "normalize": True}),
        "contentType": "application/json",
        "accept": "application/json",
    }


class Sleeps:
    """A Backoff whose sleeps are recorded, not slept; ``rand`` at its top (the full cap)."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def backoff(self, attempts: int = 5) -> Backoff:
        return Backoff(attempts=attempts, base=0.2, cap=1.0, sleep=self.slept.append, rand=lambda: 1.0)


def test_titan_request_names_the_model_dimension_and_normalisation_and_returns_unit_vectors() -> None:
    client = _client()
    engine = TitanEmbeddings(client, dim=256)
    assert engine.id == "bedrock:amazon.titan-embed-text-v2:0:256" and not engine.lexical
    with Stubber(client) as stub:
        stub.add_response("invoke_model", _body(_titan_vector()), _titan_request("hello world"))
        out = engine.embed(["hello world"])
        stub.assert_no_pending_responses()
    assert out[0][3] == 1.0 and math.isclose(sum(v * v for v in out[0]), 1.0)
    with Stubber(client) as stub:
        stub.add_response("invoke_model", _body({"embedding": [0.1] * 10}))
        with pytest.raises(ValueError, match="10 dimensions"):
            engine.embed(["x"])
    with pytest.raises(ValueError):
        TitanEmbeddings(client, dim=300)


def test_titan_retries_throttling_and_transient_answers_with_growing_bounded_backoff() -> None:
    client, sleeps = _client(), Sleeps()
    engine = TitanEmbeddings(client, dim=256, backoff=sleeps.backoff(), concurrency=1)
    with Stubber(client) as stub:
        for code, status in (
            ("ThrottlingException", 429),
            ("ServiceUnavailableException", 503),
            ("ModelTimeoutException", 408),
            ("ThrottlingException", 429),
        ):
            stub.add_client_error("invoke_model", code, "busy", status)
        stub.add_response("invoke_model", _body(_titan_vector()), _titan_request("retry me"))
        out = engine.embed(["retry me"])
        stub.assert_no_pending_responses()
    assert out[0][3] == 1.0
    assert sleeps.slept == [0.2, 0.4, 0.8, 1.0]  # doubling, capped


def test_titan_gives_up_after_the_last_attempt_with_an_error_naming_the_model_and_answer() -> None:
    client, sleeps = _client(), Sleeps()
    engine = TitanEmbeddings(client, dim=256, backoff=sleeps.backoff(attempts=3), concurrency=1)
    with Stubber(client) as stub:
        for _ in range(3):
            stub.add_client_error("invoke_model", "ThrottlingException", "Too many requests", 429)
        with pytest.raises(
            EmbeddingUnavailable, match=r"amazon\.titan-embed-text-v2:0 answered ThrottlingException to 3"
        ):
            engine.embed(["q"])
        stub.assert_no_pending_responses()
    assert len(sleeps.slept) == 2
    # The search answers it as retryable: 503 with Retry-After, its message naming no request content.
    status, code, message, retry_after = classify(EmbeddingUnavailable(TITAN, "ThrottlingException", 3))
    assert (status, code, retry_after) == (503, "unavailable", 1) and "q" not in message.split()
    # Positive control: one throttle fewer than the attempts, and the same call succeeds.
    with Stubber(client) as stub:
        for _ in range(2):
            stub.add_client_error("invoke_model", "ThrottlingException", "Too many requests", 429)
        stub.add_response("invoke_model", _body(_titan_vector()))
        assert engine.embed(["q"])[0][3] == 1.0


def test_titan_does_not_retry_an_error_a_retry_cannot_fix() -> None:
    client, sleeps = _client(), Sleeps()
    engine = TitanEmbeddings(client, dim=256, backoff=sleeps.backoff(), concurrency=1)
    with Stubber(client) as stub:
        stub.add_client_error("invoke_model", "AccessDeniedException", "no model access", 403)
        with pytest.raises(Exception, match="AccessDeniedException"):
            engine.embed(["q"])
        stub.assert_no_pending_responses()
    assert sleeps.slept == []


def test_titan_cuts_a_text_past_its_limits_instead_of_failing() -> None:
    client = _client()
    engine = TitanEmbeddings(client, dim=256, concurrency=1)
    long_text = "word " * 20_000  # 100,000 characters
    first = long_text[:MAX_CHARS]
    with Stubber(client) as stub:
        stub.add_client_error(
            "invoke_model",
            "ValidationException",
            "400 Bad Request: Too many input tokens. Max input tokens: 8192, "
            "request input token count: 10000",
            400,
            expected_params=_titan_request(first),
        )
        second = first[: int(len(first) * 8192 / 10000 * 0.9)]
        stub.add_response("invoke_model", _body(_titan_vector()), _titan_request(second))
        out = engine.embed([long_text])
        stub.assert_no_pending_responses()
    assert out[0][3] == 1.0
    # Another validation error is the caller's: not cut and sent again.
    with Stubber(client) as stub:
        stub.add_client_error("invoke_model", "ValidationException", "Malformed input request", 400)
        with pytest.raises(Exception, match="Malformed"):
            engine.embed(["x"])
        stub.assert_no_pending_responses()


def test_titan_embeds_a_list_with_concurrent_calls_and_keeps_its_order() -> None:
    class Client:
        def __init__(self) -> None:
            self.threads: set[int] = set()

        def invoke_model(self, **kw: Any) -> dict[str, Any]:
            self.threads.add(threading.get_ident())
            n = int(json.loads(kw["body"])["inputText"])
            return _body(_titan_vector(at=n))

    client = Client()
    out = TitanEmbeddings(client, dim=256, concurrency=4).embed([str(i) for i in range(40)])
    assert [v.index(1.0) for v in out] == list(range(40))
    assert len(client.threads) > 1


def test_cohere_embeds_96_texts_per_call_as_documents_and_queries_as_queries() -> None:
    client = _client()
    engine = CohereEmbeddings(client, "cohere.embed-english-v3")
    assert engine.id == "bedrock:cohere.embed-english-v3:1024" and engine.dim == 1024
    texts = [f"memory {i}" for i in range(COHERE_BATCH * 2 + 8)]
    texts[0] = "x" * (COHERE_MAX_CHARS + 500)

    def answer(n: int) -> dict[str, Any]:
        return _body(
            {"embeddings": [[1.0] + [0.0] * 1023 for _ in range(n)], "response_type": "embeddings_floats"}
        )

    def request(part: list[str], input_type: str) -> dict[str, Any]:
        body = {"texts": part, "input_type": input_type, "truncate": "END"}
        return {
            "modelId": "cohere.embed-english-v3",
            "body": json.dumps(body),
            "contentType": "application/json",
            "accept": "application/json",
        }

    with Stubber(client) as stub:
        sent = [texts[0][:COHERE_MAX_CHARS], *texts[1:]]
        for start in range(0, len(texts), COHERE_BATCH):
            part = sent[start : start + COHERE_BATCH]
            stub.add_response("invoke_model", answer(len(part)), request(part, "search_document"))
        out = engine.embed(texts)
        stub.assert_no_pending_responses()
    assert len(out) == len(texts) and all(v[0] == 1.0 and len(v) == 1024 for v in out)
    query = "where do the deploy notes live"
    with Stubber(client) as stub:
        stub.add_response("invoke_model", answer(1), request([query], "search_query"))
        assert embed_query(engine, query)[0] == 1.0
        stub.assert_no_pending_responses()
    with Stubber(client) as stub:  # a count that does not match the texts is refused
        stub.add_response("invoke_model", answer(1))
        with pytest.raises(ValueError, match="1 vectors for 2 texts"):
            engine.embed(["a", "b"])


def test_the_model_id_chooses_the_engine_and_the_client_leaves_retries_to_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert isinstance(engine_for_model(_client(), "cohere.embed-multilingual-v3", 256), CohereEmbeddings)
    titan = engine_for_model(_client(), TITAN, 512)
    assert isinstance(titan, TitanEmbeddings) and titan.dim == 512
    with pytest.raises(ValueError):
        CohereEmbeddings(_client(), "cohere.embed-unknown")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    from acx.config import settings

    settings.cache_clear()
    try:
        client = runtime_client()
    finally:
        settings.cache_clear()
    assert client.meta.service_model.service_name == "bedrock-runtime"
    assert client.meta.config.retries["total_max_attempts"] == 1  # the engine's Backoff retries
