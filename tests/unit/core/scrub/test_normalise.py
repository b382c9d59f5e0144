"""Normalisation before scanning (acx/core/scrub/normalise.py): NFKC, invisible characters, and offsets
back into the original text."""

from __future__ import annotations

import functools
import unicodedata

import pytest
import regex

from acx.core.scrub import scan_text
from acx.core.scrub.normalise import _IGNORABLE_RANGES, NormaliseBudget, is_ignorable, normalise_bytes
from tests.unit.core.scrub.conftest import GITHUB_PAT, named

# The first and last code point of each Default_Ignorable_Code_Point range.
IGNORABLE_EDGES = [
    0x00AD,  # SOFT HYPHEN
    0x034F,  # COMBINING GRAPHEME JOINER
    0x061C,  # ARABIC LETTER MARK
    0x115F,  # HANGUL CHOSEONG FILLER
    0x1160,  # HANGUL JUNGSEONG FILLER
    0x17B4,  # KHMER VOWEL INHERENT AQ
    0x17B5,  # KHMER VOWEL INHERENT AA
    0x180B,  # MONGOLIAN FREE VARIATION SELECTOR ONE
    0x180F,  # MONGOLIAN FREE VARIATION SELECTOR FOUR
    0x200B,  # ZERO WIDTH SPACE
    0x200F,  # RIGHT-TO-LEFT MARK
    0x202A,  # LEFT-TO-RIGHT EMBEDDING
    0x202E,  # RIGHT-TO-LEFT OVERRIDE
    0x2060,  # WORD JOINER
    0x206F,  # NOMINAL DIGIT SHAPES
    0x3164,  # HANGUL FILLER
    0xFE00,  # VARIATION SELECTOR-1
    0xFE0F,  # VARIATION SELECTOR-16
    0xFEFF,  # ZERO WIDTH NO-BREAK SPACE
    0xFFA0,  # HALFWIDTH HANGUL FILLER
    0xFFF0,  # reserved, default ignorable
    0xFFF8,  # reserved, default ignorable
    0x1BCA0,  # SHORTHAND FORMAT LETTER OVERLAP
    0x1BCA3,  # SHORTHAND FORMAT UP STEP
    0x1D173,  # MUSICAL SYMBOL BEGIN BEAM
    0x1D17A,  # MUSICAL SYMBOL END PHRASE
    0xE0000,  # reserved tag block start
    0xE0FFF,  # reserved, end of the tag and variation-selector planes' ignorable block
]

# The code point just before and just after each range: not default ignorable.
VISIBLE_NEIGHBOURS = [
    0x00AC,  # NOT SIGN
    0x00AE,  # REGISTERED SIGN
    0x034E,  # COMBINING UPWARDS ARROW BELOW
    0x0350,  # COMBINING RIGHT ARROWHEAD ABOVE
    0x061B,  # ARABIC SEMICOLON
    0x061D,  # ARABIC END OF TEXT MARK
    0x115E,  # HANGUL CHOSEONG TIKEUT-RIEUL
    0x1161,  # HANGUL JUNGSEONG A
    0x17B3,  # KHMER INDEPENDENT VOWEL QAU
    0x17B6,  # KHMER VOWEL SIGN AA
    0x180A,  # MONGOLIAN NIRUGU
    0x1810,  # MONGOLIAN DIGIT ZERO
    0x200A,  # HAIR SPACE
    0x2010,  # HYPHEN
    0x2029,  # PARAGRAPH SEPARATOR
    0x202F,  # NARROW NO-BREAK SPACE
    0x205F,  # MEDIUM MATHEMATICAL SPACE
    0x2070,  # SUPERSCRIPT ZERO
    0x3163,  # HANGUL LETTER I
    0x3165,  # HANGUL LETTER SSANGNIEUN
    0xFDFF,  # ARABIC LIGATURE AZZA WA JALL
    0xFE10,  # PRESENTATION FORM FOR VERTICAL COMMA
    0xFEFE,  # unassigned, not default ignorable
    0xFF00,  # unassigned, not default ignorable
    0xFF9F,  # HALFWIDTH KATAKANA SEMI-VOICED SOUND MARK
    0xFFA1,  # HALFWIDTH HANGUL LETTER KIYEOK
    0xFFEF,  # unassigned, not default ignorable
    0xFFF9,  # INTERLINEAR ANNOTATION ANCHOR (a format character, but not default ignorable)
    0x1BC9F,  # DUPLOYAN PUNCTUATION CHINOOK FULL STOP
    0x1BCA4,  # unassigned, not default ignorable
    0x1D172,  # MUSICAL SYMBOL COMBINING FLAG-5
    0x1D17B,  # MUSICAL SYMBOL COMBINING ACCENT
    0xDFFFF,  # a noncharacter, not default ignorable
    0xE1000,  # unassigned, past the ignorable block
]


@pytest.mark.parametrize("cp", IGNORABLE_EDGES, ids=hex)
def test_each_edge_of_an_ignorable_range_is_dropped_and_hides_no_token(cp: int) -> None:
    ch = chr(cp)
    assert is_ignorable(ch)
    norm = normalise_bytes(f"a{ch}b".encode())
    assert norm is not None and norm.data == b"ab"
    hidden = GITHUB_PAT[:12] + ch + GITHUB_PAT[12:]
    assert [(f.rule, f.offset) for f in scan_text(f"see {hidden} now")] == [("github-pat", 4)]


@pytest.mark.parametrize("cp", VISIBLE_NEIGHBOURS, ids=hex)
def test_each_neighbour_of_an_ignorable_range_is_kept(cp: int) -> None:
    ch = chr(cp)
    assert not is_ignorable(ch)
    norm = normalise_bytes(f"a{ch}b".encode())
    kept = unicodedata.normalize("NFKC", ch).encode()
    assert (norm.data if norm is not None else f"a{ch}b".encode()) == b"a" + kept + b"b"
    assert kept != b""


def test_the_normalisation_budget_admits_exactly_256_plus_one_per_64_bytes_changed_runs() -> None:
    """268 soft hyphens in 804 bytes are 256 + 804 // 64 = 268 changed runs: normalised; one more
    (807 bytes, the same allowance) is refused as more than honest text holds."""
    norm = normalise_bytes(("x\u00ad" * 268).encode())
    assert norm is not None and norm.data == b"x" * 268
    with pytest.raises(NormaliseBudget):
        normalise_bytes(("x\u00ad" * 269).encode())


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


def test_an_offset_inside_a_character_whose_form_grows_maps_to_that_character_not_past_it() -> None:
    """``½`` is two bytes and normalises to the five of ``1⁄2``: an offset inside those five maps to
    the character's start (or, as a span's end, its end), never into the bytes after it or past the
    text. The 1:1 bytes after it map exactly."""
    text = "a\u00bdxyz".encode()  # a(0) ½(1-2) x(3) y(4) z(5)
    norm = normalise_bytes(text)
    assert norm is not None and norm.data == "a1\u20442xyz".encode()
    two = norm.data.index(b"2")  # the last byte of the grown form
    assert norm.original_offset(two) == 1 and norm.original_offset(two, end=True) == 3
    assert norm.original_offset(norm.data.index(b"1")) == 1  # the character's first byte: its start
    assert norm.original_offset(norm.data.index(b"y")) == 4  # after the character: exact again
    assert norm.original_offset(norm.data.index(b"y"), end=True) == 4  # a boundary stays a boundary


# --- an invisible code point inside a token does not hide it --------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "LEFT-TO-RIGHT EMBEDDING",  # U+202A, first of the bidi embedding controls
        "RIGHT-TO-LEFT OVERRIDE",  # U+202E, the last
        "HANGUL FILLER",  # U+3164
        "SOFT HYPHEN",
        "ZERO WIDTH SPACE",
        "ZERO WIDTH NO-BREAK SPACE",
    ],
)
def test_an_invisible_code_point_inside_a_token_does_not_hide_it(name: str) -> None:
    """Default-ignorable code points (Unicode's Default_Ignorable_Code_Point) render as nothing: one
    inside a GitHub token leaves it a GitHub token, reported at the token's original offset."""
    import unicodedata

    hidden = unicodedata.lookup(name)
    token = "ghp_" + "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7Ny4Kb9Rt2"
    assert len(token) == 40
    text = f"use {token[:10]}{hidden}{token[10:]} here"
    assert [(f.rule, f.offset) for f in scan_text(text)][:1] == [("github-pat", 4)]


@pytest.mark.parametrize("cp", [0xFE00, 0xFE0F])
def test_a_variation_selector_inside_a_token_does_not_hide_it(cp: int) -> None:
    """An invisible VARIATION SELECTOR typed into a GitHub token is removed before matching, so the
    token is still named by its own rule at its own offset (not left to the generic entropy check)."""
    hidden = GITHUB_PAT[:10] + chr(cp) + GITHUB_PAT[10:]
    assert named(f"key {GITHUB_PAT} end") == [("github-pat", 4)]
    assert named(f"key {hidden} end") == [("github-pat", 4)]


# --- which code points are ignorable, at the edges of their ranges (is_ignorable) -----------------


@pytest.mark.parametrize("cp", [0xFE00, 0xFE07, 0xFE0F])
def test_every_variation_selector_is_ignorable(cp: int) -> None:
    """U+FE00..U+FE0F (VARIATION SELECTOR-1..16) are default-ignorable, the first one included:
    normalisation drops them, and the characters either side of the block are kept."""
    assert is_ignorable(chr(cp))
    norm = normalise_bytes(f"a{chr(cp)}b".encode())
    assert norm is not None and norm.data == b"ab"
    assert not is_ignorable("\ufdff") and not is_ignorable("\ufe10")


@pytest.mark.parametrize("cp", [0x061C, 0x115F, 0x1160])
def test_the_arabic_letter_mark_and_the_hangul_fillers_are_ignorable(cp: int) -> None:
    """U+061C ARABIC LETTER MARK, U+115F HANGUL CHOSEONG FILLER and U+1160 HANGUL JUNGSEONG FILLER are
    Default_Ignorable_Code_Points: dropped by normalisation, so one typed into a GitHub token does not
    hide it from its own rule."""
    assert is_ignorable(chr(cp))
    norm = normalise_bytes(f"a{chr(cp)}b".encode())
    assert norm is not None and norm.data == b"ab"
    hidden = GITHUB_PAT[:10] + chr(cp) + GITHUB_PAT[10:]
    assert named(f"key {hidden} end") == [("github-pat", 4)]


@pytest.mark.parametrize("cp", [0x061B, 0x061D, 0x115E, 0x1161])
def test_the_characters_next_to_those_ranges_are_kept(cp: int) -> None:
    """ARABIC SEMICOLON, ARABIC END OF TEXT MARK, HANGUL CHOSEONG TIKEUT-RIEUL and HANGUL JUNGSEONG A
    are visible characters, not default-ignorable: normalisation keeps them."""
    assert not is_ignorable(chr(cp))
    norm = normalise_bytes(f"a{chr(cp)}b".encode())
    assert norm is None or norm.data == f"a{chr(cp)}b".encode()


def test_visible_neighbours_of_the_invisible_ranges_are_kept() -> None:
    """U+3163 (HANGUL LETTER I) and U+2029 (PARAGRAPH SEPARATOR) are visible or break text: they are
    not removed, so they keep splitting what they split."""
    from acx.core.scrub.normalise import is_ignorable

    assert is_ignorable("\u3164") and is_ignorable("\u202a") and is_ignorable("\u202e")
    assert not is_ignorable("\u3163") and not is_ignorable("\u3165")
    assert not is_ignorable("\u2029") and not is_ignorable("\u202f")


# --- the normalisation budget, as a client sees it ------------------------------------------------


def test_changed_non_ascii_runs_are_allowed_up_to_256_plus_one_per_64_bytes() -> None:
    """An 8,320-byte buffer may hold 256 + 8320 // 64 = 386 runs that normalisation changes (full-width
    letters here); one more is refused as ``scan-budget`` rather than normalised."""
    n = 8320

    def buffer(runs: int) -> str:
        body = "\uff21 " * runs
        pad = n - len(body.encode())
        text = body + "x" * (pad % 5) + "word " * (pad // 5)
        assert len(text.encode()) == n
        return text

    assert named(buffer(386)) == []
    assert named(buffer(387)) == [("scan-budget", 0)]
