"""The CLI as a new user drives it, against the local stack over HTTP: one test per behaviour of
issue 14 (configuration, one bundle vocabulary, lists and gets, errors that say what to do, output)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acx.cli.main import main
from tests.factories import memory

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agent-package"
TENANT = "cli-user"


def acx(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def login(capsys: pytest.CaptureFixture[str], stack: Any, *extra: str) -> tuple[int, str, str]:
    """``acx login`` against the local stack as TENANT, with ``extra`` flags."""
    return acx(capsys, "login", "--endpoint", stack.endpoint, "--local", "--tenant", TENANT, *extra)


def record(i: int, **over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"title": f"title {i}", "summary": f"summary {i}", "sourceType": "memory"}
    fields |= {"repoLabel": "r", "projectLabel": "p", "timestamp": "2026-03-14T09:21:00Z", "tags": ["cli"]}
    return memory(f"cli-{i:04d}", **fields | over)


@pytest.fixture()
def logged_in(
    local_stack: Any,
    acx_config: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Any:
    monkeypatch.setenv("ACX_SALT_FILE", str(tmp_path / "salt"))
    monkeypatch.delenv("ACX_PACKAGE", raising=False)
    assert acx(capsys, "init")[0] == 0
    code, _, err = login(capsys, local_stack, "--package", "notes")
    assert code == 0, err
    return local_stack


def test_login_whoami_logout_and_version(logged_in: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = acx(capsys, "whoami", "--json")
    who = json.loads(out)
    assert code == 0 and who["tenant"] == TENANT and who["package"] == "notes" and not who["expired"]
    assert "admin" in who["scopes"] and "token" not in who  # the dev token with all scopes has admin
    assert acx(capsys, "logout")[0] == 0
    code, _, err = acx(capsys, "packages")
    assert code == 2 and "acx login" in err
    code, out, _ = acx(capsys, "whoami")
    assert code == 2
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("acx ")


def test_login_refuses_an_unknown_scope(
    local_stack: Any, acx_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = login(capsys, local_stack, "--scopes", "memory:reed")
    assert code == 2 and "memory:reed" in err and "memory:read" in err
    assert not acx_config.exists()


def test_expired_token_says_run_acx_login(
    logged_in: Any, acx_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = json.loads(acx_config.read_text())
    cfg["expiresAt"] = "2020-01-01T00:00:00Z"
    acx_config.write_text(json.dumps(cfg))
    code, _, err = acx(capsys, "recall")
    assert code == 2 and "expired" in err and "acx login" in err
    # a token the server itself finds expired says so too
    cfg["token"] = logged_in.issuer.issue(TENANT, ttl=60, now=1_000_000)
    cfg["expiresAt"] = None
    acx_config.write_text(json.dumps(cfg))
    code, _, err = acx(capsys, "recall")
    assert code == 2 and "token_expired" in err and "acx login" in err


def test_missing_scope_is_named(
    local_stack: Any, acx_config: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert login(capsys, local_stack, "--scopes", "memory:read")[0] == 0
    records = tmp_path / "r.json"
    records.write_text(json.dumps([record(1)]))
    code, _, err = acx(capsys, "upload", str(records), "-p", "notes")
    assert code == 2 and "403" in err and "memory:write" in err


def test_upload_takes_a_directory_a_records_array_and_a_bundle(
    logged_in: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = acx(capsys, "upload", str(EXAMPLE))  # the default package from login
    assert code == 0, err
    assert "packed directory" in err and "accepted 5" in out
    array = tmp_path / "records.json"
    array.write_text(json.dumps([record(1), record(2)]))
    code, out, err = acx(capsys, "upload", str(array), "-p", "notes")
    assert code == 0 and "wrapped the records array" in err and "accepted 2" in out
    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps({"schemaVersion": "acx.memory-bundle/1", "records": [record(3)]}))
    code, out, err = acx(capsys, "upload", str(bundle), "-p", "notes")
    assert code == 0 and f"bundle {bundle}" in err and "accepted 1" in out


def test_error_names_the_record_index_and_id(
    logged_in: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    array = tmp_path / "bad.json"
    array.write_text(json.dumps([record(10), record(11, portable="yes")]))
    code, _, err = acx(capsys, "upload", str(array), "-p", "badrec")
    assert code == 2 and "$.records[1].portable" in err and "record 1, id cli-0011" in err


def test_scrub_refusal_names_the_record(
    logged_in: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    array = tmp_path / "secret.json"
    array.write_text(json.dumps([record(20, summary="key AKIA" + "QWERTYUIOPASDFGH" + " leaked")]))
    code, _, err = acx(capsys, "upload", str(array), "-p", "scrubbed")
    assert code == 3 and "record cli-0020" in err and "$.summary" in err
    assert "QWERTYUIOPASDFGH" not in err


def test_lists_and_gets(logged_in: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    array = tmp_path / "records.json"
    array.write_text(json.dumps([record(i) for i in range(30, 33)]))
    assert acx(capsys, "upload", str(array), "-p", "listed")[0] == 0
    code, out, _ = acx(capsys, "packages", "--json")
    listed = {p["package"]: p for p in json.loads(out)["packages"]}
    assert code == 0 and listed["listed"]["records"] == 3 and listed["listed"]["logSize"] == 3
    assert listed["listed"]["lastCheckpoint"]
    code, out, _ = acx(capsys, "packages")
    assert code == 0 and "listed" in out and "{" not in out  # a table, not JSON or a repr
    code, out, _ = acx(capsys, "memory", "cli-0031", "-p", "listed", "--json")
    assert code == 0 and json.loads(out)["record"]["id"] == "cli-0031" and json.loads(out)["zone"] == "rom"
    code, _, err = acx(capsys, "memory", "no-such", "-p", "listed")
    assert code == 2 and "404" in err
    code, out, _ = acx(capsys, "log-entries", "-p", "listed", "--json", "--limit", "2")
    page = json.loads(out)
    assert [e["seq"] for e in page["entries"]] == [0, 1] and page["nextCursor"] == "2"
    code, out, _ = acx(capsys, "log-entries", "-p", "listed", "--json", "--cursor", "2")
    assert [e["seq"] for e in json.loads(out)["entries"]] == [2]
    assert acx(capsys, "export", "-p", "listed")[0] == 0
    code, out, _ = acx(capsys, "cartridges", "-p", "listed", "--json")
    assert code == 0 and [c["status"] for c in json.loads(out)["cartridges"]] == ["ready"]
    code, out, _ = acx(capsys, "uploads", "-p", "listed", "--json")
    assert code == 0 and json.loads(out)["uploads"] == []  # inline bundles are no upload jobs
    registry = tmp_path / "registry.json"
    code, out, _ = acx(capsys, "trust-registry", "-o", str(registry))
    assert code == 0 and json.loads(registry.read_text())["schemaVersion"] == "acx.trust-registry/1"


def test_recall_cursor_and_streamed_pull(
    logged_in: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    array = tmp_path / "records.json"
    array.write_text(json.dumps([record(i) for i in range(40, 45)]))
    assert acx(capsys, "upload", str(array), "-p", "paged")[0] == 0
    code, out, _ = acx(capsys, "recall", "-p", "paged", "--limit", "2", "--json")
    first = json.loads(out)
    assert len(first["records"]) == 2 and first["nextCursor"]
    code, out, _ = acx(
        capsys, "recall", "-p", "paged", "--limit", "2", "--cursor", first["nextCursor"], "--json"
    )
    assert [r["id"] for r in json.loads(out)["records"]] == ["cli-0042", "cli-0043"]
    code, out, _ = acx(capsys, "recall", "-p", "paged", "--limit", "2")
    assert "--cursor" in out and "more with" in out
    pulled = tmp_path / "pulled.json"
    code, out, _ = acx(capsys, "recall", "-p", "paged", "--all", "-o", str(pulled))
    assert code == 0 and "wrote 5 records" in out
    assert [r["id"] for r in json.loads(pulled.read_text())] == [f"cli-{i:04d}" for i in range(40, 45)]
    assert acx(capsys, "records", "check", str(pulled))[0] == 0  # the pull is a records array


def test_log_verify_prints_the_servers_keys_and_one_verdict(
    logged_in: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from acx.contract.models import LogVerifyResult, keys_of

    array = tmp_path / "records.json"
    array.write_text(json.dumps([record(50)]))
    assert acx(capsys, "upload", str(array), "-p", "verified")[0] == 0
    code, out, _ = acx(capsys, "log", "verify", "-p", "verified")
    assert code == 0
    printed = [line.split(":")[0].strip() for line in out.splitlines() if line.startswith("  ")]
    assert printed and set(printed) <= set(keys_of(LogVerifyResult))
    assert out.strip().splitlines()[-1].startswith("verdict: ok")


def test_export_text_mode_tells_of_quarantine(logged_in: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert acx(capsys, "upload", str(EXAMPLE), "-p", "quarantine")[0] == 0
    code, out, _ = acx(capsys, "export", "-p", "quarantine")
    assert code == 0 and "quarantined (1 record(s) not exported)" in out and "--include-field-learned" in out
