"""Undo the Unicode tricks that hide a token from byte patterns, and map offsets back.

``AKIA`` + U+200B + ``...``, a soft hyphen inside ``ghp_...``, fullwidth ``ｇｈｐ＿`` or
mathematical letters: after NFKC and removal of the default-ignorable code points (Unicode's
DerivedCoreProperties ``Default_Ignorable_Code_Point``, which includes the bidi controls) they are
plain ASCII again. ASCII text is returned as it is (one C-speed ``isascii`` call), so the cost is
paid only by strings that hold other characters, and only for those characters.

Each non-ASCII character is normalised on its own (cached): composition across characters never
turns text into ASCII token characters, so nothing a rule could match is lost.

What this does NOT undo: homoglyphs that NFKC keeps distinct (Cyrillic ``а`` for Latin ``a``),
encodings (base64, hex, URL-encoding), or a secret spelled out with spaces.
"""

from __future__ import annotations

import bisect
import re
import unicodedata

# Default_Ignorable_Code_Point ranges (Unicode 15, DerivedCoreProperties.txt).
_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_CACHE: dict[str, str] = {}


def is_ignorable(ch: str) -> bool:
    """Whether ``ch`` is a default-ignorable code point (removed before matching)."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _IGNORABLE_RANGES)


def _norm_char(ch: str) -> str:
    out = _CACHE.get(ch)
    if out is None:
        out = "" if is_ignorable(ch) else unicodedata.normalize("NFKC", ch)
        out = "".join(c for c in out if not is_ignorable(c))
        if len(_CACHE) < 65536:
            _CACHE[ch] = out
    return out


class NormaliseBudget(Exception):
    """More changed characters than honest text holds (``256 + len // 64``): refuse, do not grind."""


class Normalised:
    """The normalised UTF-8 bytes of a string and a map from their offsets to the original's."""

    __slots__ = ("_changed", "_norm_starts", "_orig_starts", "data")

    def __init__(
        self, data: bytes, norm_starts: list[int], orig_starts: list[int], changed: list[bool] | None = None
    ) -> None:
        self.data = data
        self._norm_starts = norm_starts  # start of each piece in ``data``
        self._orig_starts = orig_starts  # ... and in the original bytes
        # a piece that is one changed character (its normalised bytes may be longer or shorter than
        # the original's); the others map 1:1 until the next piece
        self._changed = changed if changed is not None else [False] * len(norm_starts)

    def original_offset(self, offset: int, *, end: bool = False) -> int:
        """Byte offset into the original UTF-8 that corresponds to ``offset`` in ``data``. An offset
        inside a changed character maps to that character's start, or with ``end`` to its end, so a
        span never cuts an original character and never reaches past the original bytes (``½`` is
        two bytes whose normalised ``1⁄2`` is five)."""
        i = bisect.bisect_right(self._norm_starts, offset) - 1
        if i < 0:
            return offset
        inside = offset - self._norm_starts[i]
        if not self._changed[i]:
            return self._orig_starts[i] + inside
        if end and inside > 0:
            return self._orig_starts[i + 1]  # a changed character is always followed by a piece
        return self._orig_starts[i]


_RUN_CACHE: dict[bytes, bytes | None] = {}
# One byte class repeated: linear in ``re`` (nothing to backtrack into).
_RUNS = re.compile(rb"[\x80-\xff]+")
# ASCII bytes to a space, the others kept: ``split()`` of the result is every run of non-ASCII
# bytes, two C passes (~10x faster than ``_RUNS.findall``, which tries a match at every byte).
_ASCII_TO_SPACE = bytes(32 if b < 128 else b for b in range(256))


def _norm_run(run: bytes) -> bytes | None:
    """The normalised bytes of one run of non-ASCII characters, or None when it stays as it is."""
    if run in _RUN_CACHE:
        return _RUN_CACHE[run]
    text = run.decode("utf-8", "surrogatepass")
    out = "".join(_norm_char(ch) for ch in text)
    result = None if out == text else out.encode("utf-8", "surrogatepass")
    if len(_RUN_CACHE) < 65536:
        _RUN_CACHE[run] = result
    return result


def normalise_bytes(buf: bytes) -> Normalised | None:
    """None when ``buf`` needs nothing (ASCII, or non-ASCII that normalises to itself).

    Fast path: the distinct runs of non-ASCII bytes (a ``translate`` and a ``split``, then a set)
    are judged once each, so text that repeats the same accented words or emoji costs almost nothing.
    """
    if buf.isascii():
        return None
    found = buf.translate(_ASCII_TO_SPACE).split()
    changed = {r for r in set(found) if _norm_run(r) is not None}
    if not changed:
        return None
    if sum(1 for r in found if r in changed) > 256 + len(buf) // 64:
        raise NormaliseBudget
    pieces: list[bytes] = []
    norm_starts: list[int] = []
    orig_starts: list[int] = []
    one_char: list[bool] = []  # per piece: one changed character (Normalised._changed)
    last = 0
    norm_pos = 0
    budget = 256 + len(buf) // 64
    for m in _RUNS.finditer(buf):
        head = buf[last : m.start()]
        pieces.append(head)
        norm_pos += len(head)
        orig_pos = m.start()
        run = m.group(0)
        if _norm_run(run) is None:
            pieces.append(run)
            norm_pos += len(run)
            last = m.end()
            continue
        budget -= 1
        if budget < 0:
            raise NormaliseBudget
        for ch in run.decode("utf-8", "surrogatepass"):
            raw_len = len(ch.encode("utf-8", "surrogatepass"))
            enc = _norm_char(ch).encode("utf-8", "surrogatepass")
            # every character of a changed run starts a piece: offsets inside it map to its start
            norm_starts.append(norm_pos)
            orig_starts.append(orig_pos)
            one_char.append(True)
            pieces.append(enc)
            norm_pos += len(enc)
            orig_pos += raw_len
        norm_starts.append(norm_pos)  # the bytes after the run map 1:1 again, from here
        orig_starts.append(orig_pos)
        one_char.append(False)
        last = m.end()
    pieces.append(buf[last:])
    return Normalised(b"".join(pieces), norm_starts, orig_starts, one_char)
