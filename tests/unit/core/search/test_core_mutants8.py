"""Search and segment behaviours the seventh round's fresh draw (seed 27) found unguarded: a tag
filter over segments that lack the tag, term frequencies past a byte, and the per-entry quantisation
path (many distinct values, and a NaN beside zeros)."""

from __future__ import annotations

import math

import pytest

from acx.core.search import search, to_docs
from acx.core.search.segment import Packed, Segment, quantise
from tests.unit.core.search.test_core import ENGINE, _rec, _view


def test_a_tag_filter_returns_nothing_from_segments_without_the_tag() -> None:
    """Each segment's first doc matches the query but carries no such tag: a tag no doc has finds
    nothing, and a tag only the second segment holds finds only its doc."""
    view = _view(
        [_rec("a1", "deploy notes"), _rec("a2", "deploy notes", tags=["db"])],
        [_rec("b1", "deploy notes"), _rec("b2", "deploy notes", tags=["ops"])],
    )
    assert search(view, ENGINE, "deploy", k=10, tag="absent") == []
    assert [h.id for h in search(view, ENGINE, "deploy", k=10, tag="ops")] == ["b2"]
    assert [h.id for h in search(view, ENGINE, "deploy", k=10, tag="db")] == ["a2"]


@pytest.mark.parametrize(("repeats", "stored"), [(254, 254), (255, 255), (256, 255), (400, 255)])
def test_a_term_frequency_saturates_at_255(repeats: int, stored: int) -> None:
    """A term repeated past what a byte holds is stored as 255 (building never fails on it), and up
    to 255 it is stored as counted; the bytes read back say the same."""
    (doc,) = to_docs([_rec("a", "alpha " * repeats + "beta")], ENGINE)
    seg = Segment.build(ENGINE.id, ENGINE.dim, [doc])
    got = dict(zip(seg.terms, seg.tfs, strict=True))
    assert got["alpha"] == stored and got["beta"] == 1
    back = Segment.from_bytes(seg.to_bytes())
    assert dict(zip(back.terms, back.tfs, strict=True)) == got
    assert Packed.parse(seg.to_bytes()).n == 1


@pytest.mark.parametrize("peak", [0.5, 1.0, 3.0])
def test_a_vector_of_many_distinct_values_maps_its_peak_to_127(peak: float) -> None:
    """Past FEW_VALUES distinct values quantise takes the per-entry formula: the peak is still +-127
    (an int8), never 128, and the scale maps the codes back."""
    vector = [peak * (i - 20) / 20 for i in range(41)]  # 41 distinct values, the peak at both ends
    codes, scale = quantise(vector)
    assert codes[0] == -127 and codes[-1] == 127 and codes[20] == 0
    assert max(map(abs, codes)) == 127
    assert scale == pytest.approx(peak / 127)
    assert all(abs(c * scale - x) <= scale / 2 + 1e-12 for c, x in zip(codes, vector, strict=True))


@pytest.mark.parametrize(
    "vector", [[0.0, math.nan], [-0.0, math.nan], [0.0] * 40 + [math.nan], [math.nan, 0.0]]
)
def test_a_nan_beside_zeros_is_refused_in_any_position(vector: list[float]) -> None:
    """A NaN is refused (the error round() gives a NaN), also when every other entry is zero and the
    NaN does not come first: it used to give an all-zero vector then, and a ValueError only when first."""
    with pytest.raises(ValueError, match="NaN"):
        quantise(vector)
