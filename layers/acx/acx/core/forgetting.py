"""What a tombstone remembers and how an upload is matched against it (pure; no I/O).

A forgotten memory is blocked by its *knowledge*, not its metadata: the **knowledge key** is a keyed
hash of the title and summary after :func:`normalise` (NFKC, case folding, default-ignorable code
points removed, whitespace runs collapsed to one space, trimmed). Timestamp, tags, xp, impact, source
type, ids and tier are not in it, so a copy under any of them is refused, in both tiers.

**Near copies** (a word changed, a sentence appended) are refused by a similarity sketch over word
bigrams: one-permutation MinHash with densification (:func:`sketch`), ``SKETCH_BINS`` 64-bit minima,
banded for lookup (``BANDS`` bands of ``ROWS`` strided bins: a band equal to a tombstone's band makes it a
candidate; the candidate is refused when the share of equal bins reaches the threshold).

Every hash here is keyed (HMAC-SHA-256 / keyed BLAKE2b with a per-deployment secret, see
:class:`Keyer`). What a reader of the tombstone items can learn: how many memories and files were
forgotten, when (seq), and which tombstones are near one another (equal bins). What they cannot: the
text, nor confirm a guessed text (a dictionary attack needs the key, which lives in KMS). Who holds
the key (the service's own functions) CAN confirm guesses: the key is not a defence against the
operator. A rewording beyond the sketch's reach (synonyms, translation, paraphrase) is not caught.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

SKETCH_BINS = 60
BANDS = 20
ROWS = SKETCH_BINS // BANDS
DEFAULT_NEAR_THRESHOLD = 0.5  # share of equal bins; one-word edits of a 10-word memory stay above it
MIN_SHINGLES = 4  # shorter texts are matched exactly only (a sketch of 3 bigrams refuses too much)
_MASK64 = (1 << 64) - 1

# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties.txt, stable since 6.x): invisible in
# rendering, so an attacker can insert them to change bytes without changing what a reader sees.
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_WORD = re.compile(r"\w+")


class Keyer(Protocol):
    """The per-deployment secret, used only to key hashes (never stored with them)."""

    def key(self) -> bytes: ...


@dataclass(frozen=True)
class StaticKeyer:
    """A keyer over a given secret (the KMS-derived one in deployments; a fixed one in tests)."""

    secret: bytes

    def key(self) -> bytes:
        return self.secret


def normalise(text: str) -> str:
    """NFKC, case fold, drop default-ignorable code points, collapse whitespace runs, trim."""
    text = unicodedata.normalize("NFKC", text)
    text = unicodedata.normalize("NFKC", text.casefold())
    text = _IGNORABLE.sub("", text)
    return " ".join(text.split())


def _mac(keyer: Keyer, label: str, data: bytes) -> str:
    return hmac.digest(keyer.key(), label.encode() + b"\x00" + data, "sha256").hex()


def knowledge_text(title: object, summary: object) -> str:
    return (
        normalise(title if isinstance(title, str) else "")
        + "\n"
        + normalise(summary if isinstance(summary, str) else "")
    )


def knowledge_key(keyer: Keyer, title: object, summary: object) -> str:
    """Keyed hash of the normalised title and summary: THE exact tombstone rule for memories."""
    return _mac(keyer, "knowledge/v1", knowledge_text(title, summary).encode())


def file_key(keyer: Keyer, content: str) -> str:
    """Keyed hash of a file's normalised content, whatever its path: the tombstone rule for files."""
    return _mac(keyer, "file/v1", normalise(content).encode())


def id_key(keyer: Keyer, record_id: str) -> str:
    """Keyed hash of a forgotten record id (an id can carry text, so it is not stored in clear)."""
    return _mac(keyer, "id/v1", record_id.encode())


def shingles(text: str) -> list[str]:
    """Word bigrams of normalised text (a single word: that word)."""
    words = _WORD.findall(text)
    if len(words) < 2:
        return words
    return [f"{a} {b}" for a, b in itertools.pairwise(words)]


_MUL1, _MUL2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9


def sketch(keyer: Keyer, text: str, words_seen: dict[str, int] | None = None) -> tuple[int, ...] | None:
    """One-permutation MinHash over keyed 64-bit word-pair hashes.

    Each distinct word gets one keyed BLAKE2b hash; a word pair's hash mixes its two words' hashes
    (splitmix64 finaliser), so the cost is one keyed hash per distinct word plus a few integer steps
    per pair, O(n + bins). The minimum per bin is kept; an empty bin keeps the empty mark (``2**64-1``):
    :func:`similarity` compares non-empty bins only, :func:`band_keys` densifies. None when the text
    has fewer than ``MIN_SHINGLES`` distinct word pairs (matched exactly only). ``words_seen`` keeps
    the words' keyed hashes across the records of one batch (their vocabularies overlap).
    """
    words = _WORD.findall(text)
    if len(words) < 2:
        return None
    base = hashlib.blake2b(digest_size=8, key=keyer.key()[:64])
    hw: dict[str, int] = {} if words_seen is None else words_seen
    for w in words:
        if w not in hw:
            h = base.copy()
            h.update(w.encode())
            hw[w] = int.from_bytes(h.digest(), "big")
    pairs = {(hw[a] * _MUL1 + hw[b]) & _MASK64 for a, b in itertools.pairwise(words)}
    if len(pairs) < MIN_SHINGLES:
        return None
    bins = [_MASK64] * SKETCH_BINS
    for x in pairs:
        x ^= x >> 30
        x = (x * _MUL2) & _MASK64
        x ^= x >> 31
        b, v = x % SKETCH_BINS, x // SKETCH_BINS  # v < _MASK64: the empty mark stays unambiguous
        if v < bins[b]:
            bins[b] = v
    return tuple(bins)


def densify(sk: Sequence[int]) -> tuple[int, ...]:
    """Rotation densification (for the band keys only): an empty bin borrows the next non-empty
    bin's value, rotated by the distance, so two sketches stay comparable bin by bin."""
    if _MASK64 not in sk:
        return tuple(sk)
    filled = list(sk)
    for i in range(SKETCH_BINS):
        if sk[i] == _MASK64:
            for step in range(1, SKETCH_BINS):
                j = (i + step) % SKETCH_BINS
                if sk[j] != _MASK64:
                    filled[i] = (sk[j] + step * _MUL1) & _MASK64
                    break
    return tuple(filled)


def record_sketch(keyer: Keyer, title: object, summary: object) -> tuple[int, ...] | None:
    return sketch(keyer, knowledge_text(title, summary))


def band_keys(sk: Sequence[int]) -> list[str]:
    """``BANDS`` lookup keys of a sketch: band index + a short hash of its bins (equal band, equal key).

    A band takes every ``BANDS``-th bin (b, b+BANDS, b+2*BANDS), not ``ROWS`` neighbours: densification
    fills an empty bin from the next non-empty one, so neighbouring bins of two sketches are equal
    together far more often than independent bins are. Neighbour bands made unrelated records share a
    band with ~15 of 10,000 tombstones each (the candidates to compare grew with the tombstones);
    strided bands are near-independent, so an unrelated record meets ~0 candidates whatever their number.
    The key mixes the band's bins arithmetically (they are keyed hashes already, and the sketch they
    come from is stored beside them, so the key reveals nothing more); ~1 us a band, not a BLAKE2b.
    """
    dense = densify(sk)
    out = []
    for b in range(BANDS):
        h = b + 1
        for x in dense[b::BANDS]:
            h = ((h ^ x) * _MUL2) & _MASK64
            h ^= h >> 31
        out.append(f"{b:02d}{h:016x}")
    return out


def similarity(a: Sequence[int], b: Sequence[int]) -> float:
    """Estimated Jaccard similarity of the two word-pair sets: equal bins among the bins non-empty in
    either (the one-permutation estimator). Densified bins are not compared: in a short text a few
    values fill every bin, and one shared word pair would look like half the text."""
    equal = both_empty = 0
    for x, y in zip(a, b, strict=True):
        if x == y:
            if x == _MASK64:
                both_empty += 1
            else:
                equal += 1
    return equal / (SKETCH_BINS - both_empty) if both_empty < SKETCH_BINS else 0.0


def pack(sk: Sequence[int]) -> bytes:
    return b"".join(x.to_bytes(8, "big") for x in sk)


def unpack(raw: bytes) -> tuple[int, ...]:
    if len(raw) != 8 * SKETCH_BINS:
        raise ValueError("sketch has the wrong length")
    return tuple(int.from_bytes(raw[i : i + 8], "big") for i in range(0, len(raw), 8))


@dataclass(frozen=True)
class NearPolicy:
    """Settings of the near-copy rule: ``refuse`` (default, strict) or ``off``, and the threshold."""

    mode: str = "refuse"
    threshold: float = DEFAULT_NEAR_THRESHOLD

    @property
    def enabled(self) -> bool:
        return self.mode == "refuse"


@dataclass(frozen=True)
class Probe:
    """What an incoming memory is checked against the tombstones with (keyed hashes only)."""

    index: int
    record_id: str
    knowledge: str
    id_key: str
    sketch: tuple[int, ...] | None
    bands: tuple[str, ...] = ()  # band_keys(sketch), computed once


@dataclass(frozen=True)
class Hit:
    """A refused memory: its index and id in the upload and which rule matched (never its text)."""

    index: int
    record_id: str
    rule: str  # exact | near | id
    seq: int  # the forget entry that made the tombstone

    def to_dict(self) -> dict[str, object]:
        return {"index": self.index, "id": self.record_id, "rule": self.rule, "forgetSeq": self.seq}


def probes(keyer: Keyer, records: Iterable[dict[str, object]], near: NearPolicy) -> list[Probe]:
    out = []
    words_seen: dict[str, int] = {}
    for i, r in enumerate(records):
        rid = str(r.get("id"))
        text = knowledge_text(r.get("title"), r.get("summary"))  # normalised once for both rules
        kk = _mac(keyer, "knowledge/v1", text.encode())
        if len(words_seen) > 500_000:  # a bundle of 200,000 records: the cache stays under ~60 MB
            words_seen = {}
        sk = sketch(keyer, text, words_seen) if near.enabled else None
        out.append(Probe(i, rid, kk, id_key(keyer, rid), sk, tuple(band_keys(sk)) if sk else ()))
    return out


def near_hits(
    candidates: dict[str, dict[str, tuple[tuple[int, ...], int]]],
    probes_: Sequence[Probe],
    threshold: float,
) -> list[Hit]:
    """Near-copy hits: ``candidates`` maps a band key to the tombstone sketches filed under it
    (tombstone id -> (sketch, seq)); a probe sharing a band is refused at ``threshold``."""
    out = []
    for p in probes_:
        if p.sketch is None:
            continue
        best: tuple[float, int] | None = None
        for bk in p.bands or band_keys(p.sketch):
            for sk, seq in candidates.get(bk, {}).values():
                s = similarity(p.sketch, sk)
                if s >= threshold and (best is None or s > best[0]):
                    best = (s, seq)
        if best is not None:
            out.append(Hit(p.index, p.record_id, "near", best[1]))
    return out
