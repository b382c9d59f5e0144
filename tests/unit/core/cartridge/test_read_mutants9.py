"""Cartridge reading, from the eighth round's screen of the whole mutation pool: sqlar names that are
not strings or empty, a sqlar entry that cannot be inflated to its size, frontmatter that does not open
the file or is indented, an unknown export zone, the timestamp shape, and the log-checkpoint reader
(which attestation rows it takes, the summary of the ROM file over a legacy row, a two-line
checkpoint, an unparseable document, a proof that cannot be decoded)."""

from __future__ import annotations

import dataclasses
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acx.core import canonical
from acx.core.cartridge import CartridgeError, CartridgeReader, parse_frontmatter, validate_sqlar_name
from acx.core.cartridge.boundary import export_view
from acx.core.cartridge.format import now_rfc3339
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
    cartridge_record,
    demo_cartridge,
    inclusion_attestation,
    signed_cartridge,
)


@pytest.mark.parametrize("name", ["", None, 123, b"rom/a.md"])
def test_a_sqlar_name_that_is_empty_or_not_a_string_is_refused_as_such(name: object) -> None:
    with pytest.raises(CartridgeError, match="file name must be a non-empty string"):
        validate_sqlar_name(name)  # type: ignore[arg-type]


def test_a_sqlar_entry_that_does_not_inflate_to_its_size_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE sqlar SET sz = 1000, data = ? WHERE name = 'rom/knowledge/NOTES.md'", (b"\x00junk",)
        )
    with CartridgeReader(path) as r, pytest.raises(CartridgeError, match="cannot be decompressed"):
        r.read_file("rom/knowledge/NOTES.md")


def test_text_without_an_opening_frontmatter_line_has_no_frontmatter() -> None:
    assert parse_frontmatter("no frontmatter here") == {}
    assert parse_frontmatter("# Title\nname: x\n---\n") == {}
    assert parse_frontmatter("") == {}


def test_indented_frontmatter_lines_are_not_top_level_keys() -> None:
    text = "---\nname: deploy\n  nested: no\n\tdesc: tab\n:\nlicense: MIT\n---\n"
    assert parse_frontmatter(text) == {"name": "deploy", "license": "MIT"}


def test_an_unknown_export_zone_is_refused() -> None:
    with pytest.raises(CartridgeError, match="unknown zone 'attic'"):
        export_view(cartridge_record(1), "attic")


def test_the_timestamp_is_utc_now_to_the_millisecond_with_a_z() -> None:
    before = datetime.now(UTC)
    stamp = now_rfc3339()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), stamp
    read_back = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert before - timedelta(milliseconds=1) <= read_back <= datetime.now(UTC)


def test_an_inclusion_entry_cannot_be_altered_once_made() -> None:
    entry = InclusionEntry("m-0", "0" * 64, "1" * 64, 0, [])
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.index = 5  # type: ignore[misc]


def test_an_attestation_row_of_another_id_and_type_is_not_a_log_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute(INSERT_ATTESTATION, ("sbom", "application/spdx", "application/json", "{}", "2026"))
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
    path = tmp_path / "a.acx"
    demo_cartridge(path, save=False)
    with sqlite3.connect(path) as db:
        db.execute(
            INSERT_ATTESTATION,
            (LEGACY_ATT_ID, LEGACY_ATT_TYPE, "application/json", '{"checkpoint":"origin\\n5"}', "2026"),
        )
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
