"""The forget rules (acx.core.forgetting): normalisation, keyed hashes, the near-copy sketch."""

from __future__ import annotations

import random

import pytest

from acx.core import forgetting as f

KEY = f.StaticKeyer(b"k" * 32)
WORDS = (
    "retry backoff jitter deploy rollback cache index shard lease token queue timeout schema migration "
    "alarm metric budget review lint canary latency throughput idempotent replay checksum owner page "
    "drain freeze rebuild tenant quota region failover replica snapshot restore vacuum"
).split()


@pytest.mark.parametrize(
    "variant",
    [
        "Stop the ROLLOUT early",
        "  Stop the rollout early \n",
        "Stop\u00a0the rollout  early",
        "Stop the roll\u200bout early",
        "Stop the roll\u00adout early",
        "Stop the \u202arollout\u202c early",
        "Ｓｔｏｐ the rollout early",
        "Stop the rollout e\ufe0farly",
    ],
)
def test_normalisation_makes_invisible_and_cosmetic_changes_equal(variant: str) -> None:
    assert f.knowledge_key(KEY, variant, "x") == f.knowledge_key(KEY, "stop the rollout early", "x")


def test_the_key_is_keyed_and_separates_title_from_summary() -> None:
    assert f.knowledge_key(KEY, "a", "b") != f.knowledge_key(f.StaticKeyer(b"j" * 32), "a", "b")
    assert f.knowledge_key(KEY, "a b", "c") != f.knowledge_key(KEY, "a", "b c")
    assert f.knowledge_key(KEY, "a", "b") != f.knowledge_key(KEY, "a", "b c")


def _text(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n))


def _index(sketches: list[tuple[int, ...]]) -> dict[str, dict[str, tuple[tuple[int, ...], int]]]:
    bands: dict[str, dict[str, tuple[tuple[int, ...], int]]] = {}
    for i, sk in enumerate(sketches):
        for bk in f.band_keys(sk):
            bands.setdefault(bk, {})[str(i)] = (sk, i)
    return bands


def _probe(i: int, title: str, summary: str) -> f.Probe:
    return f.Probe(i, f"r{i}", "", "", f.record_sketch(KEY, title, summary))


def test_near_copy_floor_no_false_refusals_and_edits_caught() -> None:
    """0 refusals of 4,000 unrelated generated records against 1,000 tombstones (the bench runs the
    100,000 x 10,000 figure); at least 95% of one-word edits and of appended sentences caught."""
    rnd = random.Random(11)
    stones = [(f"lesson {_text(rnd, 5)}", _text(rnd, rnd.randint(12, 60))) for _ in range(1000)]
    index = _index([s for t, x in stones if (s := f.record_sketch(KEY, t, x)) is not None])
    unrelated = [_probe(i, f"note {_text(rnd, 5)}", _text(rnd, rnd.randint(12, 60))) for i in range(4000)]
    assert f.near_hits(index, unrelated, f.DEFAULT_NEAR_THRESHOLD) == []
    edits, appended = [], []
    for i, (title, summary) in enumerate(stones):
        words = summary.split()
        words[rnd.randrange(len(words))] = "zebra"
        edits.append(_probe(i, title, " ".join(words)))
        appended.append(_probe(i, title, summary + " Then page the owner and write it down."))
    assert len(f.near_hits(index, edits, f.DEFAULT_NEAR_THRESHOLD)) >= 950
    assert len(f.near_hits(index, appended, f.DEFAULT_NEAR_THRESHOLD)) >= 950


def test_short_texts_have_no_sketch_and_sketches_round_trip() -> None:
    assert f.record_sketch(KEY, "a", "b c") is None
    sk = f.record_sketch(KEY, "one two three", "four five six seven")
    assert sk is not None and f.unpack(f.pack(sk)) == sk and f.similarity(sk, sk) == 1.0
    with pytest.raises(ValueError):
        f.unpack(b"short")


def test_short_texts_sharing_a_phrase_are_not_near_copies() -> None:
    """Real docstrings ("Return True if the future was cancelled." / "... the symbol is annotated.")
    share a phrase and little else: the estimate compares filled bins only, so a few word pairs
    copied into every bin by densification do not look like half the text (they did: 21 of 3,512
    unrelated stdlib docstrings were refused below the threshold)."""
    rnd = random.Random(5)
    refused = densified_refused = compared = 0
    for _ in range(3000):
        a = "return true if the " + _text(rnd, 3)
        b = "return true if the " + _text(rnd, 3)
        x, y = f.sketch(KEY, a), f.sketch(KEY, b)
        assert x is not None and y is not None
        pa, pb = set(f.shingles(a)), set(f.shingles(b))
        if len(pa & pb) / len(pa | pb) >= 0.4:
            continue
        compared += 1
        refused += f.similarity(x, y) >= f.DEFAULT_NEAR_THRESHOLD
        densified_refused += f.similarity(f.densify(x), f.densify(y)) >= f.DEFAULT_NEAR_THRESHOLD
    # 6 word pairs each: 60 bins still collide now and then (12 of 2,900 here); the densified
    # estimate refused 341 (what it did before)
    assert refused <= compared // 200
    assert densified_refused > 20 * max(1, refused)


SYLLABLES = [f"{a}{b}" for a in ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi") for b in "bdfgklmnprstvz"]


def test_bands_are_strided_so_unrelated_texts_meet_no_candidates() -> None:
    """Neighbouring bins are filled from one another, so bands of neighbours collide together (8,859
    band hits here with bands of 3 neighbours); the strided bands of 2,000 unrelated texts share no
    band with 2,000 tombstones, so the candidates to compare do not grow with the tombstones."""
    rnd = random.Random(6)

    def text() -> str:
        return " ".join(rnd.choice(SYLLABLES) for _ in range(rnd.randint(12, 40)))

    stones = [f.sketch(KEY, text()) for _ in range(2000)]
    index = {bk for s in stones if s for bk in f.band_keys(s)}
    probes = [f.sketch(KEY, text()) for _ in range(2000)]
    assert sum(1 for p in probes if p for bk in f.band_keys(p) if bk in index) == 0
