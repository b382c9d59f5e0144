"""Normalisation (normalise.py), sixth round: the ignorable table against Unicode's own property (not
a copy of the table), and the changed-run budget at lengths where ``len // 64`` and its neighbours
part, with unchanged non-ASCII runs that must not count against it.
"""

from __future__ import annotations

import functools

import pytest
import regex

from acx.core.scrub.normalise import _IGNORABLE_RANGES, NormaliseBudget, is_ignorable, normalise_bytes


@functools.cache
def _default_ignorable_ranges() -> tuple[tuple[int, int], ...]:
    """Default_Ignorable_Code_Point as the ``regex`` package's Unicode database has it (the table's
    source, DerivedCoreProperties.txt): one C-speed pass over every code point but the surrogates."""
    every = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))
    runs = regex.finditer(r"\p{Default_Ignorable_Code_Point}+", every)
    return tuple((ord(m.group()[0]), ord(m.group()[-1])) for m in runs)


def test_the_table_is_unicodes_default_ignorable_set() -> None:
    """Every range, first and last code point, as Unicode's property gives them (a moved edge drops a
    visible character or keeps an invisible one that can split a token)."""
    assert tuple(_IGNORABLE_RANGES) == _default_ignorable_ranges()


def test_every_default_ignorable_code_point_is_dropped_and_each_one_past_a_range_is_not() -> None:
    ranges = _default_ignorable_ranges()
    inside = [cp for lo, hi in ranges for cp in range(lo, hi + 1)]
    assert len(inside) > 4000
    assert not [hex(cp) for cp in inside if not is_ignorable(chr(cp))]
    outside = sorted({cp for lo, hi in ranges for cp in (lo - 1, hi + 1)} - set(inside))
    assert not [hex(cp) for cp in outside if is_ignorable(chr(cp))]
    # all 4,000-odd in one run between two token halves: they vanish, the token is whole again
    hidden = "ghp_Zq8Lm3" + "".join(map(chr, inside)) + "Xv9Rt2"
    norm = normalise_bytes(hidden.encode("utf-8"))
    assert norm is not None and norm.data == b"ghp_Zq8Lm3Xv9Rt2"


def _soft_hyphens(runs: int, length: int) -> bytes:
    """``runs`` changed runs (``x`` + soft hyphen) padded with ASCII to ``length`` bytes."""
    body = ("x\u00ad" * runs).encode()
    return body + b"y" * (length - len(body))


@pytest.mark.parametrize("length", [1280, 1299, 1984, 2047])
def test_the_budget_is_256_plus_one_changed_run_per_64_bytes(length: int) -> None:
    """At these lengths ``len // 63``, ``len // 64`` and ``len // 65`` all differ: exactly
    ``256 + len // 64`` changed runs are normalised, one more is refused."""
    allowed = 256 + length // 64
    norm = normalise_bytes(_soft_hyphens(allowed, length))
    assert norm is not None and norm.data == b"x" * allowed + b"y" * (length - 3 * allowed)
    with pytest.raises(NormaliseBudget):
        normalise_bytes(_soft_hyphens(allowed + 1, length))


def test_runs_that_normalise_to_themselves_do_not_count_against_the_budget() -> None:
    """Accented prose (``é`` stays ``é`` under NFKC) is not the hostile input the budget refuses: a
    text of 600 unchanged runs and one soft hyphen is normalised, offsets mapped past all of them."""
    text = "caf\u00e9 " * 600 + "to\u00adken"
    norm = normalise_bytes(text.encode())
    assert norm is not None
    assert norm.data == ("caf\u00e9 " * 600 + "token").encode()
    k = norm.data.index(b"ken")
    assert norm.original_offset(k) == text.encode().index(b"ken")
