"""Tokenisation for the lexical signal: NFKC, case folding, word runs, English stopwords, light stemming.

The same function tokenises documents and queries, so a term only matches itself. Stemming is the
Snowball English (Porter 2) stemmer from ``snowballstemmer`` (pure Python, no native code): on the
Cranfield collection it measurably raises nDCG@10 (see bench/search.py); without the package the
tokeniser still works, unstemmed, and says so through ``STEMMER``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

# Word runs of letters and digits (any script), at least two characters; "_" separates words.
_WORD_RE = re.compile(r"[^\W_]{2,}")
MAX_TOKEN_CHARS = 64  # a longer run (a hash, a base64 blob) is not a word anyone searches for

# English function words: the Lucene/bm25s list plus common pronouns, auxiliaries and determiners.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves""".split()
)


def _load_stemmer() -> tuple[str, Callable[[str], str]]:
    try:
        return "snowball-english", _english_stemmer()
    except ImportError:  # pragma: no cover - the package is a runtime dependency
        return "none", lambda word: word


# The package's own name for its English stemmer's modules when loaded alone (see below).
SNOWBALL_ALIAS = "acx.core.search._snowball"


def _english_stemmer() -> Callable[[str], str]:
    """snowballstemmer's English stemmer, without the other 33 languages.

    ``import snowballstemmer`` runs its ``__init__``, which imports every language's module (~35 ms
    of CPU, a cold search's largest import after numpy's and the AWS SDK's). Only the English one is
    used, so its three files (``english_stemmer``, ``basestemmer``, ``among``) are imported from the
    package's own directory under ``SNOWBALL_ALIAS``: the same code, the same stems (tested), and no
    ``snowballstemmer`` entry in ``sys.modules`` that another importer would find incomplete. When
    PyStemmer is installed the package stems with it instead, so then the package is used as is.
    """
    import importlib.util
    import sys

    spec = importlib.util.find_spec("snowballstemmer")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("snowballstemmer is not installed")
    if "snowballstemmer" in sys.modules or importlib.util.find_spec("Stemmer") is not None:
        import snowballstemmer

        return snowballstemmer.stemmer("english").stemWord  # type: ignore[no-any-return]
    return _english_alone(list(spec.submodule_search_locations))


def _english_alone(package_dirs: list[str]) -> Callable[[str], str]:
    """The English stemmer's modules imported from ``package_dirs`` as ``SNOWBALL_ALIAS``'s."""
    import importlib
    import sys
    import types

    if SNOWBALL_ALIAS not in sys.modules:
        alias = types.ModuleType(SNOWBALL_ALIAS, "snowballstemmer's modules, imported one by one")
        alias.__path__ = package_dirs
        sys.modules[SNOWBALL_ALIAS] = alias
    english = importlib.import_module(SNOWBALL_ALIAS + ".english_stemmer")
    return english.EnglishStemmer().stemWord  # type: ignore[no-any-return]


STEMMER, _stem_word = _load_stemmer()


_TERMS: dict[str, str] = {}  # word -> its index term ("" for a stopword or an over-long run)
MAX_CACHED_STEMS = 200_000


def _term(word: str) -> str:
    if word in STOPWORDS or len(word) > MAX_TOKEN_CHARS:
        return ""
    return _stem_word(word)


# ASCII text: NFKC leaves it unchanged, casefold is lower(), and a word is a run of [a-z0-9]; one
# C-level translate + split finds the same words as the regex, at about half its cost.
_ASCII_WORDS = bytes(c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256))


def split_words(text: str) -> list[str]:
    """Runs of two or more letters or digits (any script) of the NFKC, case-folded text."""
    if text.isascii():
        runs = text.lower().encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
        return [w for w in runs if len(w) > 1]
    return _WORD_RE.findall(unicodedata.normalize("NFKC", text).casefold())


def tokenize(text: str, *, stemming: bool = True) -> list[str]:
    """The index terms of ``text``, in order, with repeats (BM25 counts them)."""
    words = split_words(text)
    if not stemming:
        return [w for w in words if w not in STOPWORDS and len(w) <= MAX_TOKEN_CHARS]
    terms = list(map(_TERMS.get, words))  # one C-level pass when every word was seen before
    if None in terms:
        for i, t in enumerate(terms):
            if t is None:
                t = terms[i] = _term(words[i])
                if len(_TERMS) < MAX_CACHED_STEMS:
                    _TERMS[words[i]] = t
    return [t for t in terms if t]


def record_text(title: str | None, summary: str | None) -> str:
    """The searchable text of a memory: title, blank line, summary (the embedding template too)."""
    return f"{title or ''}\n\n{summary or ''}"
