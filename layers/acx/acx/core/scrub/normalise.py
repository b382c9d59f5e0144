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
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
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


class Normalised:
    """The normalised UTF-8 bytes of a string and a map from their offsets to the original's."""

    __slots__ = ("data", "_norm_starts", "_orig_starts")

    def __init__(self, data: bytes, norm_starts: list[int], orig_starts: list[int]) -> None:
        self.data = data
        self._norm_starts = norm_starts  # start of each changed piece in ``data``
        self._orig_starts = orig_starts  # ... and in the original bytes

    def original_offset(self, offset: int) -> int:
        """Byte offset into the original UTF-8 that corresponds to ``offset`` in ``data``."""
        i = bisect.bisect_right(self._norm_starts, offset) - 1
        if i < 0:
            return offset
        return self._orig_starts[i] + (offset - self._norm_starts[i])


def normalise_bytes(buf: bytes) -> Normalised | None:
    """None when ``buf`` needs nothing (ASCII, or non-ASCII that normalises to itself)."""
    if buf.isascii():
        return None
    text = buf.decode("utf-8", "surrogatepass")
    pieces: list[bytes] = []
    norm_starts: list[int] = []
    orig_starts: list[int] = []
    changed = False
    last = 0  # character index
    norm_pos = 0
    orig_pos = 0
    for m in _NON_ASCII.finditer(text):
        head = text[last : m.start()].encode("ascii")
        pieces.append(head)
        norm_pos += len(head)
        orig_pos += len(head)
        for ch in m.group(0):
            raw_len = len(ch.encode("utf-8", "surrogatepass"))
            repl = _norm_char(ch)
            enc = repl.encode("utf-8", "surrogatepass")
            if repl != ch:
                changed = True
            # every non-ASCII character starts a piece: offsets inside it map to its start
            norm_starts.append(norm_pos)
            orig_starts.append(orig_pos)
            pieces.append(enc)
            norm_pos += len(enc)
            orig_pos += raw_len
            # the ASCII after it maps 1:1 again, from here
            norm_starts.append(norm_pos)
            orig_starts.append(orig_pos)
        last = m.end()
    if not changed:
        return None
    pieces.append(text[last:].encode("utf-8", "surrogatepass"))
    return Normalised(b"".join(pieces), norm_starts, orig_starts)
