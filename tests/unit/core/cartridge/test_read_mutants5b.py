"""What a verifier reads from an untrusted file: SKILL.md frontmatter (blank lines and nested keys
skipped), a too-short or non-SQLite header (refused by that reason), a sqlar entry (size and data
from one row).
"""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

import pytest

from acx.core.cartridge import CartridgeError, CartridgeReader, parse_frontmatter
from acx.core.cartridge.format import SQLITE_MAGIC, sqlar_bytes
from tests.factories import demo_cartridge, without_primary_key


def test_blank_lines_and_nested_keys_in_frontmatter_are_skipped() -> None:
    text = "---\nname: deploy-helper\n\nmetadata:\n  name: nested\n  owner: team\ndescription: Deploys\n---\n"
    assert parse_frontmatter(text) == {"name": "deploy-helper", "description": "Deploys"}


def test_a_line_without_a_colon_is_not_a_key() -> None:
    assert parse_frontmatter("---\njust words\nname: x\n---\n") == {"name": "x"}


def test_a_short_file_is_refused_as_a_truncated_header_even_with_the_sqlite_magic(tmp_path: Path) -> None:
    """A file under 100 bytes cannot hold a SQLite header, whatever it starts with; 100 bytes that do not
    start with the SQLite magic are no SQLite file either. Both are refused by that reason."""
    short = tmp_path / "short.acx"
    short.write_bytes(SQLITE_MAGIC + b"\x00" * 40)
    with pytest.raises(CartridgeError, match="not a SQLite file"):
        CartridgeReader(short)
    junk = tmp_path / "junk.acx"
    junk.write_bytes(b"\x00" * 100)
    with pytest.raises(CartridgeError, match="not a SQLite file"):
        CartridgeReader(junk)


def test_a_file_is_read_from_one_row_its_size_and_its_data(tmp_path: Path) -> None:
    """In a sqlar table rebuilt without its key, a lookup by name reads the first row's size with that
    row's own data (a raw file: size equal to its length), not another row's size."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, "sqlar")
        (notes,) = [r for r in rows if r[0] == "rom/knowledge/NOTES.md"]
        other = (notes[0], notes[1], notes[2], notes[3] + 7, zlib.compress(b"# other notes\n"))
        db.executemany("INSERT INTO sqlar VALUES (?, ?, ?, ?, ?)", [*rows, other])
    with CartridgeReader(path) as r:
        assert r.find_file("rom/knowledge/NOTES.md") == b"# notes\n"


def test_missing_live_content_enters_the_manifest_as_the_all_zero_oid(tmp_path: Path) -> None:
    """A ROM objects row whose content is gone is reported, and the recomputed manifest binds it as the
    all-zero sha256 oid with size -1 (a well-formed oid no content hashes to), never as nothing."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM capabilities")
    with CartridgeReader(path) as r:
        rec = r.recompute(collect=True)
    assert rec.problems == ["cartridge object capability:cap-1: live content missing"]
    (entry,) = [e for e in rec.manifest or [] if e["sourceRef"] == "capability:cap-1"]
    assert entry == {
        "sourceRef": "capability:cap-1",
        "oid": "sha256:" + "0" * 64,
        "canon": "jcs-rfc8785",
        "sz": -1,
    }


def test_an_entry_without_data_reads_as_no_bytes() -> None:
    """A sqlar row whose data is NULL (a directory entry in stock sqlar) is an empty file, b"", whatever
    its recorded size."""
    assert sqlar_bytes(0, None) == b""
    assert sqlar_bytes(12, None) == b""
