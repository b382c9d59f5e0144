"""Cartridges the ACX reference exports, with keys it generates fresh, checked by our ``acx verify``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from acx.core import canonical
from acx.core.signing import LocalEd25519Signer
from acx.core.trust import evaluate
from tests.factories import registry_for
from tests.interop.conftest import REFERENCE_CLI, Reference

SAMPLE = REFERENCE_CLI.parent.parent / "examples" / "sample-agent-package"
PUBLISHER = "com.example.peer"


def _registry(key_pem_path: Path) -> dict[str, Any]:
    """A registry vouching for the reference's freshly generated key (public part only)."""
    from cryptography.hazmat.primitives import serialization

    private = serialization.load_pem_private_key(key_pem_path.read_bytes(), password=None)
    assert isinstance(private, Ed25519PrivateKey)
    return registry_for(
        LocalEd25519Signer(private),
        publisherId=PUBLISHER,
        namespaceProof={
            "method": "dns-txt",
            "txtRecord": "_acx-challenge.peer.example.com",
            "verifiedAt": "2026-01-01T00:00:00Z",
        },
    )


@pytest.fixture(scope="module", params=["rom", "with-save"])
def peer_export(
    request: pytest.FixtureRequest, reference: Reference, tmp_path_factory: pytest.TempPathFactory
):  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("peer") / f"{request.param}.acx"
    extra = ["--include-field-learned"] if request.param == "with-save" else []
    run = reference.run("export", SAMPLE, out, "--publisher", PUBLISHER, *extra)
    assert run.code == 0, run.out + run.err
    key = Path(str(out) + ".key.pem")
    assert key.is_file()
    return out, _registry(key)


def _acx(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acx.cli.main", *map(str, args)], capture_output=True, text=True, check=False
    )


def test_trusted_with_its_registry_portable_without(peer_export, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path, registry = peer_export
    reg = tmp_path / "registry.json"
    reg.write_text(json.dumps(registry))
    v = evaluate(path, registry)
    assert v.verdict == "trusted", v.reasons
    assert v.publisherId == PUBLISHER
    assert evaluate(path).verdict == "portable"
    cli = _acx("verify", path, "--registry", reg, "--json")
    assert cli.returncode == 0 and json.loads(cli.stdout)["verdict"] == "trusted", cli.stderr
    assert _acx("verify", path).returncode == 1


def test_an_edited_rom_row_is_tampered(peer_export, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path, registry = peer_export
    edited = tmp_path / "edited.acx"
    edited.write_bytes(path.read_bytes())
    db = sqlite3.connect(edited)
    rid, payload = db.execute("SELECT id, payload FROM memory WHERE zone = 'rom' ORDER BY id").fetchone()
    record = json.loads(payload)
    record["summary"] += " (edited)"
    db.execute("UPDATE memory SET payload = ? WHERE id = ?", (canonical.dumps(record).decode(), rid))
    db.commit()
    db.close()
    assert evaluate(edited, registry).verdict == "tampered"
    reg = tmp_path / "registry.json"
    reg.write_text(json.dumps(registry))
    assert _acx("verify", edited, "--registry", reg).returncode == 4


def test_our_strip_keeps_the_peer_signature(peer_export, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path, registry = peer_export
    out = tmp_path / "rom.acx"
    cli = _acx("strip", path, out, "--json")
    assert cli.returncode == 0 and json.loads(cli.stdout)["equal"] is True, cli.stderr
    assert evaluate(out, registry).verdict == "trusted"
