"""A hostile cartridge's tables are its own schema: rows a lookup by id does not expect, and cells of
the wrong storage class.

Rebuilt without their primary keys, the tables may carry two rows under one id: two rows under one key
are a problem of their own, and the row a lookup by id returns first is still checked against its
objects row, so an edited row can hide neither ahead of nor behind an untouched copy of the signed one.
Keys that are NULL, not text or huge are reported (cut to 80 characters).

SQLite keeps a BLOB in a TEXT column and TEXT in a BLOB column, whatever the schema says: each such
cell (a BLOB ``objects.source_ref`` or ``objects.canon``, a TEXT ``sqlar.data``, a BLOB legacy
attestation ``document``) is reported as a content problem, so the verifier says ``tampered``, and never
escapes as a TypeError or AttributeError out of the reader.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from acx.core import canonical
from acx.core.cartridge import CartridgeError, CartridgeReader
from acx.core.cartridge.format import oid_of
from acx.core.cartridge.log_attestation import LEGACY_ATT_ID, LEGACY_ATT_TYPE, check_inclusion, summary
from acx.core.trust import evaluate
from tests.factories import (
    INSERT_ATTESTATION,
    LEGACY_ATTESTATION,
    add_legacy_attestation,
    demo_cartridge,
    duplicate_row,
    without_primary_key,
)


def _edited_copy(path: Path, *, ahead: bool = False) -> tuple[str, str]:
    """Rebuild ``memory`` without its key; keep every signed row and add an edited copy of the first
    (self-consistent: its oid column is its own payload's hash) behind them, or ``ahead`` of them.
    Returns (id, edited summary)."""
    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, "memory")
        target = rows[0]
        record = json.loads(target[4])
        record["summary"] = "the edited summary"
        payload = canonical.dumps(record).decode()
        edited = (*target[:4], payload, oid_of(payload.encode()), target[6])
        db.executemany(
            "INSERT INTO memory VALUES (?, ?, ?, ?, ?, ?, ?)", [edited, *rows] if ahead else [*rows, edited]
        )
    return target[0], "the edited summary"


def test_an_edited_memory_row_behind_its_signed_copy_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    rid, summary = _edited_copy(path)
    with CartridgeReader(path) as r:
        assert summary in [m.get("summary") for m in r.memory_records()]  # what an import would read
        assert r.recompute().problems == [f"memory row {rid!r}: 2 rows under one key"]


def test_a_signed_cartridge_with_a_hidden_row_is_tampered(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with CartridgeReader(path) as r:
        assert evaluate(r).verdict != "tampered"
    rid, _ = _edited_copy(path)
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
    """SQLite keeps a BLOB in a TEXT NOT NULL column: recompute names it (never an AttributeError on
    bytes.encode), and the verdict is tampered."""
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


def test_an_edited_memory_row_ahead_of_its_untouched_copy_is_reported(tmp_path: Path) -> None:
    """The first row under a memory id holds an edited (self-consistent) payload, an untouched copy of
    the signed row follows it: the edited payload is what a lookup by id reads, and its oid no longer
    matches the objects row, so recompute reports it."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    rid, _ = _edited_copy(path, ahead=True)
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
    assert problems == [
        f"memory object memory:{rid}: recomputed oid differs from objects.oid",
        f"memory object memory:{rid}: size differs from objects.sz",
        f"memory row {rid!r}: 2 rows under one key",
    ]


def test_an_edited_capability_row_ahead_of_its_untouched_copy_is_reported(tmp_path: Path) -> None:
    """The same for a capability: the first row under its id carries edited JSON, the signed copy
    follows; the capability's objects row no longer matches what a lookup reads."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, "capabilities")
        cap_id, doc, content_hash = rows[0]
        edited = canonical.dumps({**json.loads(doc), "domain": "payments"}).decode()
        db.executemany("INSERT INTO capabilities VALUES (?, ?, ?)", [(cap_id, edited, content_hash), *rows])
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
    assert problems == [
        f"cartridge object capability:{cap_id}: recomputed oid differs from objects.oid",
        f"cartridge object capability:{cap_id}: size differs from objects.sz",
        f"capability {cap_id!r}: 2 rows under one key",
    ]


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (LEGACY_ATTESTATION.replace('"k"', '"K"'), "recomputed oid differs from objects.oid"),
        (None, "live content missing"),  # and nothing crashes on the NULL
    ],
    ids=["edited", "null"],
)
def test_an_edited_attestation_row_ahead_of_its_untouched_copy_is_reported(
    tmp_path: Path, document: str | None, problem: str
) -> None:
    """The same for an attestation: the first row under its id carries an edited or a NULL document,
    the bound copy follows; the attestation's objects row no longer matches what a lookup reads."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    add_legacy_attestation(path, LEGACY_ATTESTATION)
    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, "attestations")
        (att,) = [r for r in rows if r[0] == "log-checkpoint"]
        edited = (*att[:4], document, *att[5:])
        marks = ", ".join("?" * len(att))
        db.executemany(f"INSERT INTO attestations VALUES ({marks})", [edited, *rows])  # noqa: S608
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
    assert problems == [
        f"attestation object attestation:log-checkpoint: {problem}",
        "attestation 'log-checkpoint': 2 rows under one key",
    ]


def test_the_first_meta_row_under_a_key_is_the_one_recomputed(tmp_path: Path) -> None:
    """Two rows under one meta key (a verifier's file has its own schema): a lookup reads the first,
    so an edited value ahead of the signed copy is reported, and a NULL behind it changes nothing but
    the duplicate's own problem."""
    ahead, behind = tmp_path / "ahead.acx", tmp_path / "behind.acx"
    demo_cartridge(ahead, save=False)
    demo_cartridge(behind, save=False)
    duplicate_row(ahead, "cartridge", "acx.publisher_id", 1, "com.evil.team", first=True)
    duplicate_row(behind, "cartridge", "acx.publisher_id", 1, None, first=False)
    with CartridgeReader(ahead) as r:
        assert r.recompute().problems == [
            "cartridge object cartridge:acx.publisher_id: recomputed oid differs from objects.oid",
            "cartridge object cartridge:acx.publisher_id: size differs from objects.sz",
            "meta key 'acx.publisher_id': 2 rows under one key",
        ]
    with CartridgeReader(behind) as r:
        assert r.recompute().problems == ["meta key 'acx.publisher_id': 2 rows under one key"]


def test_a_null_capability_row_behind_the_signed_one_changes_nothing_but_its_own_problem(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    duplicate_row(path, "capabilities", "cap-1", 1, None, first=False)
    with CartridgeReader(path) as r:
        assert r.recompute().problems == ["capability 'cap-1': 2 rows under one key"]


def test_a_second_memory_row_under_a_signed_id_is_its_own_problem_only(tmp_path: Path) -> None:
    """The signed row comes first, the lookup reads it; the row behind it (a NULL payload, or another
    zone) is reported for itself, not as the signed object's content."""
    null_payload, other_zone = tmp_path / "a.acx", tmp_path / "b.acx"
    demo_cartridge(null_payload, save=False)
    demo_cartridge(other_zone, save=False)
    duplicate_row(null_payload, "memory", "mem-00001", 4, None, first=False)
    duplicate_row(other_zone, "memory", "mem-00001", 1, "save", first=False)
    with CartridgeReader(null_payload) as r:
        assert r.recompute().problems == [
            "memory row 'mem-00001': 2 rows under one key",
            "memory mem-00001: payload is not text",
        ]
    with CartridgeReader(other_zone) as r:
        assert r.recompute().problems == [
            "memory row 'mem-00001': 2 rows under one key",
            "memory mem-00001: id/zone columns disagree with the payload",
        ]


def test_a_file_stored_twice_under_one_name_is_named_and_the_first_copy_is_the_one_checked(
    tmp_path: Path,
) -> None:
    """The first row under a name is the one the objects row binds; a later copy of another size is a
    key problem, and the first copy still recomputes to its bound oid and size."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    name = "rom/knowledge/NOTES.md"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE sqlar2 (name TEXT, mode INT, mtime INT, sz INT, data BLOB);"
            "INSERT INTO sqlar2 SELECT name, mode, mtime, sz, data FROM sqlar ORDER BY rowid;"
            "DROP TABLE sqlar; ALTER TABLE sqlar2 RENAME TO sqlar;"
        )
        db.execute(
            "INSERT INTO sqlar (name, mode, mtime, sz, data) VALUES (?, 420, 0, ?, ?)",
            (name, 26, b"an edited, longer copy....."[:26]),
        )
    with CartridgeReader(path) as r:
        rec = r.recompute(collect=True)
    assert f"file {name!r}: 2 rows under one key" in rec.problems
    assert not [p for p in rec.problems if p.startswith(f"sqlar object {name}:")], rec.problems


def _made(tmp_path: Path, *sql: str) -> Path:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        for statement in sql:
            db.execute(statement)
    return path


@pytest.mark.parametrize(
    ("sql", "problems"),
    [
        (
            "INSERT INTO objects VALUES ('sha256:x', 'memory', CAST('memory:mem-00001' AS BLOB), "
            "'jcs-rfc8785', 'rom', 1)",
            ["objects row b'memory:mem-00001': kind, source_ref, canon and zone must be text"],
        ),
        (
            "INSERT INTO objects VALUES ('sha256:x', 'cartridge', "
            "CAST('cartridge:acx.publisher_id' AS BLOB), 'jcs-rfc8785', 'rom', 1)",
            ["objects row b'cartridge:acx.publisher_id': kind, source_ref, canon and zone must be text"],
        ),
        (
            "UPDATE objects SET canon = CAST('raw' AS BLOB) WHERE source_ref = 'rom/knowledge/NOTES.md'",
            ["objects row 'rom/knowledge/NOTES.md': kind, source_ref, canon and zone must be text"],
        ),
        (
            "INSERT INTO objects VALUES ('sha256:x', 'sqlar', CAST(printf('rom/%.100c', 'a') AS BLOB), "
            "'raw', 'rom', 1)",
            [f"objects row b'rom/{'a' * 76}...': kind, source_ref, canon and zone must be text"],
        ),
        (
            "UPDATE sqlar SET data = '# notes' || char(10) WHERE name = 'rom/knowledge/NOTES.md'",
            ["sqlar object rom/knowledge/NOTES.md: live content missing"],
        ),
    ],
    ids=["memory-ref", "meta-ref", "canon", "long-ref", "text-file-data"],
)
def test_a_cell_of_the_wrong_storage_class_is_a_content_problem(
    tmp_path: Path, sql: str, problems: list[str]
) -> None:
    path = _made(tmp_path, sql)
    with CartridgeReader(path) as r:
        assert r.recompute().problems == problems
    v = evaluate(path)
    assert v.verdict == "tampered" and problems[0] in v.reasons


def test_a_file_stored_as_text_is_refused_when_read(tmp_path: Path) -> None:
    path = _made(tmp_path, "UPDATE sqlar SET data = 'hello' WHERE name = 'rom/knowledge/NOTES.md'")
    with CartridgeReader(path) as r, pytest.raises(CartridgeError, match="sqlar entry data is not a blob"):
        r.read_file("rom/knowledge/NOTES.md")


def test_a_legacy_log_checkpoint_stored_as_a_blob_is_malformed(tmp_path: Path) -> None:
    path = _made(tmp_path)
    with sqlite3.connect(path) as db:
        db.execute(
            INSERT_ATTESTATION,
            (LEGACY_ATT_ID, LEGACY_ATT_TYPE, "application/json", b'{"checkpoint":"o\\n1"}', "2026"),
        )
    with CartridgeReader(path) as r:
        assert summary(r) == {"error": "unparseable"}
        assert check_inclusion(r) == (
            {"present": True, "checked": 0, "failed": 0},
            ["log checkpoint attestation is malformed (CanonicalError)"],
        )
    v = evaluate(path)
    assert v.verdict == "tampered"
    assert "log checkpoint attestation is malformed (CanonicalError)" in v.reasons
