"""Boundaries of the scrub gate's judgements, each as a verdict a client sees (blocked or passed, rule
and byte offset): the shortest buffer that is scanned, a token that runs on into a redaction mask,
a URI credential whose scheme has a digit in it, a random value excused by a descriptive name.
"""

from __future__ import annotations

import pytest

from acx.core.scrub import MIN_SECRET_LEN, scan_any, scan_text

RANDOM = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Rt2Wp7"  # 27 token characters with no word, run or pattern in them


def _rules(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


def test_a_buffer_of_exactly_the_minimum_length_is_scanned() -> None:
    """``MIN_SECRET_LEN`` bytes can hold a secret assignment (``pwd=`` and four characters): it is
    scanned and blocked; one byte fewer cannot hold a secret and is not judged."""
    assert MIN_SECRET_LEN == 8
    shortest = "pwd=Zq8L"
    assert len(shortest.encode()) == MIN_SECRET_LEN
    assert _rules(shortest) == [("secret-assignment", 4)]
    assert scan_any(shortest).blocked
    assert _rules(shortest + " ") == [("secret-assignment", 4)]
    assert _rules(shortest[:-1]) == []


@pytest.mark.parametrize("mask", ["####", "****", "...."])
def test_a_token_that_runs_on_into_a_mask_is_a_redacted_example(mask: str) -> None:
    """``xoxb-...-####``: documentation shows the token's shape and masks the rest; the same token
    without the mask, or with the mask after a space (two separate words), is a secret."""
    token = "xoxb-1234567890-1234567890123-" + RANDOM
    assert _rules(token) == [("slack-bot-token", 0)]
    assert _rules(token + "-" + mask) == []
    assert _rules(f"token: {token}-{mask} (redacted)") == []
    assert _rules(token + " " + mask) == [("slack-bot-token", 0)]


@pytest.mark.parametrize("scheme", ["s3", "h2", "git+ssh", "postgresql+psycopg2", "redis"])
@pytest.mark.parametrize("before", ["", "url: ", "("])
def test_uri_credentials_are_found_whatever_the_scheme_and_where_it_starts(scheme: str, before: str) -> None:
    """A scheme may hold digits and ``+`` (``s3://``, ``git+ssh://``) and may start the string."""
    text = f"{before}{scheme}://deploy:{RANDOM}@host.example/x"
    at = len(f"{before}{scheme}://deploy:".encode())
    assert ("uri-credentials", at) in _rules(text)


def test_a_random_value_is_excused_only_by_a_name_of_two_words_none_naming_a_credential() -> None:
    """``wrongLength := "..."``, ``rookTable = ...``: the name says what the value is. A one-word name,
    a name whose second "word" is only digits, or a name with a credential piece keeps it judged."""
    for name in ("wrongLength", "rookTable", "sumOfExposures", "table42x7"):
        assert _rules(f"{name} = {RANDOM}") == [], name
    for name in ("x", "value", "version2", "build 42"):
        assert ("high-entropy", len(f"{name} = ")) in _rules(f"{name} = {RANDOM}"), name
    assert _rules(f"apiToken = {RANDOM}") != []
    assert _rules(f"sessionTable = {RANDOM}") != []  # "session" names a credential


def test_a_five_letter_alphabet_run_with_rising_digits_is_a_stand_in_four_is_not() -> None:
    """``abcde123`` is typed along the keyboard, not drawn: a password set to it passes. Four letters
    in order (``abcd1234``) happen in random draws too often to excuse."""
    assert _rules("password = abcde123") == []
    assert _rules("password = abcdf123") == []  # still rising
    assert ("secret-assignment", 11) in _rules("password = abcd1234")
    assert ("secret-assignment", 11) in _rules("password = Zbcde123")


def test_an_aws_secret_key_in_context_is_named_as_one_without_an_assignment() -> None:
    """40 base64 characters after ``aws``/``secret access`` within 64 bytes before it: the AWS rule,
    not the generic entropy one (an operator needs the precise rule to know what to rotate)."""
    key = "wJalrXUtnFEMIK7MDENGbPxRfiCYq3t8s9d2k4v6"
    assert len(key) == 40
    assert _rules(f"aws secret {key}") == [("aws-secret-access-key", 11)]
    assert _rules(f"AWS {key}") == [("aws-secret-access-key", 4)]
    assert _rules(key) == [("high-entropy", 0)]  # no context: still blocked, by the generic rule
    far = "aws " + "and then a long unrelated sentence of plain words, " * 2
    assert _rules(far + key) == [("high-entropy", len(far))]


def test_a_lowercase_random_run_with_six_class_changes_is_random() -> None:
    """A 20-character lowercase letters-and-digits draw flips between letters and digits every few
    characters; six flips in 20 characters is random, an identifier flips once or twice."""
    run = "8pecfikk8nrv6qxvvhsp"
    assert len(run) == 20
    assert _rules(run) == [("high-entropy", 0)]
    assert _rules("python311mem00001234") == []


def test_a_keyword_that_ends_inside_the_next_camel_case_word_is_not_the_keyword() -> None:
    """``sumOfIds``: ``sumo`` is not the Sumo Logic keyword there; ``sumoId``/``SUMO`` are."""
    value = "suZq8Lm3Xv9Rt2"
    assert _rules(f"sumOfIds = {value}") == []
    assert _rules(f"sumoId = {value}") == [("sumologic-access-id", 9)]
    assert _rules(f"SUMO = {value}") == [("sumologic-access-id", 7)]


def _random_runs(count: int, seed: int = 5) -> str:
    import random

    rng = random.Random(seed)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    runs = ["".join(rng.choice(alphabet) for _ in range(24)) for _ in range(count)]
    return "".join(f"note {i:04d} about the build: {x}\n" for i, x in enumerate(runs))


def test_a_buffer_dense_with_random_runs_is_refused_by_the_budget_not_judged_run_by_run() -> None:
    """Each random run costs the shared budget (``512 + len // 256``); 200 of them in 10 kB spend it
    and the buffer is refused whole (fail closed, one finding); 60 in 3 kB are each reported."""
    dense = scan_text(_random_runs(200))
    assert [(f.rule, f.offset) for f in dense] == [("scan-budget", 0)]
    sparse = scan_text(_random_runs(60))
    assert len(sparse) == 60 and {f.rule for f in sparse} == {"high-entropy"}


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


def test_visible_neighbours_of_the_invisible_ranges_are_kept() -> None:
    """U+3163 (HANGUL LETTER I) and U+2029 (PARAGRAPH SEPARATOR) are visible or break text: they are
    not removed, so they keep splitting what they split."""
    from acx.core.scrub.normalise import is_ignorable

    assert is_ignorable("\u3164") and is_ignorable("\u202a") and is_ignorable("\u202e")
    assert not is_ignorable("\u3163") and not is_ignorable("\u3165")
    assert not is_ignorable("\u2029") and not is_ignorable("\u202f")


@pytest.mark.parametrize("value", ["token1token2", "kq7kq7mz8mz8", "kkqq77zzmm88"])
def test_prose_or_a_bare_key_discloses_only_a_value_random_enough_to_be_drawn(value: str) -> None:
    """``the token is X`` and ``KEY=X`` are weak contexts: X counts when it is drawn (3+ bits a
    character), not a repeated or word-made value of 2.6 bits a character."""
    assert _rules(f"the token is {value}") == []
    assert _rules(f"KEY={value}") == []
    drawn = "m8bgnrkuokcoyqqnqyccj51t"
    assert _rules(f"the token is {drawn}") == [("secret-assignment", 13)]
    assert _rules(f"KEY={drawn}") == [("secret-assignment", 4)]
