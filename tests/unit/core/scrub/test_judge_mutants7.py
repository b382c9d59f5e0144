"""Value judgements (judge.py) the fifth round's draws found unguarded: typed stand-ins against short
random passwords, a value equal to its own name, the lenient judgement of keyword-gated values, the
length boundaries of the randomness checks and the entropy of nothing.
"""

from __future__ import annotations

import hashlib

import pytest

from acx.core.scrub import judge, scan_text, shannon_entropy


def _rules(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


@pytest.mark.parametrize("value", ["hQzkWpLs", "QmZkWrPx", "vKdNwQpT", "kpZQmwVr", "Wq7Lm3Xv9", "zq8Lm3Xv1"])
@pytest.mark.parametrize("name", ["db_password", "client_secret", "smtp_pass"])
def test_a_short_random_password_blocks_at_its_value(name: str, value: str) -> None:
    """Eight or nine random letters (digits in any order or none) are a password, not a stand-in."""
    assert _rules(f'{name}: "{value}"\n') == [("secret-assignment", len(name) + 3)]


@pytest.mark.parametrize("value", ["abcde12345", "AbCeFG123", "abcdefg", "bdfhkmp2468", "acegi13579"])
def test_a_value_typed_along_the_alphabet_is_a_stand_in(value: str) -> None:
    """Letters rising (and digits rising with them): typed, not drawn."""
    assert _rules(f'db_password: "{value}"\n') == []
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
    assert _rules(text) == []
    name, value = text.replace('"', "").replace(":", "=").strip().split("=")
    assert judge.is_placeholder(value.strip().encode(), name.strip().encode())


def test_a_bare_token_name_given_a_random_value_with_one_digit_blocks_as_an_assignment() -> None:
    """A bare ``token`` counts only for a value shaped like a token: a random mixed-case run with a
    single digit is one (random by its case flips and entropy), named as an assignment as well."""
    value = b"Zq8LmXvRtWpNyKbQaHcdLmQzXv"
    assert judge.token_like(value)
    assert _rules(f'token = "{value.decode()}"\n') == [("high-entropy", 9), ("secret-assignment", 9)]


@pytest.mark.parametrize("value", ["Deploy-202406-Review", "Ubuntu-2204-Server", "Policy-123456-Update"])
def test_words_around_a_number_are_no_token(value: str) -> None:
    """Two six-letter words around a date or build number name a thing (an identifier), so a bare
    ``token``/``key`` given one discloses nothing."""
    assert not judge.token_like(value.encode())
    assert _rules(f'token = "{value}"\n') == []
    assert _rules(f"key: {value}\n") == []


def test_a_random_run_split_in_two_16_character_pieces_blocks() -> None:
    """``-`` splits ids into short pieces (``my-stack-Api-1A2B3C``); a random run whose longest piece
    is 16 characters is still random, and blocks from its first byte."""
    assert judge.looks_random(b"Zq8Lm3Xv9Rt2Wp7N-y4Kb9Qa5Hc0d2Lm5")
    assert _rules("Zq8Lm3Xv9Rt2Wp7N-y4Kb9Qa5Hc0d2Lm5\n") == [("high-entropy", 0)]
    assert not judge.looks_random(b"Zq8Lm3Xv9Rt2Wp7-Ny4Kb9Qa5Hc0d2L")
    assert _rules("Zq8Lm3Xv9Rt2Wp7-Ny4Kb9Qa5Hc0d2L\n") == []


def test_a_lower_case_random_run_of_exactly_20_characters_blocks() -> None:
    """20 characters is the shortest run judged: a one-case random draw of that length blocks."""
    assert judge.looks_random_lower(b"h9eco54ny4xb6xq8mrl8")
    assert _rules("id h9eco54ny4xb6xq8mrl8\n") == [("high-entropy", 3)]
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
    assert _rules(f'db_password: "{value}"\n') == []


@pytest.mark.parametrize("value", ["Wait! Ask ops.", "Ask ops! Not here.", "Gone. Ask Bob."])
def test_a_quoted_sentence_is_words_not_a_password(value: str) -> None:
    """A quoted value of plain words, each with its own punctuation, is a note, not a secret."""
    assert judge.is_reference_or_words(value.encode(), True)
    assert _rules(f'password: "{value}"\n') == []


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
    assert _rules(f"k {run}") == [("high-entropy", 2)]


def test_a_lower_case_run_of_20_that_changes_class_6_times_is_random() -> None:
    """``qwzkxm482vbntj73hgf5``: six letter/digit runs in 20 characters, all distinct, is the fewest
    flips a random one-case draw of that length is allowed; five runs read as an identifier."""
    assert judge.looks_random_lower(b"qwzkxm482vbntj73hgf5")
    assert _rules("id qwzkxm482vbntj73hgf5\n") == [("high-entropy", 3)]
    assert not judge.looks_random_lower(b"qwzkxm482vbntj73hgfp")


def test_a_keyword_gated_value_dominated_by_one_character_is_a_stand_in() -> None:
    """More than half of it one character (``a1a2a3...a``): a stand-in; exactly half is not."""
    assert judge.weak_value(b"a1a2a3a4a5a6a7a8a9a")
    assert not judge.weak_value(b"a1a2a3a4a5a6a7a8a9")
