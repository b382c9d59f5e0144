"""Scrub gate: every rule fires, reports never echo the secret, look-alikes pass, CLI exit codes."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from acx.cli import offline_scrub
from acx.core import scrub
from acx.core.scrub import Finding, ScrubReport, scan_any, scan_bundle, scan_record, scan_text

# Fake, format-valid values (never real credentials), one or more per rule.
A36 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
HEX32 = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
R82 = "11Zq8Lm3Xv9Rt2Wp7Ny4Kb_6Hd1Jf5Gs0Ac8Ue3Oi7Tq2Bz5Vy9Cx4Nw1Mr6Pk3Lj8Hg5Fd2Sa7Qe0Zu4Y"  # 22 + _ + 59
HEX64 = HEX32 * 2
SECRETS: dict[str, str] = {
    "aws-access-key-id": "AKIAQ7X3M2N4B5V6C7Z8",
    "aws-secret-access-key": "wJa1rXUtnFEMI/K7MDENG/bPxRfiCY9Qz8LmK3Wp",
    "github-pat": "ghp_" + A36,
    "github-fine-grained-pat": "github_pat_" + R82[:82],
    "gitlab-pat": "glpat-Ab3dE6gH9jK2mN5pQ8sT",
    "gitlab-runner-token": "glrt-Ab3dE6gH9jK2mN5pQ8sT",
    "slack-bot-token": "xoxb-48213579016-580193746201-Zq8Lm3Xv9Rt2Wp7Ny4Kb6Hd1",
    "slack-app-token": "xapp-1-A052FGTS2DL-5171572773297-610b6a11f4b7eb819e87b767d80e6575",
    "slack-webhook-url": "https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/Xy9Zb8Wc7Vd6Ue5Tf4Sg3Rh2",
    "gcp-api-key": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    "stripe-access-token": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "openai-api-key": "sk-proj-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv",
    "anthropic-api-key": "sk-ant-api03-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx",
    "npm-access-token": "npm_" + A36,
    "pypi-upload-token": "pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAw",
    "sendgrid-api-token": "SG.Ab1Cd2Ef3Gh4Ij5Kl6Mn7O.Pq8Rs9Tu0Vw1Xy2Za3Bc4De5Fg6Hi7Jk8Lm9No0Pq1Rs",
    "twilio-api-key": "SK" + HEX32,
    "huggingface-access-token": "hf_" + A36[:34],
    "tencent-cloud-secret-id": "AKID" + A36[:32],
    "figma-pat": "figd_" + A36 + "-Zq8Lm3",
    "digitalocean-token": "dop_v1_" + HEX64,
    "shopify-token": "shpat_" + HEX32,
    "databricks-api-token": "dapi" + HEX32,
    "azure-ad-client-secret": "abc8Q~Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv",
    "hashicorp-vault-token": "hvs.CAESIAb1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv",
    "age-secret-key": "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2,
    "heroku-api-key-v2": "HRKU-AAb1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv",
    "grafana-service-account-token": "glsa_Zq8Lm3Xv9Rt2Wp7Ny4Kb6Hd1Jf5Gs0Ac_0f1e2d3c",
    "postman-api-token": "PMAK-0f1e2d3c4b5a69788796a5b4-0f1e2d3c4b5a69788796a5b4c3d2e1f0ab",
    "pulumi-api-token": "pul-" + HEX32 + "0f1e2d3c",
    "linear-api-key": "lin_api_" + A36 + "Zq8L",
    "doppler-api-token": "dp.pt." + A36 + "Zq8Lm3Xv",
    "dynatrace-api-token": "dt0c01." + A36[:24].lower() + "." + (A36 + A36)[:64].lower(),
    "sentry-user-token": "sntryu_" + HEX64,
    "private-key": "-----BEGIN RSA PRIVATE KEY-----",
    "putty-private-key": "PuTTY-User-Key-File-3: ",
    "high-entropy": "Zq8Lm3Xv9Rt2Wp7Ny4Kb6Hd1Jf5Gs0Ac8Ue3Oi",
}
SENTENCES: dict[str, str] = {
    "aws-secret-access-key": "aws_secret_access_key = {}",
    "age-secret-key": "key file: {}",
}
SECRETS["age-secret-key"] = SECRETS["age-secret-key"][:74]


def blocks(text: str) -> set[str]:
    return {f.rule for f in scan_text(text) if f.severity == "block"}


def windows(secret: str, size: int = 6) -> list[str]:
    return [secret[i : i + size] for i in range(0, max(1, len(secret) - size + 1))]


@pytest.mark.parametrize("rule", sorted(SECRETS))
def test_each_rule_fires_and_report_never_contains_the_secret(rule: str) -> None:
    secret = SECRETS[rule]
    text = SENTENCES.get(rule, "incident note: {} was found in the log").format(secret)
    findings = scan_text(text, "record:m1", "$.summary")
    assert rule in {f.rule for f in findings}
    hit = next(f for f in findings if f.rule == rule)
    assert text.encode()[hit.offset :].startswith(secret.encode()[:4]) or rule == "slack-webhook-url"
    report = ScrubReport()
    report.extend(findings)
    dumped = json.dumps(report.to_dict())
    assert report.blocked
    # no excerpt, no prefix, no piece of the secret anywhere in the report
    for piece in windows(secret.removeprefix("-----BEGIN ").removeprefix("https://")):
        if piece.lower() in rule or piece in ("record", "summary"):
            continue
        assert piece not in dumped, (rule, piece)
    assert set(hit.to_dict()) == {"rule", "location", "path", "offset", "severity"}


def test_every_rule_compiles_and_has_a_trigger() -> None:
    from acx.core.scrub import engine, rules, triggers

    announced = {i for _t, ix in triggers.all_triggers() for i in ix}
    assert announced == set(range(len(rules.RULES)))
    for i in range(len(rules.RULES)):
        assert engine.compiled().rule(i).groups >= 1, rules.RULES[i].id
    assert set(SECRETS) <= set(scrub.RULE_IDS)


@pytest.mark.parametrize(
    "text",
    [
        "postgres://app:S3cretPw0rd@db.internal:5432/app",
        "redis://default:Zx81kq@cache:6379/0",
        "amqp://user:password@rabbit:5672/",  # fail closed: the word 'password' still blocks
        "https://x-access-token:Ab1Cd2Ef3Gh4@github.com/acme/api.git",
    ],
)
def test_uri_credentials_block(text: str) -> None:
    assert "uri-credentials" in blocks(text)
    assert "Ab1Cd2" not in json.dumps([f.to_dict() for f in scan_text(text)])


@pytest.mark.parametrize(
    "text",
    [
        "postgres://user:${DB_PASS}@localhost/app",
        "mysql://root:<password>@127.0.0.1/test",
        "https://user:****@example.com/",
        "git@github.com:acme/api.git and ops@example.com",
        "ssh deploy@bastion.internal",
        "https://github.com/acme/api/pull/42?x=1",
    ],
)
def test_uri_without_real_credentials_passes(text: str) -> None:
    assert blocks(text) == set()


@pytest.mark.parametrize(
    "text",
    [
        "export DB_PASSWORD=hunter2x",
        "password: Tr0ub4dor&3",
        '"client_secret": "q7Rk2mXv9Lp4"',
        "API_KEY='q8Zr1Lp0Xw'",
        "auth_token = 9f8e7d6c5b4a",
        "GITHUB_TOKEN=notatokenbutstill1",
        "pwd=Summer2024",
        "  passphrase: correct-horse-99",
    ],
)
def test_secret_assignments_block(text: str) -> None:
    assert "secret-assignment" in blocks(text)


@pytest.mark.parametrize(
    "text",
    [
        "secret: see vault",
        "password: rotated monthly",
        "token: xxxxxxxx",
        "API_KEY=<your-api-key>",
        "DB_PASSWORD=${DB_PASSWORD}",
        "password=os.environ['DB_PASSWORD']",
        "token = get_token(session)",
        "def login(user: str, password: str) -> None: ...",
        "max_tokens=4096",
        "token_bucket: 100",
        "password_hash = argon2id",
        "secret_name: prod/db/password",
        "api_key: changeme",
        'client_secret: ""',
        "The password reset flow",
        "token bucket",
        "rotate the api key monthly",
        "monkey: banana42",
        "author: jane99",
    ],
)
def test_lookalike_assignments_pass(text: str) -> None:
    assert blocks(text) == set()


@pytest.mark.parametrize(
    "text",
    [
        "fixed in 3f2a9c1",
        "fixed in 3f2a9c1e5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f5a",
        "sha256:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "record 123e4567-e89b-12d3-a456-426614174000 merged",
        "codebaseFingerprint cbf1_0123456789abcdef0123456789abcdef01234567",
        "artifactFingerprint 9a3f2c1b0d",
        "release v1.24.3-rc.2+build.7",
        "see layers/acx/acx/core/scrub.py and src/main/java/com/acme/RefundService.java",
        "aGVsbG8gd29ybGQ= is base64 of hello world",
        "HttpClient4ConnectionManagerFactoryBean",
        "stack acx-prod-IngestFunction-1A2B3C4D5E6F",
        "ULID 01ARZ3NDEKTSV4RRFFQ69G5FAV",
    ],
)
def test_structural_lookalikes_pass(text: str) -> None:
    assert blocks(text) == set()


def test_offset_is_utf8_byte_offset() -> None:
    text = "café — " + SECRETS["aws-access-key-id"]
    (finding,) = scan_text(text)
    assert finding.offset == len("café — ".encode())
    assert finding.offset != text.index("AKIA")


def test_home_paths_warn_but_do_not_block() -> None:
    report = scan_any("logs in /home/alice/app, /Users/bob/x, C:\\Users\\carol\\y and ~/notes")
    assert not report.blocked
    assert [w.rule for w in report.warnings] == ["home-path"] * 4
    assert all(w.severity == "warn" for w in report.warnings)
    assert "alice" not in json.dumps(report.to_dict())


def test_forbidden_literals_case_insensitive() -> None:
    findings = scan_text(
        "moved from GitHub.com/Acme/Secret-Repo last week", forbidden=["github.com/acme/secret-repo"]
    )
    assert [(f.rule, f.offset) for f in findings] == [("forbidden-literal", 11)]
    assert scan_text("nothing here", forbidden=["acme/secret-repo", ""]) == []


def test_scan_record_walks_keys_values_and_depth() -> None:
    record = {
        "id": "mem-1",
        "summary": "clean",
        "tags": ["a", "b", SECRETS["github-pat"]],
        "meta": {
            "nested": [{"deep": "x " + SECRETS["aws-access-key-id"]}],
            "weird key": SECRETS["npm-access-token"],
        },
        SECRETS["stripe-access-token"]: "key is the secret",
        "db_password": "Zx9!kq2Lm",
    }
    found = {(f.rule, f.path, f.offset) for f in scan_record(record)}
    assert ("github-pat", "$.tags[2]", 0) in found
    assert ("aws-access-key-id", "$.meta.nested[0].deep", 2) in found
    assert ("npm-access-token", '$.meta["weird key"]', 0) in found
    assert any(rule == "stripe-access-token" for rule, _p, _o in found)  # secret in an object key
    assert ("secret-assignment", "$.db_password", 0) in found
    assert all(f.location == "record:mem-1" for f in scan_record(record))


def test_scan_bundle_covers_records_knowledge_and_skills() -> None:
    report = scan_bundle(
        [
            {"id": "r1", "summary": "ok"},
            {"id": "r2", "summary": "token " + SECRETS["huggingface-access-token"]},
        ],
        knowledge=[("knowledge/a.md", "# A\n\nclean"), ("knowledge/b.md", "line\n" + SECRETS["private-key"])],
        skills=[("rom/skills/x/SKILL.md", "---\nname: x\n---\n" + SECRETS["slack-bot-token"])],
    )
    assert report.blocked
    where = {(f.location, f.path, f.rule) for f in report.findings}
    assert where == {
        ("record:r2", "$.summary", "huggingface-access-token"),
        ("file:knowledge/b.md", "", "private-key"),
        ("file:rom/skills/x/SKILL.md", "", "slack-bot-token"),
    }
    offsets = {f.location: f.offset for f in report.findings}
    assert offsets["file:knowledge/b.md"] == 5
    clean = scan_bundle([{"id": "r1", "summary": "fine"}], [("k.md", "fine")], [("s.md", "fine")])
    assert clean.to_dict() == {"blocked": False, "findings": [], "warnings": []}


def test_string_with_nul_still_scanned() -> None:
    record = {"id": "n", "a": "x\x00y", "b": "pre\x00" + SECRETS["gitlab-pat"]}
    assert [(f.rule, f.path, f.offset) for f in scan_record(record)] == [("gitlab-pat", "$.b", 4)]


def test_scan_any_shapes() -> None:
    secret = SECRETS["databricks-api-token"]
    assert scan_any([{"id": "a", "summary": secret}]).findings[0].location == "record:a"
    bundle = {"records": [], "knowledge": {"k.md": secret}, "skills": [{"path": "s/SKILL.md", "body": "ok"}]}
    assert scan_any(bundle).findings[0].location == "file:k.md"
    assert scan_any({"records": [], "note": secret}).blocked  # unknown top-level fields are scanned too
    assert scan_any(secret).findings[0].location == "text"
    assert scan_any({"id": "single", "summary": secret}).findings[0].location == "record:single"


def test_finding_is_frozen_and_serialises() -> None:
    f = Finding("jwt", "text", "", 3)
    with pytest.raises(AttributeError):
        f.rule = "x"  # type: ignore[misc]
    assert f.to_dict() == {"rule": "jwt", "location": "text", "path": "", "offset": 3, "severity": "block"}


def test_many_strings_in_one_buffer_map_back_to_their_string() -> None:
    records = [
        {"id": f"r{i}", "summary": f"note {i} " + ("ok" if i % 50 else SECRETS["npm-access-token"])}
        for i in range(500)
    ]
    report = scan_bundle(records)
    assert [(f.location, f.offset) for f in report.findings] == [
        (f"record:r{i}", len(f"note {i} ")) for i in range(0, 500, 50)
    ]


@pytest.mark.parametrize("secret_rule", sorted(SECRETS))
def test_fast_raw_path_agrees_with_full_scan(secret_rule: str) -> None:
    text = SENTENCES.get(secret_rule, "seen {} here").format(SECRETS[secret_rule])
    dirty = json.dumps({"records": [{"id": "a", "summary": text}]}, ensure_ascii=False).encode()
    clean = json.dumps({"records": [{"id": "a", "summary": "fixed in 3f2a9c1, see ~ notes"}]}).encode()
    if b"\\" not in dirty:
        assert scrub.scan_raw_json_fast(dirty) is False
    assert scrub.scan_raw_json_fast(clean) is True
    assert scrub.scan_raw_json_fast(b'{"a": "line\\nbreak"}') is False  # escapes: take the full path


def test_key_value_secret_is_caught_by_fast_raw_path() -> None:
    doc = {"records": [{"id": "a", "meta": {"db_password": "Zx9!kq2Lm"}}]}
    raw = json.dumps(doc, indent=4).encode()
    assert scan_any(doc).blocked
    assert scrub.scan_raw_json_fast(raw) is False


def run_cli(*argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "acx.cli.main", "scrub", *argv], input=stdin, capture_output=True, timeout=60
    )


def test_cli_exit_codes_and_output(tmp_path) -> None:
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps([{"id": "a", "summary": "token bucket, fixed in 3f2a9c1"}]))
    dirty = tmp_path / "dirty.json"
    dirty.write_text(json.dumps({"records": [{"id": "a", "summary": "k " + SECRETS["npm-access-token"]}]}))
    text = tmp_path / "notes.md"
    text.write_text("# Notes\n\nsee /home/alice/x\n")
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\xff\xfe\x00garbage")

    ok = run_cli(str(clean))
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == {"blocked": False, "findings": [], "warnings": []}

    blocked = run_cli(str(dirty))
    assert blocked.returncode == 3
    out = json.loads(blocked.stdout)
    assert out["blocked"] is True
    assert out["findings"] == [
        {
            "rule": "npm-access-token",
            "location": "record:a",
            "path": "$.summary",
            "offset": 2,
            "severity": "block",
        }
    ]
    assert SECRETS["npm-access-token"][:8].encode() not in blocked.stdout + blocked.stderr

    warned = run_cli(str(text))
    assert warned.returncode == 0
    assert json.loads(warned.stdout)["warnings"][0]["location"] == f"file:{text}"

    assert run_cli(str(bad)).returncode == 2
    assert run_cli(str(tmp_path / "missing.json")).returncode == 2

    forbid = run_cli(str(clean), "--forbid", "TOKEN BUCKET")
    assert forbid.returncode == 3
    assert json.loads(forbid.stdout)["findings"][0]["rule"] == "forbidden-literal"

    piped = run_cli("-", stdin=b"hello " + SECRETS["hashicorp-vault-token"].encode())
    assert piped.returncode == 3


def test_cli_invalid_json_is_scanned_as_text(tmp_path) -> None:
    # duplicate keys make strict JSON fail; the file is then scanned as text, so nothing hides
    path = tmp_path / "dup.json"
    path.write_text('{"id": "a", "summary": "' + SECRETS["twilio-api-key"] + '", "summary": "clean"}')
    result = run_cli(str(path))
    assert result.returncode == 3
    assert json.loads(result.stdout)["findings"][0]["location"] == f"file:{path}"


def test_register_sets_func() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    offline_scrub.register(parser.add_subparsers())
    args = parser.parse_args(["scrub", "x.json", "--forbid", "a", "--forbid", "b"])
    assert args.func is offline_scrub.run
    assert args.forbid == ["a", "b"]


def test_split_raw_json_keeps_strings_and_pairs_whole() -> None:
    doc = [{"id": f"r{i}", "note": "a, [c] {d}", "db_password": "Zx9!kq2Lm"} for i in range(50)]
    raw = json.dumps(doc).encode()
    ranges = scrub.split_raw_json(raw, 4)
    assert len(ranges) == 4
    assert ranges[0][0] == 0 and ranges[-1][1] == len(raw)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    for start, _end in ranges[1:]:
        assert raw[start : start + 1] == b'"'
        assert raw[:start].rstrip()[-1:] in (b",", b"[", b"{")
        assert raw.count(b'"', 0, start) % 2 == 0
    # every part still sees each key/value pair whole, so every part is "not clean"
    assert all(not scrub.scan_raw_json_fast(raw[a:b]) for a, b in ranges)
    assert scrub.split_raw_json(b'{"a": "x\\ny"}', 3) == [(0, 13)]


def test_cli_parallel_fast_path_still_blocks(tmp_path) -> None:
    records = [{"id": f"r{i}", "summary": "token bucket note " * 40} for i in range(12_000)]
    records[-1]["summary"] += " " + SECRETS["shopify-token"]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(records))
    assert path.stat().st_size > 8_000_000
    result = run_cli(str(path))
    assert result.returncode == 3
    assert json.loads(result.stdout)["findings"][0]["location"] == "record:r11999"


# --- the ACX standard's own scrub tests (§7.5, §12.8), exactly as it writes them ---------------

CONFORMANCE = Path(__file__).resolve().parents[4] / "tests" / "data" / "acx-scrub-conformance.json"
STANDARD = json.loads(CONFORMANCE.read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", STANDARD, ids=[f"{c['test'][:5]}-{c['field']}" for c in STANDARD])
def test_every_scrub_line_of_the_standard_gets_the_standards_verdict(case: dict) -> None:
    assert scan_any(case["text"]).blocked is case["blocked"]
    record = {"id": "leak-1", "title": "Deploy note", "summary": case["text"], "tags": ["ops"]}
    assert scan_bundle([record]).blocked is case["blocked"]
    assert scan_bundle([], knowledge=[("rom/x.md", case["text"])]).blocked is case["blocked"]


def test_the_standards_poisoned_package_is_refused_at_export(tmp_path: Path) -> None:
    """§7.5's proof: a portable record saying ``set AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE for the
    pipeline``; export MUST be refused, and nothing is written."""
    from acx.core.export import ExportBlocked, build_cartridge
    from acx.core.signing import LocalEd25519Signer
    from tests.factories import memory

    poisoned = memory(
        "leak-1",
        portable=True,
        title="Deploy note",
        summary=STANDARD[0]["text"],
        sourceType="knowledge",
        repoId=None,
        repoLabel="portable-core",
        timestamp="2026-01-01T00:00:00Z",
        tags=["ops"],
    )
    with pytest.raises(ExportBlocked) as exc:
        build_cartridge(
            tmp_path / "poisoned.acx",
            [poisoned],
            [],
            signer=LocalEd25519Signer(),
            publisher_id="com.example.team",
            artifact_id="a",
            artifact_version="1",
        )
    report = exc.value.report
    assert [(f.rule, f.location, f.path) for f in report.findings] == [
        ("aws-access-key-id", "record:leak-1", "$.summary")
    ]
    assert "AKIAIOSFODNN7EXAMPLE" not in repr(report) and "IOSFODNN" not in repr(report)
    assert list(tmp_path.iterdir()) == []


# --- the scan budget belongs to each string ------------------------------------------------------


def test_one_dense_file_is_refused_alone_and_the_rest_is_judged() -> None:
    dense = "sk_ " * 20000
    records = [
        {"id": "r0", "summary": "retry with backoff"},
        {"id": "r1", "summary": f"token {SECRETS['github-pat']}"},
        {"id": "r2", "summary": "clean"},
    ]
    report = scan_bundle(
        records, knowledge=[("notes/a.md", "plain text"), ("notes/dense.md", dense), ("notes/b.md", "ok")]
    )
    assert [(f.rule, f.location, f.path) for f in report.findings] == [
        ("github-pat", "record:r1", "$.summary"),
        ("scan-budget", "file:notes/dense.md", ""),
    ]


def test_a_dense_record_is_refused_by_its_own_path() -> None:
    records = [{"id": f"r{i}", "summary": "retry with backoff"} for i in range(40)]
    records[17] = {"id": "r17", "summary": "ok", "log": "key=" * 40000}
    report = scan_bundle(records)
    assert [(f.rule, f.location, f.path) for f in report.findings] == [("scan-budget", "record:r17", "$.log")]


def test_many_moderate_strings_are_each_judged_on_their_own_budget() -> None:
    """Each string stays under its own budget while the bundle joined would not: nothing is refused."""
    piece = "a@b " * 120  # ~120 candidates: under one string's own 512 + len // 256
    records = [{"id": f"r{i}", "summary": piece} for i in range(60)]
    assert not scan_bundle(records).blocked
