"""Generic scrub rules (generic.py) the 21:51 mutation run and the fifth round's draws found unguarded:
a quoted literal keeps its closing punctuation, and the reach of an HTML hidden input's anti-forgery
``name`` attribute back from its ``value``.
"""

from __future__ import annotations

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
