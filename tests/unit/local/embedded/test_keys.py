"""Key files: created once with fresh random keys, 0600, and refused loudly when damaged."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from acx.core.signing import Signer, keyid_for
from acx.local.embedded.keys import FileKeyer, FileSigner, KeyFileDamaged, key_bytes


def test_a_signer_key_file_is_created_once_private_and_signs_verifiably(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.serialization import load_der_public_key

    path = tmp_path / "signing.key"
    signer: Signer = FileSigner(path, create=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = FileSigner(path)
    assert again.public_key_der() == signer.public_key_der()  # the same key after a restart
    load_der_public_key(signer.public_key_der()).verify(signer.sign(b"m"), b"m")  # type: ignore[union-attr]
    other = FileSigner(tmp_path / "other.key", create=True)
    assert keyid_for("ed25519", other.public_key_der()) != keyid_for("ed25519", signer.public_key_der())


def test_a_missing_key_file_is_not_created_unless_asked(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        FileKeyer(tmp_path / "forget.key")
    assert not (tmp_path / "forget.key").exists()
    assert len(FileKeyer(tmp_path / "forget.key", create=True).key()) == 32  # the control


@pytest.mark.parametrize("damage", ["flip", "cut", "foreign", "empty"])
def test_a_damaged_key_file_is_refused_never_replaced(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "forget.key"
    key = FileKeyer(path, create=True).key()
    assert FileKeyer(path).key() == key  # the control: intact, it reads back
    raw = bytearray(path.read_bytes())
    if damage == "flip":
        i = raw.index(b'"key": "') + 10
        raw[i] = ord("0") if raw[i] != ord("0") else ord("1")
    elif damage == "cut":
        raw = raw[: len(raw) // 2]
    elif damage == "foreign":
        raw = bytearray(b"-----BEGIN PRIVATE KEY-----\n")
    else:
        raw = bytearray()
    path.write_bytes(bytes(raw))
    with pytest.raises(KeyFileDamaged):
        FileKeyer(path, create=True)
    assert path.read_bytes() == bytes(raw)  # left as it was


def test_a_key_file_of_another_kind_is_refused(tmp_path: Path) -> None:
    FileKeyer(tmp_path / "k", create=True)
    with pytest.raises(KeyFileDamaged):
        key_bytes(tmp_path / "k", "ed25519", create=False)
    assert len(key_bytes(tmp_path / "k", "forget-hmac", create=False)) == 32


def test_the_signers_creation_time_is_kept_in_its_file(tmp_path: Path) -> None:
    import json

    path = tmp_path / "signing.key"
    created = FileSigner(path, create=True).created_at
    assert FileSigner(path).created_at == created  # the registry's notBefore survives a restart
    doc = json.loads(path.read_bytes())
    doc["created"] = "2001-01-01T00:00:00Z"
    path.write_text(json.dumps(doc))
    with pytest.raises(KeyFileDamaged):
        FileSigner(path)  # the time is covered by the checksum too
