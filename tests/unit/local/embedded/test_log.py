"""What the SQLite log promises beyond the contract suite (tests/backends): a commit is all or nothing,
and writers holding their own handles on one file (as separate processes do) still make one chain."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from acx.core.canonical import sha256_hex
from acx.core.checkpoint import NoteSigner
from acx.core.package import PackageRef
from acx.core.rows import RecordWrite
from acx.core.signing import LocalEd25519Signer
from acx.local.embedded.db import Database
from acx.local.embedded.log import SqliteLog
from acx.usecases.verify import verify_package

REF = PackageRef("t1", "pkg")
NOTES = NoteSigner("acx-test-log", LocalEd25519Signer())


def write(i: int) -> RecordWrite:
    rec = {"id": f"m-{i:05d}", "title": f"t{i}", "summary": f"s{i}", "portable": True, "tags": []}
    return RecordWrite(rec, sha256_hex({"slot": i}))


def log_on(db: Database) -> SqliteLog:
    return SqliteLog(db, NOTES.sign, NOTES.verifier_key())


@pytest.mark.parametrize("point", ["before-claim", "after-receipt", "before-release"])
def test_a_commit_cut_short_leaves_nothing_of_it(tmp_path: Path, point: str) -> None:
    db = Database(tmp_path / "acx.sqlite")
    try:
        log = log_on(db)
        log.append(REF, "a", [write(1)])
        before = (log.head(REF).size, log.latest_checkpoint(REF), list(log.entries(REF)))

        def crash(at: str) -> None:
            if at == point:
                raise RuntimeError(at)

        log.hook = crash
        with pytest.raises(RuntimeError):
            log.append(REF, "a", [write(2)], files=[], agent="bot")
        assert (log.head(REF).size, log.latest_checkpoint(REF), list(log.entries(REF))) == before
        assert log.record(REF, "m-00002") is None and log.lookup(REF, set(), {write(2).slot}).pointers == {
            write(2).slot: None
        }
        result = verify_package(log, REF, "dev.acx.local")
        assert result.ok and result.orphans == []  # no receipt without its rows, unlike DynamoDB
    finally:
        db.close()


def test_writers_with_their_own_handles_on_one_file_make_one_gapless_chain(tmp_path: Path) -> None:
    """Each writer opens the file itself (its own connections, as another process would): SQLite's
    write lock, not this process's lock, is what serializes them."""
    path = tmp_path / "acx.sqlite"
    Database(path).close()
    errors: list[BaseException] = []

    def work(w: int) -> None:
        db = Database(path)
        try:
            log = log_on(db)
            for r in range(10):
                log.append(REF, f"w{w}", [write(100 * w + r)])
        except BaseException as exc:
            errors.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    db = Database(path)
    try:
        log = log_on(db)
        assert [e.seq for e in log.entries(REF)] == list(range(40))
        assert verify_package(log, REF, "dev.acx.local").rows == 40
    finally:
        db.close()
