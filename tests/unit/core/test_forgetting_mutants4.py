"""Forget-rule values at edges the mutation run found unguarded: two all-empty sketches compare as
0.0 (nothing in common, never a division by zero), and a refused memory's Hit cannot be edited."""

from __future__ import annotations

import dataclasses

import pytest

from acx.core import forgetting as f

EMPTY = ((1 << 64) - 1,) * f.SKETCH_BINS  # every bin keeps the empty mark


def test_two_all_empty_sketches_have_similarity_zero() -> None:
    """Sketches with no filled bin share nothing: similarity 0.0, not an error; one filled bin in
    common and the rest empty in both is a full match of what there is."""
    assert f.similarity(EMPTY, EMPTY) == 0.0
    one = (7, *EMPTY[1:])
    assert f.similarity(one, one) == 1.0
    assert f.similarity(one, EMPTY) == 0.0


def test_a_hit_is_frozen() -> None:
    """The refusal reported to a client is a value: its rule and forget entry cannot be changed."""
    hit = f.Hit(3, "mem-1", "near", 12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.rule = "exact"  # type: ignore[misc]
    assert hit.to_dict() == {"index": 3, "id": "mem-1", "rule": "near", "forgetSeq": 12}
