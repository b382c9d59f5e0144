"""Reading an untrusted cartridge, continued: a metadata object whose row is gone or holds a BLOB, and
a file stored twice under one name with another size; each is a named problem, never a crash."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from acx.core.cartridge import CartridgeReader
from tests.factories import demo_cartridge

_REF = "cartridge:acx.publisher_id"


@pytest.mark.parametrize("change", ["deleted", "blob"])
def test_a_metadata_object_without_its_text_row_is_reported_missing(tmp_path: Path, change: str) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT 1 FROM objects WHERE source_ref = ?", (_REF,)).fetchone()
        if change == "deleted":
            db.execute("DELETE FROM cartridge WHERE key = 'acx.publisher_id'")
        else:
            db.execute("UPDATE cartridge SET value = X'7075626c6973686572' WHERE key = 'acx.publisher_id'")
    with CartridgeReader(path) as r:
        rec = r.recompute(collect=True)
    assert f"cartridge object {_REF}: live content missing" in rec.problems


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


def test_a_memory_payload_that_is_json_but_not_an_object_is_refused_by_id(tmp_path: Path) -> None:
    from acx.core.cartridge import CartridgeError

    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE memory SET payload = '[1,2]' WHERE id = 'mem-00001'")
    with (
        CartridgeReader(path) as r,
        pytest.raises(CartridgeError, match="memory mem-00001: payload is not a JSON object"),
    ):
        r.memory_records()


def test_the_skill_index_lists_the_cartridges_skill(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        want = db.execute("SELECT sqlar_path, name FROM acx_skill").fetchall()
    assert want and want[0][0] == "rom/skills/deploy-helper/SKILL.md"
    with CartridgeReader(path) as r:
        skills = r.skills()
    assert [(s["sqlar_path"], s["name"]) for s in skills] == want
    assert set(skills[0]) == {"sqlar_path", "name", "description", "license", "content_sha256"}
