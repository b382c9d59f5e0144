"""Generic scrub rules (generic.py):
a quoted literal keeps its closing punctuation, and the reach of an HTML hidden input's anti-forgery
``name`` attribute back from its ``value``.
"""

from __future__ import annotations

import base64

import pytest

from acx.core.scrub import scan_text

RANDOM_RUN = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2LmQz8Lm3Xv9R"


def _rules(text: str) -> list[tuple[str, int]]:
    return [(f.rule, f.offset) for f in scan_text(text)]


@pytest.mark.parametrize("quote", ['"', "'", "`"])
@pytest.mark.parametrize("word", ["dragon}", "letmein>", "sunshine)"])
def test_a_quoted_password_keeps_its_closing_punctuation(quote: str, word: str) -> None:
    """Inside double quotes, single quotes or backticks the value is a literal, closing bracket and
    all: ``password = `dragon}``` is a password with a symbol, named at the value's first byte."""
    assert _rules(f"password = {quote}{word}{quote}\n") == [("secret-assignment", 12)]


@pytest.mark.parametrize("word", ["dragon}", "letmein>"])
def test_an_unquoted_word_before_a_closing_bracket_is_code_not_a_password(word: str) -> None:
    """Unquoted, the bracket closes the code around it (``{password = dragon}``): what is left is a
    word, not a literal secret."""
    assert _rules(f"password = {word}\n") == []


def _hidden_input(gap: int) -> tuple[str, int]:
    """An anti-forgery hidden input whose ``name=`` starts ``gap`` bytes before the value."""
    filler = "d" * (gap - len('name="csrf_token" ') - len(' value="'))
    text = f'<input name="csrf_token" {filler} value="{RANDOM_RUN}">'
    start = text.index(RANDOM_RUN)
    assert start - text.index("name=") == gap
    return text, start


@pytest.mark.parametrize("gap", [26, 60, 99, 100])
def test_a_hidden_csrf_input_within_100_bytes_excuses_its_value(gap: int) -> None:
    """``<input name="csrf_token" ... value="...">``: a token bound to a session cookie, useless
    alone; the ``name`` attribute counts when it starts at most 100 bytes before the value."""
    text, _ = _hidden_input(gap)
    assert _rules(text) == []


@pytest.mark.parametrize("gap", [101, 102, 140])
def test_a_csrf_name_further_back_does_not_excuse_a_random_value(gap: int) -> None:
    """Further back, the ``name`` belongs to something else: the random value is judged and blocks."""
    text, start = _hidden_input(gap)
    assert _rules(text) == [("high-entropy", start)]


def test_an_assignment_after_a_value_holding_the_same_word_is_still_found() -> None:
    """``api_key = "...key..."`` then ``secret_key = "..."``: the ``key`` inside the first value is
    skipped (it was read as that value), and the next ``key`` assignment is judged on its own."""
    text = 'api_key = "Xk9vkey7Lm3Qz8Rt2Wp"\nsecret_key = "Pq7Ny4Kb9Qa5Hc0d2Lm"\n'
    assert _rules(text) == [("secret-assignment", 11), ("secret-assignment", 46)]


@pytest.mark.parametrize("name", ["password", "client_secret", "api_key"])
def test_a_value_is_read_once_even_when_it_repeats_its_own_name(name: str) -> None:
    """``password = "Qx7!password: ..."``: the whole quoted value is the secret, one finding at its
    first byte; the name repeated inside it is part of what was read, not a second assignment."""
    text = f'{name} = "Qx7!{name}: Zq8Lm3Xv9Rt2Wp7"\n'
    assert _rules(text) == [("secret-assignment", len(name) + 4)]


def test_a_shell_pipe_after_a_token_variable_is_no_assignment_and_the_next_one_is_judged() -> None:
    """``echo $GITHUB_TOKEN | base64`` pipes a variable (no literal), and the ``auth_token = "..."``
    on the next line is still read and blocks at its value."""
    text = 'echo $GITHUB_TOKEN | base64\nauth_token = "Zq8Lm3Xv9Rt2Wp7Ny4K"\n'
    assert _rules(text) == [("secret-assignment", 42)]


@pytest.mark.parametrize(
    "command",
    ["cat /run/secrets/db_token", "gpg --decrypt key.gpg", "pass show db/prod", "vault read -f x/y"],
)
def test_a_backticked_command_is_a_command_substitution_not_a_literal(command: str) -> None:
    """``token = `cat /run/secrets/db_token``` runs a command: the secret is not in the text."""
    assert _rules(f"token = `{command}`\n") == []


@pytest.mark.parametrize(
    "text", [f"://cdn.example.com/files/{RANDOM_RUN}", f"https://cdn.example.com/{RANDOM_RUN}"]
)
def test_a_run_in_a_url_path_is_not_judged_even_when_the_url_opens_the_text(text: str) -> None:
    """A document id in a URL's path is no credential, also when the ``://`` is the text's first byte
    (a scheme-relative link stored on its own)."""
    assert _rules(text) == []
    assert _rules(f"{text} and {RANDOM_RUN}") == [("high-entropy", len(text) + 5)]


@pytest.mark.parametrize("name", ["--sumOfExposures", "_wrongLength", "0rookTable", "ab"])
def test_a_name_that_does_not_start_with_a_letter_or_is_short_does_not_excuse_its_value(name: str) -> None:
    """A name of two or more plain words says what its value is (``sumOfExposures = ...``), but only
    a name starting with a letter, three characters or longer: the random value of ``--flagName=``,
    ``_privateName =`` or ``ab =`` is judged and blocks."""
    text = f"{name}={RANDOM_RUN}\n"
    assert _rules(text) == [("high-entropy", len(name) + 1)]
    assert _rules(f"{name.lstrip('-_0')}={RANDOM_RUN}\n") == ([] if len(name) > 2 else _rules(text))


@pytest.mark.parametrize(
    "sentence",
    [
        b"the quick brown fox jumps over the lazy dog",
        b"meet me at the station at noon",
        b"Hello from the build farm",
    ],
)
def test_base64_of_a_plain_sentence_is_text_not_a_secret(sentence: bytes) -> None:
    """Base64 of printable words (spaces included) says what it is: no credential word, no block."""
    blob = base64.b64encode(sentence).decode()
    assert _rules(f"blob {blob}\n") == []


@pytest.mark.parametrize(
    ("text", "offset"),
    [
        ('export TOKEN="the token is m8bgnrkuokcoyqqnqyccj51t"\n', 27),
        ('token = "my token is m8bgnrkuokcoyqqnqyccj51t"\n', 21),
        ('auth: "auth is m8bgnrkuokcoyqqnqyccj51t"\n', 15),
        ('key: "key = m8bgnrkuokcoyqqnqyccj51t"\n', 12),
    ],
)
def test_a_sentence_given_to_a_bare_name_is_searched_for_its_own_assignment(text: str, offset: int) -> None:
    """A bare ``TOKEN=`` given a sentence is no literal, but the sentence says ``the token is X``:
    that is judged as it would be standing alone (it blocks at X): the ``token`` inside the sentence
    is searched too."""
    assert _rules(text) == [("secret-assignment", offset)]
    assert _rules(text.replace("m8bgnrkuokcoyqqnqyccj51t", "dragon")) == []


@pytest.mark.parametrize("name", ["monkey", "turkey", "hotkey", "donkey"])
def test_a_name_that_only_ends_in_key_is_no_secret_name(name: str) -> None:
    """``monkey = "..."`` ends in ``key`` but names no key: its value is not an assignment finding."""
    assert _rules(f'{name} = "Zq8Lm3Xv9Rt2Wp7"\n') == []
    assert _rules('api_key = "Zq8Lm3Xv9Rt2Wp7"\n') == [("secret-assignment", 11)]


AWS_SHAPED = "Zq8Lm3Xv9Rt2Wp7Ny4Kb9Qa5Hc0d2LmQz8Lm3Xv9"


@pytest.mark.parametrize(("filler", "rule"), [(55, "aws-secret-access-key"), (56, "aws-secret-access-key")])
def test_aws_at_the_start_of_a_64_byte_name_names_an_aws_secret(filler: int, rule: str) -> None:
    """A name is read 64 bytes back from its ``key``: ``aws`` inside them makes a 40-character value
    an AWS secret access key."""
    text = f'aws{"x" * filler}_api_key = "{AWS_SHAPED}"\n'
    assert _rules(text) == [(rule, text.index(AWS_SHAPED))]


def test_aws_further_back_than_64_bytes_from_the_key_is_not_part_of_its_name() -> None:
    """One byte further, ``aws`` is outside the name: the value is a generic assignment (and random)."""
    text = f'aws{"x" * 57}_api_key = "{AWS_SHAPED}"\n'
    start = text.index(AWS_SHAPED)
    assert _rules(text) == [("high-entropy", start), ("secret-assignment", start)]


PROSE = " ".join(["word"] * 100)[:500]


def test_long_values_draw_on_the_scan_budget_by_their_length() -> None:
    """Each assigned value costs one unit per 64 bytes judged: 50 assignments of 500-byte prose are
    honest text, 100 of them exceed the buffer's budget and the buffer is refused (fail closed)."""
    assert _rules("".join(f'password = "{PROSE}"\n' for _ in range(50))) == []
    assert _rules("".join(f'password = "{PROSE}"\n' for _ in range(100))) == [("scan-budget", 0)]


def test_each_at_sign_costs_one_unit_of_the_budget() -> None:
    """400 ``a@b`` addresses in 1,600 bytes are within the budget (512 + n // 256); 600 are not."""
    assert _rules("a@b " * 400) == []
    assert _rules("a@b " * 600) == [("scan-budget", 0)]


@pytest.mark.parametrize(
    ("text", "offset"),
    [("s3://AKID:Zq8Lm3pw@bucket/x", 10), ("x://u:Zq8Lm3pw@h", 6), ("redis://u:Zq8Lm3pw@h", 10)],
)
def test_url_credentials_at_the_very_start_of_a_text_are_found(text: str, offset: int) -> None:
    """The scheme is read back to the text's first byte: ``s3://``, a one-letter scheme too."""
    assert _rules(text) == [("uri-credentials", offset)]
    assert _rules(f"see {text}") == [("uri-credentials", offset + 4)]
