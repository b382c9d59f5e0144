"""The index build's speed-ups change no byte of a segment and no vector.

``GOLDEN`` holds the SHA-256 of what main's code (before the speed-ups, at 6b8de44) produced for the
fixed inputs below: the segment bytes, the embedding vectors (their float bits) and the int8 codes
and scales. The differential tests compare the fast paths with the formulas they replace on vectors
the engine never makes (dense, -0.0, NaN, inf, huge) too."""

from __future__ import annotations

import hashlib
import math
import random
import struct
from typing import Any

from acx.core.embedding import LocalHash128
from acx.core.search import search, to_docs
from acx.core.search.ranking import IndexView
from acx.core.search.segment import Packed, Segment, quantise

WORDS = (
    "merge socket trace schema type shard pool config quota cache parser migration unicode deadlock "
    "deploy handler latency queue table timeout p95 locale cron flaky lock emoji bucket async encoder "
    "await cert dashboard check span leak retry metric lint index timezone tag worker review alarm "
    "disk replica rotate partition the and of to running runs ran Straße café naïve ﬁle ＡＢＣ 東京 "
    "x y 42 a1 ___ --"
).split()


def _records(n: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        title = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 8)))
        summary = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 90)))
        tags = sorted({rnd.choice(WORDS) for _ in range(rnd.randint(0, 4))})
        out.append(
            {
                "id": f"r-{i:05d}-{rnd.randint(0, 3)}",  # some ids repeat: the last one wins
                "title": title or None,
                "summary": summary,
                "tags": tags,
                "portable": rnd.random() < 0.5,
            }
        )
    return out


def _digest_floats(vectors: list[list[float]]) -> str:
    h = hashlib.sha256()
    for v in vectors:
        h.update(struct.pack(f"<{len(v)}d", *v))
    return h.hexdigest()


GOLDEN = {
    "segment": "0d2631a5d734a05f1bf7e9290fe9d74bcfe663f84de015afeb0c3ed508e54592",
    "vectors": "6d8a2531dff6edecb6700291db9b5a58d6d8337af94d2d6ddf8bcad4ee467c08",
    "codes": "4cac9cd465c5892ef02e7f1d2c73d09a83bf9c755a4892ba79a0d8e180598fff",
    "search": "5791e0170c4729857963dcdbc8f3fac2ca930bb4ff558178c72a0e69bae32a3b",
}


def _segment_bytes() -> bytes:
    engine = LocalHash128()
    docs = to_docs(_records(600, seed=17), engine)
    return Segment.build(engine.id, engine.dim, docs).to_bytes()


def test_segment_bytes_are_mains() -> None:
    assert hashlib.sha256(_segment_bytes()).hexdigest() == GOLDEN["segment"]


def test_vectors_and_codes_are_mains() -> None:
    texts = [f"{r['title'] or ''}\n\n{r['summary']}" for r in _records(400, seed=5)] + ["", "...", "a"]
    vectors = LocalHash128().embed(texts)
    assert _digest_floats(vectors) == GOLDEN["vectors"]
    h = hashlib.sha256()
    for codes, scale in map(quantise, vectors):
        h.update(struct.pack(f"<{len(codes)}bf", *codes, scale))
    assert h.hexdigest() == GOLDEN["codes"]


def test_search_answers_unchanged_on_the_built_segment() -> None:
    engine = LocalHash128()
    view = IndexView(engine.id, engine.dim, [Packed.parse(_segment_bytes())])
    got = [
        [(h.id, round(h.score, 6)) for h in search(view, engine, q, k=10)]
        for q in ("shard parser", "café naive", "東京", "deadlock review queue", "running")
    ]
    assert got[0]  # the queries find something
    assert hashlib.sha256(repr(got).encode()).hexdigest() == GOLDEN["search"]


def _quantise_per_entry(vector: list[float]) -> tuple[list[int], float]:
    """main's formula (before FEW_VALUES): every entry multiplied and rounded."""
    peak = max(max(vector, default=0.0), -min(vector, default=0.0))
    if peak == 0.0:
        return [0] * len(vector), 0.0
    inv = 127.0 / peak
    return list(map(round, map(inv.__mul__, vector))), peak / 127.0


def _outcome(fn: Any, vector: list[float]) -> Any:
    try:
        codes, scale = fn(vector)
    except (ValueError, OverflowError) as exc:
        return type(exc), str(exc)
    return codes, struct.pack("<d", scale)  # the scale's bits, not just its value


def _odd_vectors() -> list[list[float]]:
    rnd = random.Random(11)
    out: list[list[float]] = [[], [0.0] * 8, [-0.0, 0.0, -0.0], [1.0], [-2.5, 2.5, 0.5, -0.5]]
    for _ in range(300):
        n = rnd.choice((1, 3, 16, 128))
        few = [rnd.choice((1, -1)) * rnd.randint(1, 9) / rnd.choice((3.0, 7.0, 11.3)) for _ in range(4)]
        out.append([rnd.choice((0.0, -0.0, *few)) for _ in range(n)])  # few distinct values
        out.append([rnd.gauss(0, 1) for _ in range(n)])  # many distinct values (a real model)
    out += [
        [0.0, math.nan, 1.0],
        [math.nan],
        [math.inf, 1.0, 0.0],
        [-math.inf, 0.0],
        [5e-324, 0.0, -5e-324],  # a subnormal peak: 127 / peak overflows
        [5e-324, 1e-323],
        [1e-323, 0.0, 5e-324],
        [1e308, 1e308, -1e308],  # the sum of the distinct values overflows
        [0.5 / 127 * k for k in range(-3, 4)],  # halves: round() rounds them to even
    ]
    return out


def test_quantise_equals_the_per_entry_formula() -> None:
    vectors = _odd_vectors()
    differ = [v for v in vectors if _outcome(quantise, v) != _outcome(_quantise_per_entry, v)]
    assert differ == []


def test_quantise_takes_the_few_values_path_for_engine_vectors() -> None:
    """The engine's vectors are the case the lookup is for (it would be dead code otherwise)."""
    from acx.core.search import segment

    vectors = LocalHash128().embed([f"{r['title']}\n\n{r['summary']}" for r in _records(50, seed=2)])
    assert all(len(set(v)) <= segment.FEW_VALUES for v in vectors)
    assert sum(len(set(v)) > 2 for v in vectors) > 40
