"""The log-checkpoint attestation a cartridge carries (acx.core.cartridge.log_attestation): the document
is the canonical JSON of what it attests; which attestation rows are read (the ROM file ahead of a
legacy row, only the legacy id and type); the summary's tree size from one-, two-line and unparseable
checkpoints; inclusion proofs that cannot be decoded; inclusion entries as values.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from acx.core import canonical
from acx.core.cartridge import CartridgeReader, log_attestation
from acx.core.cartridge.log_attestation import (
    LEGACY_ATT_ID,
    LEGACY_ATT_TYPE,
    LOG_CHECKPOINT_FILE,
    InclusionEntry,
    check_inclusion,
    read,
    summary,
)
from acx.core.signing import LocalEd25519Signer
from tests.factories import (
    INSERT_ATTESTATION,
    LEGACY_ATTESTATION,
    add_legacy_attestation,
    inclusion_attestation,
    signed_cartridge,
    tampered_cartridge,
)


def _with_legacy_document(path: Path, document: str) -> Path:
    """A demo cartridge holding ``document`` in a legacy log-checkpoint attestation row."""
    row = (LEGACY_ATT_ID, LEGACY_ATT_TYPE, "application/json", document, "2026-01-01T00:00:00Z")
    return tampered_cartridge(path, (INSERT_ATTESTATION, row))


def test_a_one_line_checkpoint_has_no_tree_size(tmp_path: Path) -> None:
    path = _with_legacy_document(tmp_path / "a.acx", '{"checkpoint":"origin only"}')
    with CartridgeReader(path) as r:
        got = summary(r)
    assert got is not None and (got["origin"], got["treeSize"], got["proofs"]) == ("origin only", None, 0)


_JSON = "application/json"


def test_two_log_checkpoint_documents_are_one_failure_and_present(tmp_path: Path) -> None:
    path = tampered_cartridge(
        tmp_path / "a.acx",
        (INSERT_ATTESTATION, (LEGACY_ATT_ID, LEGACY_ATT_TYPE, _JSON, LEGACY_ATTESTATION, "2026")),
        (INSERT_ATTESTATION, ("second", LEGACY_ATT_TYPE, _JSON, LEGACY_ATTESTATION, "2026")),
    )
    with CartridgeReader(path) as r:
        assert check_inclusion(r) == ({"present": True}, ["more than one log-checkpoint attestation"])


def test_the_log_attestation_document_is_canonical_json_of_what_it_attests() -> None:
    proof = InclusionEntry("mem-1", "sha256:" + "a" * 64, "b" * 64, 3, ["c" * 64, "d" * 64])
    doc = log_attestation.document("origin\n4\nroot\n", "vkey+1+AAAA", [proof])
    assert isinstance(doc, bytes) and canonical.dumps(canonical.loads(doc)) == doc
    assert canonical.loads(doc) == {
        "checkpoint": "origin\n4\nroot\n",
        "verifierKey": "vkey+1+AAAA",
        "proofs": [
            {
                "memoryId": "mem-1",
                "contentHash": "sha256:" + "a" * 64,
                "entryHash": "b" * 64,
                "index": 3,
                "proof": ["c" * 64, "d" * 64],
            }
        ],
    }


def test_an_inclusion_entry_cannot_be_altered_once_made() -> None:
    entry = InclusionEntry("m-0", "0" * 64, "1" * 64, 0, [])
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.index = 5  # type: ignore[misc]


def test_an_attestation_row_of_another_id_and_type_is_not_a_log_checkpoint(tmp_path: Path) -> None:
    path = tampered_cartridge(
        tmp_path / "a.acx",
        (INSERT_ATTESTATION, ("sbom", "application/spdx", "application/json", "{}", "2026")),
    )
    with CartridgeReader(path) as r:
        assert read(r) == []
        assert summary(r) is None
        assert check_inclusion(r) == ({"present": False}, [])
    with sqlite3.connect(path) as db:
        db.execute(
            INSERT_ATTESTATION, (LEGACY_ATT_ID, "other", "application/json", LEGACY_ATTESTATION, "2026")
        )
        db.execute(INSERT_ATTESTATION, ("renamed", LEGACY_ATT_TYPE, "application/json", "{}", "2026"))
    with CartridgeReader(path) as r:
        assert read(r) == [LEGACY_ATTESTATION.encode(), b"{}"]


def test_the_summary_is_of_the_rom_file_ahead_of_a_legacy_row(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    signed_cartridge(path, LocalEd25519Signer(), inclusion_attestation(7, [0, 1, 2, 3], LocalEd25519Signer()))
    add_legacy_attestation(path, LEGACY_ATTESTATION)
    with CartridgeReader(path) as r:
        assert summary(r) == {
            "origin": "com.example.team/t/p",
            "treeSize": "7",
            "proofs": 4,
            "file": LOG_CHECKPOINT_FILE,
        }


def test_a_two_line_checkpoint_has_a_tree_size_and_an_unparseable_one_says_so(tmp_path: Path) -> None:
    path = _with_legacy_document(tmp_path / "a.acx", '{"checkpoint":"origin\\n5"}')
    with CartridgeReader(path) as r:
        assert summary(r) == {"origin": "origin", "treeSize": "5", "proofs": 0, "file": LOG_CHECKPOINT_FILE}
    with sqlite3.connect(path) as db:
        db.execute("UPDATE attestations SET document = 'not json'")
    with CartridgeReader(path) as r:
        assert summary(r) == {"error": "unparseable"}


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.update(entryHash="zz"),
        lambda p: p.pop("proof"),
        lambda p: p.update(proof=[7]),
    ],
    ids=["bad-hex", "no-proof", "proof-not-hex-strings"],
)
def test_a_proof_that_cannot_be_decoded_fails_its_memory(tmp_path: Path, damage: object) -> None:
    doc = canonical.loads(inclusion_attestation(7, [0, 1, 2, 3], LocalEd25519Signer()))
    damage(doc["proofs"][2])  # type: ignore[operator]
    path = tmp_path / "a.acx"
    signed_cartridge(path, LocalEd25519Signer(), canonical.dumps(doc))
    with CartridgeReader(path) as r:
        result, failures = check_inclusion(r)
    assert (result["checked"], result["failed"]) == (4, 1)
    assert failures == ["memory m-2: failed inclusion proof"]
