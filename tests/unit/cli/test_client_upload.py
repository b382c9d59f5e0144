"""`acx upload DIR`: field-learned records need the installation salt, and the refusal names the
two ways that exist (`acx init`, `--salt-file`), both of which upload takes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acx.cli.client import CliError
from acx.cli.client_upload import bundle_input
from tests.factories import memory


def _package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    record = memory("m-1")
    for field in ("portable", "codebaseFingerprint"):
        record.pop(field)
    record["repoId"] = "acme/api"
    (pkg / "memory-records.json").write_text(json.dumps([record]))
    return pkg


def test_a_repo_bound_package_without_a_salt_says_how_to_get_one(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ACX_SALT_FILE", str(tmp_path / "no-salt"))
    with pytest.raises(CliError) as refused:
        bundle_input(_package(tmp_path))
    assert "acx init" in refused.value.message and "--salt-file" in refused.value.message


def test_upload_takes_the_salt_file_it_names(tmp_path: Path, monkeypatch, capsys) -> None:
    from acx.cli.main import build_parser

    monkeypatch.setenv("ACX_SALT_FILE", str(tmp_path / "no-salt"))
    salt = tmp_path / "salt"
    salt.write_text("ab" * 32)
    path, _, _, records = bundle_input(_package(tmp_path), str(salt))
    try:
        assert (
            records
            and records[0]["portable"] is False
            and records[0]["codebaseFingerprint"].startswith("cbf1_")
        )
    finally:
        path.unlink()
    args = build_parser().parse_args(["upload", "dir", "--salt-file", str(salt)])
    assert args.salt_file == str(salt)
