"""Trust verdicts the fourth mutation run found unguarded: an eligible registry entry counts wherever
it stands among the key's entries, and content problems beyond the named ones are counted, not lost."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from acx.core import trust
from acx.core.signing import LocalEd25519Signer
from tests.unit.core.test_trust import _edit, build, registry_for

SIGNER = LocalEd25519Signer()
AT = datetime(2026, 6, 1, tzinfo=UTC)


def test_an_eligible_entry_before_an_ineligible_one_for_the_same_key_makes_it_trusted(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    good = registry_for(SIGNER)["keys"][0]
    for bad in (dict(good, status="revoked"), dict(good, notAfter="2021-01-01T00:00:00Z")):
        registry = {"schemaVersion": "acx.trust-registry/1", "keys": [good, bad]}
        v = trust.evaluate(path, registry, now=AT)
        assert v.verdict == "trusted", v.reasons
        assert not any("revoked" in r or "not valid at" in r for r in v.reasons)


def test_content_problems_beyond_the_named_fifty_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "c.acx"
    build(path, SIGNER, n=60)
    db = sqlite3.connect(path)
    (rows,) = db.execute("SELECT count(*) FROM objects").fetchone()
    db.close()
    _edit(path, "UPDATE objects SET sz = sz + 1")  # every objects row now disagrees with its content
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered"
    named = [r for r in v.reasons if r.endswith("size differs from objects.sz")]
    assert len(named) == 50 and rows > 50
    assert f"... {rows - 50} more content problems" in v.reasons
