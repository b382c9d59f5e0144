"""A hostile cartridge's cells of the wrong storage class (SQLite keeps a BLOB in a TEXT column and TEXT
in a BLOB column, whatever the schema says): each is reported as a content problem, so the verifier
says ``tampered``, and never escapes as a TypeError or AttributeError out of the reader.

Found in the eighth round: before the fix, a BLOB ``objects.source_ref`` or ``objects.canon``, a TEXT
``sqlar.data`` and a BLOB legacy attestation ``document`` each crashed ``acx verify`` with a traceback.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from acx.core.cartridge import CartridgeError, CartridgeReader
from acx.core.cartridge.log_attestation import LEGACY_ATT_ID, LEGACY_ATT_TYPE, check_inclusion, summary
from acx.core.trust import evaluate
from tests.factories import INSERT_ATTESTATION, demo_cartridge


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
