"""local-hash-128 agrees with the reference vectors."""

from __future__ import annotations

import math

from acx.core.embedding import DIM, ENGINE_ID, embed, embed_record, engine_descriptor


def test_embedding_matches_every_vector(load_vector):
    doc = load_vector("embedding.json")
    assert doc["engine"] == engine_descriptor() == {"id": ENGINE_ID, "dim": DIM}
    for case in doc["cases"]:
        got = embed(case["text"])
        assert len(got) == DIM
        assert all(math.isclose(a, b, abs_tol=1e-12) for a, b in zip(got, case["vector"], strict=True))


def test_embedding_is_unit_length_or_zero():
    assert math.isclose(math.fsum(v * v for v in embed("Retry with backoff 42")), 1.0)
    assert embed("日本 ü !!") == [0.0] * DIM


def test_embed_record_uses_title_blank_line_summary():
    record = {"title": "Retry with jittered backoff", "summary": "The flaky test passed after 3 retries"}
    assert embed_record(record) == embed(
        "Retry with jittered backoff\n\nThe flaky test passed after 3 retries"
    )
