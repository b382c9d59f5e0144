"""Tokenisation (acx.core.search.text): case and width folding, stopwords, stemming, the ASCII fast
path agreeing with the regex, and the word-length bound."""

from __future__ import annotations

import random

import pytest

from acx.core.search.text import MAX_TOKEN_CHARS, STEMMER, tokenize


def test_tokenizer_edges() -> None:
    assert tokenize("x " + "y" * 64 + " " + "z" * 65, stemming=False) == ["y" * 64]  # 2..64 chars
    assert tokenize("ab I a", stemming=False) == ["ab"]
    assert tokenize("The THE the", stemming=False) == []
    assert tokenize("ｒｅｔｒｉｅｓ", stemming=False) == ["retries"]
    assert tokenize("naïve_Straße 42", stemming=False) == ["naïve", "strasse", "42"]


def test_tokenize_folds_case_and_width_drops_stopwords_and_stems() -> None:
    assert STEMMER == "snowball-english"
    assert tokenize("The Retries of the ＤＥＰＬＯＹＳ were failing") == ["retri", "deploy", "fail"]
    assert tokenize("retry retries retried") == ["retri"] * 3
    assert tokenize("a " + "x" * 65 + " ok") == ["ok"]  # a 65-char run is not a word
    assert tokenize("snake_case split") == ["snake", "case", "split"]


def test_the_ascii_fast_path_finds_the_words_the_regex_finds() -> None:
    from acx.core.search.text import _WORD_RE, split_words

    rng = random.Random(11)
    alphabet = "abcXYZ019 _-.,;:'\"\n\t()/\\@#$%^&*+=~`|<>?!{}[]"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert split_words(text) == _WORD_RE.findall(text.casefold()), text
    assert split_words("Ünïcode ＤＥＰＬＯＹ snake_case") == ["ünïcode", "deploy", "snake", "case"]


# A run of exactly ``MAX_TOKEN_CHARS`` characters is a term, with or without stemming; one character
# more is not.


@pytest.mark.parametrize("stemming", [True, False])
def test_a_word_of_exactly_the_maximum_length_is_a_term(stemming: bool) -> None:
    """A 64-character run (a word the stemmer leaves as it is) is indexed; 65 characters are a hash or
    a blob nobody searches for and are dropped, the words around it kept either way."""
    assert MAX_TOKEN_CHARS == 64
    longest = "qv" * 32
    assert tokenize(f"alpha {longest} beta", stemming=stemming) == ["alpha", longest, "beta"]
    assert tokenize(f"alpha {longest}z beta", stemming=stemming) == ["alpha", "beta"]


def test_the_bound_holds_for_a_word_seen_before() -> None:
    """The second time a 64-character word is tokenised (its term cached) it is still a term."""
    longest = "jx" * 32
    assert tokenize(longest) == [longest]
    assert tokenize(f"{longest} {longest}") == [longest, longest]
