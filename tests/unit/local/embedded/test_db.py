"""The embedded backend's SQLite file: created whole, durable across close and reopen, and any file
that is not a sound database of this backend refused at open, left byte for byte as it was."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from acx.core.checkpoint import NoteSigner
from acx.core.package import PackageRef
from acx.core.rows import RecordWrite
from acx.core.signing import LocalEd25519Signer
from acx.local.embedded.db import Database, DatabaseDamaged
from acx.local.embedded.log import SqliteLog
from acx.usecases.verify import verify_package

JOB = "INSERT INTO jobs (pk, kind, job_id, status, created_at, data) VALUES (?, 'upload', ?, 'pending', 0, ?)"


def sound(path: Path, jobs: int = 400) -> Path:
    """A closed database holding ``jobs`` rows over several pages (its WAL checkpointed away)."""
    db = Database(path)
    with db.transaction() as cx:
        cx.executemany(JOB, [("t#p", f"job-{i:05d}", "x" * 200) for i in range(jobs)])
    db.close()
    assert not Path(f"{path}-wal").exists()
    return path


def opens(path: Path) -> int:
    """Open, count the jobs, close: what a start does with the file."""
    db = Database(path)
    try:
        row = db.one("SELECT COUNT(*) FROM jobs")
        assert row is not None
        return int(row[0])
    finally:
        db.close()


def refused_untouched(path: Path, damage: Callable[[bytearray], bytes], match: str) -> None:
    """Damage a sound file; the open refuses it and leaves its bytes as they were. The positive
    control is the same file before the damage, which opens."""
    assert opens(path) == 400
    data = damage(bytearray(path.read_bytes()))
    path.write_bytes(data)
    with pytest.raises(DatabaseDamaged, match=match):
        Database(path)
    assert path.read_bytes() == data
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


def page_size(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[16:18], "big")


# ----------------------------------------------------------------------------- created and durable


def test_a_missing_file_is_created_whole_in_wal_mode_with_full_sync(tmp_path: Path) -> None:
    path = tmp_path / "data" / "acx.sqlite"
    db = Database(path)
    try:
        assert db.one("PRAGMA journal_mode") == ("wal",)
        with db.transaction() as cx:  # the writer connection's settings
            assert cx.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL: WAL fsynced per commit
            assert cx.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert db.one("SELECT value FROM meta WHERE name = 'format'") == ("acx-embedded",)
    finally:
        db.close()
    assert sorted(p.name for p in path.parent.iterdir()) == ["acx.sqlite"]  # no half-made file left


def test_committed_writes_survive_close_and_reopen_and_a_failed_transaction_leaves_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "acx.sqlite"
    db = Database(path)
    with db.transaction() as cx:
        cx.execute(JOB, ("t#p", "kept", "{}"))
    with pytest.raises(RuntimeError), db.transaction() as cx:
        cx.execute(JOB, ("t#p", "rolled-back", "{}"))
        raise RuntimeError("crash inside the transaction")
    db.close()
    db = Database(path)
    try:
        assert db.query("SELECT job_id FROM jobs") == [("kept",)]
    finally:
        db.close()


def test_a_log_reads_back_whole_after_a_reopen_and_verifies(tmp_path: Path) -> None:
    path, ref = tmp_path / "acx.sqlite", PackageRef("t1", "pkg")
    notes = NoteSigner("acx-test-log", LocalEd25519Signer())
    db = Database(path)
    log = SqliteLog(db, notes.sign, notes.verifier_key())
    record = {"id": "m-1", "title": "t", "summary": "durable", "portable": True, "tags": []}
    log.append(ref, "a", [RecordWrite(record, "slot-1")])
    db.close()
    reopened = Database(path)
    try:
        log = SqliteLog(reopened, notes.sign, notes.verifier_key())
        assert log.record(ref, "m-1").record == record
        assert verify_package(log, ref, "dev.acx.local").ok
    finally:
        reopened.close()


def test_threads_share_one_database(tmp_path: Path) -> None:
    db = Database(tmp_path / "acx.sqlite")

    def work(w: int) -> None:
        for i in range(50):
            with db.transaction() as cx:
                cx.execute(JOB, ("t#p", f"{w}-{i}", "{}"))
            assert db.one("SELECT COUNT(*) FROM jobs") is not None

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert db.one("SELECT COUNT(*) FROM jobs") == (200,)
    finally:
        db.close()


def test_a_read_does_not_wait_for_another_threads_transaction_and_sees_the_last_commit(
    tmp_path: Path,
) -> None:
    db = Database(tmp_path / "acx.sqlite")
    inside, release = threading.Event(), threading.Event()
    seen_inside: list[tuple | None] = []

    def writer() -> None:
        with db.transaction() as cx:
            cx.execute(JOB, ("t#p", "uncommitted", "{}"))
            seen_inside.append(db.one("SELECT COUNT(*) FROM jobs"))  # its own write, before the commit
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert inside.wait(10)
        started = time.monotonic()
        assert db.one("SELECT COUNT(*) FROM jobs") == (0,)  # the last committed state, at once
        assert time.monotonic() - started < 1.0
    finally:
        release.set()
        thread.join()
    try:
        assert seen_inside == [(1,)] and db.one("SELECT COUNT(*) FROM jobs") == (1,)
    finally:
        db.close()


# ----------------------------------------------------------------------------- damage refused


def test_flipped_bytes_in_the_header_are_refused(tmp_path: Path) -> None:
    def magic(data: bytearray) -> bytes:
        data[3] ^= 0x20  # "SQLite format 3" -> "SQlite ..."
        return bytes(data)

    def page(data: bytearray) -> bytes:
        data[16] ^= 0x41  # the page size
        return bytes(data)

    def count(data: bytearray) -> bytes:
        data[31] ^= 0x07  # the page count, which no longer matches the file's length
        return bytes(data)

    refused_untouched(sound(tmp_path / "a.sqlite"), magic, "not a SQLite database")
    refused_untouched(sound(tmp_path / "b.sqlite"), page, "page size|cut short")
    refused_untouched(sound(tmp_path / "c.sqlite"), count, "header says")


def test_a_damaged_page_is_refused(tmp_path: Path) -> None:
    path = sound(tmp_path / "acx.sqlite")
    with sqlite3.connect(path) as cx:
        root = cx.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'jobs'").fetchone()[0]
    size = page_size(path)

    def btree(data: bytearray) -> bytes:
        at = (root - 1) * size  # the jobs table's root page: its b-tree header
        data[at : at + 8] = bytes(b ^ 0x5A for b in data[at : at + 8])
        return bytes(data)

    refused_untouched(path, btree, "quick_check|does not read")


def test_a_file_cut_short_is_refused(tmp_path: Path) -> None:
    size = page_size(sound(tmp_path / "a.sqlite"))
    refused_untouched(tmp_path / "a.sqlite", lambda data: bytes(data[: len(data) // 2 + 100]), "cut short")
    refused_untouched(sound(tmp_path / "b.sqlite"), lambda data: bytes(data[:-size]), "header says")
    refused_untouched(sound(tmp_path / "c.sqlite"), lambda data: b"", "not a SQLite database")


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    refused_untouched(
        sound(tmp_path / "a.sqlite"), lambda data: b'{"not": "a database"}\n' * 300, "not a SQLite"
    )


def test_a_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    def foreign(path: Path, script: str) -> None:
        with sqlite3.connect(path) as cx:
            cx.executescript(script)
        before = path.read_bytes()
        with pytest.raises(DatabaseDamaged):
            Database(path)
        assert path.read_bytes() == before

    foreign(tmp_path / "a.sqlite", "CREATE TABLE users (name TEXT);")
    foreign(
        tmp_path / "b.sqlite",
        "CREATE TABLE meta (name TEXT, value TEXT); INSERT INTO meta VALUES ('format', 'x');",
    )
    path = sound(tmp_path / "c.sqlite")
    with sqlite3.connect(path) as cx:
        cx.execute("UPDATE meta SET value = '2' WHERE name = 'version'")  # a later format of ours
    with pytest.raises(DatabaseDamaged, match="version 2"):
        Database(path)
    assert opens(sound(tmp_path / "d.sqlite")) == 400  # the positive control: ours, as written


def test_a_wal_beside_a_missing_file_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    path = tmp_path / "acx.sqlite"
    wal = Path(f"{path}-wal")
    wal.write_bytes(b"frames of a file that is gone")
    with pytest.raises(DatabaseDamaged, match="missing"):
        Database(path)
    assert not path.exists() and wal.read_bytes() == b"frames of a file that is gone"
    wal.unlink()
    assert opens(path) == 0  # without it, a new file


def crashed(tmp_path: Path, commits: int = 20) -> tuple[Path, Path]:
    """The file and the WAL as a kill -9 leaves them: ``commits`` acknowledged transactions, each one
    job, still in the WAL (copied while the database is open, so nothing checkpointed them)."""
    live = tmp_path / "live" / "acx.sqlite"
    db = Database(live)
    for i in range(commits):
        with db.transaction() as cx:
            cx.execute(JOB, ("t#p", f"job-{i:03d}", "y" * 300))
    out = tmp_path / "crashed"
    out.mkdir()
    path, wal = out / "acx.sqlite", out / "acx.sqlite-wal"
    path.write_bytes(live.read_bytes())
    wal.write_bytes(Path(f"{live}-wal").read_bytes())
    db.close()
    return path, wal


def frame_at(path: Path, index: int) -> int:
    """The offset of WAL frame ``index`` (32-byte header, then 24-byte frame headers and pages)."""
    return 32 + index * (24 + page_size(path))


def test_a_damaged_wal_with_commits_after_the_damage_is_refused(tmp_path: Path) -> None:
    path, wal = crashed(tmp_path / "control")
    assert opens(path) == 20  # the positive control: every acknowledged commit is read back
    for name, at in (("page", 24 + 100), ("salt", 8)):
        path, wal = crashed(tmp_path / name)
        data = bytearray(wal.read_bytes())
        data[frame_at(path, 3) + at] ^= 0x01  # a frame of the fourth commit, 16 commits after it
        wal.write_bytes(bytes(data))
        main = path.read_bytes()
        with pytest.raises(DatabaseDamaged, match=r"acx\.sqlite-wal is damaged"):
            Database(path)
        assert path.read_bytes() == main and wal.read_bytes() == bytes(data)


def test_a_torn_last_transaction_in_the_wal_is_a_crash_not_damage(tmp_path: Path) -> None:
    """The last transaction was never acknowledged if its frames did not all reach the disk."""
    path, wal = crashed(tmp_path)
    data = wal.read_bytes()
    wal.write_bytes(data[: len(data) - page_size(path) // 2])  # cut inside the last frame
    assert opens(path) == 19
    path, wal = crashed(tmp_path / "flipped")
    data = bytearray(wal.read_bytes())
    data[-10] ^= 0x01  # the last commit's last frame
    wal.write_bytes(bytes(data))
    assert opens(path) == 19


def test_a_flipped_byte_inside_a_stored_value_opens_and_the_verifier_finds_it(tmp_path: Path) -> None:
    """What ``quick_check`` does not see (the b-tree is sound), the log's hashes do."""
    path, ref = tmp_path / "acx.sqlite", PackageRef("t1", "pkg")
    notes = NoteSigner("acx-test-log", LocalEd25519Signer())
    db = Database(path)
    log = SqliteLog(db, notes.sign, notes.verifier_key())
    record = {"id": "m-1", "title": "t", "summary": "UNIQUE-MARKER-TEXT", "portable": True, "tags": []}
    log.append(ref, "a", [RecordWrite(record, "slot-1")])
    assert verify_package(log, ref, "dev.acx.local").ok  # the positive control
    db.close()
    data = bytearray(path.read_bytes())
    at = data.index(b"UNIQUE-MARKER-TEXT")
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    db = Database(path)
    try:
        result = verify_package(SqliteLog(db, notes.sign, notes.verifier_key()), ref, "dev.acx.local")
        assert result.status == "broken" and result.reason == "content-hash"
    finally:
        db.close()
