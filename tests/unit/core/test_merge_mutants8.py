"""Merge behaviour the seventh round's fresh draw (seed 27) found unguarded: a fold never adds a field
that none of its records has."""

from __future__ import annotations

import pytest

from acx.core.merge import merge_records, survivor
from tests.unit.core.test_merge import rec


@pytest.mark.parametrize("name", ["title", "summary", "impact", "xpAwarded", "timestamp"])
def test_a_field_no_record_of_the_fold_has_stays_absent(name: str) -> None:
    """The survivor carries a merged field only when a record had it: two records without ``name``
    fold into one without it (not into ``name: None``), whichever is the base."""
    a, b = rec("a"), rec("b", title="a longer title b")
    a.pop(name, None)
    b.pop(name, None)
    for first, second in ((a, b), (b, a)):
        assert name not in survivor(first, second)
    (merged,) = merge_records([a, dict(b, id="a")])
    assert name not in merged
