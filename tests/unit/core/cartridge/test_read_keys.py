"""A hostile cartridge's tables are its own schema: a second row under a signed id must not hide behind
the first one that a lookup by id checks. Found in the mutation round: an edited memory row placed
after an untouched copy of the signed row left recompute() clean while memory_records() returned both.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from acx.core import canonical
from acx.core.cartridge import CartridgeReader
from acx.core.cartridge.format import oid_of
from acx.core.trust import evaluate
from tests.factories import demo_cartridge, without_primary_key


def _edited_copy_after(path: Path) -> tuple[str, str]:
    """Rebuild ``memory`` without its key; keep every signed row, then add an edited copy of the first
    (self-consistent: its oid column is its own payload's hash). Returns (id, edited summary)."""
    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, "memory")
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
    demo_cartridge(path, save=False)
    rid, summary = _edited_copy_after(path)
    with CartridgeReader(path) as r:
        assert summary in [m.get("summary") for m in r.memory_records()]  # what an import would read
        assert r.recompute().problems == [f"memory row {rid!r}: 2 rows under one key"]


def test_a_signed_cartridge_with_a_hidden_row_is_tampered(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
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
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, "sqlar")
        db.executemany("INSERT INTO sqlar VALUES (?, ?, ?, ?, ?)", rows)
        db.execute("INSERT INTO sqlar VALUES (NULL, 420, 0, 5, ?)", (b"hello",))
        rows = without_primary_key(db, "cartridge")
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
    demo_cartridge(path, save=True)
    with CartridgeReader(path) as r:
        assert r.recompute().problems == []


def test_a_payload_stored_as_a_blob_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    """SQLite keeps a BLOB in a TEXT NOT NULL column: recompute names it (found by mutation testing: it
    raised AttributeError on bytes.encode), and the verdict is tampered."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        (rid,) = db.execute("SELECT id FROM memory ORDER BY id LIMIT 1").fetchone()
        db.execute("UPDATE memory SET payload = CAST(payload AS BLOB) WHERE id = ?", (rid,))
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
        assert f"memory {rid}: payload is not text" in problems
        assert evaluate(r).verdict == "tampered"


def test_a_huge_hostile_key_is_named_by_its_first_80_characters(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    big = "k" * 100_000
    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, "cartridge")
        db.executemany("INSERT INTO cartridge VALUES (?, ?)", [*rows, (big, '"a"'), (big, '"b"')])
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
    assert f"meta key {'k' * 80 + '...'!r}: 2 rows under one key" in problems
    assert max(len(p) for p in problems) < 200


@pytest.mark.parametrize(("size", "shown"), [(80, "m" * 80), (81, "m" * 80 + "...")])
def test_a_key_is_cut_only_past_80_characters(tmp_path: Path, size: int, shown: str) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, "cartridge")
        db.executemany(
            "INSERT INTO cartridge VALUES (?, ?)", [*rows, ("m" * size, '"a"'), ("m" * size, '"b"')]
        )
    with CartridgeReader(path) as r:
        assert f"meta key {shown!r}: 2 rows under one key" in r.recompute().problems
