"""Value judgements (judge.py), sixth round: each judgement pinned by what its docstring states, over
generated inputs at the byte-class boundaries (``/`` and ``:`` around the digits, `````` and ``{``
around the lower-case letters), not one drawn mutant at a time.
"""

from __future__ import annotations

import itertools

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
