"""Tokenisation at the word-length bound the mutation run found unguarded: a run of exactly
``MAX_TOKEN_CHARS`` characters is a term, with or without stemming; one character more is not.
"""

from __future__ import annotations

import pytest

from acx.core.search.text import MAX_TOKEN_CHARS, tokenize


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
