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
