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


def test_byte_tokens_and_vectors_are_those_of_the_regex_definition():
    """The translate/split tokeniser finds the standard's runs of [a-z0-9] on any text (non-ASCII,
    Turkish dotted I whose lowercase grows, lone surrogates), and the vector is bit for bit the one
    the regex-and-loop definition gives."""
    import hashlib
    import random
    import re
    from collections import Counter

    from acx.core.embedding import tokens

    def reference(text: str) -> list[float]:
        vector = [0.0] * DIM
        for token, count in Counter(re.findall(r"[a-z0-9]+", text.lower())).items():
            h = hashlib.sha1(token.encode(), usedforsecurity=False).digest()
            vector[int.from_bytes(h[0:4], "big") % DIM] += (1.0 if h[4] & 1 else -1.0) * count
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector

    rng = random.Random(5)
    alphabet = "aZ09 _-.é日İK\u212a\ud800\U0001f600\n"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert tokens(text) == [t.encode() for t in re.findall(r"[a-z0-9]+", text.lower())], repr(text)
        assert embed(text) == reference(text), repr(text)
