"""Trust verdicts the seventh round's fresh draw (seed 27) found unguarded: the full reasons of a
trusted and a local verdict, and a cartridge with content problems is not also charged with a
checksum/file-count mismatch (the checksum is judged on a clean recompute only)."""

from __future__ import annotations

from pathlib import Path

from acx.core import trust
from tests.unit.core.test_trust import PUB, _edit, build, registry_for
from tests.unit.core.test_trust_guards import AT, KEY, SIGNER

VALID = "signature valid over the recomputed ROM manifest"
ACTIVE = f"key active in the registry for {PUB}"


def test_a_trusted_or_local_verdict_gives_exactly_its_reasons(tmp_path: Path) -> None:
    """Once the registry vouches for the key, the self-consistency note goes and nothing else does:
    the signature reason stays first, the registry reason follows (and the own-key reason for local),
    whether the key was the embedded one or given."""
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    for given in (None, KEY.pem):
        v = trust.evaluate(path, registry_for(SIGNER), given, now=AT)
        assert (v.verdict, v.reasons) == ("trusted", [VALID, ACTIVE])
        v = trust.evaluate(path, registry_for(SIGNER), given, own_keyids={KEY.keyid}, now=AT)
        assert (v.verdict, v.reasons) == ("local", [VALID, ACTIVE, "signed with one of our own keys"])


def test_content_problems_are_not_also_reported_as_a_checksum_mismatch(tmp_path: Path) -> None:
    """A dropped objects row changes the ROM file count the signed predicate carries; the verdict names
    the uncovered row (and the manifest hash it changes), not a checksum/file-count mismatch too."""
    path = tmp_path / "c.acx"
    build(path, SIGNER)
    _edit(path, "DELETE FROM objects WHERE source_ref = 'memory:m-3'")
    v = trust.evaluate(path, registry_for(SIGNER), now=AT)
    assert v.verdict == "tampered"
    assert v.reasons[0] == "memory row m-3 is not covered by any objects row"
    assert not any("checksumHash/fileCount" in r for r in v.reasons), v.reasons
