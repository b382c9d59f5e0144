"""Value judgements (acx.core.scrub.judge): a placeholder is known by its form, never by a word
inside it; hex printed in one case is a key; a key block's body is a stand-in only by its form.

Planted values are fake, built at run time, and shaped like real credentials.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
import zlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from acx.core.scrub import judge, scan_text, shannon_entropy
from tests.unit.core.scrub.conftest import named

# Every word the placeholder judgement has ever known: none of them, inside a value, may open the gate.
WORDS = (
    "changeme change_me change-me redacted placeholder example sample dummy none null nil undefined "
    "empty todo tbd fixme secret password passwd token xxx your_token your_password hidden masked "
    "omitted notset not_set unset required optional string str bytes int true false test testing "
    "foobar foo bar baz replaceme replace_me insert_here value your here"
).split()


def _alnum(word: str) -> str:
    return "".join(c for c in word if c.isalnum())


def _planted(word: str) -> list[str]:
    """Real-looking secrets with ``word`` inside, in the syntaxes notes carry them in."""
    w = _alnum(word)
    aws = ("wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + w.upper() + "K7Q2MX9ZPA")[:40]
    ghp = ("A1b2C3d4E5" + w + "f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0")[:36]
    return [
        f"DB_PASSWORD={w.capitalize()}2024!x",
        f'api_key = "Kq7{w}Zp93xT2mVb8"',
        f"aws_secret_access_key = {aws}",
        f"stripe key sk_live_4eC39HqLyjW{w}DarjtT1zdp7dc",
        f"token ghp_{ghp}",
        f"password: 'Tr0ub4dor&{w}3'",
    ]


@pytest.mark.parametrize("word", WORDS)
def test_a_word_inside_a_real_looking_secret_never_opens_the_gate(word: str) -> None:
    for text in _planted(word):
        found = [f for f in scan_text(text) if f.severity == "block"]
        assert found, f"passed with {word!r} inside"
        assert all(word not in f.rule for f in found if len(word) > 6)


@pytest.mark.parametrize("word", WORDS)
def test_a_word_inside_a_value_is_no_placeholder(word: str) -> None:
    value = f"Kq7{_alnum(word)}Zp93xT2mVb8".encode()
    assert not judge.is_placeholder(value)
    assert judge.is_secret_value(value, True)


@pytest.mark.parametrize(
    "text",
    [
        "set AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE for the pipeline",
        "DB_PASSWORD=Example2024!x",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ],
)
def test_documented_example_keys_are_secrets(text: str) -> None:
    assert any(f.severity == "block" for f in scan_text(text))


@pytest.mark.parametrize(
    "value",
    [
        b"xxxxxxxxxxxxxxxx",  # a run of one character
        b"****************",
        b"0000000000000000",
        b"abababababababab",  # a short unit repeated
        b"EXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLE",  # a longer unit five times
        b"<your-api-key>",  # template syntax
        b"${API_KEY}",
        b"{{ api_key }}",
        b"$(vault read -field=key secret/x)",
        b"%API_KEY%",
        b"YOUR_API_KEY",  # a CONSTANT_CASE name: a variable's name, not its value
        b"",  # an empty value
        b"abc",  # too short to be a secret
        b"sk-...",  # cut short with a mask
    ],
)
def test_placeholders_are_known_by_their_form(value: bytes) -> None:
    assert judge.is_placeholder(value)


def test_a_value_equal_to_its_key_is_a_placeholder() -> None:
    assert judge.is_placeholder(b"ACCESS_TOKEN", b"access_token")
    assert not judge.is_secret_value(b"Kq7Zp93xT2mVb8", True, b"kq7zp93xt2mvb8")
    assert judge.is_secret_value(b"Kq7Zp93xT2mVb8", True, b"kq7zp93xt2mvb9")


def test_a_password_repeated_three_times_is_still_a_password() -> None:
    """Three copies of a unit is how people lengthen a password (the standard's own
    ``hunter2hunter2hunter2``); only five or more read as a mask."""
    assert not judge.is_placeholder(b"hunter2hunter2hunter2")
    assert judge.is_placeholder(b"hunter2hunter2hunter2hunter2hunter2")


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        (b"0123456789abcdef0123456789abcdef01234567", True),  # the ACX standard's own hex test
        (b"3F2A9C8D7E6B5A4F3E2D1C0B9A8F7E6D", True),  # upper case, 32 digits
        (b"3f2a9c8d7e6b5a4f3e2d1c0b9a8f7e6", False),  # 31: too short to judge as a key
        (b"3f2A9c8d7e6b5a4f3e2d1c0b9a8f7e6d", False),  # mixed case: typed, hex is printed in one case
        (b"12345678901234567890123456789012", False),  # digits only: a number
        (b"abababababababababababababababab", False),  # a mask
        (b"aaaaaaaaaa1111111111bbbbbbbbbb2222222222", False),  # runs of one character
    ],
)
def test_hex_in_one_case_is_a_key(value: bytes, secret: bool) -> None:
    assert judge.hex_secret(value) is secret


def test_hex_assigned_to_a_secret_name_blocks_even_when_typed_in_order() -> None:
    assert judge.is_secret_value(b"0123456789abcdef0123456789abcdef01234567", True, b"api_key")


@pytest.mark.parametrize(
    ("body", "stand_in"),
    [
        (b"", True),
        (b"\n", True),
        (b"...", True),
        (b"\nanything\n", True),
        (b"\nyour key here\n", True),
        (b"\n<private key>\n", True),
        (b"\nMIIB...\n", False),  # an excerpt of key material: the start of a real key
        (b"\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n", False),
    ],
)
def test_a_key_blocks_body_is_a_stand_in_only_by_its_form(body: bytes, stand_in: bool) -> None:
    assert judge.stand_in_body(body) is stand_in


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (b"REDACTED", True),  # one word in capitals
        (b"see vault", True),
        (b"your-api-key-here", True),
        (b"AKIAAVIHWGUCPXMMZTBE", False),  # 12+ capitals: a base32 draw
    ],
)
def test_plain_words_are_a_reference_not_a_literal(value: bytes, words: bool) -> None:
    assert judge.is_reference_or_words(value, True) is words


@pytest.mark.parametrize("value", ["hQzkWpLs", "QmZkWrPx", "vKdNwQpT", "kpZQmwVr", "Wq7Lm3Xv9", "zq8Lm3Xv1"])
@pytest.mark.parametrize("name", ["db_password", "client_secret", "smtp_pass"])
def test_a_short_random_password_blocks_at_its_value(name: str, value: str) -> None:
    """Eight or nine random letters (digits in any order or none) are a password, not a stand-in."""
    assert named(f'{name}: "{value}"\n') == [("secret-assignment", len(name) + 3)]


@pytest.mark.parametrize("value", ["abcde12345", "AbCeFG123", "abcdefg", "bdfhkmp2468", "acegi13579"])
def test_a_value_typed_along_the_alphabet_is_a_stand_in(value: str) -> None:
    """Letters rising (and digits rising with them): typed, not drawn."""
    assert named(f'db_password: "{value}"\n') == []
    assert judge.is_placeholder(value.encode())


def test_the_alphabet_order_check_is_strict_only() -> None:
    """Keyword-gated provider values are judged leniently (``strict=False``): a value whose letters
    happen to rise is no stand-in there, only under the strict judgement of assigned values."""
    assert judge.is_placeholder(b"bdfhkmp2468")
    assert not judge.is_placeholder(b"bdfhkmp2468", strict=False)
    assert not judge.weak_value(b"bdfhkmp2468")


@pytest.mark.parametrize(
    "text", ["ACCESS_TOKEN=ACCESS_TOKEN\n", 'DB_PASSWORD: "DB_PASSWORD"\n', "GITHUB_TOKEN: GITHUB_TOKEN\n"]
)
def test_a_value_equal_to_its_own_name_is_a_stand_in(text: str) -> None:
    """``ACCESS_TOKEN=ACCESS_TOKEN``: the name repeated as its value (an env template), no secret."""
    assert named(text) == []
    name, value = text.replace('"', "").replace(":", "=").strip().split("=")
    assert judge.is_placeholder(value.strip().encode(), name.strip().encode())


def test_a_bare_token_name_given_a_random_value_with_one_digit_blocks_as_an_assignment() -> None:
    """A bare ``token`` counts only for a value shaped like a token: a random mixed-case run with a
    single digit is one (random by its case flips and entropy), named as an assignment as well."""
    value = b"Zq8LmXvRtWpNyKbQaHcdLmQzXv"
    assert judge.token_like(value)
    assert named(f'token = "{value.decode()}"\n') == [("high-entropy", 9), ("secret-assignment", 9)]


@pytest.mark.parametrize("value", ["Deploy-202406-Review", "Ubuntu-2204-Server", "Policy-123456-Update"])
def test_words_around_a_number_are_no_token(value: str) -> None:
    """Two six-letter words around a date or build number name a thing (an identifier), so a bare
    ``token``/``key`` given one discloses nothing."""
    assert not judge.token_like(value.encode())
    assert named(f'token = "{value}"\n') == []
    assert named(f"key: {value}\n") == []


def test_a_random_run_split_in_two_16_character_pieces_blocks() -> None:
    """``-`` splits ids into short pieces (``my-stack-Api-1A2B3C``); a random run whose longest piece
    is 16 characters is still random, and blocks from its first byte."""
    assert judge.looks_random(b"Zq8Lm3Xv9Rt2Wp7N-y4Kb9Qa5Hc0d2Lm5")
    assert named("Zq8Lm3Xv9Rt2Wp7N-y4Kb9Qa5Hc0d2Lm5\n") == [("high-entropy", 0)]
    assert not judge.looks_random(b"Zq8Lm3Xv9Rt2Wp7-Ny4Kb9Qa5Hc0d2L")
    assert named("Zq8Lm3Xv9Rt2Wp7-Ny4Kb9Qa5Hc0d2L\n") == []


def test_a_lower_case_random_run_of_exactly_20_characters_blocks() -> None:
    """20 characters is the shortest run judged: a one-case random draw of that length blocks."""
    assert judge.looks_random_lower(b"h9eco54ny4xb6xq8mrl8")
    assert named("id h9eco54ny4xb6xq8mrl8\n") == [("high-entropy", 3)]
    assert not judge.looks_random_lower(b"h9eco54ny4xb6xq8mrl")


def test_the_entropy_of_nothing_is_zero_bits() -> None:
    assert shannon_entropy(b"") == 0.0
    assert shannon_entropy(b"aaaa") == 0.0
    assert shannon_entropy(b"ab") == 1.0
    assert shannon_entropy(bytes(range(256))) == 8.0


@pytest.mark.parametrize("value", ["abcde-12345", "abcdef_123", "abcdefg-1"])
def test_a_typed_stand_in_with_one_separator_is_still_a_stand_in(value: str) -> None:
    """``abcde-12345``: one separator between the rising letters and digits changes nothing."""
    assert judge.is_placeholder(value.encode())
    assert named(f'db_password: "{value}"\n') == []


@pytest.mark.parametrize("value", ["Wait! Ask ops.", "Ask ops! Not here.", "Gone. Ask Bob."])
def test_a_quoted_sentence_is_words_not_a_password(value: str) -> None:
    """A quoted value of plain words, each with its own punctuation, is a note, not a secret."""
    assert judge.is_reference_or_words(value.encode(), True)
    assert named(f'password: "{value}"\n') == []


def _lower36(n: int) -> str:
    out = ""
    i = 0
    while len(out) < n:
        h = int.from_bytes(hashlib.sha256(f"x{i}".encode()).digest(), "big")
        i += 1
        while h and len(out) < n:
            h, rem = divmod(h, 36)
            out += "0123456789abcdefghijklmnopqrstuvwxyz"[rem]
    return out


@pytest.mark.parametrize("n", [200, 255, 256])
def test_a_lower_case_random_run_up_to_256_characters_blocks(n: int) -> None:
    run = _lower36(n)
    assert judge.looks_random_lower(run.encode())
    assert named(f"k {run}") == [("high-entropy", 2)]


def test_a_lower_case_run_of_20_that_changes_class_6_times_is_random() -> None:
    """``qwzkxm482vbntj73hgf5``: six letter/digit runs in 20 characters, all distinct, is the fewest
    flips a random one-case draw of that length is allowed; five runs read as an identifier."""
    assert judge.looks_random_lower(b"qwzkxm482vbntj73hgf5")
    assert named("id qwzkxm482vbntj73hgf5\n") == [("high-entropy", 3)]
    assert not judge.looks_random_lower(b"qwzkxm482vbntj73hgfp")


def test_a_keyword_gated_value_dominated_by_one_character_is_a_stand_in() -> None:
    """More than half of it one character (``a1a2a3...a``): a stand-in; exactly half is not."""
    assert judge.weak_value(b"a1a2a3a4a5a6a7a8a9a")
    assert not judge.weak_value(b"a1a2a3a4a5a6a7a8a9")


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


# --- stand-ins typed along the alphabet (is_placeholder) ------------------------------------------


@pytest.mark.parametrize("run", ["abcdefg", "nopqrst", "tuvwxyz", "TUVWXYZ"])
def test_a_token_holding_seven_letters_in_alphabet_order_is_a_stand_in(run: str) -> None:
    """``ghp_...tuvwxyz...``: seven letters in alphabet order (in any case, the alphabet's last seven
    included) are typed, not drawn, so a token of the right shape holding them is not blocked; the same
    token with its last letter out of order is."""
    token = "ghp_Zq8Lm3Xv9R" + run + "Wp7Ny4Kb9Qa5Hc0d2Lm"
    assert named(f"key {token} end") == []
    drawn = "ghp_Zq8Lm3Xv9R" + run[:6] + "A" + "Wp7Ny4Kb9Qa5Hc0d2Lm"
    assert named(f"key {drawn} end") == [("github-pat", 4)]


def test_a_five_letter_alphabet_run_with_rising_digits_is_a_stand_in_four_is_not() -> None:
    """``abcde123`` is typed along the keyboard, not drawn: a password set to it passes. Four letters
    in order (``abcd1234``) happen in random draws too often to excuse."""
    assert named("password = abcde123") == []
    assert named("password = abcdf123") == []  # still rising
    assert ("secret-assignment", 11) in named("password = abcd1234")
    assert ("secret-assignment", 11) in named("password = Zbcde123")


# --- a one-case run that changes class often is random (looks_random_lower) -----------------------


def test_a_lowercase_random_run_with_six_class_changes_is_random() -> None:
    """A 20-character lowercase letters-and-digits draw flips between letters and digits every few
    characters; six flips in 20 characters is random, an identifier flips once or twice."""
    run = "8pecfikk8nrv6qxvvhsp"
    assert len(run) == 20
    assert named(run) == [("high-entropy", 0)]
    assert named("python311mem00001234") == []


# --- token shapes at their bounds (token_like, alnum_token, is_wordy) -----------------------------


@pytest.mark.parametrize(
    "value",
    [b"2024-01-15T10:30:00", b"1234-5678-9012-3456", b"+1-202-555-0173-99", b"2024-01-15_10-30-00_0001"],
)
def test_digits_and_separators_without_four_letters_are_not_token_like(value: bytes) -> None:
    # token_like's contract: letters AND digits (or random). A timestamp or a card-like number has
    # digits but fewer than four letters.
    assert not judge.token_like(value)


def test_four_letters_and_four_digits_make_a_token_shape() -> None:
    assert judge.token_like(b"ab12-cd34-5678-9012")
    assert not judge.token_like(b"a112-c934-5678-9012")  # three letters


@pytest.mark.parametrize(
    ("value", "token"), [(b"cz80juk3z9", True), (b"q7wx2mzk4r", True), (b"cz80juk3z", False)]
)
def test_an_alnum_token_is_ten_characters_at_least(value: bytes, token: bool) -> None:
    """``the token is cz80juk3z9``: ten mixed letters and digits are already a token; nine are not."""
    assert judge.alnum_token(value) is token


@pytest.mark.parametrize(("value", "wordy"), [(b"DEPLOYTOKEN", True), (b"DEPLOYSECRET", False)])
def test_an_upper_case_word_of_eleven_letters_is_a_word_twelve_are_a_draw(value: bytes, wordy: bool) -> None:
    """``DEPLOYTOKEN`` (11 capitals) reads as a word; from 12 capitals on, a run without digits is a
    base32 draw (``AKIAAVIHWGUCPXMMZTBE``), not a word."""
    assert judge.is_wordy(value) is wordy
