"""The scrub gate's public API (acx.core.scrub): every rule fires, reports never echo the secret,
look-alikes pass, the document walker reaches every accepted shape and reports each finding at its own
string, path and offset, raw JSON is split and proven clean, and each string has its own budget.

The ``acx scrub`` command's tests are in tests/unit/cli/test_scrub.py.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acx.core import scrub
from acx.core.scrub import (
    Finding,
    ScrubReport,
    scan_any,
    scan_bundle,
    scan_raw_json_fast,
    scan_record,
    scan_text,
    split_raw_json,
)
from tests.unit.core.scrub.conftest import GITHUB_PAT

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


# --- splitting raw JSON for the parallel scan (split_raw_json) ------------------------------------


def _cut_points(data: bytes) -> list[int]:
    """Every place a cut may go: an opening quote outside strings after ``,`` ``[`` ``{`` (+ blanks)."""
    points, inside, last = [], False, b""
    for i, ch in enumerate(data):
        c = bytes([ch])
        if c == b'"':
            if not inside and last in (b",", b"[", b"{"):
                points.append(i)
            inside = not inside
            last = c
        elif inside or c not in b" \t\r\n":
            last = c
    return points


def _expected_cuts(data: bytes, parts: int) -> list[tuple[int, int]]:
    n = len(data)
    if parts < 2 or b"\\" in data:
        return [(0, n)]
    points, cuts = _cut_points(data), [0]
    for k in range(1, parts):
        lo = max(cuts[-1] + 1, n * k // parts)
        later = [p for p in points if p >= lo]
        if later:
            cuts.append(later[0])
    cuts.append(n)
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


_TEXT = st.text(st.characters(blacklist_characters='"\\', blacklist_categories=("Cc", "Cs")), max_size=12)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-99, 99) | _TEXT,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_TEXT, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(doc=_JSON, indent=st.sampled_from([None, 0, 1, 2, "\t"]), parts=st.integers(0, 9))
def test_split_raw_json_cuts_at_the_first_member_quote_after_each_share(
    doc: object, indent: object, parts: int
) -> None:
    data = json.dumps(doc, indent=indent, ensure_ascii=False).encode()
    assert split_raw_json(data, parts) == _expected_cuts(data, parts)


@pytest.mark.parametrize("parts", [2, 3, 5, 8])
def test_split_raw_json_on_small_and_odd_documents(parts: int) -> None:
    for data in [
        b'{"a":1}',
        b'["x","y"]',
        b'[ "x" , "y" ]',
        b'{"a":"b","c":"d"}',
        b'"x"',
        b"[]",
        b"",
        b'{"a": "\\n"}',
    ]:
        assert split_raw_json(data, parts) == _expected_cuts(data, parts), data


def test_pretty_printed_json_is_cut_before_members_after_their_indentation() -> None:
    """``json.dumps(..., indent=2)`` puts a newline and spaces between each ``,`` and the next member's
    quote: the cuts still fall just before such quotes (the whitespace is skipped back to the comma),
    every range is clean alone, and the ranges cover the file."""
    data = json.dumps([{"id": f"r{i}", "text": "note " * 20} for i in range(200)], indent=2).encode()
    ranges = split_raw_json(data, 4)
    assert len(ranges) == 4
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    for start, _end in ranges[1:]:
        assert data[start : start + 1] == b'"'
        assert data[:start].rstrip()[-1:] in (b",", b"[", b"{")
    assert all(scan_raw_json_fast(data[a:b]) for a, b in ranges)


# --- the raw-JSON shortcut (scan_raw_json_fast) ---------------------------------------------------


def test_the_raw_json_shortcut_is_not_clean_when_a_forbidden_literal_is_in_it() -> None:
    """Bytes with no secret but a forbidden literal (any case) must go to the full scan, which reports
    it; without forbidden literals (or with others) the same bytes are provably clean."""
    summary = "moved from GitHub.com/Acme/Secret-Repo last week"
    raw = json.dumps({"records": [{"id": "a", "summary": summary}]}).encode()
    assert scan_raw_json_fast(raw) is True
    assert scan_raw_json_fast(raw, ["acme/elsewhere"]) is True
    assert scan_raw_json_fast(raw, ["github.com/acme/secret-repo"]) is False
    assert scan_raw_json_fast(raw, ["SECRET-REPO", ""]) is False
    assert [f.rule for f in scan_text(summary, forbidden=["secret-repo"])] == ["forbidden-literal"]


# --- a bundle is scanned as one buffer, each finding mapped back to its own string ----------------


ROOT = Path(__file__).resolve().parents[4]


CORPUS = ROOT.parent / "shared" / "corpora" / "secrets-gitleaks.json"


def _corpus_texts() -> list[str]:
    if not CORPUS.exists():
        pytest.skip("shared corpus not present")
    items = json.loads(CORPUS.read_text(encoding="utf-8"))
    return [it["text"] for it in items if "\x00" not in it["text"]]


@pytest.mark.parametrize("count", [10, 70])
def test_each_string_of_a_bundle_is_reported_as_when_scanned_alone(count: int) -> None:
    """One record holding many corpus texts: its findings are each text's own findings, at the text's
    path and at the offset a scan of that text alone reports (with 10 texts, and with 120: more than 64
    findings are mapped back another way)."""
    texts = _corpus_texts()
    for first in range(0, 600, count * 2):
        chunk = texts[first : first + count]
        record = {"id": "r1", "texts": chunk}
        got = sorted((f.path, f.offset, f.rule) for f in scan_record(record))
        want = sorted((f"$.texts[{i}]", f.offset, f.rule) for i, t in enumerate(chunk) for f in scan_text(t))
        assert got == want


def test_a_string_holding_a_nul_is_scanned_one_string_at_a_time() -> None:
    """A NUL inside a string would shift every later string's place in the joined buffer: then each
    string is scanned alone, and each finding still names its own string and offset."""
    report = scan_bundle([{"id": "r1", "a": "x\x00y", "b": f"k {GITHUB_PAT}", "c": [f"{GITHUB_PAT}"]}])
    assert [(f.path, f.offset, f.rule) for f in report.findings] == [
        ("$.b", 2, "github-pat"),
        ("$.c[0]", 0, "github-pat"),
    ]


def test_a_budget_refusal_names_only_the_string_that_ran_out() -> None:
    """The scan budget belongs to each string: the dense file is refused alone with ``scan-budget``
    at offset 0 (nothing of it was judged), named by its own path; the record beside it is judged
    normally and, being clean, is not named at all."""
    flood = "sk_ " * 20000
    report = scan_any({"records": [{"id": "r1", "t": "hello"}], "knowledge": {"k.md": flood}})
    assert [(f.rule, f.location, f.path, f.offset) for f in report.findings] == [
        ("scan-budget", "file:k.md", "", 0),
    ]


@pytest.mark.parametrize("count", [3, 70])
def test_every_finding_of_a_large_bundle_is_at_its_offset_in_its_own_string(count: int) -> None:
    """Many strings are scanned as one joined buffer and each finding is mapped back to its string:
    with a few findings or with more than 64 (another way to find the string), each token is reported
    at its own record, path and offset within that string, not within the joined buffer."""
    records = [{"id": f"r{i}", "text": f"k {GITHUB_PAT} end"} for i in range(count)]
    report = scan_bundle(records)
    found = [(f.rule, f.location, f.path, f.offset) for f in report.findings]
    assert found == [("github-pat", f"record:r{i}", "$.text", 2) for i in range(count)]


# --- the shapes scan_any accepts ------------------------------------------------------------------


def _where(report: object) -> list[tuple[str, str, str, int]]:
    return [(f.rule, f.location, f.path, f.offset) for f in report.findings]  # type: ignore[attr-defined]


TEXT_WITH_PAT = f"k {GITHUB_PAT}"


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        (TEXT_WITH_PAT, [("github-pat", "text", "", 2)]),
        ([{"id": "a", "t": TEXT_WITH_PAT}], [("github-pat", "record:a", "$.t", 2)]),
        ([TEXT_WITH_PAT], [("github-pat", "records[0]", "$.value", 2)]),
        ([{"id": "a"}, [TEXT_WITH_PAT]], [("github-pat", "records[1]", "$.value[0]", 2)]),
        ({"records": {"id": "a", "t": TEXT_WITH_PAT}}, [("github-pat", "record:a", "$.t", 2)]),
        ({"records": [TEXT_WITH_PAT]}, [("github-pat", "records[0]", "$.value", 2)]),
        ({"records": [], "note": TEXT_WITH_PAT}, [("github-pat", "bundle", "$.note", 2)]),
        ({"knowledge": {"k.md": TEXT_WITH_PAT}}, [("github-pat", "file:k.md", "", 2)]),
        ({"knowledge": {"k.md": {"x": TEXT_WITH_PAT}}}, [("github-pat", "file:k.md", "", 4)]),
        ({"skills": [{"path": "s.md", "body": TEXT_WITH_PAT}]}, [("github-pat", "file:s.md", "", 2)]),
        ({"skills": [{"name": "s.md", "content": TEXT_WITH_PAT}]}, [("github-pat", "file:s.md", "", 2)]),
        ({"skills": [{"path": "s.md", "markdown": TEXT_WITH_PAT}]}, [("github-pat", "file:s.md", "", 2)]),
        ({"skills": [{"body": TEXT_WITH_PAT}]}, [("github-pat", "file:[0]", "", 2)]),
        (
            {"skills": [{"path": "s.md", "body": "ok", "extra": TEXT_WITH_PAT}]},
            [("github-pat", "file:s.md", "", 11)],
        ),
        (
            {"skills": [{"path": "s.md", "body": 7, "t": TEXT_WITH_PAT}]},
            [("github-pat", "file:s.md", "", 19), ("github-pat", "file:s.md", "", 64)],
        ),
        ({"skills": [["s.md", TEXT_WITH_PAT]]}, [("github-pat", "file:s.md", "", 2)]),
        ({"skills": [TEXT_WITH_PAT]}, [("github-pat", "file:[0]", "", 2)]),
        ({"skills": [["a", "b", TEXT_WITH_PAT]]}, [("github-pat", "file:[0]", "", 6)]),
        ({"id": "a", "t": TEXT_WITH_PAT}, [("github-pat", "record:a", "$.t", 2)]),
        (12345, []),
        (None, []),
    ],
)
def test_every_accepted_shape_reaches_the_secret(doc: object, where: list) -> None:
    assert _where(scan_any(doc)) == where


def test_a_number_given_as_a_document_is_scanned_as_its_text() -> None:
    assert [f.rule for f in scan_any(10**40).findings] == []
    report = scan_any(True)
    assert report.to_dict() == {"blocked": False, "findings": [], "warnings": []}


@pytest.mark.parametrize("doc", [[], {"records": []}, {"records": [], "knowledge": [], "skills": []}])
def test_an_empty_bundle_is_a_clean_report(doc: object) -> None:
    """No records, no files: nothing to scan, a clean report (not an error)."""
    assert scan_any(doc).to_dict() == {"blocked": False, "findings": [], "warnings": []}
    assert scan_bundle([]).to_dict() == {"blocked": False, "findings": [], "warnings": []}


def test_a_plain_record_is_scanned_as_a_record_and_a_skills_only_bundle_as_a_bundle() -> None:
    """``scan_any`` takes a dict holding ``records``, ``knowledge`` or ``skills`` as a bundle, and any
    other dict as one record: a token in a plain record is reported at ``record:<id>``, one in a
    skills-only bundle at its skill file."""
    record = scan_any({"id": "r1", "text": f"k {GITHUB_PAT}"})
    assert [(f.rule, f.location, f.path, f.offset) for f in record.findings] == [
        ("github-pat", "record:r1", "$.text", 2)
    ]
    bundle = scan_any({"skills": [{"path": "s.md", "body": f"k {GITHUB_PAT}"}]})
    assert [(f.rule, f.location, f.offset) for f in bundle.findings] == [("github-pat", "file:s.md", 2)]


def test_a_pair_whose_body_is_an_object_still_blocks_on_the_secret_inside() -> None:
    report = scan_any({"skills": [["s.md", {"note": f"k {GITHUB_PAT}"}]]})
    assert report.blocked
    assert [f.rule for f in report.findings] == ["github-pat"]


def test_a_pair_with_a_text_body_is_scanned_under_its_path() -> None:
    report = scan_any({"knowledge": [["notes.md", f"k {GITHUB_PAT}"]]})
    assert [(f.rule, f.location, f.offset) for f in report.findings] == [("github-pat", "file:notes.md", 2)]


def test_the_extra_fields_of_a_knowledge_file_object_are_scanned_with_its_body() -> None:
    """``{"path", "body", ...}``: the fields besides the name and the body are scanned too, as text
    after the body of that file (a token kept in ``owner`` is found there), and a clean one is not."""
    doc = {"knowledge": [{"path": "notes.md", "body": "hello", "owner": GITHUB_PAT}]}
    found = [(f.rule, f.location, f.offset) for f in scan_any(doc).findings]
    assert found == [("github-pat", "file:notes.md", 12)]
    clean = {"knowledge": [{"path": "notes.md", "body": "hello", "owner": "alice"}]}
    assert scan_any(clean).findings == []


def test_knowledge_and_skills_given_as_path_body_pairs_are_scanned_as_files() -> None:
    """``"knowledge": [[path, body]]`` (a JSON pair, or a tuple from Python): each body is scanned as
    the file at that path, its offsets counted in the body, never as an anonymous ``[0]`` entry."""
    doc = {
        "knowledge": [["rom/knowledge/NOTES.md", f"token {GITHUB_PAT}"]],
        "skills": [("a/SKILL.md", GITHUB_PAT)],
    }
    found = [(f.rule, f.location, f.offset) for f in scan_any(doc).findings]
    assert found == [("github-pat", "file:rom/knowledge/NOTES.md", 6), ("github-pat", "file:a/SKILL.md", 0)]


# --- where a finding is reported: location and JSON path ------------------------------------------


def _at(record: dict) -> list[tuple[str, str, str, int]]:
    return [(f.rule, f.location, f.path, f.offset) for f in scan_record(record)]


def test_paths_name_keys_as_identifiers_or_quoted_and_list_items_by_index() -> None:
    record = {"id": "r1", "a": {"b c": ["x", {"ключ": TEXT_WITH_PAT}], "ok_key": TEXT_WITH_PAT}}
    assert _at(record) == [
        ("github-pat", "record:r1", '$.a["b c"][1]["\\u043a\\u043b\\u044e\\u0447"]', 2),
        ("github-pat", "record:r1", "$.a.ok_key", 2),
    ]


def test_a_key_that_is_a_secret_is_named_by_its_position_and_so_is_what_is_under_it() -> None:
    assert _at({"id": "r1", GITHUB_PAT: "v"}) == [("github-pat", "record:r1", "$.<key#1>", 0)]
    assert _at({"id": "r1", GITHUB_PAT: {"x": TEXT_WITH_PAT}}) == [
        ("github-pat", "record:r1", "$.<key#1>", 0),
        ("github-pat", "record:r1", "$.<key#1>.x", 2),
    ]


@pytest.mark.parametrize(
    "record",
    [
        {"id": GITHUB_PAT, "t": "x"},
        {"a": "x", "id": GITHUB_PAT},
        {"a": "x", "b": {"c": "d", "e": ["f", "g"]}, "id": GITHUB_PAT},
    ],
)
def test_a_record_whose_id_is_a_secret_is_named_by_its_index(record: dict) -> None:
    """The id names the place, so when the id itself matched the record is ``records[i]``, wherever
    the id key stands among the record's keys."""
    assert ("github-pat", "records[0]", "$.id", 0) in _at(record)
    assert all(loc == "records[0]" for _, loc, _, _ in _at(record))


def test_only_a_record_whose_own_id_matched_is_named_by_its_index() -> None:
    """A number id names the record; a secret elsewhere in the batch (even the batch's first string,
    or a record's second) never makes another record lose its name; a boolean is no id."""
    report = scan_bundle([{GITHUB_PAT: "v"}, {"id": 7, "t": TEXT_WITH_PAT}, {"id": 8, GITHUB_PAT: "v"}])
    assert [(f.location, f.path) for f in report.findings] == [
        ("records[0]", "$.<key#0>"),
        ("record:7", "$.t"),
        ("record:8", "$.<key#1>"),
    ]
    assert _at({"id": True, "t": TEXT_WITH_PAT}) == [("github-pat", "records[0]", "$.t", 2)]
    bundle = scan_bundle([{"id": "a"}], first_index=10, other={"id": "b", "t": TEXT_WITH_PAT})
    assert [(f.location, f.path) for f in bundle.findings] == [("bundle", "$.t")]
    numbered = scan_bundle([{"id": "a"}, {"x": TEXT_WITH_PAT}, {"y": TEXT_WITH_PAT}], first_index=10)
    assert [f.location for f in numbered.findings] == ["records[11]", "records[12]"]


@pytest.mark.parametrize(
    ("key", "value", "found"),
    [
        ("db_password", "Xk9mQ2vL7pRt4Wz", True),
        ("db_password", "Xk9m", True),
        ("db_password", "Xk9", False),  # too short to judge
        ("token", "Xk9mQ2vL7pRt4Wz", False),  # a bare name needs a value shaped like a credential
        ("token", "Xk9mQ2vL7pRt4Wz8", True),
        (" Token ", "Xk9mQ2vL7pRt4Wz", False),
        ("db_password", "${DB_PASSWORD}", False),
        ("colour", "Xk9mQ2vL7pRt4Wz8", False),
    ],
)
def test_a_secret_like_key_with_a_literal_secret_is_reported_at_the_key(
    key: str, value: str, found: bool
) -> None:
    expected = [("secret-assignment", "record:r1", f"$[{json.dumps(key)}]" if " " in key else f"$.{key}", 0)]
    assert (_at({"id": "r1", key: value}) == expected) is found
