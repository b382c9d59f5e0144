"""Recomputation on a cartridge whose tables were rebuilt without their primary keys: a verifier reads
an untrusted file, whose schema is its own, so two rows may carry one id. Two rows under one key are a
problem of their own, and the row a lookup by id returns first is still checked against its objects row.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from acx.core import canonical
from acx.core.cartridge import CartridgeReader
from acx.core.cartridge.format import oid_of
from tests.factories import LEGACY_ATTESTATION, add_legacy_attestation, demo_cartridge, without_primary_key


def test_an_edited_memory_row_ahead_of_its_untouched_copy_is_reported(tmp_path: Path) -> None:
    """The first row under a memory id holds an edited (self-consistent) payload, an untouched copy of
    the signed row follows it: the edited payload is what a lookup by id reads, and its oid no longer
    matches the objects row, so recompute reports it."""
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        rows = without_primary_key(db, "memory")
        target = rows[0]
        record = json.loads(target[4])
        record["summary"] = "an edited summary"
        payload = canonical.dumps(record).decode()
        edited = (*target[:4], payload, oid_of(payload.encode()), target[6])
        db.executemany("INSERT INTO memory VALUES (?, ?, ?, ?, ?, ?, ?)", [edited, *rows])
    with CartridgeReader(path) as r:
        problems = r.recompute().problems
    assert problems == [
        f"memory object memory:{target[0]}: recomputed oid differs from objects.oid",
        f"memory object memory:{target[0]}: size differs from objects.sz",
        f"memory row {target[0]!r}: 2 rows under one key",
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
