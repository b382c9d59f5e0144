"""The write-ahead log check: a damaged frame followed by valid ones is refused, a torn tail is not."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from acx.local.embedded.wal import FRAME_HEADER, HEADER, WalDamaged, check_wal


def _wal(tmp_path: Path, commits: int = 6) -> Path:
    """A copy of a WAL holding ``commits`` commits that were never checkpointed (as after kill -9)."""
    db = sqlite3.connect(tmp_path / "live.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE t (v TEXT)")
    for i in range(commits):
        db.execute("INSERT INTO t VALUES (?)", (f"row {i} " + "x" * 3000,))
    copy = tmp_path / "copy.sqlite-wal"
    shutil.copy(tmp_path / "live.sqlite-wal", copy)
    db.close()
    return copy


def _flip(path: Path, offset: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 0x01
    path.write_bytes(bytes(raw))


def _page_size(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[8:12], "big")


def test_an_intact_log_passes_and_counts_its_frames(tmp_path: Path) -> None:
    wal = _wal(tmp_path)
    frame = FRAME_HEADER + _page_size(wal)
    assert check_wal(wal) == (wal.stat().st_size - HEADER) // frame > 6
    assert check_wal(tmp_path / "absent-wal") == 0


def test_a_flipped_byte_in_an_early_frame_is_refused(tmp_path: Path) -> None:
    wal = _wal(tmp_path)
    _flip(wal, HEADER + FRAME_HEADER + 100)  # inside the first frame's page
    with pytest.raises(WalDamaged, match="frame 0"):
        check_wal(wal)


def test_a_damaged_header_with_frames_after_it_is_refused(tmp_path: Path) -> None:
    wal = _wal(tmp_path)
    _flip(wal, 17)  # a salt byte: SQLite would ignore the whole log
    with pytest.raises(WalDamaged, match="header"):
        check_wal(wal)


def test_a_torn_last_frame_reads_as_the_crash_it_is(tmp_path: Path) -> None:
    wal = _wal(tmp_path)
    frames = check_wal(wal)
    frame = FRAME_HEADER + _page_size(wal)
    _flip(wal, HEADER + (frames - 1) * frame + FRAME_HEADER + 10)
    assert check_wal(wal) == frames - 1  # not refused: nothing valid follows it
    cut = tmp_path / "cut-wal"
    cut.write_bytes(wal.read_bytes()[: HEADER + frame * 2 + 100])
    assert check_wal(cut) == 2
