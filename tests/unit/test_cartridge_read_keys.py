"""A hostile cartridge's tables are its own schema: a second row under a signed id must not hide behind
the first one that a lookup by id checks. Found in the mutation round: an edited memory row placed
after an untouched copy of the signed row left recompute() clean while memory_records() returned both.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from acx.core import canonical
from acx.core.cartridge import CartridgeReader
from acx.core.cartridge.format import oid_of
from acx.core.trust import evaluate
from tests.unit.test_cartridge import make
from tests.unit.test_cartridge_read_mutants5 import _without_primary_key


def _edited_copy_after(path: Path) -> tuple[str, str]:
    """Rebuild ``memory`` without its key; keep every signed row, then add an edited copy of the first
    (self-consistent: its oid column is its own payload's hash). Returns (id, edited summary)."""
    with sqlite3.connect(path) as db:
        rows = _without_primary_key(db, "memory")
        target = rows[0]
        record = json.loads(target[4])
        record["summary"] = "the edited summary"
        payload = canonical.dumps(record).decode()
        db.executemany("INSERT INTO memory VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        db.execute(
            "INSERT INTO memory VALUES (?, ?, ?, ?, ?, ?, ?)",
            (*target[:4], payload, oid_of(payload.encode()), target[6]),
        )
    return target[0], "the edited summary"


def test_an_edited_memory_row_behind_its_signed_copy_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    make(path, save=False)
    rid, summary = _edited_copy_after(path)
    with CartridgeReader(path) as r:
        assert summary in [m.get("summary") for m in r.memory_records()]  # what an import would read
        assert r.recompute().problems == [f"memory row {rid!r}: 2 rows under one key"]


def test_a_signed_cartridge_with_a_hidden_row_is_tampered(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    make(path, save=False)
    with CartridgeReader(path) as r:
        assert evaluate(r).verdict != "tampered"
    rid, _ = _edited_copy_after(path)
    with CartridgeReader(path) as r:
        verdict = evaluate(r)
    assert verdict.verdict == "tampered"
    assert f"memory row {rid!r}: 2 rows under one key" in verdict.reasons


def test_null_and_non_text_keys_are_reported(tmp_path: Path) -> None:
    """A NULL file name is in no coverage query (NULL NOT IN (...) is NULL, not true), and an integer
    key reads as the same text as a text one: both are problems, not silently skipped."""
    path = tmp_path / "a.acx"
    make(path, save=False)
    with sqlite3.connect(path) as db:
        rows = _without_primary_key(db, "sqlar")
        db.executemany("INSERT INTO sqlar VALUES (?, ?, ?, ?, ?)", rows)
        db.execute("INSERT INTO sqlar VALUES (NULL, 420, 0, 5, ?)", (b"hello",))
        rows = _without_primary_key(db, "cartridge")
        db.executemany("INSERT INTO cartridge VALUES (?, ?)", rows)
        db.execute("INSERT INTO cartridge VALUES (7, '\"x\"')")
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
    # One row under each: the key problem only, not "1 rows under one key" too.
    assert [p for p in problems if p.startswith(("file None", "meta key '7'"))] == [
        "meta key '7': the key is not text",
        "file None: the key is not text",
    ]


def test_a_cartridge_as_written_has_no_key_problems(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    make(path, save=True)
    with CartridgeReader(path) as r:
        assert r.recompute().problems == []


def test_a_null_document_ahead_of_the_signed_one_reads_as_missing(tmp_path: Path) -> None:
    """The first attestation row under the id has no document, the signed copy follows: the lookup
    reads the first row, so the content is missing (and doubled), and nothing crashes."""
    from tests.unit.test_cartridge_read_guards import LEGACY_DOC, _add_legacy_attestation

    path = tmp_path / "a.acx"
    make(path, save=False)
    _add_legacy_attestation(path, LEGACY_DOC)
    with sqlite3.connect(path) as db:
        rows = _without_primary_key(db, "attestations")
        (att,) = [r for r in rows if r[0] == "log-checkpoint"]
        blank = (*att[:4], None, *att[5:])
        marks = ", ".join("?" * len(att))
        db.executemany(f"INSERT INTO attestations VALUES ({marks})", [blank, *rows])  # noqa: S608
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
    assert problems == [
        "attestation object attestation:log-checkpoint: live content missing",
        "attestation 'log-checkpoint': 2 rows under one key",
    ]


def test_a_payload_stored_as_a_blob_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    """SQLite keeps a BLOB in a TEXT NOT NULL column: recompute names it (found by mut6b: it raised
    AttributeError on bytes.encode), and the verdict is tampered."""
    path = tmp_path / "a.acx"
    make(path, save=False)
    with sqlite3.connect(path) as db:
        (rid,) = db.execute("SELECT id FROM memory ORDER BY id LIMIT 1").fetchone()
        db.execute("UPDATE memory SET payload = CAST(payload AS BLOB) WHERE id = ?", (rid,))
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
        assert f"memory {rid}: payload is not text" in problems
        assert evaluate(r).verdict == "tampered"
