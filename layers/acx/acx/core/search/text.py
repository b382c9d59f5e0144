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
        import snowballstemmer
    except ImportError:  # pragma: no cover - the package is a runtime dependency
        return "none", lambda word: word
    stem = snowballstemmer.stemmer("english").stemWord
    return "snowball-english", stem


STEMMER, _stem_word = _load_stemmer()


_STEMS: dict[str, str] = {}
MAX_CACHED_STEMS = 200_000


def stem(word: str) -> str:
    """The stem of one lowercase word (cached: vocabularies are small next to token counts)."""
    out = _STEMS.get(word)
    if out is None:
        out = _stem_word(word)
        if len(_STEMS) < MAX_CACHED_STEMS:
            _STEMS[word] = out
    return out


def tokenize(text: str, *, stemming: bool = True) -> list[str]:
    """The index terms of ``text``, in order, with repeats (BM25 counts them)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    words = [w for w in _WORD_RE.findall(folded) if w not in STOPWORDS and len(w) <= MAX_TOKEN_CHARS]
    if not stemming:
        return words
    stems = _STEMS
    return [stems[w] if w in stems else stem(w) for w in words]


def record_text(title: str | None, summary: str | None) -> str:
    """The searchable text of a memory: title, blank line, summary (the embedding template too)."""
    return f"{title or ''}\n\n{summary or ''}"
