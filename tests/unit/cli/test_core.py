"""The offline core commands, driven through the real dispatcher."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
import rfc8785

from acx.cli.main import main

SALT_HEX = "6465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f80818283"


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_canon_prints_exact_canonical_bytes(tmp_path, capsysbinary):
    src = tmp_path / "x.json"
    src.write_text('{"b": 5.0, "a": [1e21, "\\u2028"]}')
    assert main(["canon", str(src)]) == 0
    assert capsysbinary.readouterr().out == rfc8785.dumps({"b": 5.0, "a": [1e21, "\u2028"]})


def test_canon_invalid_exits_2_with_path(tmp_path, capsys):
    src = tmp_path / "x.json"
    src.write_text('{"a": {"k": 1, "k": 2}}')
    code, out, err = run(capsys, "canon", str(src))
    assert code == 2 and out == "" and err.startswith("$.a.k: duplicate")


def test_records_check_reports_one_verdict_per_record_in_order(tmp_path, capsys, load_vector):
    cases = load_vector("artifact-fingerprint.json")["cases"][:3]
    bad = dict(cases[0]["record"], id="bad-1", portable="true")
    src = tmp_path / "r.json"
    src.write_text(json.dumps([c["record"] for c in cases] + [bad, 7]))
    code, out, _ = run(capsys, "records", "check", str(src))
    verdicts = json.loads(out)
    assert code == 2 and len(verdicts) == 5
    for verdict, case in zip(verdicts, cases, strict=False):
        assert verdict == {
            "id": case["record"]["id"],
            "ok": True,
            "error": None,
            "errors": [],
            "artifactFingerprint": case["artifactFingerprint"],
            "zone": "rom" if case["record"]["portable"] else "save",
        }
    assert verdicts[3]["ok"] is False and verdicts[3]["id"] == "bad-1"
    assert verdicts[3]["error"].startswith("$[3].portable:")
    assert verdicts[4]["id"] is None and verdicts[4]["ok"] is False


def test_records_check_lists_every_problem_of_a_record_in_one_answer(tmp_path, capsys):
    """The nine rounds of fixing one field at a time become one: each problem with its JSON path and
    what is allowed (fields, values, types)."""
    src = tmp_path / "r.json"
    record = {"title": 1, "portable": "yes", "tags": ["a", 2], "colour": "red", "impact": "bad"}
    src.write_text(json.dumps([record]))
    code, out, _ = run(capsys, "records", "check", str(src))
    (verdict,) = json.loads(out)
    errors = verdict["errors"]
    assert code == 2 and verdict["ok"] is False and verdict["error"] == errors[0]
    paths = [e.split(":", 1)[0] for e in errors]
    assert paths == [
        "$[0].colour",
        "$[0].id",
        "$[0].summary",
        "$[0].sourceType",
        "$[0].repoId",
        "$[0].repoLabel",
        "$[0].projectLabel",
        "$[0].timestamp",
        "$[0].xpAwarded",
        "$[0].title",
        "$[0].impact",
        "$[0].tags[1]",
        "$[0].portable",
    ]
    assert "allowed: artifactFingerprint, codebaseFingerprint" in errors[0]
    assert "one of positive, neutral, negative" in errors[10] and "RFC 3339" in errors[7]


def test_records_check_all_valid_exits_0(tmp_path, capsys, load_vector):
    src = tmp_path / "r.json"
    src.write_text(json.dumps([c["record"] for c in load_vector("artifact-fingerprint.json")["cases"]]))
    assert run(capsys, "records", "check", str(src))[0] == 0


def test_records_check_takes_a_package_directory_and_a_bundle(tmp_path, capsys, load_vector):
    records = [c["record"] for c in load_vector("artifact-fingerprint.json")["cases"]]
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "memory-records.json").write_text(json.dumps(records))
    (tmp_path / "b.json").write_text(json.dumps({"schemaVersion": "acx.bundle/1", "records": records}))
    for source in (tmp_path / "pkg", tmp_path / "b.json"):
        code, out, _ = run(capsys, "records", "check", str(source))
        assert code == 0 and [v["id"] for v in json.loads(out)] == [r["id"] for r in records]
    (tmp_path / "o.json").write_text('{"x": 1}')
    code, _, err = run(capsys, "records", "check", str(tmp_path / "o.json"))
    assert code == 2 and "package directory" in err


def test_repo_identity_does_not_echo_credentials(capsys):
    code, out, _ = run(capsys, "repo-identity", "https://user:hunter2@GitHub.com:443/acme/api.git")
    assert code == 0 and json.loads(out) == {"identity": "github.com/acme/api"} and "hunter2" not in out


def test_fingerprint_from_origin_and_root_commit(tmp_path, capsys, load_vector):
    salt = tmp_path / "salt"
    salt.write_text(SALT_HEX + "\n")
    expected = {
        c["identity"]: c["codebaseFingerprint"] for c in load_vector("codebase-fingerprint.json")["cases"]
    }
    code, out, _ = run(
        capsys, "fingerprint", "--salt-file", str(salt), "--origin", "git@github.com:acme/api.git"
    )
    assert code == 0 and json.loads(out)["codebaseFingerprint"] == expected["github.com/acme/api"]
    sha = "4B825DC642CB6EB9A060E54BF8D69288FBEE4904"
    code, out, _ = run(capsys, "fingerprint", "--salt-file", str(salt), "--root-commit", sha)
    assert json.loads(out)["codebaseFingerprint"] == expected[f"commit:{sha.lower()}"]


def test_fingerprint_refuses_a_short_salt_without_printing_it(tmp_path, capsys):
    salt = tmp_path / "salt"
    salt.write_text("abcd")
    code, out, err = run(capsys, "fingerprint", "--salt-file", str(salt), "--origin", "x.org/a")
    assert code == 2 and out == "" and "32 bytes" in err and "abcd" not in err


def test_init_creates_a_private_256_bit_salt_and_refuses_to_overwrite(tmp_path, capsys, monkeypatch):
    path = tmp_path / "cfg" / "salt"
    monkeypatch.setenv("ACX_SALT_FILE", str(path))
    code, out, _ = run(capsys, "init")
    assert code == 0 and json.loads(out)["saltFile"] == str(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    first = path.read_text()
    assert len(bytes.fromhex(first.strip())) == 32 and first.strip() not in out
    code, _, err = run(capsys, "init")
    assert code == 2 and "exists" in err and path.read_text() == first
    other = tmp_path / "other"
    assert run(capsys, "init", "--salt-file", str(other))[0] == 0
    assert other.read_text() != first


def test_embed_prints_engine_and_vector(capsys, load_vector):
    case = load_vector("embedding.json")["cases"][0]
    code, out, _ = run(capsys, "embed", case["text"])
    doc = json.loads(out)
    assert code == 0 and doc["engine"] == {"id": "local-hash-128", "dim": 128}
    assert doc["vector"] == pytest.approx(case["vector"], abs=1e-12)


def _package(tmp_path, repo):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    rec = {
        "id": "mem-1", "title": "t", "summary": "s", "sourceType": "memory", "repoId": repo,
        "repoLabel": "r", "projectLabel": "p", "timestamp": "2026-01-01T00:00:00Z",
        "impact": "neutral", "xpAwarded": 1, "tags": [],
    }  # fmt: skip
    (pkg / "manifest.json").write_text("{}")
    (pkg / "memory-records.json").write_text(json.dumps([rec]))
    (pkg / "NOTES.md").write_text("notes")
    return pkg


def test_bundle_writes_a_canonical_valid_bundle(tmp_path, capsys):
    from acx.core.bundle import parse_bundle

    salt = tmp_path / "salt"
    salt.write_text(SALT_HEX)
    out_file = tmp_path / "b.json"
    code, out, _ = run(
        capsys, "bundle", str(_package(tmp_path, "acme/api")), "-o", str(out_file), "--salt-file", str(salt)
    )
    assert code == 0 and json.loads(out)["records"] == 1
    data = out_file.read_bytes()
    parsed = parse_bundle(data)
    assert parsed.canonical_bytes() == data
    assert parsed.records[0]["portable"] is False and parsed.records[0]["codebaseFingerprint"].startswith(
        "cbf1_"
    )


def test_bundle_without_salt_for_field_learned_exits_2(tmp_path, capsys):
    code, _, err = run(capsys, "bundle", str(_package(tmp_path, "acme/api")), "-o", str(tmp_path / "b.json"))
    assert code == 2 and "salt" in err and not (tmp_path / "b.json").exists()


def test_console_script_runs_in_a_subprocess(tmp_path):
    src = tmp_path / "x.json"
    src.write_text('{"z": 1, "a": -0.0}')
    done = subprocess.run(
        [sys.executable, "-m", "acx.cli.main", "canon", str(src)],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == b'{"a":0,"z":1}'


def test_canon_re_reads_its_own_output_through_pipes(tmp_path):
    """``echo '[1e16]' | acx canon - | acx canon -``, and the RFC's Appendix B integer, in subprocesses."""
    for text, expected in (
        (b"[1e16]", b"[10000000000000000]"),
        (b"295147905179352830000", b"295147905179352830000"),
        (b'{"b":9007199254740993,"a":1E400}', None),
    ):
        first = subprocess.run(
            [sys.executable, "-m", "acx.cli.main", "canon", "-"], input=text, capture_output=True, check=False
        )
        if expected is None:
            assert first.returncode == 2 and b"$.a" in first.stderr and b"infinity" in first.stderr
            continue
        assert first.returncode == 0 and first.stdout == expected, first.stderr
        second = subprocess.run(
            [sys.executable, "-m", "acx.cli.main", "canon", "-"],
            input=first.stdout,
            capture_output=True,
            check=False,
        )
        assert second.returncode == 0 and second.stdout == expected, second.stderr
