"""A check of SQLite's write-ahead log before the database is opened: damage is refused, not dropped.

After a kill -9 the last commits live only in ``<db>-wal``. SQLite reads that file frame by frame and
stops at the first frame whose checksum fails, as it must for a write torn by the crash; but a byte
flipped in the middle of the file (a bad disk, a careless edit) stops it just as silently, and every
commit after that frame is gone: a shorter store that still verifies. The frames' checksums are
cumulative, each one continuing the one before it, so the two cases differ: a torn write leaves
nothing valid after it, while a damaged frame is followed by a frame that verifies against the
stored checksums of the damaged one. That, or a damaged header in a file holding frames, is refused.

What it does NOT catch: damage in the last frame of the file (it reads as a write torn by the
crash, which was never acknowledged: ``synchronous=FULL`` syncs the log at each commit).
"""

from __future__ import annotations

import struct
from array import array
from pathlib import Path

MAGIC = (0x377F0682, 0x377F0683)
HEADER, FRAME_HEADER = 32, 24


class WalDamaged(RuntimeError):
    """The write-ahead log holds a damaged frame followed by valid ones (or a damaged header)."""


def _checksum(data: bytes, s0: int, s1: int, big: bool) -> tuple[int, int]:
    words = array("I", data)
    if big != (struct.pack("=I", 1) == b"\x00\x00\x00\x01"):
        words.byteswap()
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def check_wal(path: Path) -> int:
    """Raise :class:`WalDamaged` if ``path`` (a ``-wal`` file) is damaged before its end; returns the
    number of valid frames (0 when the file is absent or empty)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return 0
    if len(raw) < HEADER:
        return 0
    magic, _version, page_size, _seq, salt1, salt2, c1, c2 = struct.unpack(">8I", raw[:HEADER])
    frame = FRAME_HEADER + page_size
    frames = (len(raw) - HEADER) // frame if page_size else 0
    big = magic == MAGIC[1]
    if magic not in MAGIC or _checksum(raw[:24], 0, 0, big) != (c1, c2):
        if frames:
            raise WalDamaged(f"{path}: the header is damaged and {frames} frame(s) follow it")
        return 0
    s0, s1 = c1, c2
    bad_at: int | None = None
    for i in range(frames):
        off = HEADER + i * frame
        head = raw[off : off + FRAME_HEADER]
        _page, _commit, f_salt1, f_salt2, f_c1, f_c2 = struct.unpack(">6I", head)
        if (f_salt1, f_salt2) != (salt1, salt2):
            break  # frames of an earlier generation of the log: its end
        s0, s1 = _checksum(head[:8], s0, s1, big)
        s0, s1 = _checksum(raw[off + FRAME_HEADER : off + frame], s0, s1, big)
        if (s0, s1) != (f_c1, f_c2):
            if bad_at is None:
                bad_at = i
            s0, s1 = f_c1, f_c2  # continue from what was stored, to see whether valid frames follow
            continue
        if bad_at is not None:
            raise WalDamaged(f"{path}: frame {bad_at} is damaged and valid frames follow it")
    return frames if bad_at is None else bad_at
