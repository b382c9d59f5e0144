"""Value judgements (judge.py), sixth round: each judgement pinned by what its docstring states, over
generated inputs at the byte-class boundaries (``/`` and ``:`` around the digits, `````` and ``{``
around the lower-case letters), not one drawn mutant at a time.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from acx.core.scrub import judge

LOWER = set(b"abcdefghijklmnopqrstuvwxyz")
DIGITS = set(b"0123456789")


def _typed_along_the_alphabet(low: bytes) -> bool:
    """``_ascending``'s contract, read from its docstring: five or more letters (a-z) in strictly
    rising order, the digits (0-9, if any) never falling, at most one other character, 24 at most."""
    letters = [b for b in low if b in LOWER]
    digits = [b for b in low if b in DIGITS]
    if len(letters) < 5 or len(low) > 24 or len(low) - len(letters) - len(digits) > 1:
        return False
    return all(a < b for a, b in itertools.pairwise(letters)) and all(
        a <= b for a, b in itertools.pairwise(digits)
    )


@st.composite
def _stand_ins(draw: st.DrawFn) -> bytes:
    """Letters and digits each mostly in order (what a typed stand-in looks like), with the bytes
    next to each class mixed in and, sometimes, two characters swapped."""
    letters = sorted(draw(st.sets(st.sampled_from(b"`abcdefghijklmnopqrstuvwxyz{"), min_size=3, max_size=14)))
    digits = sorted(draw(st.lists(st.sampled_from(b"/0123456789:"), max_size=10)))
    out: list[int] = []
    li = di = 0
    for take_letter in draw(
        st.lists(st.booleans(), min_size=len(letters) + len(digits), max_size=len(letters) + len(digits))
    ):
        if (take_letter and li < len(letters)) or di >= len(digits):
            out.append(letters[li])
            li += 1
        else:
            out.append(digits[di])
            di += 1
    for ch in draw(st.lists(st.sampled_from(b"-_.:/`{@9a"), max_size=2)):
        out.insert(draw(st.integers(0, len(out))), ch)
    if len(out) > 1 and draw(st.booleans()):
        i = draw(st.integers(0, len(out) - 2))
        out[i], out[i + 1] = out[i + 1], out[i]
    return bytes(out)


@given(_stand_ins())
@example(b"abcdef12:34")  # ``:`` right after ``9`` is not a digit: the one other character
@example(b"abcde")
@example(b"abcd`")
@example(b"abcd{")
@example(b"`abcde")
@example(b"bcdez{")
@example(b"abcde9/")
@example(b"abcde0/1")
@example(b"abcde/0")
@example(b"abcdefghijklmnopqrstuvwx")  # 24: still typed
@example(b"abcdefghijklmnopqrstuvwxy")  # 25: too long to judge
@example(b"abcdefghijklmnopqrst1234")
@example(b"abcdefghijklmnopqrst12345")
@example(b"abcde-_")  # two other characters
@example(b"abcde-")
@example(b"abcdd")  # strictly rising: a repeated letter is not
@example(b"abcde1123")  # digits may repeat
@example(b"abcde21")
def test_alphabet_order_is_judged_as_documented(low: bytes) -> None:
    assert judge._ascending(low) is _typed_along_the_alphabet(low)


def test_a_stand_in_typed_along_the_alphabet_with_a_separator_is_a_placeholder() -> None:
    """``abcdef12:34``: letters and digits rising around one separator, a value typed, not drawn."""
    assert judge.is_placeholder(b"abcdef12:34")
    assert not judge.is_placeholder(b"abcdef12:34", strict=False)


# --- is_placeholder: each way a value is a stand-in, on its own -----------------------------------


@pytest.mark.parametrize(
    "value",
    [
        b"<TOKEN>",  # template syntax
        b"${VAR}",
        b"YOUR_TOKEN_HERE",  # a CONSTANT_CASE name
        b"ghp_abababab",  # after a short prefix, two characters repeated (no mask run, no order)
        b"wxyz_abab",  # ... a prefix as long as the rest counts as short
        b"wxy_abab",
        b"abcacbcab",  # three distinct characters in all
    ],
)
def test_each_kind_of_stand_in_is_a_placeholder_on_its_own(value: bytes) -> None:
    assert judge.is_placeholder(value)


@pytest.mark.parametrize(
    "value",
    [
        b"ghp_abcabcabcab",  # three characters after the prefix: too many for a mask
        b"wxyzq_abab",  # the prefix is the longer part: the whole value is judged
        b"wxyz_ababc",
        b"abcacbcabd",  # four distinct characters
        b"Zq8Lm3Xv9R",
    ],
)
def test_a_value_just_past_each_stand_in_rule_is_not_a_placeholder(value: bytes) -> None:
    assert not judge.is_placeholder(value)


MIXED_HEX = b"acdeFf05b1e9D2c7a84F3b6e0d9C1a5E7b2f"


@pytest.mark.parametrize(("n", "secret"), [(30, True), (31, True), (32, False), (36, False)])
def test_mixed_case_hex_from_32_characters_is_typed_not_generated(n: int, secret: bool) -> None:
    """Hex is printed in one case: 32 or more hex digits in both cases were typed (an example), not
    a generator's output; shorter, the value is judged like any other."""
    assert judge.is_secret_value(MIXED_HEX[:n], True) is secret
    assert judge.is_secret_value(MIXED_HEX[:n].lower(), True)


# 40 lower-case letters and digits, well mixed, whose entropy (about 4.12 bits) lies between
# 0.8 * log2(35) and the bar 0.8 * log2(36) that a token of 36 or more characters must reach
BELOW_THE_BAR = [b"hee73i47nbpu5pn3p7gyn21mo4ifghybn5fh1pv4", b"i9etaotcznnw7e1pk77ywc0pa7yrwi0keihgocpz"]


@pytest.mark.parametrize("token", BELOW_THE_BAR)
def test_a_long_lower_case_token_needs_0_8_of_the_36_symbol_entropy(token: bytes) -> None:
    """From 36 characters on the bar is 0.8 * log2(36) bits (36 symbols: letters and digits); a token
    just under it is not random enough, however well its classes mix."""
    assert 0.8 * math.log2(35) <= judge.shannon_entropy(token) < 0.8 * math.log2(36)
    assert not judge.looks_random_lower(token)
    assert judge.looks_random_lower(b"h9eco54ny4xb6xq8mrl86msarzq8lm3xv9rt2w")
