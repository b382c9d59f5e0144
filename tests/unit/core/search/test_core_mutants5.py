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


@pytest.mark.parametrize("n", [4, 5, 9])
def test_the_ranked_pool_keeps_the_best_depth_scores_best_first(n: int) -> None:
    """More non-zero scores than the pool's depth: the best ``depth`` are kept, best first (a zero score
    is never ranked), one candidate more than the depth included."""
    import numpy as np

    from acx.core.search.ranking import _ranked

    scores = np.zeros(n + 2, dtype=np.float32)
    scores[1 : n + 1] = np.arange(1, n + 1, dtype=np.float32)[::-1] / 10  # doc 1 best, doc n worst
    assert _ranked(scores, depth=3).tolist() == [1, 2, 3]
    assert _ranked(scores, depth=n).tolist() == list(range(1, n + 1))
