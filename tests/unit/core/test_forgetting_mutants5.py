"""The near-copy policy is a frozen value: one policy object is shared by every check of a batch, so
no caller may switch the rule off (or move its threshold) under the others.
"""

from __future__ import annotations

import dataclasses

import pytest

from acx.core.forgetting import NearPolicy


def test_a_near_policy_cannot_be_changed_after_it_is_made() -> None:
    policy = NearPolicy()
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.mode = "off"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.threshold = 0.0  # type: ignore[misc]
    assert policy.enabled and policy == NearPolicy()


def test_equal_near_policies_hash_alike() -> None:
    """A frozen value hashes by its fields: equal policies are one key of a cache or a set."""
    assert hash(NearPolicy("off", 0.5)) == hash(NearPolicy("off", 0.5))
    assert len({NearPolicy(), NearPolicy(), NearPolicy("off")}) == 2
