"""Forgetting, continued: the keyer is a frozen value, two words make one bigram, and among tombstones
equally similar to a record the one filed first is the one named.
"""

from __future__ import annotations

import dataclasses

import pytest

from acx.core.forgetting import NearPolicy, StaticKeyer, near_hits, probes, shingles

KEYER = StaticKeyer(b"k" * 32)


def test_a_static_keyer_cannot_be_given_another_secret() -> None:
    keyer = StaticKeyer(b"s" * 32)
    with pytest.raises(dataclasses.FrozenInstanceError):
        keyer.secret = b"t" * 32  # type: ignore[misc]
    assert keyer.key() == b"s" * 32
    assert hash(keyer) == hash(StaticKeyer(b"s" * 32))


def test_two_words_are_one_bigram() -> None:
    assert shingles("alpha beta") == ["alpha beta"]
    assert shingles("alpha") == ["alpha"]
    assert shingles("alpha beta gamma") == ["alpha beta", "beta gamma"]


def test_equally_similar_tombstones_name_the_one_filed_first() -> None:
    record = {"id": "r1", "title": "retry the deploy", "summary": "after the cache warms up again"}
    (probe,) = probes(KEYER, [record], NearPolicy())
    assert probe.sketch is not None
    filed = {"tomb-a": (probe.sketch, 3), "tomb-b": (probe.sketch, 7)}
    candidates = {bk: dict(filed) for bk in probe.bands}
    (hit,) = near_hits(candidates, [probe], 0.5)
    assert (hit.index, hit.record_id, hit.rule, hit.seq) == (0, "r1", "near", 3)
    swapped = {bk: {"tomb-b": filed["tomb-b"], "tomb-a": filed["tomb-a"]} for bk in probe.bands}
    assert near_hits(swapped, [probe], 0.5)[0].seq == 7
