"""Value judgements (judge.py), seventh round: the randomness and token-shape judgements
(``looks_random``, ``looks_random_lower``, ``token_like``, ``alnum_token``) pinned at every bound their
docstrings and guards state, one input on each side of each bound (the length limits, the number of
capitals, digits and letters, the class-flip rate, the entropy floor and where it stops growing).

Each pair differs from a value that passes in one property only, so the test says which bound holds.
"""

from __future__ import annotations

import math
import random
import zlib

import pytest

from acx.core.scrub import judge

_LOWER = b"kmqwzxvbnhtyprsgjluocdeifa"
_DIGITS = b"8301729456"


def _alternating_runs(nruns: int, n: int) -> bytes:
    """``n`` bytes in ``nruns`` runs that alternate lower-case letters and digits (so exactly ``nruns``
    class flips), cycling through each alphabet so the entropy stays high."""
    sizes = [n // nruns] * nruns
    for i in range(n - sum(sizes)):
        sizes[i] += 1
    out = bytearray()
    li = di = 0
    for r, size in enumerate(sizes):
        for _ in range(size):
            if r % 2 == 0:
                out.append(_LOWER[li % len(_LOWER)])
                li += 1
            else:
                out.append(_DIGITS[di % len(_DIGITS)])
                di += 1
    return bytes(out)


def _threshold(n: int) -> float:
    return 0.82 * math.log2(min(n, 64))


# --- looks_random: a mixed-case run ------------------------------------------------------------------

# 90 and 80 bytes: above 64 the entropy floor stops growing (0.82 * log2(64) = 4.92 bits); these two
# sit just under and just over it, inside the band a floor computed at 63 or 65 would move them across.
_FLAT_BELOW = b"k2LD0HLA7IJk8EJg6iFK7D265CCelDGCbGFKh07He3hIi7b8eEKl11C25Lj5JjFJIfgk73j46fg1dlcfa2lB5J7fd8"
_FLAT_ABOVE = b"Dk6IaJFGjih10AgedK3a3bEbK71185gFa3c6l6BCh0bbH6EJ2f8C4BLlDAAf2K48a2H9f3AKIlBj9D2"


@pytest.mark.parametrize(
    ("token", "random_"),
    [
        pytest.param(b"aZ3kQ9mX2pL7vB4nR8tW1yC6", True, id="mixed-24-is-judged"),
        pytest.param(b"aZ3kQ9mX2pL7vB4nR8tW1yC", False, id="mixed-23-too-short"),
        pytest.param(b"aZ3kQ9mX2pL7vB4nR8tW1yC6==", True, id="padding-is-not-counted"),
        pytest.param(b"h9eco54ny4xb6xq8mrl86msar", True, id="lower-case-goes-to-the-one-case-judgement"),
        pytest.param(b"AZ3KQ9MX2PL7VB4NR8TW1YC6KD", False, id="upper-case-is-left-to-provider-rules"),
        pytest.param(b"a3kq9mx2pLZ7vb4nr8tw1yc6kdQ", True, id="three-capitals"),
        pytest.param(b"a3kq9mx2pLZ7vb4nr8tw1yc6kd", False, id="two-capitals-in-lower-case-text"),
        pytest.param(b"aZ3kQ9mX2pL7vB4n-R8tW1yC6kD5", True, id="longest-piece-16"),
        pytest.param(b"aZ3kQ9mX2pL7vB4-nR8tW1yC6kD5x", False, id="longest-piece-15"),
        pytest.param(b"a3kq9mx2pl7vb4nr8tw1-QZXW7K", False, id="longest-piece-lower-case"),
        pytest.param(b"A3KQ9MX2PL7VB4NR8TW1-qzxw7k", False, id="longest-piece-upper-case"),
        pytest.param(b"aZkQmXpLvBnRtWyCdFhJgSoEuIcYbVxMqTwNsPa", False, id="39-without-digits"),
        pytest.param(b"aZkQmXpLvBnRtWyCdFhJgSoEuIcYbVxMqTwNsPaG", True, id="40-without-digits"),
        pytest.param(b"aZkQmXpLvBnRtWyCdFhJgSoEuIcYbVxMqTwNsP0", True, id="39-with-the-digit-0"),
        pytest.param(b"aZkQmXpLvBnRtWyCdFhJgSoEuIcYbVxMqTwNsP9", True, id="39-with-the-digit-9"),
        pytest.param(b"aZkQmXpLvBnRtWyCdFhJgSoEu/IcYbVxMqTwNsP", False, id="39-slash-is-no-digit"),
        pytest.param(b"aZkQmXpLvBnRtWyCdFhJgSoEu:IcYbVxMqTwNsP", False, id="39-colon-is-no-digit"),
        pytest.param(b"ABCDefgh1234IJKLmnop5678QRStu9", True, id="30-with-9-class-runs"),
        pytest.param(b"ABCDefgh1234IJKLmnop5678QRStuv", False, id="30-with-8-class-runs"),
        pytest.param(b"aB1" * 10, False, id="flips-often-but-3-symbols"),
        pytest.param(_FLAT_BELOW, False, id="over-64-just-under-the-flat-floor"),
        pytest.param(_FLAT_ABOVE, True, id="over-64-just-over-the-flat-floor"),
    ],
)
def test_looks_random_holds_each_stated_bound(token: bytes, random_: bool) -> None:
    assert judge.looks_random(token) is random_


def test_the_flat_floor_inputs_sit_in_the_band_they_test() -> None:
    """The two long inputs are only meaningful inside the narrow band around 4.92 bits."""
    below, above = judge.shannon_entropy(_FLAT_BELOW), judge.shannon_entropy(_FLAT_ABOVE)
    assert 0.82 * math.log2(63) < below < _threshold(len(_FLAT_BELOW))
    assert _threshold(len(_FLAT_ABOVE)) <= above < 0.82 * math.log2(65)


# --- looks_random_lower: a one-case run of letters and digits -----------------------------------------

_RANDOM_32 = b"h9eco54ny4xb6xq8mrl86msarkz8mqw3"
# 40 and 60 bytes: above 36 the floor stops growing (0.8 * log2(36) = 4.136 bits); just under, just over
_LOW_FLAT_BELOW = b"hn95x6zmwk90kwn6b43w9kq2677hm9mv1x5zk28m"
_LOW_FLAT_ABOVE = b"q2vhq4n0n7879z4n7wqbm8bk8kmw2xn16q7hqk438kmw113nz4067b1x7159"


@pytest.mark.parametrize(
    ("token", "random_"),
    [
        pytest.param(b"h9eco54ny4xb6xq8mrl8", True, id="20-long"),
        pytest.param(b"h9eco54ny4xb6xq8mrl", False, id="19-long"),
        pytest.param(_RANDOM_32 * 8, True, id="256-long"),
        pytest.param(_RANDOM_32 * 8 + b"v", False, id="257-long"),
        pytest.param(b"h9eco54nY4xb6xq8mrl86msar", False, id="one-capital-is-not-one-case"),
        pytest.param(b"h9eco54ny4xb6xq8-mrl86msar", False, id="not-letters-and-digits-only"),
        pytest.param(b"3f9a0b7c1d2e4f6a8b0c", False, id="hex-digest"),
        pytest.param(b"kqmwzx8vbnhty3prsg9j", True, id="three-digits"),
        pytest.param(b"kqmwzx8vbnhty3prsgaj", False, id="two-digits"),
        pytest.param(b"kqmwzx0vbnhty9prsg0j", True, id="the-digits-0-and-9-count"),
        pytest.param(b"k81z2m3q4w5x67890123", True, id="six-letters"),
        pytest.param(b"k81z2m3q4w5067890123", False, id="five-letters"),
        pytest.param(b"kqmwzx8vbnhty3prsg90", True, id="20-with-6-class-runs"),
        pytest.param(b"kqmwzx8vbnhty39prsgj", False, id="20-with-5-class-runs"),
        pytest.param(_alternating_runs(35, 125), True, id="125-with-35-class-runs"),
        pytest.param(_alternating_runs(34, 125), False, id="125-with-34-class-runs"),
        pytest.param(b"k0m1q2w3z4x5v6b7" * 2, True, id="entropy-exactly-at-the-floor"),
        pytest.param(b"k1m2" * 6, False, id="flips-often-but-4-symbols"),
        pytest.param(_LOW_FLAT_BELOW, False, id="over-36-just-under-the-flat-floor"),
        pytest.param(_LOW_FLAT_ABOVE, True, id="over-36-just-over-the-flat-floor"),
    ],
)
def test_looks_random_lower_holds_each_stated_bound(token: bytes, random_: bool) -> None:
    assert judge.looks_random_lower(token) is random_


def test_the_one_case_floor_inputs_sit_in_the_band_they_test() -> None:
    assert judge.shannon_entropy(b"k0m1q2w3z4x5v6b7" * 2) == 0.8 * math.log2(32)  # 16 symbols, twice each
    assert 0.8 * math.log2(35) < judge.shannon_entropy(_LOW_FLAT_BELOW) < 0.8 * math.log2(36)
    assert 0.8 * math.log2(36) <= judge.shannon_entropy(_LOW_FLAT_ABOVE) < 0.8 * math.log2(37)


def test_a_one_case_run_shorter_than_the_default_is_judged_at_the_length_asked_for() -> None:
    assert judge.looks_random_lower(b"k9m2q7wzxvbnhtyp", 16) is True
    assert judge.looks_random_lower(b"k9m2q7wzxvbnhtyp") is False
    # at 16 characters the flip floor is its minimum of 6 class runs, not 0.28 per character (4.5)
    assert judge.looks_random_lower(b"kqmwz83xvbnht9yp", 16) is False


# --- token_like: shaped like a generated credential ---------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shaped"),
    [
        # 16 one-case characters with three digits: only the one-case randomness (at 16) says token
        pytest.param(b"k9m2q7wzxvbnhtyp", True, id="16-one-case-random"),
        pytest.param(b"k9m2q7wzxv8nhtyp", True, id="16-letters-and-digits"),
        pytest.param(b"k9m2q7wzxv8nhty", False, id="15-letters-and-digits"),
        # 16 one-case characters, three digits in two runs (five class runs): too regular at 16
        pytest.param(b"kqmwz83xvbnht9yp", False, id="16-with-5-class-runs"),
        pytest.param(b"k9m2q7wzxvbnhty=", False, id="15-and-padding"),
        pytest.param(b"  k9m2q7wzxvbnhtyp\t", True, id="surrounding-space-is-stripped"),
        pytest.param(b"k9m2q7wz xvbnhtyp4", False, id="a-space-inside"),
        # no digits at all: only the mixed-case randomness says token
        pytest.param(b"aZkQmXpLvBnRtWyCdFhJgSoEuIcYbVxMqTwNsPaG", True, id="mixed-case-random-no-digits"),
        # a trailing bracket is part of a token value: judged as quoted, it is no code reference
        pytest.param(b"config.k1m2q3w4z5x6)", True, id="a-quoted-bracket-is-kept"),
        pytest.param(b"8301k2749m5602q8371w", True, id="four-letters"),
        pytest.param(b"8301k2749m5602q83719", False, id="three-letters"),
        pytest.param(b"kqmwzxvbnhty8301", True, id="four-digits"),
        pytest.param(b"kqmwzxvbnhtyz830", False, id="three-digits-not-random"),
        pytest.param(b"Deploy-202406-Review", False, id="words-around-a-number"),
    ],
)
def test_token_like_holds_each_stated_bound(value: bytes, shaped: bool) -> None:
    assert judge.token_like(value) is shaped


# --- alnum_token: one unbroken word of letters and digits ---------------------------------------------

_ALNUM = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_RNG = random.Random(19)
_DRAWN = bytes(_RNG.choice(_ALNUM) for _ in range(129))  # a drawn token one byte past the cap


@pytest.mark.parametrize(
    ("value", "token"),
    [
        pytest.param(b"k8m3q9w2zx", True, id="10-long"),
        pytest.param(b"k8m3q9w2z", False, id="9-long"),
        pytest.param(_DRAWN[:128], True, id="128-long"),
        pytest.param(_DRAWN, False, id="129-long"),
        pytest.param(b"k8m3q9w2zx-q7", False, id="not-one-word"),
        pytest.param(b"kqmwzx8vbn3t", True, id="two-digits"),
        pytest.param(b"kqmwzx8vbnht", False, id="one-digit"),
        pytest.param(b"k8301m72q9w4", True, id="four-letters"),
        pytest.param(b"k8301m72q945", False, id="three-letters"),
        pytest.param(b"3f9a0b7c1d", False, id="hex"),
        pytest.param(b"k8m3q9w2w2q9m3k8", True, id="entropy-exactly-3-bits"),
        pytest.param(b"k8m3k8m3q9k8m3q9", False, id="entropy-under-3-bits"),
        pytest.param(b"k8m3q9w2zxexample", True, id="a-word-inside-is-no-stand-in"),
    ],
)
def test_alnum_token_holds_each_stated_bound(value: bytes, token: bool) -> None:
    assert judge.alnum_token(value) is token


def test_the_3_bit_input_is_exactly_at_the_floor() -> None:
    assert judge.shannon_entropy(b"k8m3q9w2w2q9m3k8") == 3.0  # 8 symbols, twice each


# --- is_reference_or_words: not a literal -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "quoted", "reference"),
    [
        # unquoted, the closing bracket of the surrounding code is not part of the value
        pytest.param(b"settings.SECRET_VALUE)", False, True, id="unquoted-bracket-stripped"),
        pytest.param(b"settings.SECRET_VALUE)", True, False, id="quoted-bracket-kept"),
        pytest.param(b"k9Q", True, True, id="3-characters"),
        pytest.param(b"k9Q2", True, False, id="4-characters"),
        pytest.param(b"k9Q2:", True, False, id="a-trailing-colon-is-not-counted"),
        pytest.param(b"x = hQzkWpLs9x", True, True, id="an-assignment-pasted-as-a-value"),
        pytest.param(b"os.environ", True, True, id="code-reference"),
        pytest.param(b"v1.2.3", True, True, id="version"),
        pytest.param(b"Wait! Ask ops.", True, True, id="a-quoted-sentence"),
        pytest.param(b"Wait! Ask ops.", False, False, id="unquoted-only-its-first-word-is-the-value"),
        pytest.param(b"hQzkWpLs9x", True, False, id="a-literal"),
        pytest.param(b"12345", True, True, id="a-5-digit-number"),
        pytest.param(b"123456", True, False, id="a-6-digit-number"),
        pytest.param(b"k9Q2x", True, False, id="5-characters-not-digits"),
        pytest.param(b"configs/prod/app.yaml", True, True, id="a-path"),
        pytest.param(b"keys/k9Q2xW7mP4nR8tZ", True, True, id="a-path-piece-of-15"),
        pytest.param(b"keys/k9Q2xW7mP4nR8tZa", True, False, id="a-path-piece-of-16"),
        pytest.param(b"k9Q2xW", True, False, id="short-but-no-path"),
    ],
)
def test_is_reference_or_words_holds_each_stated_bound(value: bytes, quoted: bool, reference: bool) -> None:
    assert judge.is_reference_or_words(value, quoted) is reference


# --- weak_value: a stand-in next to a keyword-gated shape ---------------------------------------------


@pytest.mark.parametrize(
    ("value", "weak"),
    [
        pytest.param(b"acdeFf05b1c2d3e4", True, id="mixed-case-hex"),
        pytest.param(b"acde0f05b1c2d3e4a9b8", False, id="lower-case-hex"),
        pytest.param(b"ACDE0F05B1C2D3E4A9B8", False, id="upper-case-hex"),
        pytest.param(b"cafebabe:deadbeef", False, id="hex-words-are-hex"),
        pytest.param(b"k9Q2xW7mP4nR8tZ1", False, id="random"),
        pytest.param(b"AgencyCode-ContentType", True, id="an-identifier"),
        pytest.param(b"kqmwzxvbnhty", True, id="letters-only"),
        pytest.param(b"k9Q2mmmmmmW7mP", True, id="a-character-six-times"),
        pytest.param(b"3f9a0b7c-1d2e-4f6a-8b0c-9d8e7f6a5b4c", False, id="a-drawn-uuid"),
        pytest.param(b"k9kQk7kXk2kW", False, id="one-character-half-the-value"),
        pytest.param(b"k9kQk7kXk2kWk", True, id="one-character-over-half"),
    ],
)
def test_weak_value_holds_each_stated_bound(value: bytes, weak: bool) -> None:
    assert judge.weak_value(value) is weak


# --- crc32_base62_ok: GitHub's and npm's token checksum ------------------------------------------------

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _with_checksum(body30: str) -> str:
    """The 30 characters followed by their CRC32 in base62, six digits, zero-padded (GitHub's format)."""
    n = zlib.crc32(body30.encode())
    digits = ""
    while n:
        n, r = divmod(n, 62)
        digits = _B62[r] + digits
    return body30 + digits.rjust(6, "0")


# the third body's checksum has five base62 digits: its padding zero is part of the token
_BODIES = ["k9Q2xW7mP4nR8tZ1aB3cD5eF7gH9jK", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "0" * 29 + "1"]


@pytest.mark.parametrize("body", _BODIES)
@pytest.mark.parametrize("prefix", ["ghp_", "gho_", "npm_", ""])
def test_a_token_with_its_checksum_is_valid(prefix: str, body: str) -> None:
    assert judge.crc32_base62_ok((prefix + _with_checksum(body)).encode()) is True


@pytest.mark.parametrize("body", _BODIES)
def test_a_token_with_a_wrong_checksum_or_length_is_not(body: str) -> None:
    token = _with_checksum(body)
    wrong_last = token[:-1] + ("x" if token[-1] != "x" else "y")
    for bad in (wrong_last, token[:-1], token + "0", token[1:] + token[0]):
        assert judge.crc32_base62_ok(("ghp_" + bad).encode()) is False


def test_the_five_digit_checksum_really_is_padded() -> None:
    assert _with_checksum(_BODIES[2])[30] == "0"


# --- is_wordy: every long piece is plain words --------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "wordy"),
    [
        pytest.param(b"Agency", True, id="one-6-letter-word"),
        pytest.param(b"Agency-k9Q2x", True, id="a-5-character-piece-is-not-judged"),
        pytest.param(b"Agency-123456", True, id="a-number-piece-is-not-judged"),
        pytest.param(b"Agency-12-k9Q", True, id="short-pieces-are-not-judged"),
        pytest.param(b"AgencyIdentificationCode", True, id="camel-case-words"),
        pytest.param(b"AKIAAVIHWGU", True, id="11-capitals-read-as-an-acronym"),
        pytest.param(b"AKIAAVIHWGUC", False, id="12-capitals-are-a-draw"),
        pytest.param(b"k9Q2", False, id="no-long-piece"),
        pytest.param(b"Agency-k9Q2xW7", False, id="a-long-piece-with-digits"),
    ],
)
def test_is_wordy_holds_each_stated_bound(value: bytes, wordy: bool) -> None:
    assert judge.is_wordy(value) is wordy


# --- is_secret_value: mixed-case hex is typed, not printed --------------------------------------------


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        pytest.param(b"acdeFf05b1c2d3e4a9b8c7d6e5f4a3b2", False, id="mixed-case-hex-32"),
        pytest.param(b"acdeFf05b1c2d3e4a9b8c7d6e5f4a3b2c", False, id="mixed-case-hex-33"),
        pytest.param(b"acdeFf05b1c2d3e4a9b8c7d6e5f4a3b", True, id="mixed-case-hex-31-is-judged"),
        pytest.param(b"acde0f05b1c2d3e4a9b8c7d6e5f4a3b2", True, id="lower-case-hex-32"),
        pytest.param(b"ACDE0F05B1C2D3E4A9B8C7D6E5F4A3B2", True, id="upper-case-hex-32"),
        pytest.param(b"k9Q2xW7mP4nR8tZ1aB3cD5eF7gH9jK2IAEDh", True, id="a-literal-over-32"),
        pytest.param(b"changeme", False, id="a-placeholder"),
        pytest.param(b"os.environ", False, id="a-reference"),
        pytest.param(b"hQzkWpLs9x", True, id="a-short-literal"),
    ],
)
def test_is_secret_value_holds_each_stated_bound(value: bytes, secret: bool) -> None:
    assert judge.is_secret_value(value, True) is secret


# --- the stand-in runs (_RUNS strict, _MASK_RUNS loose): exactly as long as their comments state ------


@pytest.mark.parametrize(
    ("value", "stand_in"),
    [
        # 6 digits in order, up or down, from either end of the digits; 5 are not enough
        (b"Zq8L012345Xvw", True),
        (b"Zq8L456789Xvw", True),
        (b"Zq8L543210Xvw", True),
        (b"Zq8L987654Xvw", True),
        (b"Zq8L45678Xvw", False),
        (b"Zq8L56789Xvw", False),
        (b"Zq8L01234Xvw", False),
        (b"Zq8L43210Xvw", False),
        # 7 letters in alphabet order, from either end of the alphabet; 6 are not enough
        (b"K9abcdefg2Q", True),
        (b"K9tuvwxyz2Q", True),
        (b"K9abcdef2Q", False),
        (b"K9uvwxyz2Q", False),
    ],
)
def test_strict_stand_in_runs_are_6_digits_or_7_letters_in_order(value: bytes, stand_in: bool) -> None:
    assert judge.is_placeholder(value) is stand_in


@pytest.mark.parametrize(
    ("value", "stand_in"),
    [
        (b"K9xxxxxx2Qw", True),  # a mask character 6 times
        (b"K9######2Qw", True),
        (b"K9......2Qw", True),
        (b"K9xxxxx2Qw", False),
        (b"K9ababababab2Q", True),  # a 2-character unit 5 times
        (b"K9abababab2Q", False),
        (b"K9qzwqzwqzwqzw2Q", True),  # a 3-character unit 4 times
        (b"K9qzwqzwqzw2Q", False),
        (b"K9abcdefg2Q", True),  # 7 letters in alphabet order
        (b"K9tuvwxyz2Q", True),
        (b"K9abcdef2Q", False),
        (b"K9uvwxyz2Q", False),
    ],
)
def test_loose_mask_runs_are_as_long_as_stated(value: bytes, stand_in: bool) -> None:
    assert judge.is_placeholder(value, strict=False) is stand_in
