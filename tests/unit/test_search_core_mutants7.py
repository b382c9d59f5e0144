"""A ranked hit is a value: it cannot be edited after ranking (a later signal cannot rewrite the score
another caller already holds) and it hashes, so hits can be deduplicated in sets."""

from __future__ import annotations

import dataclasses

import pytest

from acx.core.search.ranking import Hit


def test_a_hit_cannot_be_edited_and_hashes_by_value() -> None:
    hit = Hit("mem-1", 0.5, lexical_rank=1, terms=("deploy",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.score = 1.0  # type: ignore[misc]
    assert {hit, Hit("mem-1", 0.5, lexical_rank=1, terms=("deploy",))} == {hit}
